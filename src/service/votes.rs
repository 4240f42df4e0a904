//! Approval votes (guide: "POST /v1/actions/{action_id}/votes"): on an Action with an `approval_policy`,
//! each listed reviewer votes once. `reject_threshold` rejections (default 1)
//! resolve it with the reject choice; `required_approvals` approvals resolve it
//! with the approve choice. The quorum's resolution carries a receipt that lists
//! the votes.

use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::domain::action::{ActionRecord, Actor, Interaction, Resolution};
use crate::domain::approval;
use crate::domain::decision;
use crate::domain::event::ActionEvent;
use crate::domain::{time, words};
use crate::error::{Code, Error, Result};
use crate::service::Services;
use crate::service::actions::{access_now, check_reason, refused};
use crate::service::caller::UserCaller;
use crate::service::decisions::resolve_with_receipt;
use crate::service::effects::{self, On};
use crate::store::{actions as store, votes};

/// POST /v1/actions/{id}/votes
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VoteRequest {
    /// `approve` or `reject`.
    #[schema(schema_with = vote_schema)]
    pub vote: String,
    #[serde(deserialize_with = "crate::domain::strict_json::version")]
    #[schema(minimum = 1)]
    pub action_version: i64,
    #[serde(deserialize_with = "crate::domain::strict_json::fingerprint")]
    #[schema(pattern = "^sha256:[0-9a-f]{64}$")]
    pub fingerprint: String,
    #[serde(default)]
    #[schema(max_length = 2000)]
    pub reason: Option<String>,
}

fn vote_schema() -> utoipa::openapi::Object {
    crate::service::inbox::string_enum(&["approve", "reject"])
}

/// What approve and reject mean on this Action: the first and second option,
/// or true and false.
fn choice(a: &ActionRecord, approve: bool) -> (Option<String>, Option<Value>) {
    if matches!(a.spec.interaction, Some(Interaction::Boolean {})) {
        return (None, Some(json!({ "value": approve })));
    }
    (
        approval::voted_option(&a.spec, approve).and_then(|o| o.id.clone()),
        None,
    )
}

/// The votes so far against the Action's approval policy.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct Tally {
    pub approvals: usize,
    pub rejections: usize,
    pub required_approvals: Option<u32>,
    /// Rejections that close the Action; 1 unless the policy says otherwise.
    pub reject_threshold: Option<u32>,
}

/// A vote's result: the Action as it now is, with the tally; `replayed`
/// when the same vote was cast before.
#[derive(Clone, Debug)]
pub struct Voted {
    pub action: ActionRecord,
    pub tally: Tally,
    pub replayed: bool,
}

/// One vote cast on the Action's version, and whether it counts.
pub(crate) struct CastVote {
    pub user_id: String,
    pub vote: String,
    pub reason: Option<String>,
    pub counts: bool,
}

/// Every vote cast on the Action's version, oldest first, each marked
/// whether it counts. An approval counts unless it was withdrawn: its
/// voter was removed from the workspace, made a viewer, or deleted their
/// account since (`work::release_held`), and it stays withdrawn on this
/// version even if they get a voting role back, so no role change can make
/// a quorum that no vote resolved. A rejection always counts (fail closed):
/// taking a rejecting reviewer's role away must not erase their no.
pub(crate) fn cast_votes(c: &Connection, a: &ActionRecord) -> Result<Vec<CastVote>> {
    Ok(votes::on_version(c, &a.id, a.action_version)?
        .into_iter()
        .map(|v| CastVote {
            counts: v.vote != "approve" || !v.withdrawn,
            user_id: v.user_id,
            vote: v.vote,
            reason: v.reason,
        })
        .collect())
}

/// The votes that count (`cast_votes`), as (user id, vote).
pub(crate) fn counted_votes(c: &Connection, a: &ActionRecord) -> Result<Vec<(String, String)>> {
    Ok(cast_votes(c, a)?
        .into_iter()
        .filter(|v| v.counts)
        .map(|v| (v.user_id, v.vote))
        .collect())
}

fn tally(list: &[(String, String)], a: &ActionRecord) -> Tally {
    let policy = a.spec.approval_policy.as_ref();
    let (approvals, rejections) = approval::count(list);
    Tally {
        approvals,
        rejections,
        required_approvals: policy.map(|p| p.required_approvals),
        reject_threshold: policy.map(|p| p.reject_threshold.unwrap_or(1)),
    }
}

/// One vote as listed: who, what, why, when, and whether it counts.
#[derive(Debug, Serialize, ToSchema)]
pub struct VoteEntry {
    pub user_id: String,
    /// The voter's address now (a deleted account's placeholder).
    pub email: Option<String>,
    pub name: Option<String>,
    /// `approve` or `reject`.
    pub vote: String,
    pub reason: Option<String>,
    /// False for an approval withdrawn because its voter may no longer vote.
    pub counted: bool,
    pub created_at: String,
}

/// GET /v1/actions/{id}/votes: the votes on the Action's current version
/// (for a closed Action, the version it was decided at) and the tally.
#[derive(Debug, Serialize, ToSchema)]
pub struct VoteList {
    pub action_id: String,
    pub action_version: i64,
    /// Null counts of the policy when the Action has none.
    pub tally: Tally,
    /// Oldest first.
    pub votes: Vec<VoteEntry>,
}

