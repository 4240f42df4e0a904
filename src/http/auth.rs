//! Authentication at the edge (SPEC §5): a handler's extractor states who may
//! call it. Source keys and user tokens are separate boundaries; a credential of
//! one is refused on the other.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use crate::app::AppState;
use crate::domain::credentials::{USER_TOKEN_PREFIX, hash_secret, source_key_environment};
use crate::domain::time;
use crate::error::{Code, Error, Result};
use crate::service::caller::{Caller, SourceCaller, UserCaller};
use crate::store::{sources, users, workspaces};

/// A request authenticated with a Source key (`svc_live_…` / `svc_test_…`).
pub struct SourceAuth(pub SourceCaller);
/// A request authenticated as a person (`svc_usr_…` bearer token).
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

async fn source_from(state: &AppState, key: String) -> Result<SourceCaller> {
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
    let owner = match cache.get(&hash) {
        Some(o) => Some(o),
        None => {
            let h = hash.clone();
            let found = state
                .services
                .db
                .read(move |c| sources::by_key_hash(c, &h))
                .await?;
            if let Some(o) = &found {
                cache.put(hash, o.clone());
            }
            found
        }
    };
    let Some(owner) = owner.filter(|o| o.environment == env) else {
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
    })
}

async fn user_from(state: &AppState, token: String) -> Result<UserCaller> {
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
    let now = time::format(time::now());
    let found = state
        .services
        .db
        .read(move |c| {
            let Some(user) = users::by_token(c, &token, &now)? else {
                return Ok(None);
            };
            let memberships = workspaces::of_user(c, &user.id)?
                .into_iter()
                .map(|(w, role)| (w.id, role))
                .collect();
            Ok(Some(UserCaller {
                user_id: user.id,
                email: user.email,
                memberships,
            }))
        })
        .await?;
    let user = found.ok_or_else(|| {
        Error::new(
            Code::InvalidApiKey,
            "unknown, expired or revoked user token",
        )
    })?;
    state.limiter.check(&user.user_id)?;
    Ok(user)
}

impl FromRequestParts<AppState> for SourceAuth {
    type Rejection = Error;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        Ok(Self(source_from(state, bearer(parts)?).await?))
    }
}

impl FromRequestParts<AppState> for UserAuth {
    type Rejection = Error;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        Ok(Self(user_from(state, bearer(parts)?).await?))
    }
}

impl FromRequestParts<AppState> for AnyAuth {
    type Rejection = Error;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let token = bearer(parts)?;
        if token.starts_with(USER_TOKEN_PREFIX) {
            Ok(Self(Caller::User(user_from(state, token).await?)))
        } else {
            Ok(Self(Caller::Source(source_from(state, token).await?)))
        }
    }
}
