//! Action use cases: create, read (with long poll), patch, decide, resolve,
//! cancel, outcome, expiry. Every state change runs in one writer transaction
//! and wakes long polls only after it is committed.

use std::time::Duration;

use rusqlite::Connection;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::domain::action::{
    ActionRecord, Actor, Environment, Resolution, Status, ValidationContext, validate_spec,
};
use crate::domain::decision::{self, MAX_REASON};
use crate::domain::receipt::{self, ChainLink};
use crate::domain::validate::{apply_patch, parse_create_bytes};
use crate::domain::{fingerprint, ids, time};
use crate::error::{Code, Error, FieldError, Result};
use crate::service::Services;
use crate::service::caller::{Caller, SourceCaller, UserCaller, can_decide, is_admin};
use crate::service::idempotency::{self, Reply};
use crate::store::{actions as store, receipts as receipt_store, workspaces};

/// Longest a long poll or blocking create may hold (SPEC §8).
pub const MAX_WAIT: Duration = Duration::from_secs(30);

/// POST /v1/actions/{id}/decision
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionRequest {
    pub action_version: i64,
    pub fingerprint: String,
    #[serde(default)]
    pub option_id: Option<String>,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub response: Option<Value>,
    #[serde(default)]
    pub reason: Option<String>,
}

/// POST /v1/actions/{id}/resolve. The binding is optional for a Source.
#[derive(Debug, Default, Deserialize, ToSchema, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ResolveRequest {
    #[serde(default)]
    pub option_id: Option<String>,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub response: Option<Value>,
    #[serde(default)]
    pub action_version: Option<i64>,
    #[serde(default)]
    pub fingerprint: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
}

/// POST /v1/actions/{id}/cancel
#[derive(Debug, Default, Deserialize, ToSchema, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct CancelRequest {
    #[serde(default)]
    pub reason: Option<String>,
}

/// POST /v1/actions/{id}/outcome
#[derive(Debug, Deserialize, ToSchema, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct OutcomeReport {
    /// `success` or `failed`.
    pub status: String,
    pub duration_ms: u64,
    #[serde(default)]
    pub rollback: bool,
    pub action_version: i64,
    pub fingerprint: String,
    #[serde(default)]
    pub message: Option<String>,
}

fn validation_ctx(s: &Services, team: bool, patched: Option<Vec<String>>) -> ValidationContext {
    ValidationContext {
        now: time::now(),
        allow_private_callbacks: s.config.allow_private_callbacks,
        team_workspace: team,
        patched,
    }
}

pub(crate) fn envelope(a: &ActionRecord, replay: bool) -> Value {
    json!({ "data": a.to_json(), "idempotent_replay": replay })
}

/// Reads an Action the Source owns, in the key's environment; 404 otherwise.
fn owned(c: &Connection, src: &SourceCaller, id: &str) -> Result<ActionRecord> {
    match store::get(c, id)? {
        Some(a) if a.source_id == src.source_id && a.environment == src.environment => Ok(a),
        _ => Err(Error::action_not_found()),
    }
}

/// The caller's role when the user may see the Action; restricted Actions are
/// visible to listed reviewers and to workspace owners and admins.
pub(crate) fn user_role(a: &ActionRecord, u: &UserCaller) -> Option<String> {
    let role = u.role_in(&a.workspace_id)?;
    if a.spec.visibility() == "restricted" && !is_admin(role) && !is_listed_reviewer(a, u) {
        return None;
    }
    Some(role.to_owned())
}

pub(crate) fn is_listed_reviewer(a: &ActionRecord, u: &UserCaller) -> bool {
    a.spec
        .reviewer_user_ids
        .as_ref()
        .is_some_and(|l| l.contains(&u.user_id))
        || a.spec
            .reviewer_emails
            .as_ref()
            .is_some_and(|l| l.iter().any(|e| e.eq_ignore_ascii_case(&u.email)))
}

pub(crate) fn check_reason(reason: &Option<String>) -> Result<()> {
    if reason
        .as_ref()
        .is_some_and(|r| r.chars().count() > MAX_REASON)
    {
        return Err(Error::field(
            "reason",
            format!("reason is longer than {MAX_REASON} characters"),
        ));
    }
    Ok(())
}

