//! Terminal transitions and what follows them: decide, resolve, cancel,
//! expire (with receipts where something was decided) and the execution
//! outcome. Each is one compare-and-set in the writer's transaction; the first
//! wins, and long polls are woken only after the commit.

use rusqlite::Connection;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::domain::action::{ActionRecord, Actor, Outcome, Resolution, Status};
use crate::domain::decision;
use crate::domain::event::ActionEvent;
use crate::domain::receipt::{self, ChainLink};
use crate::domain::strict_json;
use crate::domain::{ids, time};
use crate::error::{Code, Error, Result};
use crate::service::Services;
use crate::service::actions::{access_now, check_reason, envelope, owned};
use crate::service::caller::{SourceCaller, UserCaller};
use crate::service::effects::{self, Effects, On};
use crate::service::idempotency::{self, Reply};
use crate::service::notifications;
use crate::store::{actions as store, receipts as receipt_store};

/// POST /v1/actions/{id}/decision
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionRequest {
    #[serde(deserialize_with = "strict_json::version")]
    #[schema(minimum = 1)]
    pub action_version: i64,
    #[serde(deserialize_with = "strict_json::fingerprint")]
    #[schema(pattern = "^sha256:[0-9a-f]{64}$")]
    pub fingerprint: String,
    #[serde(default)]
    pub option_id: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub response: Option<Value>,
    #[serde(default)]
    #[schema(max_length = 2000)]
    pub reason: Option<String>,
}

/// POST /v1/actions/{id}/resolve. The binding is optional for a Source.
#[derive(Debug, Default, Deserialize, ToSchema, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ResolveRequest {
    #[serde(default)]
    pub option_id: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub response: Option<Value>,
    #[serde(default, deserialize_with = "strict_json::optional_version")]
    #[schema(minimum = 1)]
    pub action_version: Option<i64>,
    #[serde(default, deserialize_with = "strict_json::optional_fingerprint")]
    #[schema(pattern = "^sha256:[0-9a-f]{64}$")]
    pub fingerprint: Option<String>,
    #[serde(default)]
    #[schema(max_length = 2000)]
    pub reason: Option<String>,
}

/// POST /v1/actions/{id}/cancel
#[derive(Debug, Default, Deserialize, ToSchema, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct CancelRequest {
    #[serde(default)]
    #[schema(max_length = 2000)]
    pub reason: Option<String>,
}

/// POST /v1/actions/{id}/outcome
#[derive(Debug, Deserialize, ToSchema, serde::Serialize)]
#[serde(deny_unknown_fields)]
#[schema(as = ActionOutcomeReport)]
pub struct OutcomeReport {
    /// `success` or `failed`.
    #[schema(schema_with = outcome_status_schema)]
    pub status: String,
    #[serde(deserialize_with = "strict_json::integer")]
    pub duration_ms: u64,
    #[serde(default)]
    pub rollback: bool,
    #[serde(deserialize_with = "strict_json::version")]
    #[schema(minimum = 1)]
    pub action_version: i64,
    #[serde(deserialize_with = "strict_json::fingerprint")]
    #[schema(pattern = "^sha256:[0-9a-f]{64}$")]
    pub fingerprint: String,
    #[serde(default)]
    #[schema(max_length = 2000)]
    pub message: Option<String>,
}

fn outcome_status_schema() -> utoipa::openapi::Object {
    crate::service::inbox::string_enum(&["success", "failed"])
}

