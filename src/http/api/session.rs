//! The signed-in person's session (SPEC §4.2): the public list of sign-in
//! methods, the current session, logout, and the dashboard's bootstrap data
//! (SPEC §4.5).

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use serde_json::{Value, json};
use tower_sessions::Session;

use crate::app::AppState;
use crate::error::Result;
use crate::http::auth::UserAuth;
use crate::service::caller::UserCaller;
use crate::service::{inbox, tokens};

use crate::store::{users, workspaces};

/// The enabled sign-in methods, link sign-in included; a client checks this
/// before offering a method (SPEC §5 rule 6).
pub fn methods(st: &AppState) -> Vec<Value> {
    let mut out: Vec<Value> = st
        .services
        .config
        .auth
        .providers
        .iter()
        .map(|(name, p)| {
            let kind = serde_json::to_value(p.kind).unwrap_or(Value::Null);
            // A provider with only native client ids has no browser flow.
            let start_url = p
                .client_id
                .as_ref()
                .map(|_| format!("/v1/auth/{name}/start"));
            json!({
                "id": name,
                "kind": kind,
                "name": p.label(name),
                "start_url": start_url,
                "native": {
                    "challenge_url": format!("/v1/auth/{name}/native/challenge"),
                    "exchange_url": format!("/v1/auth/{name}/native"),
                },
            })
        })
        .collect();
    out.push(json!({
        "id": "link",
        "kind": "link",
        "name": "One-time sign-in link",
        "how": "an admin runs `hds users link EMAIL` and sends you the link",
    }));
    out
}

/// Sign-in methods.
#[utoipa::path(get, path = "/v1/auth/providers", tag = "auth",
    responses((status = 200, description = "{object: list, data: [{id, kind, name, start_url?, native?}]}")))]
pub async fn list_providers(State(st): State<AppState>) -> Json<Value> {
    Json(json!({ "object": "list", "data": methods(&st) }))
}

fn credential_json(c: &users::Credential) -> Value {
    json!({
        "id": c.id,
        "kind": c.kind,
        "name": c.name,
        "method": c.method,
        "client": c.client,
        "created_at": c.created_at,
        "expires_at": c.expires_at,
        "last_used_at": c.last_used_at,
    })
}

/// The current session (or API token) and its person.
#[utoipa::path(get, path = "/v1/auth/session", tag = "auth",
    responses((status = 200, description = "{data: {id, kind, name, method, client, created_at, expires_at, last_used_at, auth, user: {id, email, name, workspaces}, csrf_token?}}"),
        (status = 401, description = "AUTH_REQUIRED / INVALID_API_KEY", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn get_session(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    session: Session,
    headers: HeaderMap,
) -> Result<Json<Value>> {
    let id = user.credential_id.clone();
    let now = st.services.clock.now();
    let current = st
        .services
        .db
        .read(move |c| users::by_credential_id(c, &id, now))
        .await?
        .map(|(_, cred)| cred);
    let by_cookie = !headers.contains_key(axum::http::header::AUTHORIZATION);
    let mut data = current
        .as_ref()
        .map(credential_json)
        .unwrap_or_else(|| json!({}));
    data["auth"] = json!(if by_cookie { "cookie" } else { "bearer" });
    data["user"] = user_json(&st, &user).await?;
    if by_cookie && let Some((_, csrf)) = crate::http::session::cookie_user(&st, &session).await? {
        // Scripts on our pages send it back as X-CSRF-Token.
        data["csrf_token"] = json!(csrf);
    }
    Ok(Json(json!({ "data": data })))
}

async fn user_json(st: &AppState, user: &UserCaller) -> Result<Value> {
    let uid = user.user_id.clone();
    let (u, ws) = st
        .services
        .db
        .read(move |c| Ok((users::by_id(c, &uid)?, workspaces::of_user(c, &uid)?)))
        .await?;
    let workspaces: Vec<Value> = ws
        .iter()
        .map(|(w, role)| json!({ "id": w.id, "name": w.name, "kind": w.kind, "role": role }))
        .collect();
    Ok(json!({
        "id": user.user_id,
        "email": user.email,
        "name": u.and_then(|u| u.name),
        "workspaces": workspaces,
    }))
}

/// Ends the current session: the token or cookie stops working at once.
#[utoipa::path(post, path = "/v1/auth/logout", tag = "auth",
    responses((status = 200, description = "{data: {id, revoked: true}}"),
        (status = 401, description = "AUTH_REQUIRED / INVALID_API_KEY", body = crate::http::openapi::ErrorBody),
        (status = 403, description = "CSRF_FAILED (cookie requests from another origin or without X-CSRF-Token)", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn logout(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    session: Session,
    headers: HeaderMap,
) -> Result<Json<Value>> {
    tokens::revoke(&st.services, &user, &user.credential_id).await?;
    if !headers.contains_key(axum::http::header::AUTHORIZATION) {
        crate::http::session::end(&session).await?;
    }
    Ok(Json(
        json!({ "data": { "id": user.credential_id, "revoked": true } }),
    ))
}

/// What the dashboard's script needs in one request.
#[utoipa::path(get, path = "/v1/bootstrap", tag = "auth",
    responses((status = 200, description = "{data: {user, workspaces, active_workspace, inbox_counts, signin_methods, api_version}}"),
        (status = 401, description = "AUTH_REQUIRED / INVALID_API_KEY", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn bootstrap(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
) -> Result<Json<Value>> {
    let u = user_json(&st, &user).await?;
    let active = user.active_workspace().map(|m| m.workspace_id.clone());
    let active = u["workspaces"]
        .as_array()
        .and_then(|ws| {
            ws.iter()
                .find(|w| Some(w["id"].as_str().unwrap_or("")) == active.as_deref())
        })
        .cloned()
        .unwrap_or(Value::Null);
    let counts = inbox::counts(&st.services, &user, inbox::InboxParams::default()).await?;
    Ok(Json(json!({ "data": {
        "user": { "id": u["id"], "email": u["email"], "name": u["name"] },
        "workspaces": u["workspaces"],
        "active_workspace": active,
        "inbox_counts": counts,
        "signin_methods": methods(&st),
        "api_version": crate::API_VERSION,
    }})))
}
