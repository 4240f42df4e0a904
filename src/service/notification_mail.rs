//! Notifications by e-mail (guide: "Notifications", "E-mail"): one mail per
//! notification, the hourly or daily digest that gathers them, and the
//! e-mails of a broadcast (`action.new`), written by the next timer pass
//! rather than by the create that caused it. Every mail goes through
//! `service::mail::enqueue`, in the caller's transaction.

use rusqlite::Connection;

use crate::domain::action::Status;
use crate::domain::notification::{Digest, Kind, Route};
use crate::domain::time;
use crate::error::Result;
use crate::service::actions::access_of;
use crate::service::effects::Effects;
use crate::service::mail::{self, Letter, MailKind};
use crate::service::notifications::Ctx;
use crate::store::notifications::{self as store, New, TimerKind};
use crate::store::{users, work, workspaces};

fn absolute(ctx: &Ctx, path: &str) -> String {
    format!("{}{path}", ctx.base_url.trim_end_matches('/'))
}

fn workspace_name(c: &Connection, id: &str) -> Result<String> {
    Ok(workspaces::get(c, id)?
        .map(|w| w.name)
        .unwrap_or_else(|| "hds".to_owned()))
}

/// The settings page for a workspace's notifications: the page offers to
/// switch to it when the browser looks at another.
fn settings_path(workspace_id: &str) -> String {
    format!("/app/settings/notifications?workspace={workspace_id}")
}

/// One notification, e-mailed now to the person's address (one SMTP cannot
/// take is logged as failed in the e-mail log, `mail::enqueue`).
pub fn notification(
    c: &Connection,
    fx: &mut Effects,
    ctx: &Ctx,
    user_id: &str,
    n: &New,
) -> Result<()> {
    let Some(user) = users::by_id(c, user_id)? else {
        return Ok(());
    };
    let ws = workspace_name(c, n.workspace_id)?;
    let letter = Letter {
        to: user.email,
        subject: n.title.to_owned(),
        lines: vec![
            n.body.to_owned(),
            format!("You get this e-mail as a member of {ws}."),
        ],
        items: Vec::new(),
        link: Some(("Open in hds".to_owned(), absolute(ctx, n.path))),
        settings: Some(absolute(ctx, &settings_path(n.workspace_id))),
        kind: MailKind::Notification,
        workspace_id: Some(n.workspace_id.to_owned()),
        user_id: Some(user_id.to_owned()),
        secret: false,
        // A kind the workspace makes mandatory is mailed whatever the
        // person chose: a link that says it unsubscribes would not.
        unsubscribable: !store::policy(c, n.workspace_id)?
            .mandatory
            .contains(&n.kind),
    };
    mail::enqueue(c, fx, &letter, n.created_at)?;
    Ok(())
}

/// Keeps a notification for the person's digest, and sets the digest's
/// timer unless one is set.
pub fn hold_for_digest(
    c: &Connection,
    user_id: &str,
    digest: Digest,
    n: &New,
    now: &str,
) -> Result<()> {
    store::add_digest_item(c, user_id, n)?;
    store::set_timer_once(
        c,
        TimerKind::Digest,
        &format!("{user_id} {}", n.workspace_id),
        &digest_due(digest, now),
    )
}

/// A person changed their e-mail preferences in a workspace: a digest
/// held for them follows at once. A new schedule moves its time (daily to
/// hourly no longer waits for 08:00); no digest any more, or no e-mail,
/// makes it due now, and [`digest`] then mails what is still wanted by
/// e-mail, at once, and drops the rest.
pub fn retime_digest(
    c: &Connection,
    user_id: &str,
    workspace_id: &str,
    prefs: &crate::domain::notification::Preferences,
    now: &str,
) -> Result<()> {
    let due = match prefs.email_digest {
        Digest::Off => now.to_owned(),
        _ if !prefs.email => now.to_owned(),
        d => digest_due(d, now),
    };
    store::move_timer(
        c,
        TimerKind::Digest,
        &format!("{user_id} {workspace_id}"),
        &due,
    )
}

/// When a digest started now goes out: the next full hour, or the next
/// 08:00 UTC.
pub fn digest_due(d: Digest, now: &str) -> String {
    let Some(t) = time::parse(now) else {
        return now.to_owned();
    };
    let hour = t
        .replace_minute(0)
        .and_then(|t| t.replace_second(0))
        .and_then(|t| t.replace_nanosecond(0))
        .unwrap_or(t);
    let due = match d {
        Digest::Daily => {
            let eight = hour.replace_hour(8).unwrap_or(hour);
            if eight > t {
                eight
            } else {
                eight + ::time::Duration::days(1)
            }
        }
        _ => hour + ::time::Duration::hours(1),
    };
    time::format(due)
}

