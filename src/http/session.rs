//! Browser sessions: the `service_session` cookie (tower-sessions over our
//! SQLite store), CSRF checks for cookie-authenticated writes, and safe `next`
//! destinations. The session record only points at a `user_tokens` row; that
//! row decides whether the session is live, so revoking it (logout, the
//! account page) ends the cookie too.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Redirect, Response};
use subtle::ConstantTimeEq;
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, Session, SessionManagerLayer};

use crate::app::AppState;
use crate::config::Config;
use crate::domain::credentials;
use crate::domain::session::{SESSION_LIFETIME, TOUCH_EVERY};
use crate::domain::time;
use crate::error::{Code, Error, FieldError, Result};
use crate::service::Services;
use crate::service::caller::{Membership, UserCaller};
use crate::service::signin::SignedIn;
use crate::store::sessions::SqliteSessionStore;
use crate::store::{users, workspaces};

pub const COOKIE_NAME: &str = "service_session";
const TOKEN_ID: &str = "token_id";
const CSRF: &str = "csrf";
/// The header a script sends with cookie-authenticated writes to `/v1`.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The cookie: HttpOnly, SameSite=Lax (Strict would drop it on the redirect
/// back from an identity provider), Secure when the public URL is https. The
/// record is written once at sign-in, so cookie and record last the session's
/// absolute lifetime; the idle timeout is enforced on the session row.
pub fn layer(state: &AppState) -> SessionManagerLayer<SqliteSessionStore> {
    let config = &state.services.config;
    SessionManagerLayer::new(SqliteSessionStore::new(
        state.services.db.clone(),
        state.services.clock.clone(),
    ))
    .with_name(COOKIE_NAME)
    .with_http_only(true)
    .with_same_site(SameSite::Lax)
    .with_secure(config.secure_cookies())
    .with_path("/")
    .with_expiry(Expiry::OnInactivity(SESSION_LIFETIME))
}

/// A session store failure, as the error a handler answers.
pub(crate) fn session_error(e: tower_sessions::session::Error) -> Error {
    Error::internal(anyhow::anyhow!("session store: {e}"))
}

/// After a browser sign-in: a fresh session id (no fixation), pointing at the
/// new session row, with its own CSRF token. The session the browser held
/// before, if any, is revoked: nothing can present it any more.
pub async fn begin(s: &Services, session: &Session, signed_in: &SignedIn) -> Result<()> {
    let before: Option<String> = session.get(TOKEN_ID).await.map_err(session_error)?;
    if let Some(before) = before.filter(|b| *b != signed_in.token_id) {
        crate::service::tokens::end_replaced_session(s, &before).await?;
    }
    session.cycle_id().await.map_err(session_error)?;
    session
        .insert(TOKEN_ID, &signed_in.token_id)
        .await
        .map_err(session_error)?;
    session
        .insert(CSRF, credentials::new_secret())
        .await
        .map_err(session_error)?;
    Ok(())
}

/// Ends the browser session: deletes the record and expires the cookie.
pub async fn end(session: &Session) -> Result<()> {
    session.flush().await.map_err(session_error)
}

/// The signed-in person of a cookie session, with the session's CSRF token;
/// None when there is no cookie or its session row is no longer live.
pub async fn cookie_user(
    state: &AppState,
    session: &Session,
) -> Result<Option<(UserCaller, String)>> {
    let token_id: Option<String> = session.get(TOKEN_ID).await.map_err(session_error)?;
    let Some(token_id) = token_id else {
        return Ok(None);
    };
    let csrf: String = session
        .get(CSRF)
        .await
        .map_err(session_error)?
        .unwrap_or_default();
    let Some(user) = load_user(state, CredentialRef::Id(token_id)).await? else {
        return Ok(None);
    };
    Ok(Some((user, csrf)))
}

pub enum CredentialRef {
    Id(String),
    Token(String),
}

