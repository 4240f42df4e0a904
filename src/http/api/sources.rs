//! /v1/sources routes (guide: "GET /v1/sources and GET /v1/sources/{source_id}").

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use crate::app::AppState;
use crate::domain::ids;
use crate::error::{Error, FieldError, Result};
use crate::http::api::paging;
use crate::http::api::wire::sources::{SourceOut, SourceWithSecrets};
use crate::http::api::wire::{Data, List};
use crate::http::auth::{SourceAuth, UserAuth};
use crate::http::extract::{ApiJson, ApiPath, ApiQuery, OptionalJson};
use crate::service::sources::{self, KeyRotate, SourceCreate, SourceUpdate};
use crate::service::webhooks;
use crate::store::deliveries::{Attempt, Delivery};

/// List the workspace's Sources.
#[utoipa::path(get, path = "/v1/sources", tag = "sources", responses((status = 200, description = "the Sources", body = List<SourceOut>), (status = 403, description = "FORBIDDEN: only workspace owners and admins manage Sources (details.required_role)", body = crate::http::openapi::ErrorBody), (status = 404, description = "WORKSPACE_NOT_FOUND: the caller belongs to no workspace", body = crate::http::openapi::ErrorBody)), security(("user_token" = []), ("session_cookie" = [])))]
pub async fn list_sources(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
) -> Result<Json<List<SourceOut>>> {
    let list = sources::list(&st.services, user).await?;
    Ok(Json(List::new(
        list.iter().map(SourceOut::from).collect(),
        false,
    )))
}

/// Create a Source; its keys and webhook secret are shown only in this response.
#[utoipa::path(post, path = "/v1/sources", tag = "sources", request_body = SourceCreate,
    responses((status = 201, description = "the Source; secrets has live_key, test_key and webhook_secret", body = SourceWithSecrets), (status = 403, description = "FORBIDDEN: only workspace owners and admins manage Sources (details.required_role). PLAN_LIMIT_REACHED: the plan allows no more Sources (details.resource, details.limit, details.used)", body = crate::http::openapi::ErrorBody), (status = 404, description = "WORKSPACE_NOT_FOUND: the caller belongs to no workspace", body = crate::http::openapi::ErrorBody)), security(("user_token" = []), ("session_cookie" = [])))]
pub async fn create_source(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiJson(req): ApiJson<SourceCreate>,
) -> Result<(StatusCode, Json<SourceWithSecrets>)> {
    let created = sources::create(&st.services, user, req).await?;
    Ok((StatusCode::CREATED, Json(SourceWithSecrets::new(created))))
}

/// Read one Source.
#[utoipa::path(get, path = "/v1/sources/{source_id}", tag = "sources", params(("source_id" = String, Path)),
    responses((status = 200, description = "the Source", body = Data<SourceOut>), (status = 404, description = "SOURCE_NOT_FOUND; WORKSPACE_NOT_FOUND when the caller belongs to no workspace", body = crate::http::openapi::ErrorBody), (status = 403, description = "FORBIDDEN: only workspace owners and admins manage Sources (details.required_role)", body = crate::http::openapi::ErrorBody)), security(("user_token" = []), ("session_cookie" = [])))]
pub async fn get_source(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Data<SourceOut>>> {
    let src = sources::get(&st.services, user, id).await?;
    Ok(Json(Data {
        data: SourceOut::from(&src),
    }))
}

/// Rename or describe a Source.
#[utoipa::path(patch, path = "/v1/sources/{source_id}", tag = "sources", params(("source_id" = String, Path)), request_body = SourceUpdate,
    responses((status = 200, description = "the Source as changed", body = Data<SourceOut>), (status = 404, description = "SOURCE_NOT_FOUND; WORKSPACE_NOT_FOUND when the caller belongs to no workspace", body = crate::http::openapi::ErrorBody), (status = 403, description = "FORBIDDEN: only workspace owners and admins manage Sources (details.required_role)", body = crate::http::openapi::ErrorBody)), security(("user_token" = []), ("session_cookie" = [])))]
pub async fn update_source(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<SourceUpdate>,
) -> Result<Json<Data<SourceOut>>> {
    let src = sources::update(&st.services, user, id, req).await?;
    Ok(Json(Data {
        data: SourceOut::from(&src),
    }))
}

/// Revoke a Source; its Actions and history are kept.
#[utoipa::path(delete, path = "/v1/sources/{source_id}", tag = "sources", params(("source_id" = String, Path)),
    responses((status = 204, description = "revoked"), (status = 404, description = "SOURCE_NOT_FOUND; WORKSPACE_NOT_FOUND when the caller belongs to no workspace", body = crate::http::openapi::ErrorBody), (status = 403, description = "FORBIDDEN: only workspace owners and admins manage Sources (details.required_role)", body = crate::http::openapi::ErrorBody)), security(("user_token" = []), ("session_cookie" = [])))]
