//! Notifications (guide: "Notifications"; DESIGN §12). Two halves:
//!
//! - **Causes.** The use cases that change an Action call the functions
//!   below (`action_created`, `assigned`, `commented`, …) inside their own
//!   writer transaction, so a notification exists exactly when its cause
//!   committed. Each decides who hears of it (`domain::access` answers who
//!   may see or decide), and `deliver` routes it by the person's preferences
//!   and the workspace's policy (`domain::notification::Route`): a row in
//!   their list, an e-mail now, or an item of their digest.
//! - **Reading.** The routes of /v1/notifications, the preferences and the
//!   policy, for the signed-in person only.

use rusqlite::Connection;
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::access::{self, Role};
use crate::domain::action::{ActionRecord, ActorKind, Person};
use crate::domain::notification::{
    Digest, Kind, NewActionAudience, NotificationPreferenceUpdate, Policy, Preferences, Route,
    WorkspaceNotificationPolicyUpdate,
};
use crate::domain::{ids, time};
use crate::error::{Code, Error, FieldError, Result};
use crate::service::Services;
use crate::service::actions::access_of;
use crate::service::caller::{UserCaller, require_manager};
use crate::service::effects::Effects;
use crate::store::notifications::{self as store, New, Notification, TimerKind, Watermark};
use crate::store::work::{self, Member};

/// An Action as notifications name it: its title, marked `[test]` when a
/// test key made it, so a test run never reads as real work (guide:
/// "Notifications").
fn named(a: &crate::domain::action::ActionRecord) -> std::borrow::Cow<'_, str> {
    if a.environment == crate::domain::action::Environment::Test {
        format!("[test] {}", a.spec.title).into()
    } else {
        a.spec.title.as_str().into()
    }
}

/// What causes need from the configuration: whether e-mail can be sent.
#[derive(Clone, Debug)]
pub struct Ctx {
    pub smtp: bool,
    /// For the links in e-mails.
    pub base_url: String,
}

impl Ctx {
    pub fn of(s: &Services) -> Self {
        Self {
            smtp: crate::service::mail::enabled(&s.config),
            base_url: s.config.base_url.clone(),
        }
    }
}

/// The longest excerpt of a comment a notification quotes.
const EXCERPT: usize = 280;

fn excerpt(s: &str) -> String {
    let one_line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= EXCERPT {
        return one_line;
    }
    let cut: String = one_line.chars().take(EXCERPT - 1).collect();
    format!("{cut}…")
}

fn action_path(a: &ActionRecord) -> String {
    format!("/app/actions/{}", a.id)
}

/// One notification about to go out.
struct Notice {
    kind: Kind,
    workspace_id: String,
    title: String,
    body: String,
    action_id: Option<String>,
    path: String,
}

impl Notice {
    fn about(a: &ActionRecord, kind: Kind, title: String, body: String) -> Self {
        Self {
            kind,
            workspace_id: a.workspace_id.clone(),
            title,
            body,
            action_id: Some(a.id.clone()),
            path: action_path(a),
        }
    }
    fn new_row<'a>(&'a self, id: &'a str, now: &'a str) -> New<'a> {
        New {
            id,
            workspace_id: &self.workspace_id,
            kind: self.kind,
            title: &self.title,
            body: &self.body,
            action_id: self.action_id.as_deref(),
            path: &self.path,
            created_at: now,
        }
    }
}

/// Routes a notice to one person by their preferences and the policy.
fn deliver(
    c: &Connection,
    fx: &mut Effects,
    ctx: &Ctx,
    policy: &Policy,
    user_id: &str,
    n: &Notice,
    now: &str,
) -> Result<()> {
    let prefs = store::preferences(c, user_id, &n.workspace_id)?;
    let route = Route::of(n.kind, &prefs, policy, ctx.smtp);
    let id = ids::new_ordered_id(ids::NOTIFICATION);
    let row = n.new_row(&id, now);
    if route.in_app {
        store::insert(c, user_id, &row)?;
        fx.user_changed(user_id);
    }
    match route.email_now {
        // A mail that cannot be written never refuses what caused it.
        Some(true) => isolated(c, "mailing a notification", || {
            crate::service::notification_mail::notification(c, fx, ctx, user_id, &row)
        })?,
        Some(false) => crate::service::notification_mail::hold_for_digest(
            c,
            user_id,
            prefs.email_digest,
            &row,
            now,
        )?,
        None => {}
    }
    Ok(())
}

/// The member a Person names (by user id, else by e-mail), if they are one.
fn member_of(c: &Connection, workspace_id: &str, p: &Person) -> Result<Option<Member>> {
    if let Some(id) = &p.user_id
        && let Some(m) = work::member(c, workspace_id, id)?
    {
        return Ok(Some(m));
    }
    match &p.email {
        Some(e) => work::member_by_email(c, workspace_id, e),
        None => Ok(None),
    }
}

fn source_name(c: &Connection, a: &ActionRecord) -> Result<String> {
    Ok(
        crate::store::sources::name(c, &a.workspace_id, &a.source_id)?
            .unwrap_or_else(|| "A Source".to_owned()),
    )
}

/// How a notice names a person: "Name <address>", or the address alone
/// while they have no name (a name is chosen by its owner, so it never
/// stands without the address it belongs to).
fn person_name(c: &Connection, user_id: &str) -> Result<String> {
    Ok(crate::store::users::by_id(c, user_id)?
        .map(|u| {
            let email = crate::service::account::shown_address(u.email);
            match u.name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
                Some(n) => format!("{n} <{email}>"),
                None => email,
            }
        })
        .unwrap_or_else(|| "Someone".to_owned()))
}