/// POST /v1/actions. With `hold` (X-Service-Blocking), waits up to that long for
/// a decision; the idempotency key stays in flight meanwhile, so a retry gets
/// IDEMPOTENCY_CONFLICT rather than a second answer.
pub async fn create(
    s: &Services,
    src: SourceCaller,
    body: &[u8],
    key: Option<String>,
    hold: Option<Duration>,
) -> Result<Reply> {
    // Held from here until the answer is sent, the blocking hold included.
    let _guard = key
        .as_deref()
        .map(|k| s.inflight.acquire(&src, k))
        .transpose()?;
    // The canonical request hash is only needed with a key: the body is then
    // parsed a second time, as a plain JSON value.
    let request_hash = match &key {
        Some(_) => {
            let v: Value = serde_json::from_slice(body)
                .map_err(|e| Error::field("body", format!("the body is not valid JSON: {e}")))?;
            idempotency::request_hash("POST /v1/actions", &v)
        }
        None => String::new(),
    };
    if let Some(earlier) = idempotency::lookup(&s.db, &src, key.as_deref(), &request_hash).await? {
        return match hold {
            Some(wait) => wait_for_close(s, src, earlier, wait).await,
            None => Ok(earlier),
        };
    }
    let spec = validate_spec(
        parse_create_bytes(body)?,
        &validation_ctx(s, src.team_workspace, None),
    )?;
    // Everything that needs no database is prepared here, so the single writer
    // thread only runs SQL: id, fingerprint, stored JSON and the response.
    let now = time::format(time::now());
    let a = ActionRecord {
        id: ids::new_id(ids::ACTION),
        workspace_id: src.workspace_id.clone(),
        source_id: src.source_id.clone(),
        environment: src.environment,
        status: Status::Open,
        action_version: 1,
        fingerprint: fingerprint::fingerprint(&spec),
        spec,
        resolution: None,
        receipt: None,
        outcome: None,
        snoozed_until: None,
        created_at: now.clone(),
        updated_at: now,
        closed_at: None,
    };
    let spec_json = serde_json::to_string(&a.spec)?;
    let created = envelope(&a, false);
    let writer_src = src.clone();
    let reply = s
        .db
        .write(move |c| {
            let src = writer_src;
            idempotency::run(c, &src, key.as_deref(), &request_hash, |c| {
                check_people(c, &src.workspace_id, &a.spec)?;
                if let Some(dk) = &a.spec.dedupe_key
                    && let Some(open) = store::open_by_dedupe_key(c, &src.source_id, src.environment, dk)?
                {
                    if open.fingerprint == a.fingerprint {
                        return Ok((200, envelope(&open, true)));
                    }
                    return Err(Error::new(Code::DedupeConflict, "an open Action with this dedupe_key has different content; cancel or resolve it first, or use another dedupe_key")
                        .with_detail("action_id", open.id.clone())
                        .with_detail("fingerprint", open.fingerprint));
                }
                store::insert(c, &a, &spec_json)?;
                store::add_event(c, &a.id, "created", &Actor::source(&src.source_id), 1, &json!({ "fingerprint": a.fingerprint }), &a.created_at)?;
                Ok((201, created))
            })
        })
        .await?;
    match hold {
        Some(wait) => wait_for_close(s, src, reply, wait).await,
        None => Ok(reply),
    }
}