pub async fn revoke_source(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode> {
    sources::revoke(&st.services, user, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Rotate a Source's keys and/or webhook secret; each replaced key works until
/// `key_overlap_seconds` (default a day) have passed, and is listed in `keys`
/// with its `expires_at` meanwhile.
#[utoipa::path(post, path = "/v1/sources/{source_id}/keys/rotate", tag = "sources", params(("source_id" = String, Path)), request_body = KeyRotate,
    responses((status = 200, description = "the Source; secrets has only the rotated keys and secret", body = SourceWithSecrets), (status = 404, description = "SOURCE_NOT_FOUND; WORKSPACE_NOT_FOUND when the caller belongs to no workspace", body = crate::http::openapi::ErrorBody), (status = 403, description = "FORBIDDEN: only workspace owners and admins manage Sources (details.required_role)", body = crate::http::openapi::ErrorBody)), security(("user_token" = []), ("session_cookie" = [])))]
pub async fn rotate_source_keys(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
    OptionalJson(req): OptionalJson<KeyRotate>,
) -> Result<Json<SourceWithSecrets>> {
    let rotated = sources::rotate_keys(&st.services, user, id, req).await?;
    Ok(Json(SourceWithSecrets::new(rotated)))
}

/// Query of GET /v1/sources/{source_id}/deliveries.
#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DeliveryParams {
    /// 1..100, default 20
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// A delivery id, the last of the previous page: the page after it
    /// (older ones). Empty: the first page.
    #[param(pattern = "^(msg_[0-7][0-9A-HJKMNP-TV-Z]{25})?$")]
    pub starting_after: Option<String>,
    /// The older name of `starting_after`, with the same meaning; left out of
    /// the OpenAPI document, where one name is enough.
    #[param(ignore)]
    pub before: Option<String>,
}

/// The Source's webhook deliveries, newest first (guide: "Webhooks").
#[utoipa::path(get, path = "/v1/sources/{source_id}/deliveries", tag = "sources", params(("source_id" = String, Path), DeliveryParams),
    responses((status = 200, description = "the deliveries, newest first", body = List<Delivery>), (status = 422, description = "VALIDATION_ERROR: limit, or a cursor that is not a delivery id, or both starting_after and before", body = crate::http::openapi::ErrorBody), (status = 404, description = "SOURCE_NOT_FOUND; WORKSPACE_NOT_FOUND when the caller belongs to no workspace", body = crate::http::openapi::ErrorBody), (status = 403, description = "FORBIDDEN: only workspace owners and admins read the delivery log (details.required_role)", body = crate::http::openapi::ErrorBody)), security(("user_token" = []), ("session_cookie" = [])))]
pub async fn list_deliveries(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
    ApiQuery(p): ApiQuery<DeliveryParams>,
) -> Result<Json<List<Delivery>>> {
    let limit = p.limit.unwrap_or(20);
    if !(1..=webhooks::MAX_PAGE).contains(&limit) {
        return Err(Error::field("limit", "limit must be between 1 and 100"));
    }
    let after = paging::cursor(p.starting_after, p.before, ids::DELIVERY, "a delivery")?;
    let mut rows = webhooks::list(
        &st.services,
        webhooks::Reader::Manager(user, id),
        false,
        after,
        limit + 1,
    )
    .await?;
    let has_more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    Ok(Json(List::new(rows, has_more)))
}

/// One delivery and every attempt of it.
#[utoipa::path(get, path = "/v1/sources/{source_id}/deliveries/{delivery_id}", tag = "sources", params(("source_id" = String, Path), ("delivery_id" = String, Path)),
    responses((status = 200, description = "the delivery, with `attempts`", body = Data<DeliveryDetail>), (status = 404, description = "SOURCE_NOT_FOUND or DELIVERY_NOT_FOUND; WORKSPACE_NOT_FOUND when the caller belongs to no workspace", body = crate::http::openapi::ErrorBody), (status = 403, description = "FORBIDDEN: only workspace owners and admins read the delivery log (details.required_role)", body = crate::http::openapi::ErrorBody)), security(("user_token" = []), ("session_cookie" = [])))]
pub async fn get_delivery(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath((id, delivery_id)): ApiPath<(String, String)>,
) -> Result<Json<Data<DeliveryDetail>>> {
    let (delivery, attempts) = webhooks::get(
        &st.services,
        webhooks::Reader::Manager(user, id),
        delivery_id,
    )
    .await?;
    Ok(Json(Data {
        data: DeliveryDetail::new(delivery, attempts),
    }))
}

