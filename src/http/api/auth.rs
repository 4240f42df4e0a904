//! Sign-in with an identity provider (guide: "Sign-in and sessions"): the browser flow
//! (start, callback), the native ID-token exchange and Apple's code exchange.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde_json::Value;
use tower_sessions::Session;
use utoipa::{IntoParams, ToSchema};

use crate::app::AppState;
use crate::error::{Code, Error, FieldError, Result};
use crate::http::api::wire::session::{BearerOut, Challenge};
use crate::http::extract::{ApiJson, ApiPath, ApiQuery, RawBody};
use crate::http::rate_limit::AddressBudget;
use crate::http::session::local_next;
use crate::service::oidc::{self, AppClient, Callback};
use crate::service::signin::SignedIn;

/// Ties a browser sign-in to the browser that started it (guide: "Browser flow"). Scoped
/// to /v1/auth/ and short-lived; SameSite=None on https so Apple's cross-site
/// form POST still carries it.
const BINDING_COOKIE: &str = "hds_oidc_binding";

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StartParams {
    /// Local path to continue to after sign-in (default `/app`); other sites,
    /// `//host` and `/\\host` forms and control characters are refused.
    #[param(
        max_length = 512,
        pattern = "^(/([^/\\\\\\u0000-\\u001f\\u007f-\\u009f][^\\\\\\u0000-\\u001f\\u007f-\\u009f]*)?)?$"
    )]
    pub next: Option<String>,
}

/// Start the browser sign-in: redirects to the identity provider.
#[utoipa::path(get, path = "/v1/auth/{provider}/start", tag = "auth",
    params(("provider" = String, Path), StartParams),
    responses((status = 303, description = "to the provider's authorization page; sets the hds_oidc_binding cookie. A browser (Accept: text/html) whose `next` is refused goes to /app/signin?error=INVALID_NEXT instead of the 422, and one over the address's budget to /app/signin?error=RATE_LIMITED instead of the 429"),
        (status = 404, description = "PROVIDER_NOT_FOUND", body = crate::http::openapi::ErrorBody),
        (status = 422, description = "VALIDATION_ERROR: `next` is not a local path", body = crate::http::openapi::ErrorBody),
        (status = 429, description = "RATE_LIMITED: this address's sign-in budget is used up; see Retry-After", body = crate::http::openapi::ErrorBody),
        (status = 502, description = "PROVIDER_UNAVAILABLE", body = crate::http::openapi::ErrorBody)))]
pub async fn start_signin(
    budget: std::result::Result<AddressBudget, Error>,
    State(st): State<AppState>,
    ApiPath(provider): ApiPath<String>,
    ApiQuery(p): ApiQuery<StartParams>,
    headers: HeaderMap,
) -> Result<Response> {
    // Over budget, a browser lands on the sign-in page, which says to wait
    // (starting again at once is what keeps it refused).
    if let Err(e) = budget {
        return Ok(refusal(&headers, e));
    }
    // A `next` pointing elsewhere is refused outright, never redirected;
    // a browser that followed such a link lands on the sign-in page, told.
    let next = match start_next(p.next.as_deref()) {
        Ok(next) => next,
        Err(e) if navigation(&headers) => {
            tracing::info!(error.message = %e.message, "browser sign-in start refused its next");
            return Ok(Redirect::to("/app/signin?error=INVALID_NEXT").into_response());
        }
        Err(e) => return Err(e),
    };
    let binding = cookie(&headers, BINDING_COOKIE);
    let started = match oidc::start(&st.services, &provider, next, binding.as_deref()).await {
        Ok(started) => started,
        Err(e) => return Ok(refusal(&headers, e)),
    };
    let set = binding_cookie(&st, &started.binding, 600)?;
    Ok((
        [(header::SET_COOKIE, set)],
        Redirect::to(&started.authorize_url),
    )
        .into_response())
}

/// The provider's answer (query string). Signs the browser in, then redirects to `next`.
#[utoipa::path(get, path = "/v1/auth/{provider}/callback", tag = "auth",
    params(("provider" = String, Path), ("code" = Option<String>, Query), ("state" = String, Query),
        ("iss" = Option<String>, Query, description = "RFC 9207 issuer; checked when present")),
    responses((status = 303, description = "signed in: sets the service_session cookie, redirects to `next`"),
        (status = 401, description = "INVALID_ID_TOKEN / AUTH_REQUIRED (the provider refused)", body = crate::http::openapi::ErrorBody),
        (status = 403, description = "CSRF_FAILED (unknown state, other browser) / SIGNIN_NOT_ALLOWED", body = crate::http::openapi::ErrorBody),
        (status = 502, description = "PROVIDER_UNAVAILABLE", body = crate::http::openapi::ErrorBody)))]
pub async fn finish_signin(
    State(st): State<AppState>,
    ApiPath(provider): ApiPath<String>,
    session: Session,
    headers: HeaderMap,
    ApiQuery(answer): ApiQuery<Callback>,
) -> Result<Response> {
    finish(&st, &provider, &session, &headers, answer).await
}

