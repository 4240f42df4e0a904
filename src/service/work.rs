//! Working on an Action (guide: "Claim, assignment, snooze and comments"):
//! claim it, assign it, snooze it, comment on it. Who may do which is asked
//! of `domain::access`; each change is one writer job that records a typed
//! event (`service::effects::record`). None of it touches the binding:
//! `action_version` and `fingerprint` stay as they are.

use serde::{Deserialize, Deserializer};
use serde_json::json;
use utoipa::ToSchema;

use crate::domain::access::{ActionAccess, Role};
use crate::domain::action::{ActionRecord, Actor, Person};
use crate::domain::decision;
use crate::domain::event::ActionEvent;
use crate::domain::{ids, time};
use crate::error::{Code, Error, Result};
use crate::service::Services;
use crate::service::actions::{access_now, access_of, refused};
use crate::service::caller::UserCaller;
use crate::service::effects::{self, On};
use crate::service::notifications;
use crate::store::actions as store;
use crate::store::work::{self, Comment, Member};

/// The longest snooze.
pub const MAX_SNOOZE_DAYS: i64 = 30;
/// The longest comment, in characters.
pub const MAX_COMMENT: usize = 10_000;

/// A field that must be present but may be `null`.
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d)
}

/// PATCH /v1/actions/{id}/assignment: name the assignee by user id or
/// e-mail (both may be given when they name the same member); both null or
/// absent unassigns.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AssignmentUpdate {
    #[serde(default)]
    #[schema(nullable)]
    pub assignee_user_id: Option<String>,
    #[serde(default)]
    #[schema(nullable)]
    pub assignee_email: Option<String>,
}

/// POST /v1/actions/{id}/snooze: `until` an RFC 3339 time in the next 30
/// days, or null to bring the Action back now.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SnoozeRequest {
    #[serde(deserialize_with = "present")]
    #[schema(required = true, nullable, format = DateTime)]
    pub until: Option<String>,
}

/// POST /v1/actions/{id}/comments
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ActionCommentCreate)]
pub struct CommentCreate {
    /// Markdown, 1-10,000 characters, not only blanks. `@name@example.com`
    /// mentions a workspace member.
    #[schema(
        min_length = 1,
        max_length = 10000,
        pattern = "^[^\\u0000]*[^\\u0000 \\t\\n\\r\\u000b\\u000c\\u0085\\u00a0\\u1680\\u2000-\\u200d\\u2028\\u2029\\u202f\\u205f\\u2060\\u3000\\ufeff][^\\u0000]*$"
    )]
    pub body: String,
}

/// The Action after a change, and whether the change was a repeat that
/// changed nothing (a second claim by the same person).
pub struct Worked {
    pub action: ActionRecord,
    pub unchanged: bool,
}

fn forbidden(message: &str, required: Role) -> Error {
    Error::new(Code::Forbidden, message).with_detail("required_role", required.as_str())
}

/// The Action and the caller's relation to it, with their role as of this
/// transaction (`access_now`); 404 when they may not see it.
fn load(
    c: &rusqlite::Connection,
    id: &str,
    user: &UserCaller,
) -> Result<(ActionRecord, ActionAccess)> {
    let a = store::get(c, id)?.ok_or_else(Error::action_not_found)?;
    let acc = access_now(c, &a, user)?.ok_or_else(Error::action_not_found)?;
    Ok((a, acc))
}

fn same_person(p: &Person, user_id: &str, email: &str) -> bool {
    p.user_id.as_deref() == Some(user_id)
        || p.email
            .as_deref()
            .is_some_and(|e| e.eq_ignore_ascii_case(email))
}

fn reread(c: &rusqlite::Connection, id: &str) -> Result<ActionRecord> {
    store::get(c, id)?.ok_or_else(Error::action_not_found)
}

