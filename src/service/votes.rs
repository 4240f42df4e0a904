//! Approval votes (SPEC §3.1 rule 6): on an Action with an `approval_policy`,
//! each listed reviewer votes once. `reject_threshold` rejections (default 1)
//! resolve it with the reject choice; `required_approvals` approvals resolve it
//! with the approve choice. The quorum's resolution carries a receipt that lists
//! the votes.

use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::domain::action::{ActionRecord, Actor, Interaction, Resolution};
use crate::domain::decision;
use crate::domain::time;
use crate::error::{Code, Error, Result};
use crate::service::Services;
use crate::service::actions::{check_reason, envelope, is_listed_reviewer, user_role};
use crate::service::caller::{UserCaller, can_decide};
use crate::service::decisions::resolve_with_receipt;
use crate::service::idempotency::Reply;
use crate::store::{actions as store, votes};

/// POST /v1/actions/{id}/votes
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VoteRequest {
    /// `approve` or `reject`.
    pub vote: String,
    pub action_version: i64,
    pub fingerprint: String,
    #[serde(default)]
    pub reason: Option<String>,
}

/// What approve and reject mean on this Action: the first and second option,
/// or true and false.
fn choice(a: &ActionRecord, approve: bool) -> (Option<String>, Option<Value>) {
    if matches!(a.spec.interaction, Some(Interaction::Boolean)) {
        return (None, Some(json!({ "value": approve })));
    }
    let idx = usize::from(!approve);
    (
        a.spec
            .options
            .as_ref()
            .and_then(|o| o.get(idx))
            .and_then(|o| o.id.clone()),
        None,
    )
}

fn tally(list: &[(String, String)], a: &ActionRecord) -> Value {
    let policy = a.spec.approval_policy.as_ref();
    json!({
        "approvals": list.iter().filter(|(_, v)| v == "approve").count(),
        "rejections": list.iter().filter(|(_, v)| v == "reject").count(),
        "required_approvals": policy.map(|p| p.required_approvals),
        "reject_threshold": policy.map(|p| p.reject_threshold.unwrap_or(1)),
    })
}

pub async fn cast(s: &Services, user: UserCaller, id: String, req: VoteRequest) -> Result<Reply> {
    if !matches!(req.vote.as_str(), "approve" | "reject") {
        return Err(Error::field("vote", "vote must be `approve` or `reject`"));
    }
    check_reason(&req.reason)?;
    let svc = s.clone();
    let reply = s
        .db
        .write(move |c| {
            let a = store::get(c, &id)?.ok_or_else(Error::action_not_found)?;
            let role = user_role(&a, &user).ok_or_else(Error::action_not_found)?;
            let Some(policy) = a.spec.approval_policy.clone() else {
                return Err(Error::field("vote", "this Action has no approval policy; decide it with POST /v1/actions/{id}/decision"));
            };
            if !is_listed_reviewer(&a, &user) || !can_decide(&role) {
                return Err(Error::new(Code::Forbidden, "only the Action's listed reviewers with a deciding role vote"));
            }
            // A retried vote answers as before, even after it closed the Action.
            match votes::of_user(c, &a.id, &user.user_id)? {
                Some(v) if v == req.vote => {
                    let mut body = envelope(&a, true);
                    body["tally"] = tally(&votes::all(c, &a.id)?, &a);
                    return Ok(Reply { status: 200, body, replayed: true });
                }
                Some(v) => {
                    return Err(Error::new(Code::VoteAlreadyCast, format!("you already voted `{v}` on this Action; votes are final")));
                }
                None => {}
            }
            decision::ensure_open(&a)?;
            decision::check_binding(&a, Some(req.action_version), Some(&req.fingerprint))?;
            let now = time::format(time::now());
            votes::insert(c, &a.id, &user.user_id, &req.vote, req.reason.as_deref(), &now)?;
            store::add_event(c, &a.id, "vote_cast", &Actor::user(&user.user_id), a.action_version, &json!({ "vote": req.vote }), &now)?;
            let list = votes::all(c, &a.id)?;
            let rejections = list.iter().filter(|(_, v)| v == "reject").count();
            let approvals = list.len() - rejections;
            let outcome = if rejections >= policy.reject_threshold.unwrap_or(1) as usize {
                Some(false)
            } else if approvals >= policy.required_approvals as usize {
                Some(true)
            } else {
                None
            };
            let current = match outcome {
                Some(approved) => {
                    let (option_id, response) = choice(&a, approved);
                    let voted: Vec<Value> = list.iter().map(|(u, v)| json!({ "user_id": u, "vote": v })).collect();
                    let resolution = Resolution {
                        option_id,
                        response,
                        reason: Some(format!("{approvals} approval(s), {rejections} rejection(s)")),
                        decided_by: Actor::approval_policy(),
                        decided_at: now,
                        votes: Some(Value::Array(voted)),
                    };
                    resolve_with_receipt(c, &svc, &a, resolution)?
                }
                None => store::get(c, &a.id)?.ok_or_else(Error::action_not_found)?,
            };
            let mut body = envelope(&current, false);
            body["tally"] = tally(&list, &current);
            Ok(Reply { status: 200, body, replayed: false })
        })
        .await?;
    if let Some(id) = reply.body["data"]["id"]
        .as_str()
        .filter(|_| reply.body["data"]["status"] != "open")
    {
        s.waiters.wake(id);
        s.changed();
    }
    Ok(reply)
}