/// Loads the person behind a credential (bearer token or session row) with
/// their memberships, recording `last_used_at` on first use and then every
/// `TOUCH_EVERY`.
pub async fn load_user(state: &AppState, by: CredentialRef) -> Result<Option<UserCaller>> {
    let now = state.services.clock.now();
    let found = state
        .services
        .db
        .read(move |c| {
            let row = match &by {
                CredentialRef::Id(id) => users::by_credential_id(c, id, now)?,
                CredentialRef::Token(t) => users::by_token(c, t, now)?,
            };
            let Some((user, cred)) = row else {
                return Ok(None);
            };
            let memberships = workspaces::of_user(c, &user.id)?
                .into_iter()
                .map(|(w, role)| Membership {
                    workspace_id: w.id,
                    role,
                })
                .collect();
            Ok(Some((
                UserCaller::new(
                    user.id,
                    cred.id,
                    user.email,
                    user.created_at,
                    memberships,
                    cred.workspace_id.as_deref(),
                ),
                cred.last_used_at,
            )))
        })
        .await?;
    let Some((user, last_used)) = found else {
        return Ok(None);
    };
    // Recorded on first use, then at most every TOUCH_EVERY. The request
    // waits for the write, so the account page shows the use right after it;
    // a failure to record it is logged and does not fail the request.
    if last_used.is_none_or(|t| t < time::format(now - TOUCH_EVERY)) {
        let (id, at) = (user.credential_id.clone(), time::format(now));
        if let Err(e) = state
            .services
            .db
            .write(move |c| users::touch_credential(c, &id, &at))
            .await
        {
            tracing::warn!(error = %e, "could not record credential use");
        }
    }
    Ok(Some(user))
}

/// Whether a browser request comes from our own pages: `Origin` (sent on
/// every cross-site POST) must be our public origin; without it,
/// `Sec-Fetch-Site` must not say cross-site. Requests with neither are not
/// from a modern browser and rely on the CSRF token alone.
pub fn same_origin(headers: &HeaderMap, config: &Config) -> bool {
    if let Some(origin) = headers.get("origin") {
        return origin.to_str().is_ok_and(|o| o == config.origin());
    }
    match headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        Some(site) => matches!(site, "same-origin" | "none"),
        None => true,
    }
}

/// The refusal of a request from another origin. When the browser named its
/// origin, the message says which origin this hds expected: a server started
/// on another port or behind a proxy without `--base-url` fails this way.
pub fn cross_origin(headers: &HeaderMap, config: &Config, what: &str) -> Error {
    let expected = config.origin();
    match headers.get("origin").and_then(|v| v.to_str().ok()) {
        // An opaque origin (a sandboxed frame, a file, some privacy
        // settings): no --base-url would match it.
        Some("null") => Error::new(
            Code::CsrfFailed,
            format!(
                "{what} was refused: the browser named no origin (Origin: null, as a sandboxed \
                 frame or a page opened from a file does); open hds at {expected} and try again"
            ),
        )
        .with_detail("origin", "null")
        .with_detail("expected_origin", expected),
        Some(origin) => Error::new(
            Code::CsrfFailed,
            format!(
                "{what} was refused: it came from {origin}, but this hds expects {expected} \
                 (its --base-url); if {origin} is this server, start it with --base-url {origin}"
            ),
        )
        .with_detail("origin", origin)
        .with_detail("expected_origin", expected),
        None => csrf_refused(&format!("{what} came from another site")),
    }
}

fn csrf_refused(why: &str) -> Error {
    Error::new(
        Code::CsrfFailed,
        format!("refused: {why}. Reload the page and try again"),
    )
}

/// Who sends a cookie-authenticated write, for the refusal's advice.
#[derive(Clone, Copy)]
pub enum CsrfFrom {
    /// A dashboard form (`_csrf` field) or the page's script.
    Page,
    /// A program calling `/v1` with the cookie (`X-CSRF-Token` header).
    Api,
}

