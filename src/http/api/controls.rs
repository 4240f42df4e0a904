//! Controls and context requests (guide: "Controls", "Context requests"):
//! pressing a callback control, the Action's control requests, the Source's
//! result, and a reviewer's question. Each handler is one call to
//! `service::controls`.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use crate::app::AppState;
use crate::domain::requests::{ContextRequest, ControlRequest};
use crate::error::{Error, Result};
use crate::http::api::actions::idempotency_key;
use crate::http::api::replayable;
use crate::http::api::wire::{Data, Envelope, List};
use crate::http::auth::{SourceAuth, UserAuth};
use crate::http::extract::{ApiJson, ApiPath, ApiQuery};
use crate::service::controls::{self, ContextRequestCreate, ControlResult, InvokeRequest};

/// Press a callback control: the Source is told (`action.control_requested`)
/// and reports back through the result route. Never resolves the Action.
#[utoipa::path(post, path = "/v1/actions/{action_id}/controls/{control_key}/invoke", tag = "controls",
    params(("action_id" = String, Path), ("control_key" = String, Path),
        ("Idempotency-Key" = Option<String>, Header, description = "1-255 printable ASCII characters, scoped to you: the same key and body answer the first request again")),
    request_body = InvokeRequest,
    responses((status = 202, description = "the control request, `pending` (idempotent_replay: true when the same key and body were sent before)", body = Envelope<ControlRequest>),
              (status = 400, description = "INVALID_IDEMPOTENCY_KEY", body = crate::http::openapi::ErrorBody),
              (status = 403, description = "FORBIDDEN (viewers; managers not listed on a restricted Action)", body = crate::http::openapi::ErrorBody),
              (status = 404, description = "ACTION_NOT_FOUND, CONTROL_NOT_FOUND", body = crate::http::openapi::ErrorBody),
              (status = 409, description = "ACTION_NOT_OPEN, ACTION_CHANGED (details: the current binding), IDEMPOTENCY_KEY_REUSED", body = crate::http::openapi::ErrorBody),
              (status = 422, description = "VALIDATION_ERROR: a link control (open its url instead)", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn invoke_control(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    headers: HeaderMap,
    ApiPath((id, key)): ApiPath<(String, String)>,
    ApiJson(req): ApiJson<InvokeRequest>,
) -> Result<Response> {
    let idem = idempotency_key(&headers)?;
    let r = controls::invoke(&st.services, user, id, key, req, idem).await?;
    let body = Envelope {
        data: r.request,
        idempotent_replay: r.replayed,
    };
    Ok(replayable(StatusCode::ACCEPTED, body, r.replayed))
}

/// Query of GET /v1/actions/{action_id}/control-requests.
#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ControlRequestParams {
    /// 1..100, default 100.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// A control request of this Action, the last of the previous page: the
    /// page after it (older ones). Empty: the first page.
    pub starting_after: Option<String>,
}

/// The Action's control requests, newest first.
#[utoipa::path(get, path = "/v1/actions/{action_id}/control-requests", tag = "controls", params(("action_id" = String, Path), ControlRequestParams),
    responses((status = 200, description = "the Action's control requests, newest first; has_more: pass the last id as starting_after", body = List<ControlRequest>),
              (status = 404, description = "ACTION_NOT_FOUND", body = crate::http::openapi::ErrorBody),
              (status = 422, description = "VALIDATION_ERROR: limit, or a starting_after that is not a control request of this Action", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn list_control_requests(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
    ApiQuery(p): ApiQuery<ControlRequestParams>,
) -> Result<Json<List<ControlRequest>>> {
    list_for(&st, controls::Reader::Person(user), id, p).await
}

/// Both lists of control requests: the page's bounds, then the list.
async fn list_for(
    st: &AppState,
    reader: controls::Reader,
    id: String,
    p: ControlRequestParams,
) -> Result<Json<List<ControlRequest>>> {
    let limit = p.limit.unwrap_or(controls::LISTED as i64);
    if !(1..=controls::LISTED as i64).contains(&limit) {
        return Err(Error::field("limit", "limit must be between 1 and 100"));
    }
    // An empty cursor is the first page, as an absent one.
    let after = p.starting_after.filter(|s| !s.is_empty());
    let (list, has_more) = controls::list(&st.services, reader, id, after, limit).await?;
    Ok(Json(List::new(list, has_more)))
}

/// The control requests of one of the Source's own Actions, newest first:
/// what a Source that missed a webhook reads to find presses it has not
/// acted on (those still `pending`).
#[utoipa::path(get, path = "/v1/source/actions/{action_id}/control-requests", tag = "controls", params(("action_id" = String, Path), ControlRequestParams),
    responses((status = 200, description = "the Action's control requests, newest first; has_more: pass the last id as starting_after", body = List<ControlRequest>),
              (status = 404, description = "ACTION_NOT_FOUND (unknown, another Source's, or the other environment's)", body = crate::http::openapi::ErrorBody),
              (status = 422, description = "VALIDATION_ERROR: limit, or a starting_after that is not a control request of this Action", body = crate::http::openapi::ErrorBody)),
    security(("source_key" = [])))]
pub async fn list_source_control_requests(
    State(st): State<AppState>,
    SourceAuth(src): SourceAuth,
    ApiPath(id): ApiPath<String>,
    ApiQuery(p): ApiQuery<ControlRequestParams>,
) -> Result<Json<List<ControlRequest>>> {
    list_for(&st, controls::Reader::Source(src), id, p).await
}

/// Report on a control request as the Source that owns its Action.
#[utoipa::path(post, path = "/v1/source/control-requests/{request_id}/result", tag = "controls", params(("request_id" = String, Path)),
    request_body = ControlResult,
    responses((status = 200, description = "the control request with its new status and message (an exact repeat of a final result answers it again, with `Idempotent-Replayed: true`)", body = Data<ControlRequest>),
              (status = 404, description = "CONTROL_REQUEST_NOT_FOUND (unknown, or on another Source's Action or environment)", body = crate::http::openapi::ErrorBody),
              (status = 409, description = "CONTROL_REQUEST_CLOSED: already succeeded or failed (details.status)", body = crate::http::openapi::ErrorBody),
              (status = 422, description = "VALIDATION_ERROR: status or message", body = crate::http::openapi::ErrorBody)),
    security(("source_key" = [])))]
