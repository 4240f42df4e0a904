//! Authentication at the edge (guide: "Authentication"): a handler's extractor states who may
//! call it. Source keys and user tokens are separate boundaries; a credential of
//! one is refused on the other. A refused credential counts against the
//! client address's budget (guide: "Rate limiting"); once that is used up, the
//! address is refused before hds looks anything up.

use std::net::IpAddr;

use axum::extract::FromRequestParts;
use axum::http::Method;
use axum::http::header::{AUTHORIZATION, COOKIE};
use axum::http::request::Parts;
use tower_sessions::Session;

use crate::app::AppState;
use crate::domain::credentials::{USER_TOKEN_PREFIX, hash_secret, source_key_environment};
use crate::error::{Code, Error, Result};
use crate::http::client_addr;
use crate::http::session::{self, CredentialRef};
use crate::service::caller::{Caller, SourceCaller, UserCaller};
use crate::store::sources;

/// A request authenticated with a Source key (`svc_live_…` / `svc_test_…`).
pub struct SourceAuth(pub SourceCaller);
/// A request authenticated as a person: a `svc_usr_…` bearer token, or the
/// `service_session` cookie (with the CSRF checks for writes).
pub struct UserAuth(pub UserCaller);
/// Either; for routes open to both boundaries (GET /v1/actions/{id}).
pub struct AnyAuth(pub Caller);

fn bearer(parts: &Parts) -> Result<String> {
    let Some(raw) = parts.headers.get(AUTHORIZATION) else {
        return Err(Error::new(
            Code::AuthRequired,
            "authentication required: send Authorization: Bearer <key or token>",
        ));
    };
    // Two credentials would leave the caller to whichever is read first.
    if parts.headers.get_all(AUTHORIZATION).iter().nth(1).is_some() {
        return Err(Error::new(
            Code::AuthRequired,
            "send one Authorization header, not several",
        ));
    }
    let raw = raw.to_str().unwrap_or("");
    let token = raw
        .strip_prefix("Bearer ")
        .or_else(|| raw.strip_prefix("bearer "))
        .map(str::trim)
        .unwrap_or("");
    if token.is_empty() {
        return Err(Error::new(
            Code::AuthRequired,
            "the Authorization header must be `Bearer <key or token>`",
        ));
    }
    Ok(token.to_owned())
}

async fn source_from(
    state: &AppState,
    client: Option<IpAddr>,
    key: String,
) -> Result<SourceCaller> {
    if key.starts_with(USER_TOKEN_PREFIX) {
        return Err(Error::new(
            Code::InvalidApiKey,
            "this route needs a Source key (svc_live_… or svc_test_…), not a user token",
        ));
    }
    let Some(env) = source_key_environment(&key) else {
        return Err(Error::new(
            Code::InvalidApiKey,
            "the key is not a Source key",
        ));
    };
    let hash = hash_secret(&key);
    let cache = &state.services.key_cache;
    let now = state.services.clock.now();
    let owner = match cache.get(&hash) {
        Some(o) => Some(o),
        None => {
            // A key in use is in the cache; others cost a read, which an
            // address out of budget does not get.
            state.addresses.gate(client)?;
            let generation = cache.generation();
            let h = hash.clone();
            let at = crate::domain::time::format(now);
            let found = state
                .services
                .db
                .read(move |c| sources::by_key_hash(c, &h, &at))
                .await?;
            if let Some(o) = &found {
                cache.put_if(generation, hash.clone(), o.clone());
            }
            found
        }
    };
    // A cached key replaced in a rotation is refused once its overlap ends,
    // and leaves the cache (its next use reads, through the address gate).
    let Some(owner) = owner.filter(|o| o.environment == env && o.works_at(now)) else {
        cache.forget(&hash);
        return Err(Error::new(
            Code::InvalidApiKey,
            "unknown or rotated Source key",
        ));
    };
    if owner.source_revoked {
        return Err(Error::new(
            Code::SourceRevoked,
            "this Source was revoked; its keys no longer work",
        ));
    }
    state.limiter.check(&owner.source_id)?;
    Ok(SourceCaller {
        source_id: owner.source_id,
        workspace_id: owner.workspace_id,
        team_workspace: owner.workspace_kind == "team",
        environment: env,
        key_hash: crate::service::caller::KeyHash(hash),
    })
}