/// POST /v1/actions/{id}/claim: the caller becomes the assignee. Again by
/// the same person: 200, nothing changes.
pub async fn claim(s: &Services, user: UserCaller, id: String) -> Result<Worked> {
    let now = time::format(s.clock.now());
    s.write(move |c, fx| {
        let (a, acc) = load(c, &id, &user)?;
        if acc.self_approval_forbidden() {
            return Err(Error::self_approval_forbidden());
        }
        if !acc.can_claim() {
            return Err(refused(acc, "you may see this Action but not claim it"));
        }
        decision::ensure_open(&a, &now)?;
        let previous = a.work.assignee.clone();
        if let Some(p) = &previous {
            if same_person(p, &user.user_id, &user.email) && p.user_id.is_some() {
                return Ok(Worked {
                    action: a,
                    unchanged: true,
                });
            }
            if !same_person(p, &user.user_id, &user.email) {
                return Err(Error::new(
                    Code::ActionAlreadyClaimed,
                    format!(
                        "{} already holds this Action; ask them to hand it on, or an owner or admin to reassign it",
                        p.name.as_deref().or(p.email.as_deref()).unwrap_or("someone else"),
                    ),
                )
                .with_detail("assignee", json!(p)));
            }
        }
        let me = work::member(c, &a.workspace_id, &user.user_id)?.ok_or_else(Error::action_not_found)?;
        if !work::set_assignee(c, &a.id, Some(&me), &now)? {
            return Err(decision::ensure_open(&reread(c, &a.id)?, &now).err().unwrap_or_else(Error::action_not_found));
        }
        let event = ActionEvent::Claimed {
            previous_user_id: previous.and_then(|p| p.user_id),
        };
        let actor = Actor::user(&user.user_id);
        effects::record(c, fx, On::of(&a), &actor, a.action_version, event, &now)?;
        Ok(Worked {
            action: reread(c, &a.id)?,
            unchanged: false,
        })
    })
    .await
}

/// The member an assignment (or a create) names, checked: a member of the
/// Action's workspace who may decide it. Refusals name the field.
pub(crate) fn assignee_of(
    c: &rusqlite::Connection,
    a: &ActionRecord,
    assignee_user_id: Option<&String>,
    assignee_email: Option<&String>,
) -> Result<Option<Member>> {
    let by_id = match assignee_user_id {
        Some(id) => Some((
            "assignee_user_id",
            id,
            work::member(c, &a.workspace_id, id)?,
        )),
        None => None,
    };
    let by_email = match assignee_email {
        Some(e) => Some((
            "assignee_email",
            e,
            work::member_by_email(c, &a.workspace_id, e)?,
        )),
        None => None,
    };
    let mut found: Option<(&str, Member)> = None;
    for (field, value, member) in [by_id, by_email].into_iter().flatten() {
        let Some(m) = member else {
            // Say what is wrong with the value before sending anyone to
            // invite a person who may already be a member.
            let why = if value.trim() != value.as_str() {
                format!("`{value}` has spaces around it: send the value alone")
            } else if field == "assignee_email" && !crate::domain::validate::looks_like_email(value)
            {
                format!("`{value}` is not an e-mail address such as ana@example.com")
            } else if field == "assignee_user_id" && !crate::domain::ids::is_id(value, "usr") {
                format!("`{value}` is not a user id (usr_ and 26 capitals and digits)")
            } else {
                format!(
                    "`{value}` is not a member of this workspace: invite them first, or leave the Action unassigned for anyone who may decide it to claim"
                )
            };
            return Err(Error::field(field, why));
        };
        if let Some((_, earlier)) = &found
            && earlier.user_id != m.user_id
        {
            return Err(Error::field(
                field,
                "assignee_user_id and assignee_email name two different people; give one",
            ));
        }
        found = Some((field, m));
    }
    let Some((field, m)) = found else {
        return Ok(None);
    };
    let theirs = access_of(a, m.role, &m.user_id, &m.email, &m.created_at);
    if !theirs.can_be_assignee() {
        let why = if m.role == Role::Viewer {
            format!("{} is a viewer and may not decide Actions", m.email)
        } else if theirs.self_approval_forbidden() {
            format!("{} requested this Action and may not decide it", m.email)
        } else {
            format!("{} is not one of this Action's listed reviewers", m.email)
        };
        return Err(Error::field(field, why));
    }
    Ok(Some(m))
}