/// The votes on an Action the caller may see (guide: "GET /v1/actions/{action_id}/votes").
pub async fn list(s: &Services, user: UserCaller, id: String) -> Result<VoteList> {
    s.db.read(move |c| {
        let a = store::get(c, &id)?
            .filter(|a| crate::service::actions::access(a, &user).is_some())
            .ok_or_else(Error::action_not_found)?;
        let votes: Vec<VoteEntry> = votes::listed(c, &a.id, a.action_version)?
            .into_iter()
            .map(|l| VoteEntry {
                counted: l.vote.vote != "approve" || !l.vote.withdrawn,
                user_id: l.vote.user_id,
                email: l.email,
                name: l.name,
                vote: l.vote.vote,
                reason: l.vote.reason,
                created_at: l.created_at,
            })
            .collect();
        let counted: Vec<(String, String)> = votes
            .iter()
            .filter(|v| v.counted)
            .map(|v| (v.user_id.clone(), v.vote.clone()))
            .collect();
        Ok(VoteList {
            action_id: a.id.clone(),
            action_version: a.action_version,
            tally: tally(&counted, &a),
            votes,
        })
    })
    .await
}

pub async fn cast(s: &Services, user: UserCaller, id: String, req: VoteRequest) -> Result<Voted> {
    if !matches!(req.vote.as_str(), "approve" | "reject") {
        return Err(Error::field("vote", "vote must be `approve` or `reject`"));
    }
    check_reason(&req.reason)?;
    let svc = s.clone();
    let clock_now = s.clock.now();
    s.write(move |c, fx| {
        let a = store::get(c, &id)?.ok_or_else(Error::action_not_found)?;
        // The role as of this transaction, not as of authentication.
        let access = access_now(c, &a, &user)?.ok_or_else(Error::action_not_found)?;
        let Some(policy) = a.spec.approval_policy.clone() else {
            return Err(Error::field(
                "vote",
                "this Action has no approval policy; decide it with POST /v1/actions/{id}/decision",
            ));
        };
        if access.self_approval_forbidden() {
            return Err(Error::self_approval_forbidden());
        }
        if !access.can_vote() {
            return Err(refused(access, "you may see this Action but not vote on it"));
        }
        // A vote counts for the version it was cast on: a retried vote
        // answers as before (even after it closed the Action) only while
        // the Action is still that version; after a material change the
        // binding is stale, and the reviewer votes again on what changed.
        if let Some((v, reason)) = votes::cast(c, &a.id, a.action_version, &user.user_id)? {
            decision::check_binding_to(&a, req.action_version, &req.fingerprint, "vote")?;
            // The same vote with the same reason is a retry; another reason
            // would be dropped unsaid, so it is refused like another vote.
            if v == req.vote && reason != req.reason {
                return Err(Error::new(
                    Code::VoteAlreadyCast,
                    format!(
                        "you already voted `{v}` on version {} of this Action with {}; a vote and its reason are final for a version (add a comment instead)",
                        a.action_version,
                        if reason.is_some() { "another reason" } else { "no reason" }
                    ),
                ));
            }
            if v == req.vote {
                let tally = tally(&counted_votes(c, &a)?, &a);
                return Ok(Voted {
                    action: a,
                    tally,
                    replayed: true,
                });
            }
            return Err(Error::new(
                Code::VoteAlreadyCast,
                format!(
                    "you already voted `{v}` on version {} of this Action; votes are final for a version",
                    a.action_version
                ),
            ));
        }
        let now = time::format(clock_now);
        decision::ensure_open(&a, &now)?;
        decision::check_binding_to(&a, req.action_version, &req.fingerprint, "vote")?;
        // A vote stands for its option: one that needs a reason needs it
        // on the vote too.
        decision::check_vote_reason(&a.spec, &req.vote, req.reason.as_deref())?;
        votes::insert(
            c,
            &votes::NewVote {
                action_id: &a.id,
                action_version: a.action_version,
                user_id: &user.user_id,
                vote: &req.vote,
                reason: req.reason.as_deref(),
                created_at: &now,
            },
        )?;
        if crate::store::notifications::read_about(c, &user.user_id, &a.id, &now)? > 0 {
            fx.user_changed(&user.user_id);
        }
        let event = ActionEvent::VoteCast {
            vote: req.vote.clone(),
            reason: req.reason.clone(),
        };
        effects::record(
            c,
            fx,
            On::of(&a),
            &Actor::user(&user.user_id),
            a.action_version,
            event,
            &now,
        )?;
        let list = counted_votes(c, &a)?;
        let (approvals, rejections) = approval::count(&list);
        let current = match approval::outcome(&policy, approvals, rejections) {
            Some(approved) => {
                let (option_id, response) = choice(&a, approved);
                // Each vote cast on this version with the hash of its
                // reason, as a decision's receipt binds its reason (the
                // quorum's own reason is the tally); one that no longer
                // counts says so (`counted: false`), so the receipt hides
                // no vote that was cast.
                let voted: Vec<Value> = cast_votes(c, &a)?
                    .into_iter()
                    .map(|v| {
                        let mut one = json!({ "user_id": v.user_id, "vote": v.vote });
                        if let Some(r) = v.reason {
                            one["reason_sha256"] = json!(hex::encode(Sha256::digest(r.as_bytes())));
                        }
                        if !v.counts {
                            one["counted"] = json!(false);
                        }
                        one
                    })
                    .collect();
                let reason = format!(
                    "{}, {}",
                    words::count(approvals as i64, "approval", "approvals"),
                    words::count(rejections as i64, "rejection", "rejections")
                );
                let resolution = Resolution {
                    votes: Some(Value::Array(voted)),
                    ..Resolution::chosen(
                        option_id,
                        response,
                        Some(reason),
                        Actor::approval_policy(),
                        now,
                    )
                };
                resolve_with_receipt(c, fx, &svc, &a, resolution, clock_now, Some(&user.user_id))?
            }
            None => store::get(c, &a.id)?.ok_or_else(Error::action_not_found)?,
        };
        let tally = tally(&list, &current);
        Ok(Voted {
            action: current,
            tally,
            replayed: false,
        })
    })
    .await
}