/// Closes an open Action as resolved and issues its receipt, in the caller's
/// transaction. Fails with ACTION_NOT_OPEN when someone else closed it first.
pub(crate) fn resolve_with_receipt(
    c: &Connection,
    fx: &mut Effects,
    s: &Services,
    a: &ActionRecord,
    resolution: Resolution,
    now: time::Timestamp,
    closer: Option<&str>,
) -> Result<ActionRecord> {
    // What can fail without a fault of the database (the signing key's file)
    // is read before the first write, so a decision changes nothing when it
    // fails (`Services::write_checks_first`).
    let (kid, key) = s.keyring.active(c)?;
    let link = match receipt_store::chain_head(c)? {
        Some((seq, jws)) => ChainLink {
            seq: seq + 1,
            prev: Some(receipt::chain_hash(&jws)),
        },
        None => ChainLink { seq: 1, prev: None },
    };
    if !store::close(c, &a.id, Status::Resolved, &resolution)? {
        return Err(decision::ensure_open(
            &store::get(c, &a.id)?.ok_or_else(Error::action_not_found)?,
            &time::format(now),
        )
        .err()
        .unwrap_or_else(Error::action_not_found));
    }
    let at = &resolution.decided_at;
    let how = notifications::Closed {
        status: Status::Resolved,
        resolution: &resolution,
        closer,
        revoked_by: None,
    };
    notifications::action_closed(c, fx, s, a, how, at)?;
    // The receipt is built from the Action as `store::get` reads it back
    // (people completed from the members), whoever closed it: a person, a
    // quorum or the expiry pass. `a` is only the caller's earlier copy.
    let mut closed = store::get(c, &a.id)?.ok_or_else(Error::action_not_found)?;
    let receipt_id = ids::new_id(ids::RECEIPT);
    let claims = receipt::claims(
        &s.config.base_url,
        &receipt_id,
        &closed,
        &resolution,
        now.unix_timestamp(),
        &link,
    );
    let jws = receipt::sign(&key, &kid, &claims);
    receipt_store::insert(
        c,
        &receipt_id,
        link.seq,
        &a.id,
        &kid,
        &jws,
        &resolution.decided_at,
    )?;
    store::set_receipt(c, &a.id, &receipt_id)?;
    let event = ActionEvent::Resolved {
        option_id: resolution.option_id.clone(),
        response: resolution.response.clone(),
        receipt_id: receipt_id.clone(),
        reason: resolution.reason.clone(),
    };
    closed.receipt = Some(receipt::receipt_object(&receipt_id, &kid, &jws, &claims));
    let (actor, at) = (&resolution.decided_by, &resolution.decided_at);
    effects::record_closed(c, fx, &closed, actor, a.action_version, event, at)?;
    Ok(closed)
}

/// POST /v1/actions/{id}/decision by a signed-in reviewer.
pub async fn decide(
    s: &Services,
    user: UserCaller,
    id: String,
    req: DecisionRequest,
) -> Result<ActionRecord> {
    check_reason(&req.reason)?;
    let svc = s.clone();
    let now = s.clock.now();
    // Every check comes before the first write (`resolve_with_receipt`).
    s.write_checks_first(move |c, fx| decide_in(c, fx, &svc, &user, &id, req, now))
        .await
}

/// One reviewer's decision inside the caller's transaction: the rules of
/// POST /v1/actions/{id}/decision, shared by the batch route (`batch`).
pub(crate) fn decide_in(
    c: &Connection,
    fx: &mut Effects,
    svc: &Services,
    user: &UserCaller,
    id: &str,
    req: DecisionRequest,
    now: time::Timestamp,
) -> Result<ActionRecord> {
    let a = store::get(c, id)?.ok_or_else(Error::action_not_found)?;
    // The role as of this transaction, not as of authentication.
    let access = access_now(c, &a, user)?.ok_or_else(Error::action_not_found)?;
    if access.self_approval_forbidden() {
        return Err(Error::self_approval_forbidden());
    }
    if !access.can_decide() {
        return Err(crate::service::actions::refused(
            access,
            "you may see this Action but not decide it",
        ));
    }
    decision::ensure_open(&a, &time::format(now))?;
    if a.spec.approval_policy.is_some() {
        return Err(Error::new(
            Code::ApprovalVoteRequired,
            "this Action has an approval policy: vote with POST /v1/actions/{id}/votes",
        ));
    }
    decision::check_binding(&a, Some(req.action_version), Some(&req.fingerprint))?;
    let (option_id, response) =
        decision::check_choice(&a.spec, req.option_id.as_deref(), req.response.as_ref())?;
    decision::check_reason_given(&a.spec, option_id.as_deref(), req.reason.as_deref())?;
    let resolution = Resolution::chosen(
        option_id,
        response,
        req.reason,
        Actor::user(&user.user_id),
        time::format(now),
    );
    let done = resolve_with_receipt(c, fx, svc, &a, resolution, now, None)?;
    // What told them of it is done with (as GitHub marks a thread read
    // when you act on it).
    if crate::store::notifications::read_about(c, &user.user_id, &a.id, &time::format(now))? > 0 {
        fx.user_changed(&user.user_id);
    }
    Ok(done)
}