/// A new Action, as the policy's `new_action` says: with `all_reviewers`
/// and `assigned_only`, its assignee hears `action.assigned`; with
/// `all_reviewers`, every member who may decide it hears `action.new` (one
/// broadcast row for a workspace-wide Action, a row each for the listed
/// reviewers of a restricted one); with `none`, nobody is told (a later
/// assignment still is). Its expiry warning is set in every case.
pub fn action_created(
    c: &Connection,
    fx: &mut Effects,
    ctx: &Ctx,
    a: &ActionRecord,
    now: &str,
) -> Result<()> {
    let policy = store::policy(c, &a.workspace_id)?;
    let source = source_name(c, a)?;
    let assignee = match &a.work.assignee {
        Some(p) => member_of(c, &a.workspace_id, p)?,
        None => None,
    }
    .filter(|m| access_of(a, m.role, &m.user_id, &m.email, &m.created_at).can_be_assignee());
    if let Some(m) = assignee
        .as_ref()
        .filter(|_| policy.new_action != NewActionAudience::None)
    {
        let n = Notice::about(
            a,
            Kind::Assigned,
            format!("Assigned to you: {}", named(a)),
            format!("{source} asks you to decide."),
        );
        deliver(c, fx, ctx, &policy, &m.user_id, &n, now)?;
    }
    if policy.new_action == NewActionAudience::AllReviewers {
        let n = Notice::about(
            a,
            Kind::New,
            format!("New: {}", named(a)),
            format!("{source} asks for a decision."),
        );
        // The person it is asked on behalf of hears nothing when they may
        // not decide it (separation of duties).
        let requester = match &a.work.requested_by {
            Some(p) => member_of(c, &a.workspace_id, p)?,
            None => None,
        }
        .filter(|m| {
            access_of(a, m.role, &m.user_id, &m.email, &m.created_at).self_approval_forbidden()
        });
        match a.spec.visibility() {
            access::Visibility::Workspace => {
                let id = ids::new_ordered_id(ids::NOTIFICATION);
                let hidden: Vec<&str> = [&assignee, &requester]
                    .into_iter()
                    .flatten()
                    .map(|m| m.user_id.as_str())
                    .collect();
                store::broadcast(c, &n.new_row(&id, now), &hidden)?;
                fx.workspace_changed(&a.workspace_id);
                // Who wants it by e-mail is asked only when mail can go.
                if ctx.smtp
                    && policy.email_enabled
                    && (policy.mandatory.contains(&Kind::New)
                        || !store::wanting_new_by_email(c, &a.workspace_id)?.is_empty())
                {
                    // Its e-mails are written by the next timer pass.
                    store::set_timer(c, TimerKind::Broadcast, &id, now, None)?;
                }
            }
            access::Visibility::Restricted => {
                for m in listed_members(c, a)? {
                    let acc = access_of(a, m.role, &m.user_id, &m.email, &m.created_at);
                    let is_assignee = assignee.as_ref().is_some_and(|x| x.user_id == m.user_id);
                    if acc.can_decide() && !acc.self_approval_forbidden() && !is_assignee {
                        deliver(c, fx, ctx, &policy, &m.user_id, &n, now)?;
                    }
                }
            }
        }
    }
    // A new Action has no warning to clear.
    match expiry_warning_due(a, &policy, now) {
        Some(due) => store::set_timer(c, TimerKind::Expiring, &a.id, &time::format(due), None),
        None => Ok(()),
    }
}

/// When the Action's expiry warning is due: none without `expires_at`, with
/// warnings off, or when the window has already begun.
fn expiry_warning_due(a: &ActionRecord, policy: &Policy, now: &str) -> Option<time::Timestamp> {
    a.spec
        .expires_at
        .as_deref()
        .and_then(time::parse)
        .filter(|_| policy.expiry_warning_minutes > 0)
        .map(|t| t - ::time::Duration::minutes(policy.expiry_warning_minutes))
        .filter(|due| time::parse(now).is_some_and(|n| *due > n))
}

/// Sets, moves or clears the Action's expiry warning (create, and a PATCH
/// that changed `expires_at`). No warning when the window has already begun.
pub fn set_expiry_warning(
    c: &Connection,
    a: &ActionRecord,
    policy: &Policy,
    now: &str,
) -> Result<()> {
    match expiry_warning_due(a, policy, now) {
        Some(due) => store::set_timer(c, TimerKind::Expiring, &a.id, &time::format(due), None),
        None => store::clear_timer(c, TimerKind::Expiring, &a.id),
    }
}

/// After a PATCH: the expiry warning follows a changed `expires_at`.
pub fn action_updated(c: &Connection, a: &ActionRecord, now: &str) -> Result<()> {
    let policy = store::policy(c, &a.workspace_id)?;
    set_expiry_warning(c, a, &policy, now)
}

/// Someone assigned the Action to `to` (not themselves).
pub fn assigned(
    c: &Connection,
    fx: &mut Effects,
    ctx: &Ctx,
    a: &ActionRecord,
    to: &Member,
    by_user_id: &str,
    now: &str,
) -> Result<()> {
    if to.user_id == by_user_id {
        return Ok(());
    }
    let policy = store::policy(c, &a.workspace_id)?;
    let by = person_name(c, by_user_id)?;
    let n = Notice::about(
        a,
        Kind::Assigned,
        format!("Assigned to you: {}", named(a)),
        format!("{by} assigned this Action to you."),
    );
    deliver(c, fx, ctx, &policy, &to.user_id, &n, now)
}

