//! /v1/actions routes (guide: "Endpoints").

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::app::AppState;
use crate::domain::action::ActionSpec;
use crate::error::{Code, Error, Result};
use crate::http::api::wire::actions::{ActionDetail, ActionOut, BatchOut, VoteOut};
use crate::http::api::wire::{Data, Envelope, List};
use crate::http::api::{replayable, reply};
use crate::http::auth::{AnyAuth, SourceAuth, UserAuth};
use crate::http::extract::{ActionBytes, ActionJson, ApiJson, ApiPath, ApiQuery, OptionalJson};
use crate::service::actions::{self, Created, EnvFilter};
use crate::service::batch::{self, BatchRequest};
use crate::service::decisions::{
    self, CancelRequest, DecisionRequest, OutcomeReport, ResolveRequest,
};
use crate::service::idempotency::parse_key;

pub(crate) fn idempotency_key(h: &HeaderMap) -> Result<Option<String>> {
    // Two keys would make the request's identity depend on which one is read.
    if h.get_all("idempotency-key").iter().nth(1).is_some() {
        return Err(Error::new(
            Code::InvalidIdempotencyKey,
            "send one Idempotency-Key header, not several",
        ));
    }
    match h.get("idempotency-key") {
        None => Ok(None),
        // Present but not visible ASCII (e.g. UTF-8): refused, never ignored.
        Some(v) => parse_key(Some(v.to_str().unwrap_or("\u{0}"))),
    }
}

fn blocking(h: &HeaderMap) -> Result<bool> {
    let Some(v) = h.get("x-service-blocking") else {
        return Ok(false);
    };
    if h.get_all("x-service-blocking").iter().nth(1).is_some() {
        return Err(Error::field(
            "X-Service-Blocking",
            "send one X-Service-Blocking header, not several",
        ));
    }
    match v.to_str().map(str::to_ascii_lowercase).as_deref() {
        Ok("false") | Ok("0") => Ok(false),
        Ok("true") | Ok("1") => Ok(true),
        _ => Err(Error::field(
            "X-Service-Blocking",
            "X-Service-Blocking must be true or false (or 1 or 0)",
        )),
    }
}

/// Create an Action.
#[utoipa::path(post, path = "/v1/actions", tag = "actions",
    request_body = ActionSpec,
    params(("Idempotency-Key" = Option<String>, Header, description = "1-255 printable ASCII characters"),
           ("X-Service-Blocking" = Option<bool>, Header, description = "hold up to 30 s until the Action is closed or a reviewer asks the Source a question (a context request)")),
    responses((status = 201, description = "created", body = Envelope<ActionOut>),
              (status = 200, description = "an open Action with the same dedupe_key and content (idempotent_replay: true)", body = Envelope<ActionOut>),
              (status = 400, description = "INVALID_OPEN_URL, INVALID_CALLBACK_URL, INVALID_EXPIRATION, INVALID_IDEMPOTENCY_KEY", body = crate::http::openapi::ErrorBody),
              (status = 403, description = "PLAN_LIMIT_REACHED: the workspace's plan allows no more Actions this month (details.resource, details.limit, details.used, details.period_end)", body = crate::http::openapi::ErrorBody),
              (status = 409, description = "IDEMPOTENCY_KEY_REUSED, IDEMPOTENCY_CONFLICT, DEDUPE_CONFLICT", body = crate::http::openapi::ErrorBody),
              (status = 413, description = "ACTION_PAYLOAD_TOO_LARGE", body = crate::http::openapi::ErrorBody),
              (status = 422, description = "VALIDATION_ERROR", body = crate::http::openapi::ErrorBody)),
    security(("source_key" = [])))]
pub async fn create_action(
    State(st): State<AppState>,
    SourceAuth(src): SourceAuth,
    headers: HeaderMap,
    ActionBytes(body): ActionBytes,
) -> Result<Response> {
    let key = idempotency_key(&headers)?;
    let hold = blocking(&headers)?.then_some(actions::MAX_WAIT);
    Ok(
        match actions::create(&st.services, src, &body, key, hold).await? {
            // Already serialised (and stored under the key): sent as is.
            Created::Fresh(r) => (
                StatusCode::from_u16(r.status).unwrap_or(StatusCode::CREATED),
                [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
                r.json,
            )
                .into_response(),
            Created::Reply(r) => reply(r),
        },
    )
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct WaitParams {
    /// 0..30 seconds to hold while the Action is open.
    #[param(minimum = 0, maximum = 30)]
    pub wait_seconds: Option<u64>,
}

/// The Source's own Actions in its key's environment, most pressing first.
#[utoipa::path(get, path = "/v1/source/actions", tag = "actions", params(crate::service::inbox::SourceActionParams),
    responses((status = 200, description = "the Source's Actions, in the inbox's order (priority, then oldest first)", body = List<ActionOut>),
              (status = 422, description = "VALIDATION_ERROR: status, priority, limit or starting_after (not an Action of this Source in this key's environment)", body = crate::http::openapi::ErrorBody)),
    security(("source_key" = [])))]