/// The provider's answer as a form POST (Apple's `response_mode=form_post`).
#[utoipa::path(post, path = "/v1/auth/{provider}/callback", tag = "auth",
    params(("provider" = String, Path)),
    request_body(content_type = "application/x-www-form-urlencoded", description = "code, state, user? (Apple), iss?"),
    responses((status = 303, description = "signed in: sets the service_session cookie, redirects to `next`"),
        (status = 403, description = "CSRF_FAILED / SIGNIN_NOT_ALLOWED", body = crate::http::openapi::ErrorBody)))]
pub async fn finish_signin_form(
    State(st): State<AppState>,
    ApiPath(provider): ApiPath<String>,
    session: Session,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> Result<Response> {
    let answer: Callback = serde_urlencoded::from_bytes(&body).map_err(|e| {
        Error::validation(vec![FieldError::new(
            "body",
            format!("unreadable form: {e}"),
        )])
    })?;
    finish(&st, &provider, &session, &headers, answer).await
}

async fn finish(
    st: &AppState,
    provider: &str,
    session: &Session,
    headers: &HeaderMap,
    answer: Callback,
) -> Result<Response> {
    let binding = cookie(headers, BINDING_COOKIE);
    let user_agent = header_text(headers, header::USER_AGENT.as_str(), 256);
    match oidc::finish(
        &st.services,
        provider,
        answer,
        binding.as_deref(),
        user_agent,
    )
    .await
    {
        Ok((signed_in, next)) => {
            crate::http::session::begin(&st.services, session, &signed_in).await?;
            // The binding has served: the browser forgets it now, not in
            // ten minutes.
            let clear = binding_cookie(st, "", 0)?;
            Ok(([(header::SET_COOKIE, clear)], Redirect::to(&next)).into_response())
        }
        Err(e) => Ok(refusal(headers, e)),
    }
}

/// The `hds_oidc_binding` cookie with `value`, kept `max_age` seconds (0:
/// removed).
fn binding_cookie(st: &AppState, value: &str, max_age: u32) -> Result<HeaderValue> {
    let attributes = if st.services.config.secure_cookies() {
        "SameSite=None; Secure"
    } else {
        "SameSite=Lax"
    };
    let set = format!(
        "{BINDING_COOKIE}={value}; HttpOnly; Path=/v1/auth/; Max-Age={max_age}; {attributes}"
    );
    HeaderValue::from_str(&set).map_err(Error::internal)
}

/// A failed browser sign-in. A person's browser (a navigation accepts HTML)
/// lands on the sign-in page, which explains the code (a refusal gets its own
/// page); API clients get the JSON error. Internal errors stay opaque 500s.
/// `next` of a sign-in start: a local path (`local_next`) that holds no
/// link's secret, since the login row keeps it until the callback.
fn start_next(next: Option<&str>) -> Result<String> {
    let next = local_next(next)?;
    if crate::http::carries_secret(&next) {
        return Err(Error::validation(vec![FieldError::new(
            "next",
            "`next` must not hold a sign-in or invitation link's secret; \
             open the link again after signing in (invitation pages return by /app/invitations/continue)",
        )]));
    }
    Ok(next)
}

/// A browser navigating (it accepts HTML), not an API client.
fn navigation(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/html"))
}

fn refusal(headers: &HeaderMap, e: Error) -> Response {
    if !navigation(headers) || e.code == Code::Internal {
        return e.into_response();
    }
    tracing::info!(error.code = e.code.as_str(), error.message = %e.message, "browser sign-in failed");
    let code = match e.code {
        Code::CsrfFailed => "INVALID_STATE",
        _ if e.details.get("provider_error").and_then(Value::as_str) == Some("access_denied") => {
            "ACCESS_DENIED"
        }
        other => other.as_str(),
    };
    // Why a sign-in was not allowed leads to what to do about it (a
    // fixed word, never the message).
    let reason = match e.details.get("reason").and_then(Value::as_str) {
        Some(r @ ("unverified_email" | "linked_elsewhere" | "unusable_email" | "not_admitted")) => {
            format!("&reason={r}")
        }
        _ => String::new(),
    };
    Redirect::to(&format!("/app/signin?error={code}{reason}")).into_response()
}

/// Get a nonce for the native sign-in: single attempt, valid 5 minutes.
#[utoipa::path(post, path = "/v1/auth/{provider}/native/challenge", tag = "auth",
    params(("provider" = String, Path)),
    responses((status = 200, description = "pass the nonce to the provider's SDK (Apple: raw or hex SHA-256)", body = Challenge),
        (status = 404, description = "PROVIDER_NOT_FOUND", body = crate::http::openapi::ErrorBody),
        (status = 429, description = "RATE_LIMITED: this address's sign-in budget is used up; see Retry-After", body = crate::http::openapi::ErrorBody)))]