/// A comment: the members it @mentions hear `action.mentioned`; the people
/// who hold the Action, commented on it before or are listed on it hear
/// `action.commented`. Never the author; only people who may see it.
pub fn commented(
    c: &Connection,
    fx: &mut Effects,
    ctx: &Ctx,
    a: &ActionRecord,
    cm: &work::Comment,
    now: &str,
) -> Result<()> {
    let policy = store::policy(c, &a.workspace_id)?;
    let author = person_name(c, &cm.author_user_id)?;
    // Quoted as words: a notification and an e-mail show no Markdown.
    let text = excerpt(&crate::domain::words::markdown_text(&cm.body));
    // The people a comment may concern, looked up one by one (a handful),
    // never the whole team: those it mentions, the holder, earlier
    // commenters, the listed reviewers.
    let commenters = work::commenters(c, &a.id)?;
    let holder = match &a.work.assignee {
        Some(p) => member_of(c, &a.workspace_id, p)?,
        None => None,
    };
    let mut members: Vec<Member> = listed_members(c, a)?;
    for id in cm.mentions.iter().chain(commenters.iter()) {
        if !members.iter().any(|m| m.user_id == *id)
            && let Some(m) = work::member(c, &a.workspace_id, id)?
        {
            members.push(m);
        }
    }
    if let Some(h) = &holder
        && !members.iter().any(|m| m.user_id == h.user_id)
    {
        members.push(h.clone());
    }
    let sees = |m: &Member| access_of(a, m.role, &m.user_id, &m.email, &m.created_at).can_see();
    let mentioned = Mentions {
        author: &author,
        author_user_id: &cm.author_user_id,
        text: &text,
    };
    mentioned.tell(c, fx, ctx, &policy, a, &cm.mentions, &members, now)?;
    let thread = Notice::about(
        a,
        Kind::Commented,
        format!("{author} commented on {}", named(a)),
        text,
    );
    for m in &members {
        if m.user_id == cm.author_user_id || cm.mentions.contains(&m.user_id) || !sees(m) {
            continue;
        }
        let involved = holder.as_ref().is_some_and(|h| h.user_id == m.user_id)
            || commenters.contains(&m.user_id)
            || access_of(a, m.role, &m.user_id, &m.email, &m.created_at).listed;
        if involved {
            deliver(c, fx, ctx, &policy, &m.user_id, &thread, now)?;
        }
    }
    Ok(())
}

/// Who a comment's `action.mentioned` is from, and its words.
struct Mentions<'a> {
    author: &'a str,
    author_user_id: &'a str,
    text: &'a str,
}

impl Mentions<'_> {
    /// Tells each of `ids` (members the comment mentions, found in
    /// `members`) who may see the Action, but the author.
    #[allow(clippy::too_many_arguments)]
    fn tell(
        &self,
        c: &Connection,
        fx: &mut Effects,
        ctx: &Ctx,
        policy: &Policy,
        a: &ActionRecord,
        ids: &[String],
        members: &[Member],
        now: &str,
    ) -> Result<()> {
        let mention = Notice::about(
            a,
            Kind::Mentioned,
            format!("{} mentioned you on {}", self.author, named(a)),
            self.text.to_owned(),
        );
        for id in ids {
            if id == self.author_user_id {
                continue;
            }
            if let Some(m) = members.iter().find(|m| m.user_id == *id)
                && access_of(a, m.role, &m.user_id, &m.email, &m.created_at).can_see()
            {
                deliver(c, fx, ctx, policy, id, &mention, now)?;
            }
        }
        Ok(())
    }
}

/// A comment was edited: the members its new body mentions that the old one
/// did not (`added`) hear `action.mentioned`; nobody else hears of an edit.
pub fn comment_edited(
    c: &Connection,
    fx: &mut Effects,
    ctx: &Ctx,
    a: &ActionRecord,
    cm: &work::Comment,
    added: &[String],
    now: &str,
) -> Result<()> {
    if added.is_empty() {
        return Ok(());
    }
    let policy = store::policy(c, &a.workspace_id)?;
    let author = person_name(c, &cm.author_user_id)?;
    let text = excerpt(&crate::domain::words::markdown_text(&cm.body));
    let mut members = Vec::new();
    for id in added {
        if let Some(m) = work::member(c, &a.workspace_id, id)? {
            members.push(m);
        }
    }
    let mentioned = Mentions {
        author: &author,
        author_user_id: &cm.author_user_id,
        text: &text,
    };
    mentioned.tell(c, fx, ctx, &policy, a, added, &members, now)
}

/// A comment's body changed (`new`) or it was deleted (None): the notices
/// and held digest items that quote it now quote what it says, or say it
/// was deleted. Mails already queued or sent keep what they said.
pub fn requote_comment(
    c: &Connection,
    a: &ActionRecord,
    old_body: &str,
    new_body: Option<&str>,
) -> Result<()> {
    let old = excerpt(&crate::domain::words::markdown_text(old_body));
    let new = match new_body {
        Some(b) => excerpt(&crate::domain::words::markdown_text(b)),
        None => "(This comment was deleted.)".to_owned(),
    };
    if old == new {
        return Ok(());
    }
    store::requote(c, &a.workspace_id, &a.id, &old, &new)
}

/// A snooze was set (timer for `action.returned`) or lifted (cleared).
pub fn snoozed(
    c: &Connection,
    a: &ActionRecord,
    until: Option<&str>,
    by_user_id: &str,
) -> Result<()> {
    match until {
        Some(t) => store::set_timer(c, TimerKind::Returned, &a.id, t, Some(by_user_id)),
        None => store::clear_timer(c, TimerKind::Returned, &a.id),
    }
}

/// A snooze ended early (its Action's deadline moved before its end): the
/// `action.returned` timer fires now, for whoever snoozed it and the
/// assignee, as when a snooze runs out.
pub fn snooze_cut_short(c: &Connection, action_id: &str, now: &str) -> Result<()> {
    store::move_timer(c, TimerKind::Returned, action_id, now)
}