pub async fn report_control_result(
    State(st): State<AppState>,
    SourceAuth(src): SourceAuth,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<ControlResult>,
) -> Result<Response> {
    let (r, replayed) = controls::report(&st.services, src, id, req).await?;
    Ok(replayable(StatusCode::OK, Data { data: r }, replayed))
}

/// Ask the Action's Source for more context.
#[utoipa::path(post, path = "/v1/actions/{action_id}/context-requests", tag = "controls",
    params(("action_id" = String, Path),
        ("Idempotency-Key" = Option<String>, Header, description = "1-255 printable ASCII characters, scoped to you: the same key and question answer the first request again")),
    request_body = ContextRequestCreate,
    responses((status = 201, description = "the context request, `open` until a PATCH changes the Action's content (idempotent_replay: true when the same key and question were sent before: the first request, as it is now)", body = Envelope<ContextRequest>),
              (status = 400, description = "INVALID_IDEMPOTENCY_KEY", body = crate::http::openapi::ErrorBody),
              (status = 403, description = "FORBIDDEN (viewers; managers not listed on a restricted Action)", body = crate::http::openapi::ErrorBody),
              (status = 409, description = "CONTEXT_REQUESTS_UNSUPPORTED (context_request_mode is unsupported), ACTION_NOT_OPEN, IDEMPOTENCY_KEY_REUSED", body = crate::http::openapi::ErrorBody),
              (status = 422, description = "VALIDATION_ERROR: question empty or over 2,000 characters", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn create_context_request(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    headers: HeaderMap,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<ContextRequestCreate>,
) -> Result<Response> {
    let idem = idempotency_key(&headers)?;
    let r = controls::ask(&st.services, user, id, req, idem).await?;
    let body = Envelope {
        data: r.request,
        idempotent_replay: r.replayed,
    };
    Ok(replayable(StatusCode::CREATED, body, r.replayed))
}