/// PATCH /v1/actions/{id}/assignment
pub async fn assign(
    s: &Services,
    user: UserCaller,
    id: String,
    req: AssignmentUpdate,
) -> Result<Worked> {
    for (field, v) in [
        ("assignee_user_id", &req.assignee_user_id),
        ("assignee_email", &req.assignee_email),
    ] {
        if v.as_deref()
            .is_some_and(|v| v.is_empty() || v.chars().count() > 254)
        {
            return Err(Error::field(
                field,
                format!("{field} must be 1-254 characters"),
            ));
        }
    }
    let now = time::format(s.clock.now());
    let nctx = notifications::Ctx::of(s);
    s.write(move |c, fx| {
        let (a, acc) = load(c, &id, &user)?;
        let previous = a.work.assignee.clone();
        let held_by_other = previous
            .as_ref()
            .is_some_and(|p| !same_person(p, &user.user_id, &user.email));
        if !acc.can_assign(held_by_other) {
            return Err(if acc.can_work_on() {
                forbidden(
                    "someone else holds this Action; only owners and admins reassign it",
                    Role::Admin,
                )
            } else {
                refused(acc, "you may see this Action but not assign it")
            });
        }
        decision::ensure_open(&a, &now)?;
        let to = assignee_of(
            c,
            &a,
            req.assignee_user_id.as_ref(),
            req.assignee_email.as_ref(),
        )?;
        let unchanged = match (&to, &previous) {
            (None, None) => true,
            (Some(m), Some(p)) => p.user_id.as_deref() == Some(m.user_id.as_str()),
            _ => false,
        };
        if unchanged {
            return Ok(Worked {
                action: a,
                unchanged,
            });
        }
        if !work::set_assignee(c, &a.id, to.as_ref(), &now)? {
            return Err(decision::ensure_open(&reread(c, &a.id)?, &now)
                .err()
                .unwrap_or_else(Error::action_not_found));
        }
        if let Some(m) = &to {
            notifications::assigned(c, fx, &nctx, &a, m, &user.user_id, &now)?;
        }
        let event = ActionEvent::Assigned {
            assignee_user_id: to.map(|m| m.user_id),
            previous_user_id: previous.and_then(|p| p.user_id),
            reason: None,
        };
        let actor = Actor::user(&user.user_id);
        effects::record(c, fx, On::of(&a), &actor, a.action_version, event, &now)?;
        Ok(Worked {
            action: reread(c, &a.id)?,
            unchanged: false,
        })
    })
    .await
}

/// A member whose held Actions a member change releases.
pub(crate) struct Release<'a> {
    pub workspace_id: &'a str,
    pub user_id: &'a str,
    pub email: &'a str,
    /// Their new role; None when they are removed.
    pub role: Option<Role>,
    /// Their role before the change.
    pub old_role: Role,
    /// Who made the change.
    pub by: Actor,
    /// Recorded on each `assigned` event (`member removed`, …).
    pub reason: String,
}

/// Releases the open Actions of the workspace that the member holds (by
/// user id, or by a create-time e-mail no user id overrides) that their old
/// role could hold and their new role may not; removal releases all of them. In the caller's
/// transaction (the member change's), each with an `assigned` event
/// (assignee null) naming the reason; the binding stays as it is. Answers
/// how many.
pub(crate) fn release_held(
    c: &rusqlite::Connection,
    fx: &mut effects::Effects,
    r: &Release,
    now: &str,
) -> Result<usize> {
    // A member change (role, removal, leaving, account deletion): what the
    // workspace's pages and the person's own show changes (tallies, lists,
    // the header's switcher).
    fx.workspace_changed(r.workspace_id);
    fx.user_changed(r.user_id);
    // Approvals of someone who may no longer vote are withdrawn: they
    // count toward no quorum (service::votes::cast_votes).
    if !r.role.is_some_and(crate::domain::access::may_vote) {
        let n = crate::store::votes::withdraw_approvals(c, r.workspace_id, r.user_id, now)?;
        if n > 0 {
            tracing::info!(
                workspace.id = %r.workspace_id,
                user.id = %r.user_id,
                approvals = n,
                reason = %r.reason,
                "approvals withdrawn: their voter may no longer vote"
            );
        }
    }
    let mut released = 0;
    // When their account was made: what its address lists (`access_of`).
    let since = crate::store::users::by_id(c, r.user_id)?
        .map(|u| u.created_at)
        .unwrap_or_default();
    for id in work::held_open(c, r.workspace_id, r.user_id, r.email)? {
        let Some(a) = store::get(c, &id)? else {
            continue;
        };
        // Released only what the change took away: held under the old role,
        // not under the new one. A promotion releases nothing (an admin a
        // Source assigned to an approval-policy Action they are not listed
        // on may not hold it under either role, and keeps it).
        let may_hold =
            |role: Role| access_of(&a, role, r.user_id, r.email, &since).can_be_assignee();
        let keeps = r
            .role
            .is_some_and(|role| may_hold(role) || !may_hold(r.old_role));
        if keeps || !work::set_assignee(c, &a.id, None, now)? {
            continue;
        }
        let event = ActionEvent::Assigned {
            assignee_user_id: None,
            previous_user_id: Some(r.user_id.to_owned()),
            reason: Some(r.reason.clone()),
        };
        effects::record(c, fx, On::of(&a), &r.by, a.action_version, event, now)?;
        released += 1;
    }
    Ok(released)
}