/// The Source changed what an open Action asks (a material PATCH, a new
/// version): whoever voted on the version before (their votes no longer
/// count) and its assignee hear `action.changed`, each once, when they may
/// still see it. `a` is the Action as changed; `fields` the fields whose
/// value changed.
pub fn action_changed(
    c: &Connection,
    fx: &mut Effects,
    s: &Services,
    a: &ActionRecord,
    fields: &[String],
    now: &str,
) -> Result<()> {
    let before = a.action_version - 1;
    let voters = crate::store::votes::all(c, &a.id, before)?;
    if voters.is_empty() && a.work.assignee.is_none() {
        return Ok(());
    }
    let what = if fields.is_empty() {
        "its content".to_owned()
    } else {
        fields.join(", ")
    };
    let changed = format!(
        "{} changed {what} (version {before} → {}).",
        source_name(c, a)?,
        a.action_version
    );
    let mut told: Vec<String> = Vec::new();
    let ctx = Ctx::of(s);
    let policy = store::policy(c, &a.workspace_id)?;
    for (user_id, vote) in &voters {
        if told.contains(user_id) {
            continue;
        }
        let Some(m) = work::member(c, &a.workspace_id, user_id)? else {
            continue;
        };
        let access = access_of(a, m.role, &m.user_id, &m.email, &m.created_at);
        if !access.can_see() {
            continue;
        }
        // One who may no longer vote (made a viewer since) is not asked to.
        let body = if access.can_vote() {
            format!(
                "{changed} Your vote to {vote} on version {before} no longer counts: vote again on what it asks now."
            )
        } else {
            format!("{changed} Your vote on version {before} no longer counts.")
        };
        let n = Notice::about(a, Kind::Changed, format!("Changed: {}", named(a)), body);
        deliver(c, fx, &ctx, &policy, user_id, &n, now)?;
        told.push(user_id.clone());
    }
    if let Some(p) = &a.work.assignee
        && let Some(m) = member_of(c, &a.workspace_id, p)?
        && !told.contains(&m.user_id)
        && access_of(a, m.role, &m.user_id, &m.email, &m.created_at).can_see()
    {
        let body = format!("{changed} Read it again before you decide.");
        let n = Notice::about(a, Kind::Changed, format!("Changed: {}", named(a)), body);
        deliver(c, fx, &ctx, &policy, &m.user_id, &n, now)?;
    }
    Ok(())
}

/// How an Action closed, for `action_closed`.
#[derive(Clone, Copy)]
pub struct Closed<'a> {
    pub status: crate::domain::action::Status,
    pub resolution: &'a crate::domain::action::Resolution,
    /// The person whose act closed it when the resolution names none (the
    /// voter whose vote made a quorum).
    pub closer: Option<&'a str>,
    /// The person who revoked its Source, when that cancelled it.
    pub revoked_by: Option<&'a str>,
}

/// An Action closed (decided, resolved by its Source, a quorum or on
/// expiry, cancelled, expired): the person it was requested by and its
/// assignee hear `action.closed`, each once, when they may see the Action
/// and did not close it themselves (for a quorum: did not cast the vote
/// that made it).
/// `a` is the Action before it closed; `how` says how it did.
/// Reads nothing for an Action that names neither.
pub fn action_closed(
    c: &Connection,
    fx: &mut Effects,
    s: &Services,
    a: &ActionRecord,
    how: Closed<'_>,
    now: &str,
) -> Result<()> {
    use crate::domain::action::Status;
    if a.work.requested_by.is_none() && a.work.assignee.is_none() {
        return Ok(());
    }
    let (status, r) = (how.status, how.resolution);
    let quorum = r.decided_by == crate::domain::action::Actor::approval_policy();
    // Who closed it: the deciding person, or the voter whose vote made
    // the quorum (the other voters did not see it close).
    let closer = match (r.decided_by.kind, r.decided_by.id.as_deref()) {
        (ActorKind::User, Some(id)) => Some(id),
        _ => how.closer,
    };
    let closers: Vec<&str> = closer.into_iter().collect();
    let mut people: Vec<String> = Vec::new();
    for p in [&a.work.requested_by, &a.work.assignee]
        .into_iter()
        .flatten()
    {
        if let Some(m) = member_of(c, &a.workspace_id, p)?
            && !closers.contains(&m.user_id.as_str())
            && !people.contains(&m.user_id)
            && access_of(a, m.role, &m.user_id, &m.email, &m.created_at).can_see()
        {
            people.push(m.user_id);
        }
    }
    if people.is_empty() {
        return Ok(());
    }
    let who = match (r.decided_by.kind, r.decided_by.id.as_deref()) {
        _ if how.revoked_by.is_some() => format!(
            "{} revoked its Source, which",
            person_name(c, how.revoked_by.unwrap_or_default())?
        ),
        (ActorKind::User, Some(id)) => person_name(c, id)?,
        (ActorKind::Source, _) => "The Source".to_owned(),
        _ if quorum => "The approval policy".to_owned(),
        _ => "hds, on expiry,".to_owned(),
    };
    let label = r.option_id.as_deref().map(|id| {
        a.spec
            .options
            .iter()
            .flatten()
            .find(|o| o.id.as_deref() == Some(id))
            .map_or_else(|| id.to_owned(), |o| o.label.clone())
    });
    let (title, mut body) = match status {
        Status::Resolved => (
            format!("Decided: {}", named(a)),
            match label {
                Some(l) => format!("{who} chose “{l}”."),
                None => format!("{who} answered it."),
            },
        ),
        Status::Cancelled => (
            format!("Cancelled: {}", named(a)),
            format!("{who} cancelled it."),
        ),
        _ => (
            format!("Expired: {}", named(a)),
            "Nobody decided it before it expired.".to_owned(),
        ),
    };
    // The reason a person or Source gave, or a quorum's tally; not the
    // expiry pass's "expired", which the title already says.
    let said = r.decided_by.kind != ActorKind::System || quorum;
    if let Some(reason) = r.reason.as_deref().filter(|_| said) {
        body.push_str(&format!(" Reason: {}", excerpt(reason)));
    }
    let ctx = Ctx::of(s);
    let policy = store::policy(c, &a.workspace_id)?;
    let n = Notice::about(a, Kind::Closed, title, body);
    for id in people {
        deliver(c, fx, &ctx, &policy, &id, &n, now)?;
    }
    Ok(())
}

