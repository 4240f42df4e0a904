//! /v1/workspaces/emails: the active workspace's e-mail log (guide: "E-mail").

use axum::Json;
use axum::extract::State;

use crate::app::AppState;
use crate::error::Result;
use crate::http::api::wire::List;
use crate::http::auth::UserAuth;
use crate::http::extract::ApiQuery;
use crate::service::mail::{self, MailListParams};
use crate::store::mail::Mail;

/// The e-mails hds queued for the active workspace, newest first, without
/// their bodies (owners and admins).
#[utoipa::path(get, path = "/v1/workspaces/emails", tag = "workspaces", params(MailListParams),
    responses((status = 200, description = "the mails, newest first; has_more: pass the last id as starting_after", body = List<Mail>),
        (status = 403, description = "FORBIDDEN: only owners and admins read the e-mail log; details.required_role", body = crate::http::openapi::ErrorBody),
        (status = 422, description = "VALIDATION_ERROR: a bad status, limit or starting_after (details.errors)", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn list_emails(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiQuery(p): ApiQuery<MailListParams>,
) -> Result<Json<List<Mail>>> {
    let (rows, has_more) = mail::list(&st.services, &user, p).await?;
    Ok(Json(List::new(rows, has_more)))
}
