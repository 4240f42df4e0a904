//! /v1/workspaces/invitations and /v1/workspace-invitations/accept (guide:
//! "Invitations").

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use crate::app::AppState;
use crate::domain::time;
use crate::error::Result;
use crate::http::api::wire::invitations::{InvitationOut, JoinedWorkspace};
use crate::http::api::wire::{Data, List};
use crate::http::auth::UserAuth;
use crate::http::extract::{ApiJson, ApiPath};
use crate::http::rate_limit::AddressBudget;
use crate::service::invitations::{self, InvitationAccept, InvitationCreate};

fn now(st: &AppState) -> String {
    time::format(st.services.clock.now())
}

/// List the active workspace's invitations, newest first (owners and admins).
#[utoipa::path(get, path = "/v1/workspaces/invitations", tag = "workspaces",
    responses((status = 200, description = "the invitations; status is computed (expired past expires_at)", body = List<InvitationOut>),
        (status = 403, description = "FORBIDDEN: only owners and admins; details.required_role", body = crate::http::openapi::ErrorBody),
        (status = 404, description = "WORKSPACE_NOT_FOUND: the caller belongs to no workspace", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn list_invitations(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
) -> Result<Json<List<InvitationOut>>> {
    let list = invitations::list(&st.services, &user).await?;
    let now = now(&st);
    Ok(Json(List::new(
        list.iter().map(|i| InvitationOut::new(i, &now)).collect(),
        false,
    )))
}

/// Invite someone by e-mail into the active workspace; `accept_url` is in this response only.
#[utoipa::path(post, path = "/v1/workspaces/invitations", tag = "workspaces", request_body = InvitationCreate,
    responses((status = 201, description = "the invitation with its accept_url; a pending invitation to the same e-mail is revoked", body = Data<InvitationOut>),
        (status = 403, description = "FORBIDDEN: only owners and admins invite, only owners invite owners; details.required_role. PLAN_LIMIT_REACHED: the plan allows no more members and pending invitations (details.resource, details.limit, details.used, details.period_end)", body = crate::http::openapi::ErrorBody),
        (status = 404, description = "WORKSPACE_NOT_FOUND: the caller belongs to no workspace", body = crate::http::openapi::ErrorBody),
        (status = 409, description = "ALREADY_MEMBER: that e-mail is a member already", body = crate::http::openapi::ErrorBody),
        (status = 429, description = "RATE_LIMITED: 100 invitations by this person in the last 24 hours (details.scope invitations; Retry-After)", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn create_invitation(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiJson(req): ApiJson<InvitationCreate>,
) -> Result<(StatusCode, Json<Data<InvitationOut>>)> {
    let created = invitations::create(&st.services, &user, req).await?;
    let data = InvitationOut::created(&created, &now(&st));
    Ok((StatusCode::CREATED, Json(Data { data })))
}

/// Revoke an invitation: its link stops working.
#[utoipa::path(delete, path = "/v1/workspaces/invitations/{invitation_id}", tag = "workspaces", params(("invitation_id" = String, Path)),
    responses((status = 200, description = "the invitation, status revoked", body = Data<InvitationOut>),
        (status = 403, description = "FORBIDDEN: only owners and admins; only owners revoke an invitation offering owner; details.required_role", body = crate::http::openapi::ErrorBody),
        (status = 404, description = "INVITATION_NOT_FOUND: no invitation with that id in the active workspace", body = crate::http::openapi::ErrorBody),
        (status = 409, description = "ALREADY_MEMBER: the invitation was accepted", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn revoke_invitation(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Data<InvitationOut>>> {
    let inv = invitations::revoke(&st.services, &user, id).await?;
    Ok(Json(Data {
        data: InvitationOut::new(&inv, &now(&st)),
    }))
}

/// Accept an invitation as the signed-in person; answers the joined workspace.
#[utoipa::path(post, path = "/v1/workspace-invitations/accept", tag = "workspaces", request_body = InvitationAccept,
    responses((status = 200, description = "the workspace joined, with the invited role", body = Data<JoinedWorkspace>),
        (status = 403, description = "INVITATION_EMAIL_MISMATCH: the invitation is for another e-mail; FORBIDDEN: the credential is a session another invitation link opened (sign in another way first)", body = crate::http::openapi::ErrorBody),
        (status = 404, description = "INVITATION_NOT_FOUND: unknown, used, revoked or expired token, or its inviter may no longer offer its role", body = crate::http::openapi::ErrorBody),
        (status = 409, description = "ALREADY_MEMBER: the caller is a member of that workspace already", body = crate::http::openapi::ErrorBody),
        (status = 429, description = "RATE_LIMITED: this client address or credential is over its budget; wait Retry-After seconds", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn accept_invitation(
    _: AddressBudget,
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiJson(req): ApiJson<InvitationAccept>,
) -> Result<Json<Data<JoinedWorkspace>>> {
    let joined = invitations::accept(&st.services, &user, &req.token, false).await?;
    Ok(Json(Data {
        data: JoinedWorkspace::from(&joined),
    }))
}
