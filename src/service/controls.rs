//! Controls and context requests as use cases (guide: "Controls", "Context
//! requests"): a reviewer presses a callback control (a control request the
//! Source reports on) or asks for more context (answered by the Source's
//! next material PATCH, `answer_context_requests`). None of it resolves the
//! Action or touches its binding. Each write queues its webhook in the same
//! transaction (`service::webhooks::enqueue`).

use rusqlite::Connection;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use crate::domain::access::ActionAccess;
use crate::domain::action::{ActionRecord, Actor};
use crate::domain::decision;
use crate::domain::event::ActionEvent;
use crate::domain::requests::{
    self, ContextMode, ContextRequest, ControlRequest, MAX_TEXT, RequestedBy,
};
use crate::domain::webhook::EventType;
use crate::domain::{ids, time};
use crate::error::{Code, Error, Result};
use crate::service::Services;
use crate::service::actions::{access, access_now, refused};
use crate::service::caller::{SourceCaller, UserCaller};
use crate::service::effects::{self, On};
use crate::service::idempotency::request_hash;
use crate::service::notifications;
use crate::service::webhooks;
use crate::store::actions as store;
use crate::store::requests::{self as rq, NewControl};
use crate::store::work;

/// POST /v1/actions/{id}/controls/{key}/invoke: the binding the reviewer was
/// shown.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InvokeRequest {
    #[serde(deserialize_with = "crate::domain::strict_json::version")]
    #[schema(minimum = 1)]
    pub action_version: i64,
    #[serde(deserialize_with = "crate::domain::strict_json::fingerprint")]
    #[schema(pattern = "^sha256:[0-9a-f]{64}$")]
    pub fingerprint: String,
}

/// POST /v1/source/control-requests/{id}/result
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ControlResult {
    /// `running`, `succeeded` or `failed`; the last two are final.
    #[schema(schema_with = result_status_schema)]
    pub status: String,
    /// What a reviewer reads beside the status; at most 2,000 characters.
    #[serde(default)]
    #[schema(max_length = 2000, nullable)]
    pub message: Option<String>,
}

fn result_status_schema() -> utoipa::openapi::Object {
    crate::service::inbox::string_enum(&["running", "succeeded", "failed"])
}

/// POST /v1/actions/{id}/context-requests
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextRequestCreate {
    /// 1-2,000 characters, not only blanks.
    #[schema(
        min_length = 1,
        max_length = 2000,
        pattern = "^[^\\u0000]*[^\\u0000 \\t\\n\\r\\u000b\\u000c][^\\u0000]*$"
    )]
    pub question: String,
}

/// A control request and whether it repeats an earlier answer.
pub struct Invoked {
    pub request: ControlRequest,
    pub replayed: bool,
}

/// The Action and the caller's relation to it as of this transaction; 404
/// when they may not see it.
fn load(c: &Connection, id: &str, user: &UserCaller) -> Result<(ActionRecord, ActionAccess)> {
    let a = store::get(c, id)?.ok_or_else(Error::action_not_found)?;
    let acc = access_now(c, &a, user)?.ok_or_else(Error::action_not_found)?;
    Ok((a, acc))
}

fn text_problem(field: &str, text: &str) -> Option<Error> {
    let n = text.chars().count();
    if n > MAX_TEXT {
        return Some(Error::field(
            field,
            format!("{field} is {n} characters; at most {MAX_TEXT} are allowed"),
        ));
    }
    // A control request's message is shown beside its status.
    if crate::domain::validate::has_direction_override(text) {
        return Some(Error::field(
            field,
            crate::domain::validate::direction_refused(field),
        ));
    }
    text.contains('\0')
        .then(|| Error::field(field, format!("{field} may not contain NUL characters")))
}

