//! /v1/sources routes (SPEC §4.8).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::Value;

use crate::app::AppState;
use crate::error::Result;
use crate::http::auth::UserAuth;
use crate::http::extract::{ApiJson, ApiPath, OptionalJson};
use crate::service::sources::{self, KeyRotate, SourceCreate, SourceUpdate};

/// List the workspace's Sources.
#[utoipa::path(get, path = "/v1/sources", tag = "sources", responses((status = 200, description = "{object: list, data: [Source]}")), security(("user_token" = [])))]
pub async fn list_sources(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
) -> Result<Json<Value>> {
    Ok(Json(sources::list(&st.services, user).await?))
}

/// Create a Source; its keys and webhook secret are shown only in this response.
#[utoipa::path(post, path = "/v1/sources", tag = "sources", request_body = SourceCreate,
    responses((status = 201, description = "{data: Source, secrets: {live_key, test_key, webhook_secret}}")), security(("user_token" = [])))]
pub async fn create_source(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiJson(req): ApiJson<SourceCreate>,
) -> Result<(StatusCode, Json<Value>)> {
    Ok((
        StatusCode::CREATED,
        Json(sources::create(&st.services, user, req).await?),
    ))
}

/// Read one Source.
#[utoipa::path(get, path = "/v1/sources/{source_id}", tag = "sources", params(("source_id" = String, Path)),
    responses((status = 200, description = "{data: Source}"), (status = 404, description = "SOURCE_NOT_FOUND", body = crate::http::openapi::ErrorBody)), security(("user_token" = [])))]
pub async fn get_source(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Value>> {
    Ok(Json(sources::get(&st.services, user, id).await?))
}

/// Rename or describe a Source.
#[utoipa::path(patch, path = "/v1/sources/{source_id}", tag = "sources", params(("source_id" = String, Path)), request_body = SourceUpdate,
    responses((status = 200, description = "{data: Source}"), (status = 404, description = "SOURCE_NOT_FOUND", body = crate::http::openapi::ErrorBody)), security(("user_token" = [])))]
pub async fn update_source(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<SourceUpdate>,
) -> Result<Json<Value>> {
    Ok(Json(sources::update(&st.services, user, id, req).await?))
}

/// Revoke a Source; its Actions and history are kept.
#[utoipa::path(delete, path = "/v1/sources/{source_id}", tag = "sources", params(("source_id" = String, Path)),
    responses((status = 204, description = "revoked"), (status = 404, description = "SOURCE_NOT_FOUND", body = crate::http::openapi::ErrorBody)), security(("user_token" = [])))]
pub async fn revoke_source(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode> {
    sources::revoke(&st.services, user, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Rotate a Source's keys; the old keys stop working at once.
#[utoipa::path(post, path = "/v1/sources/{source_id}/keys/rotate", tag = "sources", params(("source_id" = String, Path)), request_body = KeyRotate,
    responses((status = 200, description = "{data: Source, secrets: {live_key?, test_key?}}"), (status = 404, description = "SOURCE_NOT_FOUND", body = crate::http::openapi::ErrorBody)), security(("user_token" = [])))]
pub async fn rotate_source_keys(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
    OptionalJson(req): OptionalJson<KeyRotate>,
) -> Result<Json<Value>> {
    Ok(Json(
        sources::rotate_keys(&st.services, user, id, req).await?,
    ))
}
