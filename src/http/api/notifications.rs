//! /v1/notifications, /v1/notification-preferences and
//! /v1/workspaces/notification-policy (guide: "Notifications").

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use crate::app::AppState;
use crate::domain::ids;
use crate::domain::notification::{
    NotificationPreferenceUpdate, WorkspaceNotificationPolicyUpdate,
};
use crate::error::{Error, Result};
use crate::http::api::paging;
use crate::http::api::wire::{Data, List};
use crate::http::auth::UserAuth;
use crate::http::extract::{ApiJson, ApiPath, ApiQuery};
use crate::service::notifications::{self, PolicyOut, PreferencesOut, Summary};
use crate::store::notifications::Notification;

/// A notification (DESIGN §12).
#[derive(Debug, Serialize, ToSchema)]
pub struct NotificationOut {
    /// `ntf_…`
    pub id: String,
    /// Always `notification`.
    pub object: &'static str,
    /// `action.assigned`, `action.new`, `action.mentioned`, `action.commented`,
    /// `action.expiring`, `action.returned`, `action.closed`, `action.changed`, `control_request.finished`,
    /// `outcome.failed`, `run.failed` or `invitation.received`.
    pub kind: String,
    pub title: String,
    pub body: String,
    pub action_id: Option<String>,
    /// Where that Action stands now: `open`, `resolved`, `cancelled` or
    /// `expired` (so a client can tell a `New: …` notice whose Action was
    /// decided since); null when the notification is about no Action, or
    /// one the reader may no longer see.
    #[schema(nullable, pattern = "^(open|resolved|cancelled|expired)$")]
    pub action_status: Option<String>,
    /// The dashboard page it is about (`<base-url>/app/actions/{id}` for an Action).
    pub url: String,
    pub workspace_id: String,
    #[schema(format = DateTime)]
    pub read_at: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl NotificationOut {
    pub fn new(n: Notification, base_url: &str) -> Self {
        Self {
            url: format!("{}{}", base_url.trim_end_matches('/'), n.path),
            id: n.id,
            object: "notification",
            kind: n.kind,
            title: n.title,
            body: n.body,
            action_id: n.action_id,
            action_status: n.action_status,
            workspace_id: n.workspace_id,
            read_at: n.read_at,
            created_at: n.created_at,
        }
    }
}

/// Query of GET /v1/notifications.
#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct NotificationParams {
    /// Only unread ones (default false).
    pub unread_only: Option<bool>,
    /// 1..200, default 50.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// A notification id, the last of the previous page: the page after it
    /// (older ones). Empty: the first page.
    #[param(pattern = "^(ntf_[0-7][0-9A-HJKMNP-TV-Z]{25})?$")]
    pub starting_after: Option<String>,
    /// The older name of `starting_after`, with the same meaning; left out of
    /// the OpenAPI document, where one name is enough.
    #[param(ignore)]
    pub before: Option<String>,
}

