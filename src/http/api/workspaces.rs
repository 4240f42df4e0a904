//! /v1/workspaces routes (guide: "Workspaces and members").

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use crate::app::AppState;
use crate::error::Result;
use crate::http::api::wire::workspaces::{MemberRecord, WorkspaceRecord};
use crate::http::api::wire::{Data, List};
use crate::http::auth::UserAuth;
use crate::http::extract::{ApiJson, ApiPath};
use crate::service::workspaces::{self, MemberUpdate, WorkspaceCreate, WorkspaceSelect};

/// List the caller's workspaces in the order they joined them (the first is the active one of a credential that selected none); `active` marks the one this session or token acts on.
#[utoipa::path(get, path = "/v1/workspaces", tag = "workspaces",
    responses((status = 200, description = "the caller's workspaces", body = List<WorkspaceRecord>)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn list_workspaces(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
) -> Result<Json<List<WorkspaceRecord>>> {
    let all = workspaces::list(&st.services, &user).await?;
    Ok(Json(List::new(
        all.into_iter().map(Into::into).collect(),
        false,
    )))
}

/// Create a team workspace; the caller becomes its owner. It is not selected by itself.
#[utoipa::path(post, path = "/v1/workspaces", tag = "workspaces", request_body = WorkspaceCreate,
    responses((status = 201, description = "the workspace", body = Data<WorkspaceRecord>)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn create_workspace(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiJson(req): ApiJson<WorkspaceCreate>,
) -> Result<(StatusCode, Json<Data<WorkspaceRecord>>)> {
    let made = workspaces::create(&st.services, &user, req).await?;
    Ok((StatusCode::CREATED, Json(Data { data: made.into() })))
}

/// Make a workspace the active one of this session or token only.
#[utoipa::path(post, path = "/v1/workspaces/select", tag = "workspaces", request_body = WorkspaceSelect,
    responses((status = 200, description = "the workspace, now active", body = Data<WorkspaceRecord>),
        (status = 404, description = "WORKSPACE_NOT_FOUND: not a member there", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn select_workspace(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiJson(req): ApiJson<WorkspaceSelect>,
) -> Result<Json<Data<WorkspaceRecord>>> {
    let w = workspaces::select(&st.services, &user, req).await?;
    Ok(Json(Data { data: w.into() }))
}

/// List the members of the active workspace.
#[utoipa::path(get, path = "/v1/workspaces/members", tag = "workspaces",
    responses((status = 200, description = "the members, owners first", body = List<MemberRecord>),
        (status = 404, description = "WORKSPACE_NOT_FOUND: the caller belongs to no workspace", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn list_members(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
) -> Result<Json<List<MemberRecord>>> {
    let all = workspaces::members(&st.services, &user).await?;
    Ok(Json(List::new(
        all.into_iter().map(Into::into).collect(),
        false,
    )))
}

/// Change a member's role in the active workspace.
#[utoipa::path(patch, path = "/v1/workspaces/members/{user_id}", tag = "workspaces", params(("user_id" = String, Path)), request_body = MemberUpdate,
    responses((status = 200, description = "the member", body = Data<MemberRecord>),
        (status = 403, description = "FORBIDDEN (details.required_role)", body = crate::http::openapi::ErrorBody),
        (status = 404, description = "MEMBER_NOT_FOUND / WORKSPACE_NOT_FOUND", body = crate::http::openapi::ErrorBody),
        (status = 409, description = "LAST_OWNER", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn update_member(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<MemberUpdate>,
) -> Result<Json<Data<MemberRecord>>> {
    let m = workspaces::change_role(&st.services, &user, id, req).await?;
    Ok(Json(Data { data: m.into() }))
}

/// Remove a member from the active workspace.
#[utoipa::path(delete, path = "/v1/workspaces/members/{user_id}", tag = "workspaces", params(("user_id" = String, Path)),
    responses((status = 204, description = "removed; your own user_id: you left the workspace (any role but its last owner)"),
        (status = 403, description = "FORBIDDEN (details.required_role)", body = crate::http::openapi::ErrorBody),
        (status = 404, description = "MEMBER_NOT_FOUND / WORKSPACE_NOT_FOUND", body = crate::http::openapi::ErrorBody),
        (status = 409, description = "LAST_OWNER", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn remove_member(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode> {
    workspaces::remove(&st.services, &user, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
