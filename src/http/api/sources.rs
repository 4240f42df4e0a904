//! /v1/sources routes (guide: "GET /v1/sources and GET /v1/sources/{source_id}").

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use crate::app::AppState;
use crate::error::Result;
use crate::http::api::wire::sources::{SourceOut, SourceWithSecrets};
use crate::http::api::wire::{Data, List};
use crate::http::auth::UserAuth;
use crate::http::extract::{ApiJson, ApiPath, OptionalJson};
use crate::service::sources::{self, KeyRotate, SourceCreate, SourceUpdate};

/// List the workspace's Sources.
#[utoipa::path(get, path = "/v1/sources", tag = "sources", responses((status = 200, description = "the Sources", body = List<SourceOut>), (status = 403, description = "FORBIDDEN: only workspace owners and admins manage Sources (details.required_role); a member who belongs to no workspace", body = crate::http::openapi::ErrorBody)), security(("user_token" = [])))]
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
    responses((status = 201, description = "the Source; secrets has live_key, test_key and webhook_secret", body = SourceWithSecrets), (status = 403, description = "FORBIDDEN: only workspace owners and admins manage Sources (details.required_role); a member who belongs to no workspace", body = crate::http::openapi::ErrorBody)), security(("user_token" = [])))]
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
    responses((status = 200, description = "the Source", body = Data<SourceOut>), (status = 404, description = "SOURCE_NOT_FOUND", body = crate::http::openapi::ErrorBody), (status = 403, description = "FORBIDDEN: only workspace owners and admins manage Sources (details.required_role); a member who belongs to no workspace", body = crate::http::openapi::ErrorBody)), security(("user_token" = [])))]
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
    responses((status = 200, description = "the Source as changed", body = Data<SourceOut>), (status = 404, description = "SOURCE_NOT_FOUND", body = crate::http::openapi::ErrorBody), (status = 403, description = "FORBIDDEN: only workspace owners and admins manage Sources (details.required_role); a member who belongs to no workspace", body = crate::http::openapi::ErrorBody)), security(("user_token" = [])))]
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
    responses((status = 204, description = "revoked"), (status = 404, description = "SOURCE_NOT_FOUND", body = crate::http::openapi::ErrorBody), (status = 403, description = "FORBIDDEN: only workspace owners and admins manage Sources (details.required_role); a member who belongs to no workspace", body = crate::http::openapi::ErrorBody)), security(("user_token" = [])))]
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
    responses((status = 200, description = "the Source; secrets has only the rotated keys and secret", body = SourceWithSecrets), (status = 404, description = "SOURCE_NOT_FOUND", body = crate::http::openapi::ErrorBody), (status = 403, description = "FORBIDDEN: only workspace owners and admins manage Sources (details.required_role); a member who belongs to no workspace", body = crate::http::openapi::ErrorBody)), security(("user_token" = [])))]
pub async fn rotate_source_keys(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
    OptionalJson(req): OptionalJson<KeyRotate>,
) -> Result<Json<SourceWithSecrets>> {
    let rotated = sources::rotate_keys(&st.services, user, id, req).await?;
    Ok(Json(SourceWithSecrets::new(rotated)))
}