/// The digest timer fell due: everything held for the person in that
/// workspace goes out as one mail.
pub fn digest(
    c: &Connection,
    fx: &mut Effects,
    ctx: &Ctx,
    user_id: &str,
    workspace_id: &str,
    now: &str,
) -> Result<()> {
    let items = store::take_digest_items(c, user_id, workspace_id)?;
    if items.is_empty() {
        return Ok(());
    }
    let Some(user) = users::by_id(c, user_id)? else {
        return Ok(());
    };
    if work::member(c, workspace_id, user_id)?.is_none() {
        return Ok(());
    }
    // Asked again now: a person who switched e-mail (or the kind) off since
    // an item was held, or a workspace that did, gets none of it by e-mail
    // (it stays in the app).
    let policy = store::policy(c, workspace_id)?;
    let prefs = store::preferences(c, user_id, workspace_id)?;
    let items: Vec<_> = items
        .into_iter()
        .filter(|(kind, ..)| {
            Kind::parse(kind)
                .is_some_and(|k| Route::of(k, &prefs, &policy, ctx.smtp).email_now.is_some())
        })
        .collect();
    if items.is_empty() {
        return Ok(());
    }
    // An item of a kind made mandatory after it was held goes out anyway:
    // unsubscribing would not stop such a digest, so it offers no link.
    let unsubscribable = !items
        .iter()
        .any(|(kind, ..)| Kind::parse(kind).is_some_and(|k| policy.mandatory.contains(&k)));
    let ws = workspace_name(c, workspace_id)?;
    let count = items.len();
    let letter = Letter {
        to: user.email,
        subject: if count == 1 {
            format!("1 notification in {ws}")
        } else {
            format!("{count} notifications in {ws}")
        },
        lines: vec![
            format!("What happened in {ws} while your notification e-mail was gathered into a digest:"),
            "They come together in this one e-mail. Your notification settings choose whether e-mail comes at once, hourly or daily.".to_owned(),
        ],
        items: items
            .into_iter()
            .map(|(_, title, _, path, _)| (title, absolute(ctx, &path)))
            .collect(),
        link: Some((
            "Open your notifications".to_owned(),
            absolute(ctx, "/app/notifications"),
        )),
        settings: Some(absolute(ctx, &settings_path(workspace_id))),
        kind: MailKind::Digest,
        workspace_id: Some(workspace_id.to_owned()),
        user_id: Some(user_id.to_owned()),
        secret: false,
        unsubscribable,
    };
    mail::enqueue(c, fx, &letter, now)?;
    Ok(())
}

/// The e-mails of a broadcast (`action.new`): each member who hears of it
/// and wants it by e-mail gets it now or in their digest. Runs from the
/// timer pass, so a create in a large team writes one timer, not a mail each.
pub fn broadcast(c: &Connection, fx: &mut Effects, ctx: &Ctx, id: &str, now: &str) -> Result<()> {
    let Some(b) = store::broadcast_by_id(c, id)? else {
        return Ok(());
    };
    let policy = store::policy(c, &b.workspace_id)?;
    if !ctx.smtp || !policy.email_enabled {
        return Ok(());
    }
    // A new Action decided before the pass: no e-mail about it any more.
    let action = match &b.action_id {
        Some(aid) => crate::store::actions::get(c, aid)?,
        None => None,
    };
    if action.as_ref().is_some_and(|a| a.status != Status::Open) {
        return Ok(());
    }
    let row = New {
        id: &b.id,
        workspace_id: &b.workspace_id,
        kind: Kind::New,
        title: &b.title,
        body: &b.body,
        action_id: b.action_id.as_deref(),
        path: &b.path,
        created_at: now,
    };
    // Only those who asked for new Actions by e-mail (everyone, when the
    // policy makes them mandatory): one query, not one per member.
    let members = work::members(c, &b.workspace_id)?;
    let wanting = if policy.mandatory.contains(&Kind::New) {
        members.iter().map(|m| m.user_id.clone()).collect()
    } else {
        store::wanting_new_by_email(c, &b.workspace_id)?
    };
    for m in members.into_iter().filter(|m| wanting.contains(&m.user_id)) {
        if let Some(a) = &action
            && !access_of(a, m.role, &m.user_id, &m.email, &m.created_at).can_decide()
        {
            continue;
        }
        if !store::receives_broadcast(c, &m.user_id, &b.workspace_id, b.n)? {
            continue;
        }
        let prefs = store::preferences(c, &m.user_id, &b.workspace_id)?;
        match Route::of(Kind::New, &prefs, &policy, true).email_now {
            Some(true) => notification(c, fx, ctx, &m.user_id, &row)?,
            Some(false) => hold_for_digest(c, &m.user_id, prefs.email_digest, &row, now)?,
            None => {}
        }
    }
    Ok(())
}