pub async fn list_source_actions(
    State(st): State<AppState>,
    SourceAuth(src): SourceAuth,
    ApiQuery(p): ApiQuery<crate::service::inbox::SourceActionParams>,
) -> Result<Json<List<ActionOut>>> {
    let (rows, has_more) =
        crate::service::inbox::list_for_source(&st.services, src, p, st.services.clock.now())
            .await?;
    Ok(Json(List::new(
        rows.iter().map(ActionOut::from).collect(),
        has_more,
    )))
}

/// Read an Action as its Source, optionally long-polling for the decision.
#[utoipa::path(get, path = "/v1/source/actions/{action_id}", tag = "actions", params(("action_id" = String, Path), WaitParams),
    responses((status = 200, description = "the Action", body = Envelope<ActionOut>), (status = 404, description = "ACTION_NOT_FOUND", body = crate::http::openapi::ErrorBody)),
    security(("source_key" = [])))]
pub async fn get_source_action(
    State(st): State<AppState>,
    SourceAuth(src): SourceAuth,
    ApiPath(id): ApiPath<String>,
    ApiQuery(p): ApiQuery<WaitParams>,
) -> Result<Json<Envelope<ActionOut>>> {
    let wait = p.wait_seconds.unwrap_or(0);
    if wait > 30 {
        return Err(Error::field(
            "wait_seconds",
            "wait_seconds must be between 0 and 30",
        ));
    }
    let a = actions::get_for_source(&st.services, src, id, Duration::from_secs(wait)).await?;
    Ok(Json(Envelope::fresh(ActionOut::from(&a))))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct EnvParams {
    /// live (default), test or all; applies to user callers.
    #[param(schema_with = crate::service::inbox::environment_schema)]
    pub environment: Option<String>,
}

/// Read an Action with its history, as its Source or a workspace member.
#[utoipa::path(get, path = "/v1/actions/{action_id}", tag = "actions", params(("action_id" = String, Path), EnvParams),
    responses((status = 200, description = "the Action with its history", body = Envelope<ActionDetail>), (status = 404, description = "ACTION_NOT_FOUND", body = crate::http::openapi::ErrorBody)),
    security(("source_key" = []), ("user_token" = []), ("session_cookie" = [])))]
pub async fn get_action(
    State(st): State<AppState>,
    AnyAuth(caller): AnyAuth,
    ApiPath(id): ApiPath<String>,
    ApiQuery(p): ApiQuery<EnvParams>,
) -> Result<Json<Envelope<ActionDetail>>> {
    let env = EnvFilter::parse(p.environment.as_deref())?;
    let (a, history) = actions::get(&st.services, caller, id, env).await?;
    Ok(Json(Envelope::fresh(ActionDetail {
        action: ActionOut::from(&a),
        history,
    })))
}

/// Change an open Action; material changes advance action_version.
#[utoipa::path(patch, path = "/v1/actions/{action_id}", tag = "actions", params(("action_id" = String, Path)),
    request_body(content = Object, description = "any of title, description, priority, open_url, expires_at, on_expire, controls, context, decision_class, decision_context, metadata; and optionally action_version, the version the change is based on"),
    responses((status = 200, description = "the Action as changed", body = Envelope<ActionOut>),
              (status = 400, description = "INVALID_OPEN_URL, INVALID_EXPIRATION: a field that has its own code, as on create (details.errors)", body = crate::http::openapi::ErrorBody),
              (status = 409, description = "ACTION_NOT_OPEN; ACTION_CHANGED: the body's action_version is no longer current (details.action_version and details.fingerprint are)", body = crate::http::openapi::ErrorBody),
              (status = 413, description = "ACTION_PAYLOAD_TOO_LARGE", body = crate::http::openapi::ErrorBody), (status = 422, description = "VALIDATION_ERROR", body = crate::http::openapi::ErrorBody)),
    security(("source_key" = [])))]