/// `until` as stored (UTC, milliseconds, so text order is time order), after
/// checking it is in the future and at most 30 days away.
fn snooze_until(raw: &str, now: time::Timestamp) -> Result<String> {
    let Some(t) = time::parse(raw) else {
        return Err(Error::field(
            "until",
            "until must be an RFC 3339 time with an offset, e.g. 2026-11-24T09:00:00Z",
        ));
    };
    if t <= now {
        return Err(Error::field(
            "until",
            "until must be in the future; send null to un-snooze",
        ));
    }
    if t > now + ::time::Duration::days(MAX_SNOOZE_DAYS) {
        return Err(Error::field(
            "until",
            format!("until must be at most {MAX_SNOOZE_DAYS} days ahead"),
        ));
    }
    Ok(time::format(t))
}

/// POST /v1/actions/{id}/snooze. Snoozing to the time it already has, or
/// un-snoozing an Action that is not snoozed, changes nothing.
pub async fn snooze(
    s: &Services,
    user: UserCaller,
    id: String,
    req: SnoozeRequest,
) -> Result<Worked> {
    let clock_now = s.clock.now();
    let until = req
        .until
        .as_deref()
        .map(|u| snooze_until(u, clock_now))
        .transpose()?;
    let now = time::format(clock_now);
    s.write(move |c, fx| {
        let (a, acc) = load(c, &id, &user)?;
        if !acc.can_snooze() {
            return Err(refused(acc, "you may see this Action but not snooze it"));
        }
        decision::ensure_open(&a, &now)?;
        // Snoozed past its expiry, it would expire out of everyone's sight.
        if let (Some(u), Some(expires)) = (until.as_deref(), a.spec.expires_at.as_deref())
            && let (Some(u_at), Some(e_at)) = (time::parse(u), time::parse(expires))
            && u_at >= e_at
        {
            return Err(Error::field(
                "until",
                format!(
                    "this Action expires at {expires}, and a snooze must end before that (not {u}): snooze it until an earlier time, or leave it in the inbox"
                ),
            )
            .with_detail("expires_at", expires));
        }
        // Nothing to change: the same time again, or un-snoozing an Action
        // that is not snoozed (never, or its time has passed). Answered as
        // a repeated claim is: 200, `idempotent_replay`, no event, no
        // `updated_at` bump.
        let snoozed_now = a.snoozed_until.as_deref().filter(|t| *t > now.as_str());
        let unchanged = match until.as_deref() {
            Some(u) => a.snoozed_until.as_deref() == Some(u),
            None => snoozed_now.is_none(),
        };
        if unchanged {
            return Ok(Worked {
                action: a,
                unchanged: true,
            });
        }
        if !work::set_snooze(c, &a.id, until.as_deref(), &now)? {
            return Err(decision::ensure_open(&reread(c, &a.id)?, &now)
                .err()
                .unwrap_or_else(Error::action_not_found));
        }
        notifications::snoozed(c, &a, until.as_deref(), &user.user_id)?;
        let event = ActionEvent::Snoozed {
            until,
            reason: None,
        };
        let actor = Actor::user(&user.user_id);
        effects::record(c, fx, On::of(&a), &actor, a.action_version, event, &now)?;
        Ok(Worked {
            action: reread(c, &a.id)?,
            unchanged: false,
        })
    })
    .await
}

/// GET /v1/actions/{id}/comments: oldest first, for anyone who sees the Action.
pub async fn comments(s: &Services, user: UserCaller, id: String) -> Result<Vec<Comment>> {
    s.db.read(move |c| {
        let (a, _) = load(c, &id, &user)?;
        work::comments(c, &a.id)
    })
    .await
}

/// The e-mail addresses a comment @mentions (`@ada@example.com`), in order,
/// each once. A mention starts a word; trailing punctuation is not part of
/// it; one in code (backticks, a code block) is an example, not a mention.
pub fn mentioned_emails(body: &str) -> Vec<String> {
    let prose = crate::domain::words::markdown_prose(body);
    mentions_in(&prose)
}

