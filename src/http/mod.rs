//! The route table: every route of the service on one screen, plus the
//! middleware every response passes through (request id, security headers,
//! access log, metrics) and the envelope for unknown routes and methods.

pub mod api;
pub mod auth;
pub mod client_addr;
pub mod docs;
pub mod error;
pub mod extract;
pub mod metrics;
pub mod openapi;
pub mod rate_limit;
pub mod server;
pub mod session;
pub mod ui;

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use tower_http::catch_panic::CatchPanicLayer;
use tracing::Instrument;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::app::AppState;
use crate::error::{Code, Error};
use api::{
    actions, auth as signin, controls, invitations, me, notifications, session as auth_session,
    sources, system, work, workspaces,
};

/// Builds the router and the OpenAPI document from the same table.
pub fn routes() -> (Router<AppState>, serde_json::Value) {
    let (router, doc) = OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        // system (guide: "Endpoints")
        .routes(routes!(system::index))
        .routes(routes!(system::health))
        .routes(routes!(system::ready))
        .routes(routes!(system::receipt_keys))
        .routes(routes!(system::docs))
        .routes(routes!(system::openapi))
        // actions (guide: "Endpoints")
        .routes(routes!(actions::create_action))
        .routes(routes!(actions::list_source_actions))
        .routes(routes!(actions::get_source_action))
        .routes(routes!(actions::get_action, actions::patch_action))
        .routes(routes!(actions::decide_action))
        .routes(routes!(actions::decide_actions))
        .routes(routes!(actions::vote_on_action, actions::list_votes))
        .routes(routes!(actions::resolve_action))
        .routes(routes!(actions::cancel_action))
        .routes(routes!(actions::withdraw_action))
        .routes(routes!(actions::report_outcome))
        // working on an Action (guide: "Claim, assignment, snooze and comments")
        .routes(routes!(work::claim_action))
        .routes(routes!(work::assign_action))
        .routes(routes!(work::snooze_action))
        .routes(routes!(work::list_comments, work::create_comment))
        .routes(routes!(work::edit_comment, work::delete_comment))
        .routes(routes!(me::list_my_actions))
        // controls and context requests (guide: "Controls", "Context requests")
        .routes(routes!(controls::invoke_control))
        .routes(routes!(controls::list_control_requests))
        .routes(routes!(controls::list_source_control_requests))
        .routes(routes!(controls::report_control_result))
        .routes(routes!(controls::create_context_request))
        // runs (guide: "Runs")
        .routes(routes!(api::runs::create_run, api::runs::list_runs))
        .routes(routes!(api::runs::get_run))
        .routes(routes!(api::runs::cancel_run))
        .routes(routes!(api::runs::list_source_runs))
        .routes(routes!(api::runs::get_source_run))
        .routes(routes!(api::runs::report_run_progress))
        .routes(routes!(api::runs::complete_run))
        // sources (guide: "GET /v1/sources and GET /v1/sources/{source_id}")
        .routes(routes!(sources::list_sources, sources::create_source))
        .routes(routes!(
            sources::get_source,
            sources::update_source,
            sources::revoke_source
        ))
        .routes(routes!(sources::rotate_source_keys))
        // webhook delivery log (guide: "Webhooks")
        .routes(routes!(sources::list_deliveries))
        .routes(routes!(sources::get_delivery))
        .routes(routes!(sources::resend_delivery))
        .routes(routes!(sources::list_source_deliveries))
        .routes(routes!(sources::get_source_delivery))
        .routes(routes!(sources::resend_source_delivery))
        .routes(routes!(sources::recover_source_deliveries))
        // workspaces and members (guide: "Workspaces and members")
        .routes(routes!(
            workspaces::list_workspaces,
            workspaces::create_workspace
        ))
        .routes(routes!(workspaces::select_workspace))
        .routes(routes!(workspaces::list_members))
        .routes(routes!(
            workspaces::update_member,
            workspaces::remove_member
        ))
        // notifications (guide: "Notifications")
        .routes(routes!(notifications::list_notifications))
        .routes(routes!(notifications::notification_summary))
        .routes(routes!(notifications::read_all_notifications))
        .routes(routes!(notifications::read_notification))
        .routes(routes!(
            notifications::get_preferences,
            notifications::update_preferences
        ))
        .routes(routes!(
            notifications::get_policy,
            notifications::update_policy
        ))
        // account (guide: "Account: export and deletion")
        .routes(routes!(api::account::export_account))
        .routes(routes!(
            api::account::get_account,
            api::account::update_account,
            api::account::delete_account
        ))
        // analytics (guide: "Analytics")
        .routes(routes!(api::analytics::analytics_summary))
        .routes(routes!(api::analytics::record_analytics_event))
        // invitations (guide: "Invitations")
        .routes(routes!(
            invitations::list_invitations,
            invitations::create_invitation
        ))
        .routes(routes!(invitations::revoke_invitation))
        .routes(routes!(invitations::accept_invitation))
        // plans and billing (guide: "Plans and billing")
        .routes(routes!(api::billing::get_billing))
        .routes(routes!(api::billing::open_billing_portal))
        .routes(routes!(api::billing::start_checkout))
        .routes(routes!(api::billing::stripe_webhook))
        // the e-mail log (guide: "E-mail")
        .routes(routes!(api::mail::list_emails))
        // sign-in and session (guide: "Sign-in and sessions"), bootstrap
        .routes(routes!(auth_session::list_providers))
        .routes(routes!(auth_session::get_session))
        .routes(routes!(auth_session::logout))
        .routes(routes!(auth_session::bootstrap))
        // Browser sign-in redirects (303) and the native token exchange.
        .routes(routes!(signin::start_signin))
        .routes(routes!(signin::finish_signin, signin::finish_signin_form))
        .routes(routes!(signin::native_challenge))
        .routes(routes!(signin::native_signin))
        .routes(routes!(signin::apple_code_signin))
        .split_for_parts();
    (router, openapi::complete(doc))
}