/// CSRF check for a cookie-authenticated write: same origin and the
/// session's token (a form's `_csrf` field or the `X-CSRF-Token` header).
pub fn check_csrf(
    headers: &HeaderMap,
    config: &Config,
    expected: &str,
    presented: &str,
    from: CsrfFrom,
) -> Result<()> {
    if !same_origin(headers, config) {
        return Err(cross_origin(headers, config, "the request"));
    }
    if expected.is_empty() || !bool::from(expected.as_bytes().ct_eq(presented.as_bytes())) {
        return Err(match from {
            CsrfFrom::Page => csrf_refused("the form's security token is missing or stale"),
            CsrfFrom::Api => Error::new(
                Code::CsrfFailed,
                "refused: a request authenticated by the session cookie must send the session's \
                 `csrf_token` (from GET /v1/auth/session) in the X-CSRF-Token header; a program \
                 can use a bearer token instead",
            ),
        });
    }
    Ok(())
}

/// A dashboard page's signed-in person. Without a live cookie session the
/// page redirects to the sign-in page, which brings the person back here.
pub struct PageUser {
    pub user: UserCaller,
    pub csrf: String,
    pub session: Session,
}

impl PageUser {
    /// For UI POST handlers: the form's `_csrf` field must match.
    pub fn check_form(&self, headers: &HeaderMap, config: &Config, form_csrf: &str) -> Result<()> {
        check_csrf(headers, config, &self.csrf, form_csrf, CsrfFrom::Page)
    }
}

/// Sends a signed-out browser to the sign-in page, to come back to `next`.
/// `ended`: it sent a session cookie that no longer signs anyone in (signed
/// out elsewhere, idle or expired), which the sign-in page says, and whether
/// what it sent was lost (a form post).
pub struct SignInFirst {
    next: String,
    ended: Option<&'static str>,
}

impl IntoResponse for SignInFirst {
    fn into_response(self) -> Response {
        let next: String = form_urlencoded::byte_serialize(self.next.as_bytes()).collect();
        let done = self
            .ended
            .map(|code| format!("&done={code}"))
            .unwrap_or_default();
        Redirect::to(&format!("/app/signin?next={next}{done}")).into_response()
    }
}

/// Where a signed-out browser goes back to after signing in: the page it
/// asked for; for a form post, the page the form was on (`Referer`, which
/// the dashboard's `same-origin` policy sends to this site only), else the
/// inbox.
/// A page that holds a secret (an invitation's or a link's) is not one:
/// the secret would sit in the sign-in page's address.
fn back_to(parts: &Parts, config: &Config) -> String {
    let back = if reads_only(&parts.method) {
        parts.uri.path_and_query().map(|p| p.as_str().to_owned())
    } else {
        let origin = config.origin();
        parts
            .headers
            .get(axum::http::header::REFERER)
            .and_then(|v| v.to_str().ok())
            .and_then(|r| r.strip_prefix(origin.as_str()))
            .filter(|path| path.starts_with("/app"))
            .map(str::to_owned)
    };
    back.filter(|b| !crate::http::carries_secret(b))
        .unwrap_or_else(|| "/app".into())
}

/// GET and HEAD: a page asked for, nothing sent that could be lost.
fn reads_only(method: &Method) -> bool {
    *method == Method::GET || *method == Method::HEAD
}

impl FromRequestParts<AppState> for PageUser {
    type Rejection = Response;
    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> std::result::Result<Self, Response> {
        // Signing out with a session that already ended: signed out it is.
        let signing_out = parts.uri.path() == "/app/signout";
        let first = SignInFirst {
            next: back_to(parts, &state.services.config),
            ended: if signing_out {
                Some("signed_out")
            } else {
                crate::http::auth::has_session_cookie(parts).then_some(
                    if reads_only(&parts.method) {
                        "session_ended"
                    } else {
                        "session_ended_unsaved"
                    },
                )
            },
        };
        let Some(session) = parts.extensions.get::<Session>().cloned() else {
            return Err(first.into_response());
        };
        match cookie_user(state, &session).await {
            Ok(Some((user, csrf))) => Ok(Self {
                user,
                csrf,
                session,
            }),
            Ok(None) => Err(first.into_response()),
            Err(e) => Err(e.into_response()),
        }
    }
}