/// The Source reported a failed outcome: whoever decided it (a person) and
/// its assignee hear `outcome.failed`.
pub fn outcome_failed(
    c: &Connection,
    fx: &mut Effects,
    ctx: &Ctx,
    a: &ActionRecord,
    message: Option<&str>,
    now: &str,
) -> Result<()> {
    let policy = store::policy(c, &a.workspace_id)?;
    let mut people: Vec<String> = Vec::new();
    if let Some(r) = &a.resolution
        && r.decided_by.kind == ActorKind::User
        && let Some(id) = &r.decided_by.id
    {
        people.push(id.clone());
    }
    if let Some(p) = &a.work.assignee
        && let Some(m) = member_of(c, &a.workspace_id, p)?
        && !people.contains(&m.user_id)
    {
        people.push(m.user_id);
    }
    let n = Notice::about(
        a,
        Kind::OutcomeFailed,
        format!("Failed when carried out: {}", named(a)),
        message
            .map(excerpt)
            .unwrap_or_else(|| "The Source reported that acting on the decision failed.".into()),
    );
    for id in people {
        if work::member(c, &a.workspace_id, &id)?.is_some() {
            deliver(c, fx, ctx, &policy, &id, &n, now)?;
        }
    }
    Ok(())
}

/// A control request reached `succeeded` or `failed`: the reviewer who
/// pressed the control hears `control_request.finished`.
#[allow(clippy::too_many_arguments)]
pub fn control_request_finished(
    c: &Connection,
    fx: &mut Effects,
    ctx: &Ctx,
    a: &ActionRecord,
    requested_by: &str,
    control: &str,
    status: &str,
    message: Option<&str>,
    now: &str,
) -> Result<()> {
    if work::member(c, &a.workspace_id, requested_by)?.is_none() {
        return Ok(());
    }
    let policy = store::policy(c, &a.workspace_id)?;
    let n = Notice::about(
        a,
        Kind::ControlRequestFinished,
        format!("{control} {status}: {}", named(a)),
        message
            .map(excerpt)
            .unwrap_or_else(|| format!("The Source reported `{status}`.")),
    );
    deliver(c, fx, ctx, &policy, requested_by, &n, now)
}

/// A run finished `failed` (guide: "Runs"): the workspace's owners and
/// admins hear `run.failed`, and so do the assignees of the run's open
/// Actions, each once, linked to the run page `/app/runs/{id}`.
#[allow(clippy::too_many_arguments)]
pub fn run_failed(
    c: &Connection,
    fx: &mut Effects,
    ctx: &Ctx,
    workspace_id: &str,
    run_id: &str,
    name: &str,
    error: Option<&str>,
    now: &str,
) -> Result<()> {
    let mut people: Vec<String> = crate::store::runs::members(c, workspace_id)?
        .into_iter()
        .filter(|(_, role)| Role::parse(role).is_some_and(access::hears_of_failed_runs))
        .map(|(id, _)| id)
        .collect();
    for p in crate::store::runs::open_assignees(c, run_id)? {
        if let Some(m) = member_of(c, workspace_id, &p)?
            && !people.contains(&m.user_id)
        {
            people.push(m.user_id);
        }
    }
    if people.is_empty() {
        return Ok(());
    }
    let policy = store::policy(c, workspace_id)?;
    let n = Notice {
        kind: Kind::RunFailed,
        workspace_id: workspace_id.to_owned(),
        title: format!("Run failed: {name}"),
        body: error
            .map(excerpt)
            .unwrap_or_else(|| "The Source reported the run as failed.".to_owned()),
        action_id: None,
        path: format!("/app/runs/{run_id}"),
    };
    for user_id in &people {
        deliver(c, fx, ctx, &policy, user_id, &n, now)?;
    }
    Ok(())
}

/// An invitation to someone who already has an account: they hear
/// `invitation.received` in the dashboard (the e-mail with the link goes to
/// the address whether or not they have one).
#[allow(clippy::too_many_arguments)]
pub fn invitation_received(
    c: &Connection,
    fx: &mut Effects,
    workspace_id: &str,
    workspace_name: &str,
    email: &str,
    role: Role,
    by_user_id: &str,
    now: &str,
) -> Result<()> {
    let Some(user) = crate::store::users::by_email(c, email)? else {
        return Ok(());
    };
    let by = person_name(c, by_user_id)?;
    let n = Notice {
        kind: Kind::InvitationReceived,
        workspace_id: workspace_id.to_owned(),
        title: format!("{by} invited you to {workspace_name}"),
        body: format!(
            "You are invited as {role}. Open the link in the invitation (sent to {email}) to join."
        ),
        action_id: None,
        path: "/app/workspaces".to_owned(),
    };
    let id = ids::new_ordered_id(ids::NOTIFICATION);
    store::insert(c, &user.id, &n.new_row(&id, now))?;
    fx.user_changed(&user.id);
    Ok(())
}

/// In the transaction that ends an invitation to `email` in a workspace
/// (accepted, revoked, replaced by a new one): the "invited you" notice of
/// the person with that address is marked read, so the bell no longer
/// points at an invitation that is gone.
pub fn invitation_ended(
    c: &Connection,
    fx: &mut Effects,
    workspace_id: &str,
    email: &str,
    now: &str,
) -> Result<()> {
    if let Some(user) = crate::store::users::by_email(c, email)?
        && store::read_invitation_notices(c, &user.id, workspace_id, now)? > 0
    {
        fx.user_changed(&user.id);
    }
    Ok(())
}

/// Runs the timers due by `now` (expiry warnings, snooze returns, digests,
/// a broadcast's e-mails); the expiry worker calls it each pass, in its own
/// write. Answers how many ran.
pub fn run_due(c: &Connection, fx: &mut Effects, ctx: &Ctx, now: &str) -> Result<usize> {
    let due = store::take_due_timers(c, now, 200)?;
    for t in &due {
        // Each in its own savepoint: one that fails is logged and dropped,
        // and the others run.
        isolated(c, t.kind.as_str(), || run_timer(c, fx, ctx, t, now))?;
    }
    Ok(due.len())
}