/// Wraps the routes with the shared middleware and fallbacks; the OpenAPI
/// document built with them is served from an `Extension`.
pub fn finish(router: Router<AppState>, doc: serde_json::Value, state: AppState) -> Router {
    router
        // The dashboard: HTML pages, not part of the OpenAPI document.
        .merge(ui::router())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(Extension(Arc::new(doc)))
        .layer(DefaultBodyLimit::max(extract::MAX_BODY))
        // Routes that read no body are held to the same limit.
        .layer(middleware::from_fn(declared_too_large))
        // A panicking handler answers 500 in the envelope instead of dropping the connection.
        .layer(CatchPanicLayer::custom(|_| {
            Error::internal(anyhow::anyhow!("handler panicked")).into_response()
        }))
        // Inside the session layer: it reads the request's session.
        .layer(middleware::from_fn_with_state(
            state.clone(),
            ui::view::error_page_nav,
        ))
        .layer(session::layer(&state))
        // `Router::layer` wraps each route after routing, so `observe` sees the
        // `MatchedPath` of the route (none for the fallback).
        .layer(middleware::from_fn_with_state(
            state.metrics.clone(),
            observe,
        ))
        .layer(middleware::map_response_with_state(
            state.services.config.secure_cookies(),
            strict_transport,
        ))
        .with_state(state)
}

/// A request whose `Content-Length` declares more than any route takes is
/// refused at once with 413, on every route, those that read no body
/// included (guide: "Limits"); the extractors hold bodies without a
/// declared length to the same limit as they read them.
async fn declared_too_large(req: Request, next: Next) -> Response {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > extract::MAX_BODY as u64) {
        let path = req
            .extensions()
            .get::<MatchedPath>()
            .map(MatchedPath::as_str);
        let action = matches!(
            (req.method(), path),
            (&Method::POST, Some("/v1/actions"))
                | (&Method::PATCH, Some("/v1/actions/{action_id}"))
        );
        let e = extract::too_large(action);
        // A dashboard form gets the error page, as its other refusals do.
        if req.uri().path().starts_with("/app/") {
            return ui::view::UiError(e).into_response();
        }
        return e.into_response();
    }
    next.run(req).await
}

/// With an https base URL, every answer tells browsers to use https only
/// for a year (HSTS, RFC 6797): a later plain-http address for this host,
/// typed or linked, is never sent the session cookie in the clear. Not for
/// subdomains, which may be other services. Browsers honour it only over
/// https, so a proxy's plain-http test port is not affected.
async fn strict_transport(State(https): State<bool>, mut resp: Response) -> Response {
    if https {
        resp.headers_mut().insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000"),
        );
    }
    resp
}

async fn not_found(method: Method, uri: axum::http::Uri) -> Response {
    let path = &*clipped(uri.path());
    if is_dashboard(path) {
        let e = Error::new(Code::NotFound, format!("There is no page at {path}."));
        return ui::view::UiError(e).into_response();
    }
    Error::new(
        Code::NotFound,
        format!("no route for {method} {path}; see GET /v1/docs"),
    )
    .into_response()
}