/// The caller's notifications, newest first, from every workspace they belong to.
#[utoipa::path(get, path = "/v1/notifications", tag = "notifications", params(NotificationParams),
    responses((status = 200, description = "the caller's notifications, newest first", body = List<NotificationOut>),
              (status = 422, description = "VALIDATION_ERROR: limit, or a cursor that is not a notification id, or both starting_after and before", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn list_notifications(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiQuery(p): ApiQuery<NotificationParams>,
) -> Result<Json<List<NotificationOut>>> {
    let limit = p.limit.unwrap_or(50);
    if !(1..=notifications::MAX_PAGE).contains(&limit) {
        return Err(Error::field("limit", "limit must be between 1 and 200"));
    }
    let after = paging::cursor(
        p.starting_after,
        p.before,
        ids::NOTIFICATION,
        "a notification",
    )?;
    let (rows, more) = notifications::list(
        &st.services,
        user,
        p.unread_only.unwrap_or(false),
        after,
        limit,
    )
    .await?;
    let base = &st.services.config.base_url;
    Ok(Json(List::new(
        rows.into_iter()
            .map(|n| NotificationOut::new(n, base))
            .collect(),
        more,
    )))
}

/// Unread counts: in all and by kind.
#[utoipa::path(get, path = "/v1/notifications/summary", tag = "notifications",
    responses((status = 200, description = "`unread` and `by_kind`", body = Summary)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn notification_summary(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
) -> Result<Json<Summary>> {
    Ok(Json(notifications::summary(&st.services, user).await?))
}

/// How many a read-all marked.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReadAll {
    /// Notifications that were unread and are now read.
    pub marked_read: i64,
    /// Always 0.
    pub unread: i64,
}

/// Marks every notification of the caller read.
#[utoipa::path(post, path = "/v1/notifications/read-all", tag = "notifications",
    responses((status = 200, description = "how many were marked read", body = ReadAll)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn read_all_notifications(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
) -> Result<Json<ReadAll>> {
    let n = notifications::read_all(&st.services, user).await?;
    Ok(Json(ReadAll {
        marked_read: n,
        unread: 0,
    }))
}

/// Marks one notification read (again: 200, unchanged).
#[utoipa::path(post, path = "/v1/notifications/{notification_id}/read", tag = "notifications", params(("notification_id" = String, Path)),
    responses((status = 200, description = "the notification, read", body = Data<NotificationOut>),
        (status = 404, description = "NOTIFICATION_NOT_FOUND: not one of the caller's", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn read_notification(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Data<NotificationOut>>> {
    let n = notifications::read_one(&st.services, user, id).await?;
    Ok(Json(Data {
        data: NotificationOut::new(n, &st.services.config.base_url),
    }))
}

/// The caller's preferences in the active workspace.
#[utoipa::path(get, path = "/v1/notification-preferences", tag = "notifications",
    responses((status = 200, description = "the preferences, every kind listed", body = PreferencesOut),
        (status = 404, description = "WORKSPACE_NOT_FOUND: the caller belongs to no workspace", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn get_preferences(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
) -> Result<Json<PreferencesOut>> {
    Ok(Json(notifications::preferences(&st.services, user).await?))
}

/// Changes the caller's preferences in the active workspace; fields left out stay.
#[utoipa::path(patch, path = "/v1/notification-preferences", tag = "notifications", request_body = NotificationPreferenceUpdate,
    responses((status = 200, description = "the preferences", body = PreferencesOut),
        (status = 404, description = "WORKSPACE_NOT_FOUND: the caller belongs to no workspace", body = crate::http::openapi::ErrorBody),
        (status = 409, description = "NOTIFICATION_MANDATORY: the policy makes that kind mandatory (details.errors names it)", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn update_preferences(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiJson(req): ApiJson<NotificationPreferenceUpdate>,
) -> Result<Json<PreferencesOut>> {
    Ok(Json(
        notifications::update_preferences(&st.services, user, req).await?,
    ))
}

/// The active workspace's notification policy (any member may read it).
#[utoipa::path(get, path = "/v1/workspaces/notification-policy", tag = "workspaces",
    responses((status = 200, description = "the policy", body = PolicyOut),
        (status = 404, description = "WORKSPACE_NOT_FOUND: the caller belongs to no workspace", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn get_policy(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
) -> Result<Json<PolicyOut>> {
    Ok(Json(notifications::policy(&st.services, user).await?))
}

/// Changes the active workspace's notification policy (owners and admins); fields left out stay.
#[utoipa::path(patch, path = "/v1/workspaces/notification-policy", tag = "workspaces", request_body = WorkspaceNotificationPolicyUpdate,
    responses((status = 200, description = "the policy", body = PolicyOut),
        (status = 403, description = "FORBIDDEN: only owners and admins set the policy (details.required_role)", body = crate::http::openapi::ErrorBody),
        (status = 404, description = "WORKSPACE_NOT_FOUND: the caller belongs to no workspace", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn update_policy(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiJson(req): ApiJson<WorkspaceNotificationPolicyUpdate>,
) -> Result<Json<PolicyOut>> {
    Ok(Json(
        notifications::update_policy(&st.services, user, req).await?,
    ))
}