/// Send a delivery again now: the same message (same `webhook-id` and body),
/// signed afresh, with a new round of retries.
#[utoipa::path(post, path = "/v1/sources/{source_id}/deliveries/{delivery_id}/resend", tag = "sources", params(("source_id" = String, Path), ("delivery_id" = String, Path)),
    responses((status = 202, description = "queued: the delivery, pending", body = Data<Delivery>), (status = 404, description = "SOURCE_NOT_FOUND or DELIVERY_NOT_FOUND; WORKSPACE_NOT_FOUND when the caller belongs to no workspace", body = crate::http::openapi::ErrorBody), (status = 403, description = "FORBIDDEN: only workspace owners and admins manage Sources (details.required_role)", body = crate::http::openapi::ErrorBody)), security(("user_token" = []), ("session_cookie" = [])))]
pub async fn resend_delivery(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath((id, delivery_id)): ApiPath<(String, String)>,
) -> Result<(StatusCode, Json<Data<Delivery>>)> {
    let d = webhooks::resend(
        &st.services,
        webhooks::Reader::Manager(user, id),
        delivery_id,
    )
    .await?;
    Ok((StatusCode::ACCEPTED, Json(Data { data: d })))
}

/// A delivery with its attempts, first first: the fields of the list's
/// delivery, but `attempts` is the list of attempts instead of their count
/// (one member of each name: a flattened delivery sent `attempts` twice).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct DeliveryDetail {
    pub id: String,
    /// Always `webhook_delivery`.
    pub object: &'static str,
    pub source_id: String,
    pub action_id: String,
    pub environment: String,
    pub event_type: String,
    pub url: String,
    pub status: String,
    /// Every attempt, first first.
    pub attempts: Vec<Attempt>,
    pub last_status_code: Option<i64>,
    pub last_error: Option<String>,
    pub last_attempt_at: Option<String>,
    pub next_attempt_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl DeliveryDetail {
    fn new(d: Delivery, attempts: Vec<Attempt>) -> Self {
        Self {
            id: d.id,
            object: d.object,
            source_id: d.source_id,
            action_id: d.action_id,
            environment: d.environment,
            event_type: d.event_type,
            url: d.url,
            status: d.status,
            attempts,
            last_status_code: d.last_status_code,
            last_error: d.last_error,
            last_attempt_at: d.last_attempt_at,
            next_attempt_at: d.next_attempt_at,
            created_at: d.created_at,
            updated_at: d.updated_at,
        }
    }
}

/// Query of GET /v1/source/deliveries.
#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct SourceDeliveryParams {
    /// `failed`: only the deliveries given up after their retries. Left
    /// out or empty: every delivery.
    #[param(schema_with = failed_schema)]
    pub status: Option<String>,
    /// 1..100, default 20
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// A delivery id, the last of the previous page: the page after it
    /// (older ones). Empty: the first page.
    #[param(pattern = "^(msg_[0-7][0-9A-HJKMNP-TV-Z]{25})?$")]
    pub starting_after: Option<String>,
}

fn failed_schema() -> utoipa::openapi::Object {
    crate::service::inbox::string_enum(&["failed", ""])
}

/// The Source's own webhook deliveries in its key's environment, newest first.
#[utoipa::path(get, path = "/v1/source/deliveries", tag = "sources", params(SourceDeliveryParams),
    responses((status = 200, description = "the deliveries, newest first", body = List<Delivery>),
        (status = 422, description = "VALIDATION_ERROR: status, limit, or a starting_after that is not one of this Source's deliveries in this environment", body = crate::http::openapi::ErrorBody)),
    security(("source_key" = [])))]
pub async fn list_source_deliveries(
    State(st): State<AppState>,
    SourceAuth(src): SourceAuth,
    ApiQuery(p): ApiQuery<SourceDeliveryParams>,
) -> Result<Json<List<Delivery>>> {
    let mut errs = Vec::new();
    let failed_only = match p.status.as_deref().filter(|s| !s.is_empty()) {
        None => false,
        Some("failed") => true,
        Some(other) => {
            errs.push(FieldError::new(
                "status",
                format!(
                    "`{other}` is not a status this list filters by: use `failed` (deliveries given up after their retries), or leave status out for every delivery"
                ),
            ));
            false
        }
    };
    let limit = p.limit.unwrap_or(20);
    if !(1..=webhooks::MAX_PAGE).contains(&limit) {
        errs.push(FieldError::new("limit", "limit must be between 1 and 100"));
    }
    let after = p.starting_after.filter(|s| !s.is_empty());
    if let Some(problem) = after
        .as_deref()
        .and_then(|a| ids::cursor_problem("starting_after", a, ids::DELIVERY, "a delivery"))
    {
        errs.push(problem);
    }
    let after = after.map(ids::Cursor::starting_after);
    if !errs.is_empty() {
        return Err(Error::validation(errs));
    }
    let reader = webhooks::Reader::Source(src);
    let mut rows = webhooks::list(&st.services, reader, failed_only, after, limit + 1).await?;
    let has_more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    Ok(Json(List::new(rows, has_more)))
}