fn run_timer(
    c: &Connection,
    fx: &mut Effects,
    ctx: &Ctx,
    t: &store::Timer,
    now: &str,
) -> Result<()> {
    match t.kind {
        TimerKind::Expiring => expiring(c, fx, ctx, &t.subject, now),
        TimerKind::Returned => returned(c, fx, ctx, t, now),
        TimerKind::Broadcast => {
            crate::service::notification_mail::broadcast(c, fx, ctx, &t.subject, now)
        }
        TimerKind::Digest => match t.subject.split_once(' ') {
            Some((user_id, workspace_id)) => {
                crate::service::notification_mail::digest(c, fx, ctx, user_id, workspace_id, now)
            }
            None => Ok(()),
        },
    }
}

/// Runs `f` in a savepoint; when it fails, only its writes are undone and
/// the error is logged (`what` names the work, never a person or content).
pub(crate) fn isolated(c: &Connection, what: &str, f: impl FnOnce() -> Result<()>) -> Result<()> {
    c.prepare_cached("SAVEPOINT notification_step")?
        .execute([])?;
    let r = f();
    if let Err(e) = &r {
        tracing::error!(error = %e.for_log(), "notification work ({what}) failed; skipped");
        c.prepare_cached("ROLLBACK TO notification_step")?
            .execute([])?;
    }
    c.prepare_cached("RELEASE notification_step")?.execute([])?;
    Ok(())
}

/// The members an Action lists as its reviewers (by id or e-mail), each once.
fn listed_members(c: &Connection, a: &ActionRecord) -> Result<Vec<Member>> {
    let mut out: Vec<Member> = Vec::new();
    let by_id = a.spec.reviewer_user_ids.iter().flatten();
    let by_email = a.spec.reviewer_emails.iter().flatten();
    for m in by_id
        .map(|id| work::member(c, &a.workspace_id, id))
        .chain(by_email.map(|e| work::member_by_email(c, &a.workspace_id, e)))
    {
        if let Some(m) = m?
            && !out.iter().any(|x| x.user_id == m.user_id)
        {
            out.push(m);
        }
    }
    Ok(out)
}

/// The people who hold an Action: its assignee; without one, its listed
/// reviewers; without those, the workspace's owners and admins.
fn holders(c: &Connection, a: &ActionRecord) -> Result<Vec<String>> {
    if let Some(p) = &a.work.assignee
        && let Some(m) = member_of(c, &a.workspace_id, p)?
    {
        return Ok(vec![m.user_id]);
    }
    let listed: Vec<String> = listed_members(c, a)?
        .into_iter()
        .filter(|m| access_of(a, m.role, &m.user_id, &m.email, &m.created_at).can_decide())
        .map(|m| m.user_id)
        .collect();
    if !listed.is_empty() {
        return Ok(listed);
    }
    Ok(work::members(c, &a.workspace_id)?
        .into_iter()
        .filter(|m| access::manages_workspace(m.role))
        .map(|m| m.user_id)
        .collect())
}

fn load_open(c: &Connection, id: &str) -> Result<Option<ActionRecord>> {
    let Some(mut a) = crate::store::actions::get(c, id)? else {
        return Ok(None);
    };
    if a.status != crate::domain::action::Status::Open {
        return Ok(None);
    }
    work::annotate(c, std::slice::from_mut(&mut a))?;
    Ok(Some(a))
}

fn expiring(c: &Connection, fx: &mut Effects, ctx: &Ctx, id: &str, now: &str) -> Result<()> {
    let Some(a) = load_open(c, id)? else {
        return Ok(());
    };
    let Some(expires) = a.spec.expires_at.as_deref().and_then(time::parse) else {
        return Ok(());
    };
    let Some(at) = time::parse(now) else {
        return Ok(());
    };
    if expires <= at {
        return Ok(());
    }
    let policy = store::policy(c, &a.workspace_id)?;
    // Rounded to the nearest minute: the timer fires a moment after it was
    // due, and "59 min" of a 60-minute warning would read as a mistake.
    let minutes = ((expires - at).whole_seconds() + 30).div_euclid(60).max(1);
    let n = Notice::about(
        &a,
        Kind::Expiring,
        format!("Expires in {minutes} min: {}", named(&a)),
        format!(
            "It expires at {} unless someone decides it.",
            time::format(expires)
        ),
    );
    for user in holders(c, &a)? {
        deliver(c, fx, ctx, &policy, &user, &n, now)?;
    }
    Ok(())
}

fn returned(
    c: &Connection,
    fx: &mut Effects,
    ctx: &Ctx,
    t: &store::Timer,
    now: &str,
) -> Result<()> {
    let Some(a) = load_open(c, &t.subject)? else {
        return Ok(());
    };
    // Snoozed again to another time, or woken meanwhile: that snooze's own timer speaks.
    if a.snoozed_until.as_deref() != Some(t.due_at.as_str()) {
        return Ok(());
    }
    let policy = store::policy(c, &a.workspace_id)?;
    let mut people: Vec<String> = t.user_id.iter().cloned().collect();
    if let Some(p) = &a.work.assignee
        && let Some(m) = member_of(c, &a.workspace_id, p)?
        && !people.contains(&m.user_id)
    {
        people.push(m.user_id);
    }
    let n = Notice::about(
        &a,
        Kind::Returned,
        format!("Back from snooze: {}", named(&a)),
        "The snooze ended; the Action is back in the inbox.".to_owned(),
    );
    for user in people {
        if let Some(m) = work::member(c, &a.workspace_id, &user)?
            && access_of(&a, m.role, &m.user_id, &m.email, &m.created_at).can_see()
        {
            deliver(c, fx, ctx, &policy, &user, &n, now)?;
        }
    }
    Ok(())
}

// ---- reading ----

/// GET /v1/notifications: the page's size limit.
pub const MAX_PAGE: i64 = 200;

/// The workspaces whose broadcasts the person reads, with their watermarks:
/// those where they may decide and have not switched `action.new` off.
fn broadcast_marks(c: &Connection, user: &UserCaller) -> Result<Vec<Watermark>> {
    let mut ws = Vec::new();
    for m in &user.memberships {
        if !access::hears_of_new_actions(m.role) {
            continue;
        }
        let policy = store::policy(c, &m.workspace_id)?;
        let prefs = store::preferences(c, &user.user_id, &m.workspace_id)?;
        if Route::of(Kind::New, &prefs, &policy, false).in_app {
            ws.push(m.workspace_id.clone());
        }
    }
    store::watermarks(c, &user.user_id, &ws)
}