pub async fn native_challenge(
    _: AddressBudget,
    State(st): State<AppState>,
    ApiPath(provider): ApiPath<String>,
) -> Result<Json<Challenge>> {
    let (nonce, expires_at) = oidc::challenge(&st.services, &provider).await?;
    Ok(Json(Challenge { nonce, expires_at }))
}

/// The body of the native exchange: NativeGoogleLoginRequest and
/// NativeAppleLoginRequest of the API have this one shape.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NativeLoginRequest {
    /// The ID token the provider's SDK returned (a JWT).
    pub id_token: String,
    /// The nonce from the challenge route, as issued (Apple: not the hash).
    pub nonce: String,
}

/// Exchange a provider ID token (Google, Apple) for a bearer session.
#[utoipa::path(post, path = "/v1/auth/{provider}/native", tag = "auth",
    params(("provider" = String, Path), ("X-Service-Client" = Option<String>, Header, description = "the app's name and version, recorded on the session")),
    request_body = NativeLoginRequest,
    responses((status = 200, description = "a bearer session", body = BearerOut),
        (status = 401, description = "INVALID_ID_TOKEN: names the failed check (signature, iss, aud, exp, nonce)", body = crate::http::openapi::ErrorBody),
        (status = 403, description = "SIGNIN_NOT_ALLOWED", body = crate::http::openapi::ErrorBody),
        (status = 404, description = "PROVIDER_NOT_FOUND", body = crate::http::openapi::ErrorBody),
        (status = 429, description = "RATE_LIMITED: this address's sign-in budget is used up; see Retry-After", body = crate::http::openapi::ErrorBody),
        (status = 502, description = "PROVIDER_UNAVAILABLE", body = crate::http::openapi::ErrorBody)))]
pub async fn native_signin(
    _: AddressBudget,
    State(st): State<AppState>,
    ApiPath(provider): ApiPath<String>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<NativeLoginRequest>,
) -> Result<Json<BearerOut>> {
    let signed_in = oidc::native(
        &st.services,
        &provider,
        &req.id_token,
        &req.nonce,
        app_client(&headers),
    )
    .await?;
    Ok(Json(bearer_json(signed_in)))
}

/// AppleAuthorizationCodeLoginRequest of the API.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AppleAuthorizationCodeLoginRequest {
    /// The authorization code Apple's web flow gave the app.
    pub code: String,
    /// The challenge nonce the app passed to Apple, if it used one.
    #[serde(default)]
    pub nonce: Option<String>,
}

/// Exchange an Apple web-flow authorization code (Android apps) for a bearer session.
#[utoipa::path(post, path = "/v1/auth/{provider}/android", tag = "auth",
    params(("provider" = String, Path, description = "an Apple provider, e.g. `apple`"),
        ("X-Service-Client" = Option<String>, Header, description = "the app's name and version, recorded on the session")),
    request_body = AppleAuthorizationCodeLoginRequest,
    responses((status = 200, description = "a bearer session", body = BearerOut),
        (status = 401, description = "INVALID_ID_TOKEN", body = crate::http::openapi::ErrorBody),
        (status = 403, description = "SIGNIN_NOT_ALLOWED", body = crate::http::openapi::ErrorBody),
        (status = 404, description = "PROVIDER_NOT_FOUND (also: not an Apple provider)", body = crate::http::openapi::ErrorBody),
        (status = 429, description = "RATE_LIMITED: this address's sign-in budget is used up; see Retry-After", body = crate::http::openapi::ErrorBody),
        (status = 502, description = "PROVIDER_UNAVAILABLE", body = crate::http::openapi::ErrorBody)))]
pub async fn apple_code_signin(
    _: AddressBudget,
    State(st): State<AppState>,
    ApiPath(provider): ApiPath<String>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<AppleAuthorizationCodeLoginRequest>,
) -> Result<Json<BearerOut>> {
    let signed_in = oidc::apple_code(
        &st.services,
        &provider,
        &req.code,
        req.nonce.as_deref(),
        app_client(&headers),
    )
    .await?;
    Ok(Json(bearer_json(signed_in)))
}

fn bearer_json(s: SignedIn) -> BearerOut {
    BearerOut {
        token: s.token,
        expires_at: s.expires_at,
        user: s.user.into(),
    }
}

fn app_client(headers: &HeaderMap) -> AppClient {
    AppClient {
        client: header_text(headers, "x-service-client", 128),
        user_agent: header_text(headers, header::USER_AGENT.as_str(), 256),
    }
}

/// A header's printable text, cut to `max` characters; None when absent or empty.
fn header_text(headers: &HeaderMap, name: &str, max: usize) -> Option<String> {
    let v = headers.get(name)?.to_str().ok()?.trim();
    let v: String = v.chars().filter(|c| !c.is_control()).take(max).collect();
    (!v.is_empty()).then_some(v)
}

/// One cookie's value from the Cookie header(s).
pub(crate) fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}