async fn method_not_allowed(method: Method, uri: axum::http::Uri) -> Response {
    let e = Error::new(
        Code::MethodNotAllowed,
        format!("{method} is not allowed on {}", clipped(uri.path())),
    );
    if is_dashboard(uri.path()) {
        return ui::view::UiError(e).into_response();
    }
    e.into_response()
}

/// Dashboard paths answer with the HTML error page, everything else with
/// the JSON envelope.
fn is_dashboard(path: &str) -> bool {
    path == "/app" || path.starts_with("/app/")
}

/// The Content-Security-Policy of every HTML page.
pub const PAGE_CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'";

/// Where a path holds a secret that signs someone in: the segment after
/// `/app/invitations/` (invitation links, whose URL shape the guide fixes;
/// not `continue`, the invitation pages' way back from a provider, which
/// holds none), after `signin/link/` (one-time sign-in links) and after
/// `/app/unsubscribe/` (the unsubscribe links of notification mails). Given the
/// path's segments without empty and `.` ones, so that `//app/signin//link/…`,
/// which a mail client or a person may make of a link, is seen too. Whoever
/// reads the log or a stored `next` must not be able to use them.
fn secret_from(segments: &[&str]) -> Option<usize> {
    (1..segments.len()).find(|&i| {
        let (before, here) = (segments[i - 1], segments[i]);
        (before.eq_ignore_ascii_case("invitations")
            && i >= 2
            && segments[i - 2].eq_ignore_ascii_case("app")
            && ui::INVITATIONS_CONTINUE.rsplit('/').next() != Some(here))
            || (before.eq_ignore_ascii_case("link")
                && i >= 2
                && segments[i - 2].eq_ignore_ascii_case("signin"))
            || (before.eq_ignore_ascii_case("unsubscribe")
                && i >= 2
                && segments[i - 2].eq_ignore_ascii_case("app"))
    })
}

/// `text` percent-decoded until nothing changes (at most a few times), so a
/// doubly encoded `%256C` reads as the `l` a later decoder would make of it.
fn decoded(text: &str) -> String {
    let mut text = text.to_owned();
    for _ in 0..4 {
        let next = percent_encoding::percent_decode_str(&text)
            .decode_utf8_lossy()
            .into_owned();
        if next == text {
            break;
        }
        text = next;
    }
    text
}

/// A path's segments as written (split at `/` and at `\`, which browsers
/// read as `/`), empty and `.` ones dropped.
fn path_segments(path: &str) -> Vec<&str> {
    path.split(['/', '\\'])
        .filter(|s| !s.is_empty() && *s != ".")
        .collect()
}

/// The segments of `path` as written and the position from which they are
/// secret: the earliest a secret starts either as written (a `..` after the
/// secret must not hide it) or as a browser resolves `..` (nor one before
/// the marker); a resolved position is mapped back to the written segment.
fn secret_view(path: &str) -> Option<(Vec<&str>, usize)> {
    let written = path_segments(path);
    let as_written = secret_from(&written);
    // The resolved view, each segment with its index among the written ones.
    let mut kept: Vec<usize> = Vec::new();
    for (i, s) in written.iter().enumerate() {
        if *s == ".." {
            kept.pop();
        } else {
            kept.push(i);
        }
    }
    let resolved: Vec<&str> = kept.iter().map(|&i| written[i]).collect();
    let as_resolved = secret_from(&resolved).map(|r| kept[r]);
    let from = match (as_written, as_resolved) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b)?,
    };
    Some((written, from))
}

/// What a shown segment of a redacted path is encoded with: all but the
/// unreserved characters, so that neither a line break nor a ` key=value`
/// can pass for part of the log line.
const SHOWN: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Whether a `next` (a local path, perhaps with a query that holds another
/// path, as `/app/signin?next=…` does) holds one of those secrets: a sign-in
/// must not record it as where to return, since stored tokens are hashed
/// only.
pub fn carries_secret(next: &str) -> bool {
    decoded(next)
        .split(['?', '#', '&', '='])
        .any(|part| secret_view(part).is_some())
}

/// Longest path an error message or the access log repeats.
const SHOWN_PATH: usize = 256;

/// `path`, cut to `SHOWN_PATH` bytes with a mark saying how long it was: a
/// 60 KB path is not echoed whole into an answer or a log line.
fn clipped(path: &str) -> std::borrow::Cow<'_, str> {
    if path.len() <= SHOWN_PATH {
        return path.into();
    }
    let mut end = SHOWN_PATH;
    while !path.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &path[..end], path.len()).into()
}