/// Assignees and listed reviewers given by user id must be workspace members.
fn check_people(
    c: &Connection,
    workspace_id: &str,
    spec: &crate::domain::action::ActionSpec,
) -> Result<()> {
    if spec.assignee_user_id.is_none() && spec.reviewer_user_ids.is_none() {
        return Ok(());
    }
    let mut errs = Vec::new();
    if let Some(id) = &spec.assignee_user_id
        && workspaces::role_of(c, workspace_id, id)?.is_none()
    {
        errs.push(FieldError::new(
            "assignee_user_id",
            format!("`{id}` is not a member of this workspace"),
        ));
    }
    for (i, id) in spec.reviewer_user_ids.iter().flatten().enumerate() {
        if workspaces::role_of(c, workspace_id, id)?.is_none() {
            errs.push(FieldError::new(
                format!("reviewer_user_ids[{i}]"),
                format!("`{id}` is not a member of this workspace"),
            ));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(Error::validation(errs))
    }
}

/// Waits until the Action leaves `open` or `wait` passes, then returns it as it is.
pub async fn get_for_source(
    s: &Services,
    src: SourceCaller,
    id: String,
    wait: Duration,
) -> Result<Value> {
    let sub = s.waiters.subscribe(&id);
    let notified = sub.notified();
    tokio::pin!(notified);
    notified.as_mut().enable();
    let read = |src: SourceCaller, id: String| s.db.read(move |c| owned(c, &src, &id));
    let a = read(src.clone(), id.clone()).await?;
    if a.status != Status::Open || wait.is_zero() {
        return Ok(envelope(&a, false));
    }
    // Woken or timed out, the answer is the Action as it is now.
    let _ = tokio::time::timeout(wait.min(MAX_WAIT), notified).await;
    Ok(envelope(&read(src, id).await?, false))
}

/// Holds until the Action is closed or `wait` passes (X-Service-Blocking).
async fn wait_for_close(
    s: &Services,
    src: SourceCaller,
    reply: Reply,
    wait: Duration,
) -> Result<Reply> {
    let Some(id) = reply.body["data"]["id"].as_str().map(str::to_owned) else {
        return Ok(reply);
    };
    if reply.body["data"]["status"] != "open" {
        return Ok(reply);
    }
    let replay = reply.replayed;
    let mut body = get_for_source(s, src, id, wait).await?;
    body["idempotent_replay"] = Value::Bool(replay);
    Ok(Reply {
        status: reply.status,
        body,
        replayed: replay,
    })
}

/// `environment` query of GET /v1/actions/{id}: live (default), test or all.
#[derive(Clone, Copy, Debug)]
pub enum EnvFilter {
    Only(Environment),
    All,
}

impl EnvFilter {
    pub fn parse(raw: Option<&str>) -> Result<Self> {
        match raw.unwrap_or("live") {
            "all" => Ok(Self::All),
            other => Environment::parse(other).map(Self::Only).ok_or_else(|| {
                Error::field(
                    "environment",
                    format!("unknown environment `{other}`; use live, test or all"),
                )
            }),
        }
    }
    pub fn admits(self, env: Environment) -> bool {
        match self {
            Self::All => true,
            Self::Only(e) => e == env,
        }
    }
}

/// GET /v1/actions/{id}: the Action and its history, for its Source or a member.
pub async fn get(s: &Services, caller: Caller, id: String, env: EnvFilter) -> Result<Value> {
    s.db.read(move |c| {
        let a = match &caller {
            Caller::Source(src) => owned(c, src, &id)?,
            Caller::User(u) => match store::get(c, &id)? {
                Some(a) if env.admits(a.environment) && user_role(&a, u).is_some() => a,
                _ => return Err(Error::action_not_found()),
            },
        };
        let mut data = a.to_json();
        data["history"] = Value::Array(store::history(c, &a.id)?);
        Ok(json!({ "data": data, "idempotent_replay": false }))
    })
    .await
}

/// PATCH /v1/actions/{id}: a material change advances the version (DESIGN §4).
pub async fn patch(s: &Services, src: SourceCaller, id: String, body: Value) -> Result<Value> {
    let fields = body.as_object().map(|o| o.keys().cloned().collect());
    let vctx = validation_ctx(s, src.team_workspace, fields);
    s.db.write(move |c| {
        let mut a = owned(c, &src, &id)?;
        decision::ensure_open(&a)?;
        let spec = validate_spec(apply_patch(&a.spec, body.clone())?, &vctx)?;
        if spec == a.spec {
            return Ok(envelope(&a, false));
        }
        let fp = fingerprint::fingerprint(&spec);
        let material = fp != a.fingerprint;
        if material {
            a.action_version += 1;
        }
        a.fingerprint = fp;
        a.spec = spec;
        a.updated_at = time::format(time::now());
        store::update_spec(c, &a)?;
        let fields: Vec<&String> = body
            .as_object()
            .map(|o| o.keys().collect())
            .unwrap_or_default();
        store::add_event(
            c,
            &a.id,
            "updated",
            &Actor::source(&src.source_id),
            a.action_version,
            &json!({ "fields": fields, "material": material, "fingerprint": a.fingerprint }),
            &a.updated_at,
        )?;
        Ok(envelope(&a, false))
    })
    .await
}

/// Closes an open Action as resolved and issues its receipt, in the caller's
/// transaction. Fails with ACTION_NOT_OPEN when someone else closed it first.
pub(crate) fn resolve_with_receipt(
    c: &Connection,
    s: &Services,
    a: &ActionRecord,
    resolution: Resolution,
) -> Result<ActionRecord> {
    if !store::close(c, &a.id, Status::Resolved, &resolution)? {
        return Err(decision::ensure_open(
            &store::get(c, &a.id)?.ok_or_else(Error::action_not_found)?,
        )
        .err()
        .unwrap_or_else(Error::action_not_found));
    }
    let mut closed = store::get(c, &a.id)?.ok_or_else(Error::action_not_found)?;
    let (kid, key) = s.keyring.active(c)?;
    let link = match receipt_store::chain_head(c)? {
        Some((seq, jws)) => ChainLink {
            seq: seq + 1,
            prev: Some(receipt::chain_hash(&jws)),
        },
        None => ChainLink { seq: 1, prev: None },
    };
    let receipt_id = ids::new_id(ids::RECEIPT);
    let claims = receipt::claims(
        &s.config.base_url,
        &receipt_id,
        &closed,
        &resolution,
        time::now().unix_timestamp(),
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
    store::add_event(
        c,
        &a.id,
        "resolved",
        &resolution.decided_by,
        a.action_version,
        &json!({ "option_id": resolution.option_id, "response": resolution.response, "receipt_id": receipt_id, "reason": resolution.reason }),
        &resolution.decided_at,
    )?;
    closed.receipt = Some(receipt::receipt_object(&receipt_id, &kid, &jws, &claims));
    Ok(closed)
}

/// POST /v1/actions/{id}/decision by a signed-in reviewer.
pub async fn decide(
    s: &Services,
    user: UserCaller,
    id: String,
    req: DecisionRequest,
) -> Result<Value> {
    check_reason(&req.reason)?;
    let svc = s.clone();
    let a =
        s.db.write(move |c| {
            let a = store::get(c, &id)?.ok_or_else(Error::action_not_found)?;
            let role = user_role(&a, &user).ok_or_else(Error::action_not_found)?;
            if !can_decide(&role)
                || (a.spec.visibility() == "restricted" && !is_listed_reviewer(&a, &user))
            {
                return Err(Error::new(
                    Code::Forbidden,
                    "you may see this Action but not decide it",
                ));
            }
            decision::ensure_open(&a)?;
            if a.spec.approval_policy.is_some() {
                return Err(Error::new(
                    Code::ApprovalVoteRequired,
                    "this Action has an approval policy: vote with POST /v1/actions/{id}/votes",
                ));
            }
            decision::check_binding(&a, Some(req.action_version), Some(&req.fingerprint))?;
            let (option_id, response) =
                decision::check_choice(&a.spec, req.option_id.as_deref(), req.response.as_ref())?;
            let resolution = Resolution {
                option_id,
                response,
                reason: req.reason,
                decided_by: Actor::user(&user.user_id),
                decided_at: time::format(time::now()),
                votes: None,
            };
            resolve_with_receipt(c, &svc, &a, resolution)
        })
        .await?;
    s.waiters.wake(&a.id);
    Ok(envelope(&a, false))
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
    let hash = idempotency::request_hash(
        &format!("POST /v1/actions/{id}/resolve"),
        &serde_json::to_value(&req)?,
    );
    let _guard = key
        .as_deref()
        .map(|k| s.inflight.acquire(&src, k))
        .transpose()?;
    let svc = s.clone();
    let reply =
        s.db.write(move |c| {
            idempotency::run(c, &src, key.as_deref(), &hash, |c| {
                let a = owned(c, &src, &id)?;
                decision::ensure_open(&a)?;
                decision::check_binding(&a, req.action_version, req.fingerprint.as_deref())?;
                let (option_id, response) = decision::check_choice(
                    &a.spec,
                    req.option_id.as_deref(),
                    req.response.as_ref(),
                )?;
                let resolution = Resolution {
                    option_id,
                    response,
                    reason: req.reason,
                    decided_by: Actor::source(&src.source_id),
                    decided_at: time::format(time::now()),
                    votes: None,
                };
                Ok((
                    200,
                    envelope(&resolve_with_receipt(c, &svc, &a, resolution)?, false),
                ))
            })
        })
        .await?;
    wake_from(s, &reply);
    Ok(reply)
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
    let hash = idempotency::request_hash(
        &format!("POST /v1/actions/{id}/cancel"),
        &serde_json::to_value(&req)?,
    );
    let _guard = key
        .as_deref()
        .map(|k| s.inflight.acquire(&src, k))
        .transpose()?;
    let reply =
        s.db.write(move |c| {
            idempotency::run(c, &src, key.as_deref(), &hash, |c| {
                let a = owned(c, &src, &id)?;
                decision::ensure_open(&a)?;
                let actor = Actor::source(&src.source_id);
                let resolution = Resolution {
                    option_id: None,
                    response: None,
                    reason: req.reason.clone(),
                    decided_by: actor.clone(),
                    decided_at: time::format(time::now()),
                    votes: None,
                };
                if !store::close(c, &a.id, Status::Cancelled, &resolution)? {
                    return Err(Error::new(
                        Code::ActionNotOpen,
                        "the Action was closed by another request",
                    ));
                }
                store::add_event(
                    c,
                    &a.id,
                    "cancelled",
                    &actor,
                    a.action_version,
                    &json!({ "reason": req.reason }),
                    &resolution.decided_at,
                )?;
                let closed = store::get(c, &a.id)?.ok_or_else(Error::action_not_found)?;
                Ok((200, envelope(&closed, false)))
            })
        })
        .await?;
    wake_from(s, &reply);
    Ok(reply)
}

fn wake_from(s: &Services, reply: &Reply) {
    if let Some(id) = reply.body["data"]["id"].as_str() {
        s.waiters.wake(id);
    }
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
    if req
        .message
        .as_ref()
        .is_some_and(|m| m.chars().count() > MAX_REASON)
    {
        return Err(Error::field(
            "message",
            format!("message is longer than {MAX_REASON} characters"),
        ));
    }
    let hash = idempotency::request_hash(
        &format!("POST /v1/actions/{id}/outcome"),
        &serde_json::to_value(&req)?,
    );
    let _guard = key
        .as_deref()
        .map(|k| s.inflight.acquire(&src, k))
        .transpose()?;
    s.db
        .write(move |c| {
            idempotency::run(c, &src, key.as_deref(), &hash, |c| {
                let a = owned(c, &src, &id)?;
                if a.status != Status::Resolved {
                    return Err(Error::new(Code::ActionNotResolved, format!("Action {} is {}; an outcome can be reported only for a resolved Action", a.id, a.status.as_str())));
                }
                decision::check_binding(&a, Some(req.action_version), Some(&req.fingerprint))?;
                let fields = json!({
                    "status": req.status, "duration_ms": req.duration_ms, "rollback": req.rollback,
                    "action_version": req.action_version, "fingerprint": req.fingerprint, "message": req.message,
                });
                if let Some(existing) = &a.outcome {
                    let same = existing.as_object().is_some_and(|e| fields.as_object().is_some_and(|f| f.iter().all(|(k, v)| e.get(k) == Some(v))));
                    if same {
                        return Ok((201, envelope(&a, true)));
                    }
                    return Err(Error::new(Code::OutcomeAlreadyReported, "a different outcome was already reported for this Action; outcomes are immutable")
                        .with_detail("outcome", existing.clone()));
                }
                let now = time::format(time::now());
                let mut outcome = fields;
                outcome["reported_at"] = json!(now);
                if !store::set_outcome(c, &a.id, &outcome, &now)? {
                    return Err(Error::new(Code::OutcomeAlreadyReported, "an outcome was already reported for this Action"));
                }
                store::add_event(c, &a.id, "outcome_reported", &Actor::source(&src.source_id), a.action_version, &outcome, &now)?;
                Ok((201, envelope(&store::get(c, &a.id)?.ok_or_else(Error::action_not_found)?, false)))
            })
        })
        .await
}

/// Closes every open Action whose `expires_at` has passed, per its `on_expire`.
/// Returns the ids closed, for waking their long polls.
pub fn expire_due(c: &Connection, s: &Services, now: time::Timestamp) -> Result<Vec<String>> {
    let now_s = time::format(now);
    let mut closed = Vec::new();
    for a in store::due_for_expiry(c, &now_s, 200)? {
        let on_expire = a.spec.on_expire.clone();
        let mut resolution = Resolution {
            option_id: None,
            response: None,
            reason: Some("expired".into()),
            decided_by: Actor::system(),
            decided_at: now_s.clone(),
            votes: None,
        };
        match on_expire.as_ref().map(|o| o.action.as_str()) {
            Some("resolve") => {
                resolution.option_id = on_expire.and_then(|o| o.option_id);
                resolve_with_receipt(c, s, &a, resolution)?;
            }
            other => {
                let status = if other == Some("cancel") {
                    Status::Cancelled
                } else {
                    Status::Expired
                };
                if store::close(c, &a.id, status, &resolution)? {
                    store::add_event(
                        c,
                        &a.id,
                        status.as_str(),
                        &Actor::system(),
                        a.action_version,
                        &json!({ "reason": "expired" }),
                        &now_s,
                    )?;
                }
            }
        }
        closed.push(a.id);
    }
    Ok(closed)
}