pub async fn patch_action(
    State(st): State<AppState>,
    SourceAuth(src): SourceAuth,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ActionJson,
) -> Result<Json<Envelope<ActionOut>>> {
    let a = actions::patch(&st.services, src, id, body).await?;
    Ok(Json(Envelope::fresh(ActionOut::from(&a))))
}

/// Decide an open Action, bound to the version and fingerprint the person saw.
#[utoipa::path(post, path = "/v1/actions/{action_id}/decision", tag = "actions", params(("action_id" = String, Path)),
    request_body = DecisionRequest,
    responses((status = 200, description = "the resolved Action with its receipt", body = Envelope<ActionOut>),
              (status = 400, description = "OPTION_NOT_FOUND, RESPONSE_REQUIRED, RESPONSE_TYPE_MISMATCH, INVALID_RESPONSE", body = crate::http::openapi::ErrorBody),
              (status = 403, description = "FORBIDDEN (a viewer, or a reviewer not listed on a restricted Action), SELF_APPROVAL_FORBIDDEN (the requester)", body = crate::http::openapi::ErrorBody),
              (status = 409, description = "ACTION_NOT_OPEN, ACTION_CHANGED, APPROVAL_VOTE_REQUIRED", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn decide_action(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<DecisionRequest>,
) -> Result<Json<Envelope<ActionOut>>> {
    let a = decisions::decide(&st.services, user, id, req).await?;
    Ok(Json(Envelope::fresh(ActionOut::from(&a))))
}

/// Decide up to 100 open Actions at once, each bound to its own version and fingerprint.
#[utoipa::path(post, path = "/v1/actions/decisions", tag = "actions",
    request_body = crate::service::batch::BatchRequest,
    responses((status = 200, description = "one result per item, in request order: `decided` with the Action and its receipt, or `error` with the code the single decision route would answer (ACTION_CHANGED, ACTION_NOT_OPEN, ACTION_NOT_FOUND, FORBIDDEN, SELF_APPROVAL_FORBIDDEN, APPROVAL_VOTE_REQUIRED, OPTION_NOT_FOUND…); a refused item stays open and never undoes the others", body = BatchOut),
              (status = 422, description = "VALIDATION_ERROR: no decisions, more than 100, or the same Action twice", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn decide_actions(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiJson(req): ApiJson<BatchRequest>,
) -> Result<Json<BatchOut>> {
    let done = batch::decide_many(&st.services, user, req.decisions).await?;
    Ok(Json(BatchOut::from(done)))
}

/// Resolve an open Action as its Source (with a receipt).
#[utoipa::path(post, path = "/v1/actions/{action_id}/resolve", tag = "actions", params(("action_id" = String, Path), ("Idempotency-Key" = Option<String>, Header, description = "1-255 printable ASCII characters, scoped to the Source and environment: an exact retry answers the first response")),
    request_body = ResolveRequest,
    responses((status = 200, description = "the resolved Action with its receipt", body = Envelope<ActionOut>),
        (status = 400, description = "OPTION_NOT_FOUND, RESPONSE_REQUIRED, RESPONSE_TYPE_MISMATCH, INVALID_RESPONSE, INVALID_IDEMPOTENCY_KEY", body = crate::http::openapi::ErrorBody),
        (status = 409, description = "ACTION_NOT_OPEN, ACTION_CHANGED", body = crate::http::openapi::ErrorBody)),
    security(("source_key" = [])))]
pub async fn resolve_action(
    State(st): State<AppState>,
    SourceAuth(src): SourceAuth,
    headers: HeaderMap,
    ApiPath(id): ApiPath<String>,
    OptionalJson(req): OptionalJson<ResolveRequest>,
) -> Result<Response> {
    Ok(reply(
        decisions::resolve(&st.services, src, id, req, idempotency_key(&headers)?).await?,
    ))
}

/// Cancel an open Action as its Source.
#[utoipa::path(post, path = "/v1/actions/{action_id}/cancel", tag = "actions", params(("action_id" = String, Path), ("Idempotency-Key" = Option<String>, Header, description = "1-255 printable ASCII characters, scoped to the Source and environment: an exact retry answers the first response")),
    request_body = CancelRequest,
    responses((status = 200, description = "the cancelled Action", body = Envelope<ActionOut>),
        (status = 400, description = "INVALID_IDEMPOTENCY_KEY", body = crate::http::openapi::ErrorBody),
        (status = 409, description = "ACTION_NOT_OPEN", body = crate::http::openapi::ErrorBody)),
    security(("source_key" = [])))]
