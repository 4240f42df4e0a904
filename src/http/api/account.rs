//! /v1/account routes (guide: "Account: export and deletion").

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::app::AppState;
use crate::error::Result;
use crate::http::auth::UserAuth;
use crate::http::extract::{ApiJson, OptionalJson};
use crate::service::account::{self, Account, AccountDeleteRequest, AccountExport, AccountUpdate};

/// Download everything hds holds about the caller: profile, memberships, identities, sessions and tokens (never their secrets), decisions, votes, comments, work on Actions, control and context requests, usage events, notifications, preferences and the invitations they sent.
#[utoipa::path(get, path = "/v1/account/export", tag = "account",
    responses((status = 200, description = "the export, as an attachment `hds-account-<user_id>.json`", body = AccountExport)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn export_account(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
) -> Result<Response> {
    let export = account::export(&st.services, &user).await?;
    let disposition = format!("attachment; filename=\"hds-account-{}.json\"", user.user_id);
    let mut res = Json(export).into_response();
    if let Ok(v) = HeaderValue::from_str(&disposition) {
        res.headers_mut().insert(header::CONTENT_DISPOSITION, v);
    }
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(res)
}

/// The caller's account: id, e-mail address, name.
#[utoipa::path(get, path = "/v1/account", tag = "account",
    responses((status = 200, description = "the account", body = Account)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn get_account(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
) -> Result<Json<Account>> {
    Ok(Json(account::get(&st.services, &user).await?))
}

/// Set or clear the caller's name, shown with their address ("Ann Lee <ann@example.com>") in notices, e-mails and comments.
#[utoipa::path(patch, path = "/v1/account", tag = "account", request_body = AccountUpdate,
    responses((status = 200, description = "the account as it now is", body = Account)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn update_account(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiJson(req): ApiJson<AccountUpdate>,
) -> Result<Json<Account>> {
    Ok(Json(account::update(&st.services, &user, req).await?))
}

/// Delete the caller's account: every session and token stops working at once, identities are deleted, e-mail and name erased, memberships removed; decisions, receipts, votes, comments and history keep the user id.
#[utoipa::path(delete, path = "/v1/account", tag = "account", request_body = AccountDeleteRequest,
    responses((status = 204, description = "deleted"),
        (status = 409, description = "LAST_OWNER (details.workspace_id): the last owner of a workspace with other members", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn delete_account(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    session: tower_sessions::Session,
    headers: axum::http::HeaderMap,
    OptionalJson(req): OptionalJson<AccountDeleteRequest>,
) -> Result<StatusCode> {
    account::delete(&st.services, &user, req).await?;
    // With the cookie, the browser's session goes too, as on logout: its
    // record is deleted and the cookie expired.
    // Best effort: the account is gone, whatever becomes of the record (its
    // credential is revoked, so the cookie signs no one in either way).
    if !headers.contains_key(axum::http::header::AUTHORIZATION)
        && let Err(e) = crate::http::session::end(&session).await
    {
        tracing::warn!(error = %e, "could not end the deleted account's browser session");
    }
    Ok(StatusCode::NO_CONTENT)
}