/// Fills `action_status` of notifications about an Action the reader may
/// still see (`domain::access`, as on the Action itself): one read by key
/// per Action named, at most a page's 200. A notice about an Action since
/// taken from them (a restricted one they are no longer listed on) says
/// nothing of it.
fn with_action_status(c: &Connection, user: &UserCaller, rows: &mut [Notification]) -> Result<()> {
    // Several notices about one Action read it once.
    let mut seen: std::collections::HashMap<String, Option<String>> =
        std::collections::HashMap::new();
    for n in rows {
        let Some(id) = n.action_id.as_deref() else {
            continue;
        };
        if !seen.contains_key(id) {
            let status = crate::store::actions::get_plain(c, id)?
                .filter(|a| crate::service::actions::access(a, user).is_some())
                .map(|a| a.status.as_str().to_owned());
            seen.insert(id.to_owned(), status);
        }
        n.action_status = seen.get(id).cloned().flatten();
    }
    Ok(())
}

/// A page of the caller's notifications, newest first, and whether more follow.
pub async fn list(
    s: &Services,
    user: UserCaller,
    unread_only: bool,
    before: Option<crate::domain::ids::Cursor>,
    limit: i64,
) -> Result<(Vec<Notification>, bool)> {
    let n = usize::try_from(limit).unwrap_or(100);
    let now = s.clock.now();
    s.db.read(move |c| {
        let marks = broadcast_marks(c, &user)?;
        let mine: Vec<&str> = user
            .memberships
            .iter()
            .map(|m| m.workspace_id.as_str())
            .collect();
        let cursor = before.as_ref();
        let before = cursor.map(|b| b.id.as_str());
        if let Some(b) = cursor
            && !store::is_cursor(c, &user.user_id, &mine, &b.id)?
            && !ids::older_than(&b.id, store::KEEP_DAYS, now)
        {
            return Err(Error::unknown_cursor(b, "one of your notifications"));
        }
        let mut rows = store::list(c, &user.user_id, &marks, unread_only, before, n + 1)?;
        let more = rows.len() > n;
        rows.truncate(n);
        with_action_status(c, &user, &mut rows)?;
        Ok((rows, more))
    })
    .await
}

/// `{unread, by_kind}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Summary {
    pub unread: i64,
    /// Unread notifications per kind (kinds with none are left out).
    #[schema(value_type = std::collections::BTreeMap<String, i64>)]
    pub by_kind: std::collections::BTreeMap<String, i64>,
}

pub async fn summary(s: &Services, user: UserCaller) -> Result<Summary> {
    s.db.read(move |c| summary_in(c, &user)).await
}

pub fn summary_in(c: &Connection, user: &UserCaller) -> Result<Summary> {
    let marks = broadcast_marks(c, user)?;
    let by_kind: std::collections::BTreeMap<String, i64> = store::unread(c, &user.user_id, &marks)?
        .into_iter()
        .collect();
    Ok(Summary {
        unread: by_kind.values().sum(),
        by_kind,
    })
}

/// POST /v1/notifications/read-all: answers how many were unread.
pub async fn read_all(s: &Services, user: UserCaller) -> Result<i64> {
    let now = time::format(s.clock.now());
    s.write(move |c, fx| {
        let marks = broadcast_marks(c, &user)?;
        let n = store::read_all(c, &user.user_id, &marks, &now)?;
        fx.user_changed(&user.user_id);
        Ok(n)
    })
    .await
}

/// POST /v1/notifications/{id}/read
pub async fn read_one(s: &Services, user: UserCaller, id: String) -> Result<Notification> {
    let now = time::format(s.clock.now());
    s.write(move |c, fx| {
        let marks = broadcast_marks(c, &user)?;
        let n = store::read_one(c, &user.user_id, &marks, &id, &now)?.ok_or_else(|| {
            Error::new(
                Code::NotificationNotFound,
                format!(
                    "no notification `{}` of yours (read notifications are removed 90 days after they were made, and so are the workspace-wide new-Action notices)",
                    crate::domain::words::as_named(&id)
                ),
            )
        })?;
        fx.user_changed(&user.user_id);
        let mut one = [n];
        with_action_status(c, &user, &mut one)?;
        let [n] = one;
        Ok(n)
    })
    .await
}

fn active(user: &UserCaller) -> Result<crate::service::caller::Membership> {
    user.active_or_404().cloned()
}

/// Preferences as shown: the person's choices in the active workspace, and
/// the kinds the policy makes mandatory (which they cannot switch off).
#[derive(Debug, Serialize, ToSchema)]
pub struct PreferencesOut {
    pub workspace_id: String,
    pub email: bool,
    pub email_digest: Digest,
    /// Every kind, with its two channels.
    #[schema(value_type = std::collections::BTreeMap<String, crate::domain::notification::Channels>)]
    pub events: std::collections::BTreeMap<Kind, crate::domain::notification::Channels>,
    /// Kinds the workspace policy makes mandatory: delivered in the
    /// dashboard and by e-mail (at once) whatever `events` says.
    #[schema(value_type = Vec<String>)]
    pub mandatory: Vec<Kind>,
    /// Whether this hds sends e-mail at all (an `[smtp]` server is configured).
    pub email_configured: bool,
}

fn prefs_out(workspace_id: String, p: Preferences, policy: &Policy, smtp: bool) -> PreferencesOut {
    let mut events = p.events.clone();
    for k in Kind::ALL {
        events.entry(k).or_insert_with(|| p.channels(k));
    }
    PreferencesOut {
        workspace_id,
        email: p.email,
        email_digest: p.email_digest,
        events,
        mandatory: policy.mandatory.clone(),
        email_configured: smtp,
    }
}