/// The path as the access log shows it: a secret segment, and whatever
/// follows it but `accept`, replaced by `…`. A path that needed that is
/// shown resolved (no empty, `.` or `..` segments), its other segments
/// percent-encoded again: decoded, a `%0A` would start a forged log line.
fn loggable_path(path: &str) -> String {
    // Every request passes here: a path with no escape and no marker word
    // (nearly all of them) holds no secret, so nothing is decoded.
    let lower = path.to_ascii_lowercase();
    if !lower.contains('%')
        && !lower.contains("link")
        && !lower.contains("invitations")
        && !lower.contains("unsubscribe")
    {
        return path.to_owned();
    }
    let plain = decoded(path);
    let Some((segments, from)) = secret_view(&plain) else {
        return path.to_owned();
    };
    let shown: Vec<String> = segments
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if i < from || *s == "accept" {
                percent_encoding::utf8_percent_encode(s, SHOWN).to_string()
            } else {
                "…".to_owned()
            }
        })
        .collect();
    format!("/{}", shown.join("/"))
}

/// Every request, once: echoes a sane incoming `X-Request-ID` or assigns
/// `req_<ULID>`, runs the request inside a span carrying that id (so any log
/// line of the request names it), sets the security headers, and writes one
/// access-log line: method, path (secret segments redacted; never the query or
/// body), status, time; and counts it in the metrics by route template.
async fn observe(
    State(metrics): State<Arc<crate::metrics::Metrics>>,
    mut req: Request,
    next: Next,
) -> Response {
    let start = Instant::now();
    let incoming = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            !v.is_empty()
                && v.len() <= 128
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
        });
    let id = incoming
        .map(str::to_owned)
        .unwrap_or_else(|| format!("req_{}", ulid::Ulid::new()));
    let value =
        HeaderValue::from_str(&id).unwrap_or_else(|_| HeaderValue::from_static("req_invalid"));
    req.headers_mut().insert("x-request-id", value.clone());
    let method = req.method().clone();
    let path = clipped(&loggable_path(req.uri().path())).into_owned();
    let route = req.extensions().get::<MatchedPath>().cloned();
    let span = tracing::info_span!("request", request.id = %id);
    let mut resp = next.run(req).instrument(span.clone()).await;
    let (status, took) = (resp.status().as_u16(), start.elapsed());
    metrics.request_done(route, &method, status, took);
    span.in_scope(|| {
        tracing::info!(
            http.method = %method, http.path = %path, http.status = status,
            duration_ms = took.as_secs_f64() * 1000.0, "request"
        )
    });
    let h = resp.headers_mut();
    h.insert("x-request-id", value);
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    let html = h
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/html"));
    if html {
        // Pages run only our own script and style files: no inline code, no
        // framing, forms post only to us.
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(PAGE_CSP),
        );
        // Our pages post forms to us; under no-referrer Chromium sends
        // `Origin: null` on them, which the CSRF check must refuse.
        // same-origin still tells other sites nothing.
        h.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("same-origin"),
        );
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::{clipped, loggable_path};

    #[test]
    fn long_paths_are_cut_where_they_are_repeated() {
        assert_eq!(clipped("/v1/actions/act_1"), "/v1/actions/act_1");
        let long = format!("/{}", "x".repeat(60_000));
        let shown = clipped(&long);
        assert_eq!(shown, format!("/{}… (60001 bytes)", "x".repeat(255)));
        // Never inside a character.
        let wide = format!("/{}", "é".repeat(200));
        assert!(clipped(&wide).starts_with('/') && clipped(&wide).len() < 300);
    }

    #[test]
    fn secret_path_segments_are_not_logged() {
        assert_eq!(
            loggable_path("/app/signin/link/Jd8abc"),
            "/app/signin/link/…"
        );
        assert_eq!(
            loggable_path("/app/invitations/tok/accept"),
            "/app/invitations/…/accept"
        );
        assert_eq!(
            loggable_path("/app/unsubscribe/usr_1.ws_1.mac"),
            "/app/unsubscribe/…"
        );
        assert_eq!(loggable_path("/v1/actions/act_1"), "/v1/actions/act_1");
        assert_eq!(
            loggable_path("/v1/workspaces/invitations/inv_1"),
            "/v1/workspaces/invitations/inv_1"
        );
        assert_eq!(
            loggable_path("/app/invitations/continue"),
            "/app/invitations/continue"
        );
        // What a mail client, a proxy or a person may make of a link.
        for mangled in [
            "//app/signin/link/Jd8abc",
            "/app//signin/link/Jd8abc",
            "/app/signin/link//Jd8abc",
            "/app/./signin/link/Jd8abc",
            "/app/signin/%6Cink/Jd8abc",
            "/app/signin/%256Cink/Jd8abc",
            "/app/signin/link%2FJd8abc",
            "/APP/SIGNIN/LINK/Jd8abc",
            "/app/signin/link/x/Jd8abc",
        ] {
            let logged = loggable_path(mangled);
            assert!(!logged.contains("Jd8abc"), "{mangled} logged as {logged}");
        }
        assert_eq!(
            loggable_path("//app/invitations/tok/accept"),
            "/app/invitations/…/accept"
        );
        assert!(!loggable_path("/app/signin/x/../link/Jd8abc").contains("Jd8abc"));
        // A decoded line break or escape never reaches the log.
        let forged = loggable_path("/%0A2026-01-01%20INFO%20forged%1B[31m/signin/link/x");
        assert!(!forged.chars().any(char::is_control), "{forged}");
        assert!(
            forged.starts_with("/%0A2026-01-01%20INFO%20forged%1B%5B31m/"),
            "{forged}"
        );
        // A `..` after the secret, written or encoded, hides nothing.
        for dotted in [
            "/app/signin/link/Jd8abc/..",
            "/app/signin/link/Jd8abc/%2e%2e",
            "/app/invitations/Jd8abc/..",
            "/app/signin/link/.%2e/Jd8abc/x",
            "/app/signin/link/..%2fJd8abc",
            "/app/signin/link/Jd8abc%2F..",
        ] {
            let logged = loggable_path(dotted);
            assert!(!logged.contains("Jd8abc"), "{dotted} logged as {logged}");
        }
        // A decoy marker after a `..` does not make the real secret shown.
        for decoy in [
            "/app/signin/x/../link/Jd8abc/signin/link/y",
            "/app/x/../invitations/Jd8abc/app/invitations/y",
            "/app/signin/link%5CJd8abc",
        ] {
            let logged = loggable_path(decoy);
            assert!(!logged.contains("Jd8abc"), "{decoy} logged as {logged}");
        }
        let fields = loggable_path("/app/x%20http.status=200/signin/link/T");
        assert!(!fields.contains(' ') && !fields.contains('='), "{fields}");
    }

    #[test]
    fn a_next_with_a_link_secret_is_recognised() {
        use super::carries_secret;
        assert!(carries_secret("/app/invitations/Jd8abc"));
        assert!(carries_secret("/app/signin/link/Jd8abc?x=1"));
        assert!(!carries_secret("/app/invitations/continue"));
        assert!(!carries_secret("/app/invitations"));
        assert!(!carries_secret("/app/invitations/?done=revoked"));
        assert!(!carries_secret("/app/actions/act_1"));
        // In the sign-in page's own `next`, encoded or not, or mangled.
        assert!(carries_secret("/app/signin?next=/app/signin/link/SECRETX"));
        assert!(carries_secret(
            "/app/signin?next=%2Fapp%2Fsignin%2Flink%2FSECRETY"
        ));
        assert!(carries_secret("/app//signin/link/abc"));
        assert!(carries_secret("/app/x?a=1&next=/app/invitations/tok"));
        assert!(!carries_secret(
            "/app/signin?next=/app/invitations/continue"
        ));
        assert!(!carries_secret("/app/signin?next=/app/actions/act_1"));
        assert!(carries_secret("/app/signin?next=/app/signin/link/TOK/.."));
    }

    /// The path checked is the path the browser opens: no dot segments, no
    /// encoded separators that would resolve to a secret page.
    #[test]
    fn a_next_with_dot_segments_or_encoded_separators_is_refused() {
        use super::session::local_next;
        for bad in [
            "/app/./invitations/Jd8abc",
            "/app/x/../invitations/Jd8abc",
            "/app/signin/./link/Jd8abc",
            "/app/%2e%2e/invitations/Jd8abc",
            "/app/%2E/x",
            "/app%2Finvitations/Jd8abc",
            "/app/%5cx",
        ] {
            assert!(local_next(Some(bad)).is_err(), "{bad}");
        }
        assert_eq!(local_next(Some("/app?q=a%2Fb")).unwrap(), "/app?q=a%2Fb");
        assert_eq!(
            local_next(Some("/app/actions/act_1")).unwrap(),
            "/app/actions/act_1"
        );
    }
}