/// POST /v1/actions/{id}/resolve by the owning Source.
pub async fn resolve(
    s: &Services,
    src: SourceCaller,
    id: String,
    req: ResolveRequest,
    key: Option<String>,
) -> Result<Reply> {
    check_reason(&req.reason)?;
    let route = format!("POST /v1/actions/{id}/resolve");
    let svc = s.clone();
    let owner = src.clone();
    let request = serde_json::to_value(&req)?;
    let now = s.clock.now();
    idempotency::write(s, &owner, key, &route, request, now, move |c, fx| {
        let a = owned(c, &src, &id)?;
        decision::ensure_open(&a, &time::format(now))?;
        decision::check_binding(&a, req.action_version, req.fingerprint.as_deref())?;
        let (option_id, response) =
            decision::check_choice(&a.spec, req.option_id.as_deref(), req.response.as_ref())?;
        decision::check_reason_given(&a.spec, option_id.as_deref(), req.reason.as_deref())?;
        let resolution = Resolution::chosen(
            option_id,
            response,
            req.reason,
            Actor::source(&src.source_id),
            time::format(now),
        );
        let closed = resolve_with_receipt(c, fx, &svc, &a, resolution, now, None)?;
        Ok((200, envelope(&closed, false)))
    })
    .await
}

/// Closes an open Action as `cancelled` by `actor`, compare-and-set: its
/// requester and assignee hear `action.closed`, and the `cancelled` event
/// (history, the Source's webhook, long polls) is recorded. No receipt.
fn cancel_open(
    c: &Connection,
    fx: &mut Effects,
    svc: &Services,
    a: &ActionRecord,
    actor: Actor,
    reason: Option<String>,
    now: String,
) -> Result<()> {
    let resolution = Resolution::without_choice(reason.clone(), actor.clone(), now);
    if !store::close(c, &a.id, Status::Cancelled, &resolution)? {
        return Err(Error::new(
            Code::ActionNotOpen,
            "the Action was closed by another request",
        ));
    }
    let at = &resolution.decided_at;
    let how = notifications::Closed {
        status: Status::Cancelled,
        resolution: &resolution,
        closer: None,
        revoked_by: None,
    };
    notifications::action_closed(c, fx, svc, a, how, at)?;
    let event = ActionEvent::Cancelled { reason };
    effects::record(c, fx, On::of(a), &actor, a.action_version, event, at)
}

/// POST /v1/actions/{id}/cancel by the owning Source. No receipt: nothing was decided.
pub async fn cancel(
    s: &Services,
    src: SourceCaller,
    id: String,
    req: CancelRequest,
    key: Option<String>,
) -> Result<Reply> {
    check_reason(&req.reason)?;
    let route = format!("POST /v1/actions/{id}/cancel");
    let owner = src.clone();
    let request = serde_json::to_value(&req)?;
    let clock_now = s.clock.now();
    let now = time::format(clock_now);
    let svc = s.clone();
    idempotency::write(s, &owner, key, &route, request, clock_now, move |c, fx| {
        let a = owned(c, &src, &id)?;
        decision::ensure_open(&a, &now)?;
        let actor = Actor::source(&src.source_id);
        cancel_open(c, fx, &svc, &a, actor, req.reason, now)?;
        let closed = store::get(c, &a.id)?.ok_or_else(Error::action_not_found)?;
        Ok((200, envelope(&closed, false)))
    })
    .await
}

/// POST /v1/actions/{id}/withdraw by an owner or admin: the Action closes
/// as `cancelled` (no receipt: nothing was decided), with the person as the
/// actor; the Source hears `action.cancelled` as when it cancels.
pub async fn withdraw(
    s: &Services,
    user: UserCaller,
    id: String,
    req: CancelRequest,
) -> Result<ActionRecord> {
    check_reason(&req.reason)?;
    let svc = s.clone();
    let now = time::format(s.clock.now());
    s.write(move |c, fx| {
        let a = store::get(c, &id)?.ok_or_else(Error::action_not_found)?;
        // The role as of this transaction, not as of authentication.
        let access = access_now(c, &a, &user)?.ok_or_else(Error::action_not_found)?;
        if !access.can_withdraw() {
            use crate::domain::access::{Role, manages_workspace};
            return Err(if manages_workspace(access.role) {
                Error::new(
                    Code::Forbidden,
                    "this Action is restricted to its listed reviewers: only an owner or admin listed on it withdraws it (or revoke its Source)",
                )
                .with_detail("listed", false)
            } else {
                Error::new(
                    Code::Forbidden,
                    "only the workspace's owners and admins withdraw a request",
                )
                .with_detail("required_role", Role::Admin.as_str())
            });
        }
        decision::ensure_open(&a, &now)?;
        let actor = Actor::user(&user.user_id);
        cancel_open(c, fx, &svc, &a, actor, req.reason, now.clone())?;
        // What told them of it is done with, as after a decision.
        if crate::store::notifications::read_about(c, &user.user_id, &a.id, &now)? > 0 {
            fx.user_changed(&user.user_id);
        }
        store::get(c, &a.id)?.ok_or_else(Error::action_not_found)
    })
    .await
}

