//! Reads the dashboard needs beyond the API's: one Action with what its page
//! shows (history, who may decide, whether its receipt verifies). Pure reads;
//! every rule comes from `actions`, `caller` and `domain`, so the page offers
//! what the API would allow.

use std::collections::HashMap;

use rusqlite::Connection;

use crate::domain::action::{ActionRecord, ActorKind};
use crate::domain::event::HistoryEntry;
use crate::domain::receipt;
use crate::error::{Error, Result};
use crate::service::Services;
use crate::service::actions::{access, access_of};
use crate::service::caller::UserCaller;
use crate::service::inbox::{self, InboxParams};
use crate::store::actions as store;
use crate::store::{events, receipts, sources, users};

/// One Action as its page shows it.
pub struct ActionView {
    pub action: ActionRecord,
    /// Oldest first.
    pub history: Vec<HistoryEntry>,
    /// Whether this user may decide (or vote on) it while it is open; the
    /// service checks again when they do.
    pub may_decide: bool,
    /// Why no decision is offered, when none is (`ActionAccess::why_no_decision`).
    pub no_decision: Option<&'static str>,
    pub source_name: Option<String>,
    /// The run it was raised in: (id, name, status).
    pub run: Option<(String, String, String)>,
    /// Outcome of verifying the receipt's signature against the published
    /// keys, when there is a receipt.
    pub receipt_check: Option<Result<(), String>>,
    /// (user id, vote) of an Action with an approval policy.
    /// Every vote cast on this version: (user id, vote, whether it counts).
    pub votes: Vec<(String, String, bool)>,
    /// E-mail of every user named in the history.
    pub people: HashMap<String, String>,
    /// What this user may do to work on it, and the thread.
    pub work: WorkView,
}

/// The claim, assignment, snooze and comment controls the page offers (the
/// rules of `domain::access`, as the API applies them) and the comments.
pub struct WorkView {
    pub may_claim: bool,
    pub may_assign: bool,
    pub may_snooze: bool,
    pub may_comment: bool,
    /// Withdraw it (an owner or admin, while it is open).
    pub may_withdraw: bool,
    /// May delete others' comments too (owners and admins).
    pub moderates_comments: bool,
    /// Members who may hold it: the assignment select.
    pub assignable: Vec<crate::store::work::Member>,
    /// Oldest first.
    pub comments: Vec<crate::store::work::Comment>,
    /// May press its callback controls now (open, and a working role).
    pub may_invoke: bool,
    /// May ask its Source for context now (open, a working role, and the
    /// Action takes context requests).
    pub may_ask: bool,
    /// Newest first.
    pub control_requests: Vec<crate::domain::requests::ControlRequest>,
    /// A restricted Action's listed reviewers: each member's address (an id
    /// that is no member is shown as it is listed), in the order listed.
    pub reviewers: Option<Vec<String>>,
}

/// The Action `id` if this user may see it (the same rule as GET
/// /v1/actions/{id} for a user, in either environment).
pub async fn action(s: &Services, user: &UserCaller, id: String) -> Result<ActionView> {
    let user = user.clone();
    s.db.read(move |c| {
        let a = store::get(c, &id)?.ok_or_else(Error::action_not_found)?;
        let access = access(&a, &user).ok_or_else(Error::action_not_found)?;
        let may_decide = access.offers_decision();
        let no_decision = access.why_no_decision();
        let history = events::history(c, &a.id)?;
        let receipt_check = match a.receipt.as_ref() {
            Some(r) => Some(check_receipt(c, &r.jws, &a.id)?),
            None => None,
        };
        let people = people_in(c, &history)?;
        let work = work_view(c, &a, access, &user)?;
        let run = match &a.spec.run_id {
            Some(id) => crate::store::runs::name_and_status(c, &a.workspace_id, id)?
                .map(|(name, status)| (id.clone(), name, status)),
            None => None,
        };
        Ok(ActionView {
            work,
            run,
            source_name: sources::name(c, &a.workspace_id, &a.source_id)?,
            votes: crate::service::votes::cast_votes(c, &a)?
                .into_iter()
                .map(|v| (v.user_id, v.vote, v.counts))
                .collect(),
            action: a,
            history,
            may_decide,
            no_decision,
            receipt_check,
            people,
        })
    })
    .await
}