pub async fn cancel_action(
    State(st): State<AppState>,
    SourceAuth(src): SourceAuth,
    headers: HeaderMap,
    ApiPath(id): ApiPath<String>,
    OptionalJson(req): OptionalJson<CancelRequest>,
) -> Result<Response> {
    Ok(reply(
        decisions::cancel(&st.services, src, id, req, idempotency_key(&headers)?).await?,
    ))
}

/// Withdraw an open Action as an owner or admin of its workspace: it closes as `cancelled`, nothing decided, and its Source hears `action.cancelled`.
#[utoipa::path(post, path = "/v1/actions/{action_id}/withdraw", tag = "actions", params(("action_id" = String, Path)),
    request_body = CancelRequest,
    responses((status = 200, description = "the cancelled Action", body = Envelope<ActionOut>),
        (status = 403, description = "FORBIDDEN: only owners and admins withdraw (details.required_role = admin); on a restricted Action only those listed on it (details.listed = false)", body = crate::http::openapi::ErrorBody),
        (status = 422, description = "VALIDATION_ERROR: reason longer than 2,000 characters, unknown fields", body = crate::http::openapi::ErrorBody),
        (status = 404, description = "ACTION_NOT_FOUND", body = crate::http::openapi::ErrorBody),
        (status = 409, description = "ACTION_NOT_OPEN", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn withdraw_action(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
    OptionalJson(req): OptionalJson<CancelRequest>,
) -> Result<Json<Envelope<ActionOut>>> {
    let a = decisions::withdraw(&st.services, user, id, req).await?;
    Ok(Json(Envelope::fresh(ActionOut::from(&a))))
}

/// Record what happened when the Source acted on the decision.
#[utoipa::path(post, path = "/v1/actions/{action_id}/outcome", tag = "actions", params(("action_id" = String, Path), ("Idempotency-Key" = Option<String>, Header, description = "1-255 printable ASCII characters, scoped to the Source and environment: an exact retry answers the first response")),
    request_body = OutcomeReport,
    responses((status = 201, description = "the Action with its outcome", body = Envelope<ActionOut>),
              (status = 400, description = "INVALID_IDEMPOTENCY_KEY", body = crate::http::openapi::ErrorBody),
              (status = 409, description = "ACTION_NOT_RESOLVED, OUTCOME_ALREADY_REPORTED, ACTION_CHANGED", body = crate::http::openapi::ErrorBody)),
    security(("source_key" = [])))]
pub async fn report_outcome(
    State(st): State<AppState>,
    SourceAuth(src): SourceAuth,
    headers: HeaderMap,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<OutcomeReport>,
) -> Result<Response> {
    Ok(reply(
        decisions::report_outcome(&st.services, src, id, req, idempotency_key(&headers)?).await?,
    ))
}

/// The votes on an Action and its tally, for anyone who may see it.
#[utoipa::path(get, path = "/v1/actions/{action_id}/votes", tag = "actions", params(("action_id" = String, Path)),
    responses((status = 200, description = "the votes on the current (or decided) version, oldest first, and the tally", body = Data<crate::service::votes::VoteList>),
              (status = 404, description = "ACTION_NOT_FOUND", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn list_votes(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Data<crate::service::votes::VoteList>>> {
    Ok(Json(Data {
        data: crate::service::votes::list(&st.services, user, id).await?,
    }))
}

/// Vote on an Action with an approval policy; the quorum resolves it.
#[utoipa::path(post, path = "/v1/actions/{action_id}/votes", tag = "actions", params(("action_id" = String, Path),
        ("Idempotency-Key" = Option<String>, Header, description = "validated; a vote is idempotent per reviewer and Action")),
    request_body = crate::service::votes::VoteRequest,
    responses((status = 200, description = "the Action and the tally; a repeated vote answers the same with idempotent_replay: true", body = VoteOut),
              (status = 400, description = "INVALID_IDEMPOTENCY_KEY", body = crate::http::openapi::ErrorBody), (status = 403, description = "FORBIDDEN: not a listed reviewer; SELF_APPROVAL_FORBIDDEN: the requester", body = crate::http::openapi::ErrorBody),
              (status = 409, description = "ACTION_NOT_OPEN, ACTION_CHANGED, VOTE_ALREADY_CAST", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn vote_on_action(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    headers: HeaderMap,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<crate::service::votes::VoteRequest>,
) -> Result<Response> {
    idempotency_key(&headers)?;
    let v = crate::service::votes::cast(&st.services, user, id, req).await?;
    let body = VoteOut {
        data: ActionOut::from(&v.action),
        idempotent_replay: v.replayed,
        tally: v.tally,
    };
    Ok(replayable(StatusCode::OK, body, v.replayed))
}