fn mentions_in(body: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut prev: Option<char> = None;
    for (i, ch) in body.char_indices() {
        let starts_word = prev.is_none_or(|p| p.is_whitespace() || "([{<,;:\"'".contains(p));
        prev = Some(ch);
        if ch != '@' || !starts_word {
            continue;
        }
        let rest = &body[i + 1..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || "._%+-@".contains(c)))
            .unwrap_or(rest.len());
        let candidate = rest[..end].trim_end_matches(['.', '-']);
        let mut parts = candidate.split('@');
        let ok = matches!((parts.next(), parts.next(), parts.next()),
            (Some(l), Some(d), None) if !l.is_empty() && d.contains('.') && !d.starts_with('.'));
        let lower = candidate.to_ascii_lowercase();
        if ok && !out.contains(&lower) {
            out.push(lower);
            // Each is looked up in the write: a bound keeps one comment cheap.
            if out.len() == MAX_MENTIONS {
                break;
            }
        }
    }
    out
}

/// Mentions read from one comment; later ones are ignored (guide).
pub const MAX_MENTIONS: usize = 50;

fn check_comment(body: &str) -> Result<()> {
    // Blank: white space and the characters that render as nothing (soft
    // hyphen, zero-width space and joiners, BOM, blank letters, …).
    if crate::domain::validate::says_nothing(body) {
        return Err(Error::field(
            "body",
            "body must not be empty or only blanks",
        ));
    }
    // The API's strict JSON refuses NUL before this; the dashboard's form
    // does not, and a stored NUL would break the schema GET promises.
    if body.contains('\0') {
        return Err(Error::field("body", "body must not contain NUL characters"));
    }
    // Read by the other reviewers: a direction control would make it read
    // otherwise than it was written, as in a Source's text.
    if crate::domain::validate::has_direction_override(body) {
        return Err(Error::field(
            "body",
            crate::domain::validate::direction_refused("body"),
        ));
    }
    let n = body.chars().count();
    if n > MAX_COMMENT {
        return Err(Error::field(
            "body",
            format!("body is {n} characters; the limit is {MAX_COMMENT}"),
        ));
    }
    Ok(())
}

/// POST /v1/actions/{id}/comments: on open and closed Actions alike. Only
/// members of the Action's workspace count as mentions.
pub async fn add_comment(
    s: &Services,
    user: UserCaller,
    id: String,
    req: CommentCreate,
) -> Result<Comment> {
    check_comment(&req.body)?;
    let emails = mentioned_emails(&req.body);
    let now = time::format(s.clock.now());
    let nctx = notifications::Ctx::of(s);
    s.write(move |c, fx| {
        let (a, acc) = load(c, &id, &user)?;
        if !acc.can_comment() {
            return Err(refused(
                acc,
                "you may read this Action's comments but not write one",
            ));
        }
        let mut mentions = Vec::new();
        for e in &emails {
            if let Some(m) = work::member_by_email(c, &a.workspace_id, e)?
                && !mentions.contains(&m.user_id)
            {
                mentions.push(m.user_id);
            }
        }
        let author = work::member(c, &a.workspace_id, &user.user_id)?;
        let cm = Comment {
            id: ids::new_id(ids::COMMENT),
            action_id: a.id.clone(),
            author_user_id: user.user_id.clone(),
            author_email: author
                .as_ref()
                .map_or_else(|| user.email.clone(), |m| m.email.clone()),
            author_name: author.and_then(|m| m.name),
            body: req.body,
            mentions: mentions.clone(),
            created_at: now.clone(),
            edited_at: None,
        };
        work::insert_comment(c, &cm)?;
        notifications::commented(c, fx, &nctx, &a, &cm, &now)?;
        let event = ActionEvent::Commented {
            comment_id: cm.id.clone(),
            mentions,
        };
        let actor = Actor::user(&user.user_id);
        effects::record(c, fx, On::of(&a), &actor, a.action_version, event, &now)?;
        Ok(cm)
    })
    .await
}

fn comment_not_found() -> Error {
    Error::new(
        Code::CommentNotFound,
        "no comment with that id on this Action (it may have been deleted)",
    )
}

/// The members of the Action's workspace that `body` @mentions.
fn member_mentions(c: &rusqlite::Connection, ws: &str, body: &str) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for e in mentioned_emails(body) {
        if let Some(m) = work::member_by_email(c, ws, &e)?
            && !out.contains(&m.user_id)
        {
            out.push(m.user_id);
        }
    }
    Ok(out)
}

