//! Working on an Action (guide: "Claim, assignment, snooze and comments"):
//! claim, assignment, snooze and comments. Each handler is one call to
//! `service::work`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use crate::app::AppState;
use crate::error::Result;
use crate::http::api::replayable;
use crate::http::api::wire::actions::ActionOut;
use crate::http::api::wire::work::CommentOut;
use crate::http::api::wire::{Data, Envelope, List};
use crate::http::auth::UserAuth;
use crate::http::extract::{ApiJson, ApiPath};
use crate::service::work::{self, AssignmentUpdate, CommentCreate, SnoozeRequest, Worked};

fn answer(w: Worked) -> Response {
    let body = Envelope {
        data: ActionOut::from(&w.action),
        idempotent_replay: w.unchanged,
    };
    replayable(StatusCode::OK, body, w.unchanged)
}

/// Claim an open Action for yourself.
#[utoipa::path(post, path = "/v1/actions/{action_id}/claim", tag = "actions", params(("action_id" = String, Path)),
    responses((status = 200, description = "the Action, assigned to you (idempotent_replay: true when it already was)", body = Envelope<ActionOut>),
              (status = 403, description = "FORBIDDEN (viewers; not listed on a restricted Action), SELF_APPROVAL_FORBIDDEN", body = crate::http::openapi::ErrorBody),
              (status = 409, description = "ACTION_ALREADY_CLAIMED (details.assignee), ACTION_NOT_OPEN", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn claim_action(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
) -> Result<Response> {
    Ok(answer(work::claim(&st.services, user, id).await?))
}

/// Assign an open Action to a member who may decide it, or unassign it.
#[utoipa::path(patch, path = "/v1/actions/{action_id}/assignment", tag = "actions", params(("action_id" = String, Path)),
    request_body = AssignmentUpdate,
    responses((status = 200, description = "the Action with its new assignee", body = Envelope<ActionOut>),
              (status = 403, description = "FORBIDDEN (details.required_role)", body = crate::http::openapi::ErrorBody),
              (status = 409, description = "ACTION_NOT_OPEN", body = crate::http::openapi::ErrorBody),
              (status = 422, description = "VALIDATION_ERROR: the assignee is not a member who may decide it", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn assign_action(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<AssignmentUpdate>,
) -> Result<Response> {
    Ok(answer(work::assign(&st.services, user, id, req).await?))
}

/// Hide an open Action from the inbox until a time, or bring it back.
#[utoipa::path(post, path = "/v1/actions/{action_id}/snooze", tag = "actions", params(("action_id" = String, Path)),
    request_body = SnoozeRequest,
    responses((status = 200, description = "the Action with its snoozed_until (idempotent_replay: true when nothing changed: the same time again, or un-snoozing an Action that is not snoozed)", body = Envelope<ActionOut>),
              (status = 403, description = "FORBIDDEN (details.required_role)", body = crate::http::openapi::ErrorBody),
              (status = 409, description = "ACTION_NOT_OPEN", body = crate::http::openapi::ErrorBody),
              (status = 422, description = "VALIDATION_ERROR: until not in the next 30 days", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn snooze_action(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<SnoozeRequest>,
) -> Result<Response> {
    Ok(answer(work::snooze(&st.services, user, id, req).await?))
}

/// The comments on an Action, oldest first.
#[utoipa::path(get, path = "/v1/actions/{action_id}/comments", tag = "actions", params(("action_id" = String, Path)),
    responses((status = 200, description = "every comment, oldest first", body = List<CommentOut>)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn list_comments(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<List<CommentOut>>> {
    let list = work::comments(&st.services, user, id).await?;
    Ok(Json(List::new(
        list.into_iter().map(CommentOut::from).collect(),
        false,
    )))
}

/// Comment on an Action, open or closed.
#[utoipa::path(post, path = "/v1/actions/{action_id}/comments", tag = "actions", params(("action_id" = String, Path)),
    request_body = CommentCreate,
    responses((status = 201, description = "the comment, as `{data}` like the other creates", body = Data<CommentOut>),
              (status = 403, description = "FORBIDDEN (viewers read comments but do not write them)", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn create_comment(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<CommentCreate>,
) -> Result<(StatusCode, Json<Data<CommentOut>>)> {
    let c = work::add_comment(&st.services, user, id, req).await?;
    let data = CommentOut::from(c);
    Ok((StatusCode::CREATED, Json(Data { data })))
}

/// Change a comment's body (its author only).
#[utoipa::path(patch, path = "/v1/actions/{action_id}/comments/{comment_id}", tag = "actions",
    params(("action_id" = String, Path), ("comment_id" = String, Path)),
    request_body = CommentCreate,
    responses((status = 200, description = "the comment with its new body and edited_at (idempotent_replay: true when the body was already that)", body = Envelope<CommentOut>),
              (status = 403, description = "FORBIDDEN: not its author, or no longer allowed to comment", body = crate::http::openapi::ErrorBody),
              (status = 404, description = "ACTION_NOT_FOUND, COMMENT_NOT_FOUND", body = crate::http::openapi::ErrorBody),
              (status = 422, description = "VALIDATION_ERROR naming body", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn edit_comment(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath((id, comment_id)): ApiPath<(String, String)>,
    ApiJson(req): ApiJson<CommentCreate>,
) -> Result<Response> {
    let (c, unchanged) = work::edit_comment(&st.services, user, id, comment_id, req).await?;
    let body = Envelope {
        data: CommentOut::from(c),
        idempotent_replay: unchanged,
    };
    Ok(replayable(StatusCode::OK, body, unchanged))
}

/// Delete a comment (its author, or an owner or admin).
#[utoipa::path(delete, path = "/v1/actions/{action_id}/comments/{comment_id}", tag = "actions",
    params(("action_id" = String, Path), ("comment_id" = String, Path)),
    responses((status = 204, description = "deleted; the history keeps a comment_deleted entry"),
              (status = 403, description = "FORBIDDEN: neither its author nor an owner or admin", body = crate::http::openapi::ErrorBody),
              (status = 404, description = "ACTION_NOT_FOUND, COMMENT_NOT_FOUND (also when already deleted)", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn delete_comment(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath((id, comment_id)): ApiPath<(String, String)>,
) -> Result<StatusCode> {
    work::delete_comment(&st.services, user, id, comment_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