async fn user_from(state: &AppState, client: Option<IpAddr>, token: String) -> Result<UserCaller> {
    if source_key_environment(&token).is_some() {
        return Err(Error::new(
            Code::InvalidApiKey,
            "this route needs a user token (svc_usr_…), not a Source key",
        ));
    }
    if !token.starts_with(USER_TOKEN_PREFIX) {
        return Err(Error::new(
            Code::InvalidApiKey,
            "the token is not a user token",
        ));
    }
    state.addresses.gate(client)?;
    let user = session::load_user(state, CredentialRef::Token(token))
        .await?
        .ok_or_else(|| {
            Error::new(
                Code::InvalidApiKey,
                "unknown, expired or revoked user token: sign in again",
            )
        })?;
    state.limiter.check(&user.user_id)?;
    Ok(user)
}

/// A person by the `service_session` cookie. Writes must also prove they come
/// from our pages: same origin and the session's `X-CSRF-Token`.
async fn cookie_user_from(state: &AppState, parts: &Parts) -> Result<Option<UserCaller>> {
    let Some(sess) = parts.extensions.get::<Session>() else {
        return Ok(None);
    };
    let Some((user, csrf)) = session::cookie_user(state, sess).await? else {
        return Ok(None);
    };
    let safe = matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS);
    if !safe {
        let presented = parts
            .headers
            .get(session::CSRF_HEADER)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        session::check_csrf(
            &parts.headers,
            &state.services.config,
            &csrf,
            presented,
            session::CsrfFrom::Api,
        )?;
    }
    state.limiter.check(&user.user_id)?;
    Ok(Some(user))
}

/// Whether the request carries our session cookie (whose check reads the store).
pub(crate) fn has_session_cookie(parts: &Parts) -> bool {
    let name = format!("{}=", session::COOKIE_NAME);
    parts
        .headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .any(|pair| pair.trim_start().starts_with(&name))
}

/// A user by bearer token, else by cookie.
async fn person(parts: &Parts, state: &AppState, client: Option<IpAddr>) -> Result<UserCaller> {
    if parts.headers.contains_key(AUTHORIZATION) {
        return user_from(state, client, bearer(parts)?).await;
    }
    if has_session_cookie(parts) {
        state.addresses.gate(client)?;
    }
    cookie_user_from(state, parts).await?.ok_or_else(|| {
        Error::new(
            Code::AuthRequired,
            "authentication required: send Authorization: Bearer <user token>, or sign in at /app/signin",
        )
    })
}

impl FromRequestParts<AppState> for SourceAuth {
    type Rejection = Error;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let client = client_addr::key(parts, &state.services.config);
        let source = async { source_from(state, client, bearer(parts)?).await };
        let source = source
            .await
            .map_err(|e| state.addresses.refused(client, e))?;
        Ok(Self(source))
    }
}

impl FromRequestParts<AppState> for UserAuth {
    type Rejection = Error;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let client = client_addr::key(parts, &state.services.config);
        let user = person(parts, state, client).await;
        Ok(Self(user.map_err(|e| state.addresses.refused(client, e))?))
    }
}

impl FromRequestParts<AppState> for AnyAuth {
    type Rejection = Error;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let client = client_addr::key(parts, &state.services.config);
        any(parts, state, client)
            .await
            .map(Self)
            .map_err(|e| state.addresses.refused(client, e))
    }
}

async fn any(parts: &Parts, state: &AppState, client: Option<IpAddr>) -> Result<Caller> {
    if !parts.headers.contains_key(AUTHORIZATION) {
        return Ok(Caller::User(person(parts, state, client).await?));
    }
    let token = bearer(parts)?;
    if token.starts_with(USER_TOKEN_PREFIX) {
        Ok(Caller::User(user_from(state, client, token).await?))
    } else if source_key_environment(&token).is_none() {
        // This route takes either; "not a Source key" would say only half.
        Err(Error::new(
            Code::InvalidApiKey,
            "the credential is neither a Source key (svc_live_… or svc_test_…) nor a user token (svc_usr_…)",
        ))
    } else {
        Ok(Caller::Source(source_from(state, client, token).await?))
    }
}