pub async fn preferences(s: &Services, user: UserCaller) -> Result<PreferencesOut> {
    // An update of nothing leaves them as stored.
    preview_preferences(s, user, NotificationPreferenceUpdate::default()).await
}

/// The preferences as `req` would leave them, nothing saved: what the
/// settings page shows again after a refusal, so that what was typed is not
/// lost (a kind the policy makes mandatory shows as such whatever `req` says).
pub async fn preview_preferences(
    s: &Services,
    user: UserCaller,
    req: NotificationPreferenceUpdate,
) -> Result<PreferencesOut> {
    let m = active(&user)?;
    let smtp = Ctx::of(s).smtp;
    s.db.read(move |c| {
        let current = store::preferences(c, &user.user_id, &m.workspace_id)?;
        let policy = store::policy(c, &m.workspace_id)?;
        let (next, _) = req.apply(current, &policy);
        Ok(prefs_out(m.workspace_id, next, &policy, smtp))
    })
    .await
}

pub async fn update_preferences(
    s: &Services,
    user: UserCaller,
    req: NotificationPreferenceUpdate,
) -> Result<PreferencesOut> {
    let m = active(&user)?;
    let smtp = Ctx::of(s).smtp;
    let now = time::format(s.clock.now());
    s.write(move |c, fx| {
        let policy = store::policy(c, &m.workspace_id)?;
        let current = store::preferences(c, &user.user_id, &m.workspace_id)?;
        let (current_email, current_digest) = (current.email, current.email_digest);
        let heard = Route::of(Kind::New, &current, &policy, false).in_app;
        let (next, refused) = req.apply(current, &policy);
        if !refused.is_empty() {
            let errors: Vec<FieldError> = refused
                .iter()
                .map(|f| {
                    FieldError::with_code(
                        f,
                        Code::NotificationMandatory,
                        "this kind is mandatory in this workspace (its notification policy); it cannot be switched off",
                    )
                })
                .collect();
            return Err(Error::new(
                Code::NotificationMandatory,
                format!(
                    "{} {} mandatory in this workspace; an owner or admin sets the policy",
                    refused.join(", "),
                    if refused.len() == 1 { "is" } else { "are" }
                ),
            )
            .with_detail("errors", serde_json::to_value(&errors).unwrap_or_default()));
        }
        store::set_preferences(c, &user.user_id, &m.workspace_id, &next, &now)?;
        // New Actions made while muted stay unheard when unmuted.
        match (heard, Route::of(Kind::New, &next, &policy, false).in_app) {
            (true, false) => store::stop_hearing_broadcasts(c, &user.user_id, &m.workspace_id)?,
            (false, true) => {
                store::hear_broadcasts_from_now(c, &user.user_id, &m.workspace_id, &now)?
            }
            _ => {}
        }
        if (next.email, next.email_digest) != (current_email, current_digest) {
            crate::service::notification_mail::retime_digest(
                c,
                &user.user_id,
                &m.workspace_id,
                &next,
                &now,
            )?;
        }
        fx.user_changed(&user.user_id);
        Ok(prefs_out(m.workspace_id, next, &policy, smtp))
    })
    .await
}

/// The policy as shown.
#[derive(Debug, Serialize, ToSchema)]
pub struct PolicyOut {
    pub workspace_id: String,
    pub new_action: NewActionAudience,
    pub email_enabled: bool,
    pub expiry_warning_minutes: i64,
    #[schema(value_type = Vec<String>)]
    pub mandatory: Vec<Kind>,
}

fn policy_out(workspace_id: String, p: Policy) -> PolicyOut {
    PolicyOut {
        workspace_id,
        new_action: p.new_action,
        email_enabled: p.email_enabled,
        expiry_warning_minutes: p.expiry_warning_minutes,
        mandatory: p.mandatory,
    }
}

/// GET /v1/workspaces/notification-policy: any member may read it.
pub async fn policy(s: &Services, user: UserCaller) -> Result<PolicyOut> {
    let m = active(&user)?;
    s.db.read(move |c| {
        Ok(policy_out(
            m.workspace_id.clone(),
            store::policy(c, &m.workspace_id)?,
        ))
    })
    .await
}

/// PATCH /v1/workspaces/notification-policy: owners and admins.
pub async fn update_policy(
    s: &Services,
    user: UserCaller,
    req: WorkspaceNotificationPolicyUpdate,
) -> Result<PolicyOut> {
    let m = active(&user)?;
    let now = time::format(s.clock.now());
    s.write(move |c, fx| {
        let role = crate::store::workspaces::role_of(c, &m.workspace_id, &user.user_id)?
            .ok_or_else(|| {
                Error::new(
                    Code::WorkspaceNotFound,
                    "you are no longer a member of this workspace",
                )
            })?;
        require_manager(
            role,
            access::can_set_notification_policy,
            "the notification policy",
        )?;
        let before = store::policy(c, &m.workspace_id)?;
        let next = req.apply(before.clone()).map_err(|errs| {
            Error::validation(
                errs.into_iter()
                    .map(|(f, msg)| FieldError::new(&f, msg))
                    .collect(),
            )
        })?;
        store::set_policy(c, &m.workspace_id, &next, &user.user_id, &now)?;
        // Members who hear of new Actions again (the kind made mandatory)
        // are not handed those made while they did not, as unread.
        for member in crate::store::workspaces::members(c, &m.workspace_id)? {
            let prefs = store::preferences(c, &member.user_id, &m.workspace_id)?;
            match (
                Route::of(Kind::New, &prefs, &before, false).in_app,
                Route::of(Kind::New, &prefs, &next, false).in_app,
            ) {
                (true, false) => {
                    store::stop_hearing_broadcasts(c, &member.user_id, &m.workspace_id)?
                }
                (false, true) => {
                    store::hear_broadcasts_from_now(c, &member.user_id, &m.workspace_id, &now)?
                }
                _ => {}
            }
        }
        fx.workspace_changed(&m.workspace_id);
        Ok(policy_out(m.workspace_id, next))
    })
    .await
}