fn extra(pairs: [(&str, Value); 2]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// POST /v1/actions/{id}/controls/{key}/invoke. `key`: the caller's
/// Idempotency-Key, scoped to them; the same key with the same body answers
/// the first request again (even once the Action has closed), with another
/// body IDEMPOTENCY_KEY_REUSED.
pub async fn invoke(
    s: &Services,
    user: UserCaller,
    action_id: String,
    control_key: String,
    req: InvokeRequest,
    key: Option<String>,
) -> Result<Invoked> {
    let route = format!("POST /v1/actions/{action_id}/controls/{control_key}/invoke");
    let hash = key.as_ref().map(|_| {
        request_hash(
            &route,
            &json!({ "action_version": req.action_version, "fingerprint": req.fingerprint }),
        )
    });
    let now = time::format(s.clock.now());
    s.write(move |c, fx| {
        let (a, acc) = load(c, &action_id, &user)?;
        if let (Some(k), Some(h)) = (key.as_deref(), hash.as_deref())
            && let Some((done, stored)) = rq::control_by_key(c, &user.user_id, k)?
        {
            if stored != h {
                return Err(Error::new(
                    Code::IdempotencyKeyReused,
                    "this Idempotency-Key was already used for a different request; use a new key per press",
                ));
            }
            return Ok(Invoked {
                request: done,
                replayed: true,
            });
        }
        if !acc.can_invoke_controls() {
            return Err(refused(
                acc,
                "you may read this Action but not press its controls",
            ));
        }
        decision::ensure_open(&a, &now)?;
        decision::check_binding_to(&a, req.action_version, &req.fingerprint, "press the control")?;
        let control = a
            .spec
            .controls
            .iter()
            .flatten()
            .find(|c| c.key == control_key)
            .cloned()
            .ok_or_else(|| {
                let keys: Vec<&str> = a
                    .spec
                    .controls
                    .iter()
                    .flatten()
                    .filter(|c| c.kind == "callback")
                    .map(|c| c.key.as_str())
                    .collect();
                Error::new(
                    Code::ControlNotFound,
                    format!(
                        "this Action has no control `{}`",
                        crate::domain::words::as_named(&control_key)
                    ),
                )
                .with_detail("control_keys", keys)
            })?;
        if control.kind != "callback" {
            return Err(Error::field(
                "control_key",
                format!(
                    "`{control_key}` is a link control: open its url; only callback controls are invoked"
                ),
            ));
        }
        let name = work::member(c, &a.workspace_id, &user.user_id)?.and_then(|m| m.name);
        let request = ControlRequest {
            id: ids::new_id(ids::CONTROL_REQUEST),
            object: "control_request",
            action_id: a.id.clone(),
            control_key: control.key.clone(),
            status: "pending".into(),
            message: None,
            requested_by: RequestedBy {
                user_id: user.user_id.clone(),
                name,
            },
            action_version: a.action_version,
            created_at: now.clone(),
            updated_at: now.clone(),
        };
        rq::insert_control(
            c,
            &NewControl {
                request: &request,
                idempotency_key: key.as_deref(),
                request_hash: hash.as_deref(),
            },
        )?;
        let event = ActionEvent::ControlRequested {
            control_request_id: request.id.clone(),
            control_key: control.key.clone(),
        };
        let actor = Actor::user(&user.user_id);
        effects::record(c, fx, On::of(&a), &actor, a.action_version, event, &now)?;
        let more = extra([
            ("control", serde_json::to_value(&control)?),
            ("control_request", serde_json::to_value(&request)?),
        ]);
        webhooks::enqueue(c, fx, &a, EventType::ControlRequested, more, &now)?;
        Ok(Invoked {
            request,
            replayed: false,
        })
    })
    .await
}

/// Most context requests one Action takes (guide: "Limits").
pub const MAX_CONTEXT_REQUESTS: i64 = 100;

/// Control requests one list shows by default, and at most: the newest.
pub const LISTED: usize = 100;

/// Who reads an Action's control requests: a person who sees the Action
/// (GET /v1/actions/{id}/control-requests), or the Source that owns it, in
/// its key's environment (GET /v1/source/actions/{id}/control-requests, so
/// a Source that missed a webhook finds the presses it has not acted on).
pub enum Reader {
    Person(UserCaller),
    Source(SourceCaller),
}

/// The control requests of an Action: up to `limit` (1..=`LISTED`),
/// newest first, after `starting_after` (a request of this Action: anything
/// else is 422) when given; `true` when there are older ones. An Action
/// the reader may not see is ACTION_NOT_FOUND.
pub async fn list(
    s: &Services,
    reader: Reader,
    action_id: String,
    starting_after: Option<String>,
    limit: i64,
) -> Result<(Vec<ControlRequest>, bool)> {
    s.db.read(move |c| {
        let a = match &reader {
            Reader::Person(user) => {
                let a = store::get(c, &action_id)?.ok_or_else(Error::action_not_found)?;
                access(&a, user).ok_or_else(Error::action_not_found)?;
                a
            }
            Reader::Source(src) => crate::service::actions::owned(c, src, &action_id)?,
        };
        let after = match starting_after {
            Some(id) => Some(
                rq::control(c, &id)?
                    .filter(|r| r.action_id == a.id)
                    .ok_or_else(|| {
                        Error::field(
                            "starting_after",
                            "starting_after must be the id of a control request of this Action, the last of the previous page",
                        )
                    })?,
            ),
            None => None,
        };
        let mut rows = rq::controls_of(c, &a.id, after.as_ref(), limit + 1)?;
        let more = rows.len() as i64 > limit;
        rows.truncate(limit as usize);
        Ok((rows, more))
    })
    .await
}

/// POST /v1/source/control-requests/{id}/result, by the Source that owns the
/// Action, in the key's environment (anyone else: 404). `pending` and
/// `running` move to `running`, `succeeded` or `failed`; a final request
/// answers an exact repeat of its result again (`true`: replayed) and
/// refuses anything else with CONTROL_REQUEST_CLOSED.
pub async fn report(
    s: &Services,
    src: SourceCaller,
    request_id: String,
    req: ControlResult,
) -> Result<(ControlRequest, bool)> {
    if !matches!(req.status.as_str(), "running" | "succeeded" | "failed") {
        return Err(Error::field(
            "status",
            "status must be `running`, `succeeded` or `failed`",
        ));
    }
    if let Some(e) = req
        .message
        .as_deref()
        .and_then(|m| text_problem("message", m))
    {
        return Err(e);
    }
    let now = time::format(s.clock.now());
    let nctx = notifications::Ctx::of(s);
    s.write(move |c, fx| {
        // A key checked before a revocation committed records nothing after it.
        crate::service::sources::check_not_revoked(c, &src.source_id)?;
        let r = rq::control(c, &request_id)?.ok_or_else(Error::control_request_not_found)?;
        let a = match store::get(c, &r.action_id)? {
            Some(a) if a.source_id == src.source_id && a.environment == src.environment => a,
            _ => return Err(Error::control_request_not_found()),
        };
        if requests::is_final(&r.status) {
            if r.status == req.status && r.message == req.message {
                return Ok((r, true));
            }
            return Err(Error::new(
                Code::ControlRequestClosed,
                format!(
                    "control request {} already {}; its result is final",
                    r.id, r.status
                ),
            )
            .with_detail("status", r.status.clone()));
        }
        debug_assert!(requests::result_allowed(&r.status, &req.status));
        rq::set_result(c, &r.id, &req.status, req.message.as_deref(), &now)?;
        // The Action page lists its control requests: refresh open ones.
        fx.workspace_changed(&a.workspace_id);
        if requests::is_final(&req.status) {
            let label = a
                .spec
                .controls
                .iter()
                .flatten()
                .find(|k| k.key == r.control_key)
                .map_or(r.control_key.as_str(), |k| k.label.as_str());
            notifications::control_request_finished(
                c,
                fx,
                &nctx,
                &a,
                &r.requested_by.user_id,
                label,
                &req.status,
                req.message.as_deref(),
                &now,
            )?;
        }
        let r = rq::control(c, &r.id)?.ok_or_else(Error::control_request_not_found)?;
        Ok((r, false))
    })
    .await
}

/// A context request's result: the request, and whether it is the one
/// the same Idempotency-Key made before.
#[derive(Clone, Debug)]
pub struct Asked {
    pub request: ContextRequest,
    pub replayed: bool,
}

/// POST /v1/actions/{id}/context-requests: an open question to the Source,
/// listed on the Action (`poll`, `callback`) and sent as
/// `action.context_requested` (`callback`). `key`: the caller's
/// Idempotency-Key, scoped to them as a control's; the same key with the
/// same question answers the first request again (even once the Action has
/// closed or the request was answered), with another question
/// IDEMPOTENCY_KEY_REUSED.
pub async fn ask(
    s: &Services,
    user: UserCaller,
    action_id: String,
    req: ContextRequestCreate,
    key: Option<String>,
) -> Result<Asked> {
    let question = req.question.replace("\r\n", "\n");
    if crate::domain::validate::says_nothing(&question) {
        return Err(Error::field(
            "question",
            "write the question you want answered",
        ));
    }
    if let Some(e) = text_problem("question", &question) {
        return Err(e);
    }
    let route = format!("POST /v1/actions/{action_id}/context-requests");
    let hash = key
        .as_ref()
        .map(|_| request_hash(&route, &json!({ "question": question })));
    let now = time::format(s.clock.now());
    s.write(move |c, fx| {
        let (a, acc) = load(c, &action_id, &user)?;
        if let (Some(k), Some(h)) = (key.as_deref(), hash.as_deref())
            && let Some((done, stored)) = rq::context_by_key(c, &user.user_id, k)?
        {
            if stored != h {
                return Err(Error::new(
                    Code::IdempotencyKeyReused,
                    "this Idempotency-Key was already used for a different question; use a new key per question",
                ));
            }
            return Ok(Asked {
                request: done,
                replayed: true,
            });
        }
        if !acc.can_ask_for_context() {
            return Err(refused(
                acc,
                "you may read this Action but not ask its Source for context",
            ));
        }
        let mode = ContextMode::of(a.spec.context_request_mode.as_deref());
        if !mode.lists() {
            return Err(Error::new(
                Code::ContextRequestsUnsupported,
                "this Action's Source does not take context requests (context_request_mode is unsupported); comment instead",
            ));
        }
        decision::ensure_open(&a, &now)?;
        // Every Action read lists them: a bound keeps reads and webhooks small.
        if rq::count_contexts(c, &a.id)? >= MAX_CONTEXT_REQUESTS {
            return Err(Error::field(
                "question",
                format!("this Action already has {MAX_CONTEXT_REQUESTS} context requests, the most it takes; add a comment instead"),
            ));
        }
        let name = work::member(c, &a.workspace_id, &user.user_id)?.and_then(|m| m.name);
        let request = ContextRequest {
            id: ids::new_id(ids::CONTEXT_REQUEST),
            object: "context_request",
            action_id: a.id.clone(),
            question,
            status: "open".into(),
            requested_by: RequestedBy {
                user_id: user.user_id.clone(),
                name,
            },
            created_at: now.clone(),
            answered_at: None,
            answered_in_version: None,
        };
        rq::insert_context(c, &request, key.as_deref(), hash.as_deref())?;
        let event = ActionEvent::ContextRequested {
            context_request_id: request.id.clone(),
        };
        let actor = Actor::user(&user.user_id);
        effects::record(c, fx, On::of(&a), &actor, a.action_version, event, &now)?;
        if mode == ContextMode::Callback {
            // The Action as the Source reads it now: the question listed.
            let a = store::get(c, &a.id)?.ok_or_else(Error::action_not_found)?;
            let mut more = Map::new();
            more.insert("context_request".into(), serde_json::to_value(&request)?);
            webhooks::enqueue(c, fx, &a, EventType::ContextRequested, more, &now)?;
        }
        Ok(Asked {
            request,
            replayed: false,
        })
    })
    .await
}

/// In a material PATCH's transaction: every open context request of `a` is
/// answered by its new version; `a`'s list is read again when any was.
pub fn answer_context_requests(c: &Connection, a: &mut ActionRecord, now: &str) -> Result<()> {
    if !ContextMode::of(a.spec.context_request_mode.as_deref()).lists() {
        return Ok(());
    }
    if rq::answer_open(c, &a.id, a.action_version, now)? > 0 {
        work::annotate(c, std::slice::from_mut(a))?;
    }
    Ok(())
}