/// A page open to everyone that shows more to a signed-in person (the
/// guide): `None` without a live cookie session instead of a redirect.
impl axum::extract::OptionalFromRequestParts<AppState> for PageUser {
    type Rejection = Response;
    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> std::result::Result<Option<Self>, Response> {
        let Some(session) = parts.extensions.get::<Session>().cloned() else {
            return Ok(None);
        };
        match cookie_user(state, &session).await {
            Ok(Some((user, csrf))) => Ok(Some(Self {
                user,
                csrf,
                session,
            })),
            Ok(None) => Ok(None),
            Err(e) => Err(e.into_response()),
        }
    }
}

/// Who is signed in in this browser, for a page that only mentions it (the
/// one-time link's page): `None` also when the session cannot be read, so
/// the page a person signs in with never fails over it.
pub struct Visitor(pub Option<PageUser>);

impl FromRequestParts<AppState> for Visitor {
    type Rejection = std::convert::Infallible;
    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> std::result::Result<Self, Self::Rejection> {
        use axum::extract::OptionalFromRequestParts;
        match <PageUser as OptionalFromRequestParts<AppState>>::from_request_parts(parts, state)
            .await
        {
            Ok(user) => Ok(Self(user)),
            Err(_) => {
                tracing::warn!(
                    "could not read the browser's session; the page names no one signed in"
                );
                Ok(Self(None))
            }
        }
    }
}

/// A safe place to go after sign-in: a path on this site. Refuses absolute
/// URLs, scheme-relative `//host` and `/\host` (browsers treat `\` as `/`),
/// control characters, `.`/`..` segments and percent-encoded dots, slashes
/// and backslashes, so sign-in can never be an open redirect and the path
/// checked is the path the browser opens.
pub fn local_next(next: Option<&str>) -> Result<String> {
    let Some(next) = next.filter(|n| !n.is_empty()) else {
        return Ok("/app".into());
    };
    let bad = !next.starts_with('/')
        || next.starts_with("//")
        || next.starts_with("/\\")
        || next.len() > 2048
        || next.chars().any(|ch| ch.is_control() || ch == '\\')
        // Dot segments and encoded dots or slashes: the browser would
        // resolve `/app/x/../invitations/<secret>` to a path the checks
        // on `next` (carries_secret) did not see.
        || {
            let path = next.split(['?', '#']).next().unwrap_or_default();
            let lower = path.to_ascii_lowercase();
            path.split('/').any(|seg| seg == "." || seg == "..")
                || lower.contains("%2e")
                || lower.contains("%2f")
                || lower.contains("%5c")
        };
    if bad {
        return Err(Error::validation(vec![FieldError::new(
            "next",
            "`next` must be a path on this site, such as /app/actions/act_…; \
             other sites and //host forms are refused",
        )]));
    }
    // A `Location` header is ASCII: letters outside it (`/app/café`) and
    // spaces are sent percent-encoded, as a browser would request them.
    const ASCII: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS.add(b' ');
    Ok(percent_encoding::utf8_percent_encode(next, ASCII).to_string())
}

#[cfg(test)]
mod tests {
    use super::local_next;

    #[test]
    fn next_is_local_only() {
        assert_eq!(local_next(None).unwrap(), "/app");
        assert_eq!(
            local_next(Some("/app/actions/act_1?x=1")).unwrap(),
            "/app/actions/act_1?x=1"
        );
        assert_eq!(
            local_next(Some("/app/café?q=a b")).unwrap(),
            "/app/caf%C3%A9?q=a%20b"
        );
        assert_eq!(local_next(Some("/。evil")).unwrap(), "/%E3%80%82evil");
        for bad in [
            "https://evil.example",
            "//evil.example",
            "/\\evil.example",
            "javascript:alert(1)",
            "evil.example",
            "/app\n",
            "/\tevil",
        ] {
            assert!(local_next(Some(bad)).is_err(), "{bad:?} accepted");
        }
    }
}