/// One of the Source's own deliveries, with every attempt of it.
#[utoipa::path(get, path = "/v1/source/deliveries/{delivery_id}", tag = "sources", params(("delivery_id" = String, Path)),
    responses((status = 200, description = "the delivery, with `attempts`", body = Data<DeliveryDetail>),
        (status = 404, description = "DELIVERY_NOT_FOUND: not a delivery of this Source in this key's environment", body = crate::http::openapi::ErrorBody)),
    security(("source_key" = [])))]
pub async fn get_source_delivery(
    State(st): State<AppState>,
    SourceAuth(src): SourceAuth,
    ApiPath(delivery_id): ApiPath<String>,
) -> Result<Json<Data<DeliveryDetail>>> {
    let (delivery, attempts) =
        webhooks::get(&st.services, webhooks::Reader::Source(src), delivery_id).await?;
    Ok(Json(Data {
        data: DeliveryDetail::new(delivery, attempts),
    }))
}

/// Send one of the Source's own deliveries again now: the same message
/// (same `webhook-id` and body), signed afresh, with a new round of retries.
#[utoipa::path(post, path = "/v1/source/deliveries/{delivery_id}/resend", tag = "sources", params(("delivery_id" = String, Path)),
    responses((status = 202, description = "queued: the delivery, pending", body = Data<Delivery>),
        (status = 404, description = "DELIVERY_NOT_FOUND: not a delivery of this Source in this key's environment", body = crate::http::openapi::ErrorBody)),
    security(("source_key" = [])))]
pub async fn resend_source_delivery(
    State(st): State<AppState>,
    SourceAuth(src): SourceAuth,
    ApiPath(delivery_id): ApiPath<String>,
) -> Result<(StatusCode, Json<Data<Delivery>>)> {
    let d = webhooks::resend(&st.services, webhooks::Reader::Source(src), delivery_id).await?;
    Ok((StatusCode::ACCEPTED, Json(Data { data: d })))
}

/// Body of POST /v1/source/deliveries/recover.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeliveryRecover {
    /// RFC 3339: deliveries made at or after this time are resent.
    #[schema(format = DateTime)]
    pub since: String,
    /// The `last_id` of the previous answer, while it said `has_more`.
    #[serde(default)]
    #[schema(pattern = "^(msg_[0-7][0-9A-HJKMNP-TV-Z]{25})?$")]
    pub starting_after: Option<String>,
}

/// After an outage: send again every delivery of the Source (its key's
/// environment) given up since a time, oldest first, up to 1,000 a request.
#[utoipa::path(post, path = "/v1/source/deliveries/recover", tag = "sources", request_body = DeliveryRecover,
    responses((status = 202, description = "queued: how many were resent, and whether more wait", body = webhooks::Recovery),
        (status = 422, description = "VALIDATION_ERROR: since is not an RFC 3339 time, or starting_after not a delivery id (each named in details.errors)", body = crate::http::openapi::ErrorBody)),
    security(("source_key" = [])))]
pub async fn recover_source_deliveries(
    State(st): State<AppState>,
    SourceAuth(src): SourceAuth,
    ApiJson(req): ApiJson<DeliveryRecover>,
) -> Result<(StatusCode, Json<webhooks::Recovery>)> {
    let mut errs = Vec::new();
    let since = crate::domain::time::parse(&req.since);
    if since.is_none() {
        errs.push(FieldError::new(
            "since",
            format!(
                "`{}` is not an RFC 3339 time; send one such as 2026-11-27T08:00:00Z",
                req.since
            ),
        ));
    }
    // Empty: from the start, as on the list.
    let after = req.starting_after.filter(|a| !a.is_empty());
    if let Some(problem) = after
        .as_deref()
        .and_then(|a| ids::cursor_problem("starting_after", a, ids::DELIVERY, "a delivery"))
    {
        errs.push(problem);
    }
    let Some(since) = since.filter(|_| errs.is_empty()) else {
        return Err(Error::validation(errs));
    };
    let r = webhooks::recover(&st.services, src, since, after).await?;
    Ok((StatusCode::ACCEPTED, Json(r)))
}