fn work_view(
    c: &Connection,
    a: &ActionRecord,
    acc: crate::domain::access::ActionAccess,
    user: &UserCaller,
) -> Result<WorkView> {
    let open = a.status == crate::domain::action::Status::Open;
    let held_by_other = a.work.assignee.as_ref().is_some_and(|p| {
        p.user_id.as_deref() != Some(user.user_id.as_str())
            && !p
                .email
                .as_deref()
                .is_some_and(|e| e.eq_ignore_ascii_case(&user.email))
    });
    let may_assign = open && acc.can_assign(held_by_other);
    let assignable = if may_assign {
        crate::store::work::members(c, &a.workspace_id)?
            .into_iter()
            .filter(|m| access_of(a, m.role, &m.user_id, &m.email, &m.created_at).can_be_assignee())
            .collect()
    } else {
        Vec::new()
    };
    Ok(WorkView {
        may_claim: open && acc.can_claim() && !held_by_other,
        may_assign,
        may_snooze: open && acc.can_snooze(),
        may_comment: acc.can_comment(),
        may_withdraw: open && acc.can_withdraw(),
        moderates_comments: acc.can_delete_comment(false),
        assignable,
        comments: crate::store::work::comments(c, &a.id)?,
        may_invoke: open && acc.can_invoke_controls(),
        may_ask: open
            && acc.can_ask_for_context()
            && crate::domain::requests::ContextMode::of(a.spec.context_request_mode.as_deref())
                .lists(),
        reviewers: listed_reviewers(c, a)?,
        control_requests: crate::store::requests::controls_of(
            c,
            &a.id,
            None,
            crate::service::controls::LISTED as i64,
        )?,
    })
}

/// The reviewers a restricted Action lists, by address (`None` for a
/// workspace-wide one).
fn listed_reviewers(c: &Connection, a: &ActionRecord) -> Result<Option<Vec<String>>> {
    if a.spec.visibility.as_deref() != Some("restricted") {
        return Ok(None);
    }
    let mut out: Vec<String> = Vec::new();
    for id in a.spec.reviewer_user_ids.iter().flatten() {
        out.push(match crate::store::work::member(c, &a.workspace_id, id)? {
            Some(m) => m.email,
            None => id.clone(),
        });
    }
    for e in a.spec.reviewer_emails.iter().flatten() {
        if !out.iter().any(|x| x.eq_ignore_ascii_case(e)) {
            out.push(e.clone());
        }
    }
    Ok(Some(out))
}

/// Verifies a receipt with the keys this server publishes (any JOSE library
/// given GET /v1/receipts/keys reaches the same answer) and that it is about
/// this Action.
fn check_receipt(c: &Connection, jws: &str, action_id: &str) -> Result<Result<(), String>> {
    let keys = receipts::keys(c)?;
    Ok(receipt::verify(jws, &keys).and_then(|claims| {
        if claims["sub"] == action_id {
            Ok(())
        } else {
            Err("the receipt names another Action".to_owned())
        }
    }))
}

fn people_in(c: &Connection, history: &[HistoryEntry]) -> Result<HashMap<String, String>> {
    let mut people = HashMap::new();
    for ev in history {
        if ev.actor.kind != ActorKind::User {
            continue;
        }
        if let Some(id) = ev.actor.id.as_deref()
            && !people.contains_key(id)
            && let Some(u) = users::by_id(c, id)?
        {
            people.insert(u.id, crate::service::account::shown_address(u.email));
        }
    }
    Ok(people)
}

/// Open live Actions of the active workspace: the number beside "Inbox".
pub async fn open_count(s: &Services, user: &UserCaller) -> Result<i64> {
    open_count_in(s, user, "live").await
}

/// Open Actions of one environment (`live`, `test` or `all`): the inbox
/// shows the nav's number for the environment it lists, so the number and
/// the Open tab agree when test Actions are shown.
pub async fn open_count_in(s: &Services, user: &UserCaller, environment: &str) -> Result<i64> {
    let p = InboxParams {
        environment: Some(environment.to_owned()),
        ..InboxParams::default()
    };
    Ok(inbox::counts(s, user, p, s.clock.now())
        .await?
        .map_or(0, |c| c.open))
}

/// The e-mail addresses of the people who decided these Actions (the
/// inbox's resolved rows say who decided), by user id; a deleted account
/// reads "a deleted account".
pub async fn deciders(s: &Services, actions: &[ActionRecord]) -> Result<HashMap<String, String>> {
    let ids: Vec<String> = actions
        .iter()
        .filter_map(|a| a.resolution.as_ref())
        .filter(|r| r.decided_by.kind == ActorKind::User)
        .filter_map(|r| r.decided_by.id.clone())
        .collect();
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    s.db.read(move |c| {
        let mut people = HashMap::new();
        for id in ids {
            if !people.contains_key(&id)
                && let Some(u) = users::by_id(c, &id)?
                && !u.email.is_empty()
            {
                people.insert(u.id, crate::service::account::shown_address(u.email));
            }
        }
        Ok(people)
    })
    .await
}