/// POST /v1/actions/{id}/outcome: one immutable outcome per resolved Action. An
/// exact retry returns the recorded outcome; a different one is refused.
pub async fn report_outcome(
    s: &Services,
    src: SourceCaller,
    id: String,
    req: OutcomeReport,
    key: Option<String>,
) -> Result<Reply> {
    if !matches!(req.status.as_str(), "success" | "failed") {
        return Err(Error::field(
            "status",
            "status must be `success` or `failed`",
        ));
    }
    crate::service::actions::check_note("message", req.message.as_deref())?;
    let route = format!("POST /v1/actions/{id}/outcome");
    let owner = src.clone();
    let request = serde_json::to_value(&req)?;
    let clock_now = s.clock.now();
    let now = time::format(clock_now);
    let nctx = notifications::Ctx::of(s);
    idempotency::write(s, &owner, key, &route, request, clock_now, move |c, fx| {
        // A key checked before a revocation committed records nothing after it.
        crate::service::sources::check_not_revoked(c, &src.source_id)?;
        let a = owned(c, &src, &id)?;
        if a.status != Status::Resolved {
            return Err(Error::new(
                Code::ActionNotResolved,
                format!(
                    "Action {} is {}; an outcome can be reported only for a resolved Action",
                    a.id,
                    a.status.as_str()
                ),
            )
            .with_detail("status", a.status.as_str()));
        }
        decision::check_decided_binding(&a, Some(req.action_version), Some(&req.fingerprint))?;
        let outcome = Outcome {
            status: req.status,
            duration_ms: req.duration_ms,
            rollback: req.rollback,
            action_version: req.action_version,
            fingerprint: req.fingerprint,
            message: req.message,
            reported_at: now.clone(),
        };
        if let Some(existing) = &a.outcome {
            if existing.same_report(&outcome) {
                return Ok((201, envelope(&a, true)));
            }
            return Err(Error::new(
                Code::OutcomeAlreadyReported,
                "a different outcome was already reported for this Action; outcomes are immutable",
            )
            .with_detail("outcome", serde_json::to_value(existing)?));
        }
        if !store::set_outcome(c, &a.id, &outcome, &now)? {
            return Err(Error::new(
                Code::OutcomeAlreadyReported,
                "an outcome was already reported for this Action",
            ));
        }
        if outcome.status == "failed" {
            let mut shown = a.clone();
            crate::store::work::annotate(c, std::slice::from_mut(&mut shown))?;
            notifications::outcome_failed(c, fx, &nctx, &shown, outcome.message.as_deref(), &now)?;
        }
        let event = ActionEvent::OutcomeReported(outcome);
        effects::record(
            c,
            fx,
            On::of(&a),
            &Actor::source(&src.source_id),
            a.action_version,
            event,
            &now,
        )?;
        Ok((
            201,
            envelope(
                &store::get(c, &a.id)?.ok_or_else(Error::action_not_found)?,
                false,
            ),
        ))
    })
    .await
}

/// Closes every open Action whose `expires_at` has passed, per its `on_expire`.
/// Returns the ids closed; their long polls wake through the effects.
pub fn expire_due(
    c: &Connection,
    fx: &mut Effects,
    s: &Services,
    now: time::Timestamp,
) -> Result<Vec<String>> {
    let now_s = time::format(now);
    let mut closed = Vec::new();
    for a in store::due_for_expiry(c, &now_s, 200)? {
        let on_expire = a.spec.on_expire.clone();
        let mut resolution =
            Resolution::without_choice(Some("expired".into()), Actor::system(), now_s.clone());
        match on_expire.as_ref().map(|o| o.action.as_str()) {
            Some("resolve") => {
                resolution.option_id = on_expire.and_then(|o| o.option_id);
                resolve_with_receipt(c, fx, s, &a, resolution, now, None)?;
            }
            other => {
                let status = if other == Some("cancel") {
                    Status::Cancelled
                } else {
                    Status::Expired
                };
                if store::close(c, &a.id, status, &resolution)? {
                    let how = notifications::Closed {
                        status,
                        resolution: &resolution,
                        closer: None,
                        revoked_by: None,
                    };
                    notifications::action_closed(c, fx, s, &a, how, &now_s)?;
                    let reason = Some("expired".to_owned());
                    let event = if status == Status::Cancelled {
                        ActionEvent::Cancelled { reason }
                    } else {
                        ActionEvent::Expired { reason }
                    };
                    let v = a.action_version;
                    effects::record(c, fx, On::of(&a), &Actor::system(), v, event, &now_s)?;
                }
            }
        }
        closed.push(a.id);
    }
    Ok(closed)
}
