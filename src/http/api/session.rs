//! The signed-in person's session (guide: "Sign-in and sessions"): the public list of sign-in
//! methods, the current session, logout, and the dashboard's bootstrap data
//! (guide: "GET /v1/bootstrap").

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use tower_sessions::Session;

use crate::app::AppState;
use crate::error::Result;
use crate::http::api::wire::Data;
use crate::http::api::wire::session::{
    BootstrapOut, CredentialOut, MethodList, NativeUrls, Person, Revoked, SessionOut, SigninMethod,
    UserOut, WorkspaceOut,
};
use crate::http::auth::UserAuth;
use crate::service::caller::UserCaller;
use crate::service::{inbox, tokens};

use crate::store::{users, workspaces};

/// The enabled sign-in methods, link sign-in included; a client checks this
/// before offering a method (guide: "GET /v1/auth/providers").
pub fn methods(st: &AppState) -> Vec<SigninMethod> {
    let mut out: Vec<SigninMethod> = st
        .services
        .config
        .auth
        .providers
        .iter()
        .map(|(name, p)| SigninMethod::Provider {
            id: name.clone(),
            kind: p.kind,
            name: p.label(name),
            // A provider with only native client ids has no browser flow.
            start_url: p
                .has_browser_flow()
                .then(|| format!("/v1/auth/{name}/start")),
            native: NativeUrls {
                challenge_url: format!("/v1/auth/{name}/native/challenge"),
                exchange_url: format!("/v1/auth/{name}/native"),
            },
        })
        .collect();
    out.push(SigninMethod::Link {
        id: "link",
        kind: "link",
        name: "One-time sign-in link",
        how: "a workspace owner or admin invites you (the invitation link signs you in), or the operator runs `hds users link EMAIL --create-as ROLE` (`hds users link EMAIL` for people already added) and sends you the link",
    });
    if st.services.config.email_links() {
        out.push(SigninMethod::Link {
            id: "email",
            kind: "email_link",
            name: "Sign-in link by e-mail",
            how: "give your account's e-mail address on the sign-in page (/app/signin): a link that works once, within 15 minutes, is mailed to it",
        });
    }
    out
}

/// Sign-in methods.
#[utoipa::path(get, path = "/v1/auth/providers", tag = "auth",
    responses((status = 200, description = "the enabled sign-in methods", body = MethodList)))]
pub async fn list_providers(State(st): State<AppState>) -> Json<MethodList> {
    Json(MethodList {
        object: "list",
        data: methods(&st),
        has_more: false,
    })
}

/// The current session (or API token) and its person.
#[utoipa::path(get, path = "/v1/auth/session", tag = "auth",
    responses((status = 200, description = "the credential, how it came (auth), its person; csrf_token for cookie sessions", body = Data<SessionOut>),
        (status = 401, description = "AUTH_REQUIRED / INVALID_API_KEY", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn get_session(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    session: Session,
    headers: HeaderMap,
) -> Result<Json<Data<SessionOut>>> {
    let id = user.credential_id.clone();
    let now = st.services.clock.now();
    let current = st
        .services
        .db
        .read(move |c| users::by_credential_id(c, &id, now))
        .await?
        .map(|(_, cred)| cred)
        // Ended between the authentication and this read.
        .ok_or_else(|| {
            crate::error::Error::new(
                crate::error::Code::AuthRequired,
                "this session or token has just ended; sign in again",
            )
        })?;
    let by_cookie = !headers.contains_key(axum::http::header::AUTHORIZATION);
    let mut csrf_token = None;
    if by_cookie && let Some((_, csrf)) = crate::http::session::cookie_user(&st, &session).await? {
        // Scripts on our pages send it back as X-CSRF-Token.
        csrf_token = Some(csrf);
    }
    Ok(Json(Data {
        data: SessionOut {
            credential: CredentialOut::from(&current),
            auth: if by_cookie { "cookie" } else { "bearer" },
            user: user_out(&st, &user).await?,
            csrf_token,
        },
    }))
}

async fn user_out(st: &AppState, user: &UserCaller) -> Result<UserOut> {
    let uid = user.user_id.clone();
    let (u, ws) = st
        .services
        .db
        .read(move |c| Ok((users::by_id(c, &uid)?, workspaces::of_user(c, &uid)?)))
        .await?;
    Ok(UserOut {
        id: user.user_id.clone(),
        email: user.email.clone(),
        name: u.and_then(|u| u.name),
        workspaces: ws.iter().map(WorkspaceOut::from).collect(),
    })
}

/// Ends the current session: the token or cookie stops working at once.
#[utoipa::path(post, path = "/v1/auth/logout", tag = "auth",
    responses((status = 200, description = "the credential, revoked", body = Data<Revoked>),
        (status = 401, description = "AUTH_REQUIRED / INVALID_API_KEY", body = crate::http::openapi::ErrorBody),
        (status = 403, description = "CSRF_FAILED (cookie requests from another origin or without X-CSRF-Token)", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn logout(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    session: Session,
    headers: HeaderMap,
) -> Result<Json<Data<Revoked>>> {
    tokens::revoke(&st.services, &user, &user.credential_id).await?;
    if !headers.contains_key(axum::http::header::AUTHORIZATION) {
        crate::http::session::end(&session).await?;
    }
    Ok(Json(Data {
        data: Revoked {
            id: user.credential_id,
            revoked: true,
        },
    }))
}

/// What the dashboard's script needs in one request.
#[utoipa::path(get, path = "/v1/bootstrap", tag = "auth",
    responses((status = 200, description = "the person, workspaces, inbox counts and sign-in methods", body = Data<BootstrapOut>),
        (status = 401, description = "AUTH_REQUIRED / INVALID_API_KEY", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn bootstrap(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
) -> Result<Json<Data<BootstrapOut>>> {
    let u = user_out(&st, &user).await?;
    let active = user.active_workspace().map(|m| m.workspace_id.as_str());
    let active_workspace = u
        .workspaces
        .iter()
        .find(|w| Some(w.id.as_str()) == active)
        .cloned();
    let counts = inbox::counts(
        &st.services,
        &user,
        inbox::InboxParams::default(),
        st.services.clock.now(),
    )
    .await?
    .unwrap_or_default();
    Ok(Json(Data {
        data: BootstrapOut {
            user: Person {
                id: u.id,
                email: u.email,
                name: u.name,
            },
            workspaces: u.workspaces,
            active_workspace,
            inbox_counts: counts,
            signin_methods: methods(&st),
            api_version: crate::API_VERSION,
        },
    }))
}