/// PATCH /v1/actions/{id}/comments/{comment_id}: its author changes the
/// body, on open and closed Actions alike. The same body again changes
/// nothing (`unchanged`). Members the new body mentions that the old one
/// did not hear `action.mentioned`.
pub async fn edit_comment(
    s: &Services,
    user: UserCaller,
    id: String,
    comment_id: String,
    req: CommentCreate,
) -> Result<(Comment, bool)> {
    check_comment(&req.body)?;
    let now = time::format(s.clock.now());
    let nctx = notifications::Ctx::of(s);
    s.write(move |c, fx| {
        let (a, acc) = load(c, &id, &user)?;
        let mut cm = work::comment(c, &a.id, &comment_id)?.ok_or_else(comment_not_found)?;
        let is_author = cm.author_user_id == user.user_id;
        if !acc.can_edit_comment(is_author) {
            return Err(if is_author {
                refused(
                    acc,
                    "you may no longer write comments on this Action, so you may not edit yours",
                )
            } else {
                Error::new(Code::Forbidden, "only its author edits a comment")
            });
        }
        if cm.body == req.body {
            return Ok((cm, true));
        }
        // Only those never mentioned by this comment before are told: a
        // mention removed and written again is not news. The stored list
        // keeps everyone it ever mentioned.
        let now_mentioned = member_mentions(c, &a.workspace_id, &req.body)?;
        let added: Vec<String> = now_mentioned
            .iter()
            .filter(|m| !cm.mentions.contains(m))
            .cloned()
            .collect();
        let mut mentions = cm.mentions.clone();
        mentions.extend(added.iter().cloned());
        work::edit_comment(c, &cm.id, &req.body, &mentions, &now)?;
        notifications::requote_comment(c, &a, &cm.body, Some(&req.body))?;
        cm.body = req.body;
        cm.mentions = mentions;
        cm.edited_at = Some(now.clone());
        notifications::comment_edited(c, fx, &nctx, &a, &cm, &added, &now)?;
        let event = ActionEvent::CommentEdited {
            comment_id: cm.id.clone(),
            mentions: added,
        };
        let actor = Actor::user(&user.user_id);
        effects::record(c, fx, On::of(&a), &actor, a.action_version, event, &now)?;
        Ok((cm, false))
    })
    .await
}

/// DELETE /v1/actions/{id}/comments/{comment_id}: its author, or an owner
/// or admin, removes it (body and all); the history keeps that it was there.
pub async fn delete_comment(
    s: &Services,
    user: UserCaller,
    id: String,
    comment_id: String,
) -> Result<()> {
    let now = time::format(s.clock.now());
    s.write(move |c, fx| {
        let (a, acc) = load(c, &id, &user)?;
        let cm = work::comment(c, &a.id, &comment_id)?.ok_or_else(comment_not_found)?;
        let is_author = cm.author_user_id == user.user_id;
        if !acc.can_delete_comment(is_author) {
            return Err(if is_author {
                refused(
                    acc,
                    "you may no longer write comments on this Action, so you may not delete yours",
                )
            } else {
                Error::new(
                    Code::Forbidden,
                    "only its author, or an owner or admin, deletes a comment",
                )
                .with_detail("required_role", Role::Admin.as_str())
            });
        }
        work::delete_comment(c, &cm.id)?;
        notifications::requote_comment(c, &a, &cm.body, None)?;
        let event = ActionEvent::CommentDeleted {
            comment_id: cm.id.clone(),
        };
        let actor = Actor::user(&user.user_id);
        effects::record(c, fx, On::of(&a), &actor, a.action_version, event, &now)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_addresses_that_start_a_word() {
        assert_eq!(
            mentioned_emails(
                "cc @Ada@Example.com, (@bob@e.org). not me@x.com @nope @ada@example.com"
            ),
            vec!["ada@example.com", "bob@e.org"]
        );
        assert_eq!(
            mentioned_emails(
                "`@ci@example.com` runs it\n\n    @indented@example.com\n\n@ops@example.com"
            ),
            vec!["ops@example.com"]
        );
    }

    #[test]
    fn snoozes_are_future_and_within_thirty_days() {
        let now = time::parse("2026-11-23T10:00:00Z").unwrap();
        assert_eq!(
            snooze_until("2026-11-24T10:00:00+01:00", now).unwrap(),
            "2026-11-24T09:00:00.000Z"
        );
        assert!(snooze_until("2026-11-23T09:00:00Z", now).is_err());
        assert!(snooze_until("2026-12-24T10:00:00Z", now).is_err());
        assert!(snooze_until("tomorrow", now).is_err());
    }
}
