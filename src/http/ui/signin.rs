//! Signing in and out of the dashboard: the sign-in page (every enabled
//! method; refusals explained), the one-time link's confirmation step, and
//! sign-out.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use tower_sessions::Session;

use crate::app::AppState;
use crate::error::Code;
use crate::http::session::{self, PageUser};
use crate::http::ui::view::{
    FormData, Layout, PageAddressBudget, PagePath, PageQuery, UiError, check_csrf, see_other,
};
use crate::service::signin::{self, SessionKind, SessionMeta};
use crate::service::tokens;

#[derive(Debug, Default, Deserialize)]
pub struct SigninQuery {
    #[serde(default)]
    next: Option<String>,
    /// An error code from a failed sign-in (the identity-provider callback
    /// sends people here with one), or `signed_out` / `account_deleted`.
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    done: Option<String>,
    /// Why a sign-in was not allowed (`details.reason` of the refusal).
    #[serde(default)]
    reason: Option<String>,
}

/// A button that signs in with an identity provider.
pub struct Method {
    pub label: String,
    pub url: String,
}

/// A message on the sign-in page. Only known codes are shown, in our words:
/// the query string is never echoed, so a crafted link cannot put text here.
pub struct Notice {
    pub title: &'static str,
    pub text: String,
    pub kind: &'static str,
}

#[derive(Template, WebTemplate)]
#[template(path = "signin.html")]
pub struct SigninPage {
    layout: Layout,
    methods: Vec<Method>,
    notice: Option<Notice>,
    /// Who may sign in, shown with a refusal.
    domains: Vec<String>,
    refused: bool,
    /// Why it was refused: `unverified_email`, `linked_elsewhere`,
    /// `unusable_email`, else not admitted.
    refused_why: &'static str,
    /// The form that mails a one-time link (`[auth] email_links`).
    email_links: bool,
    /// Where the mailed link leads (a local path).
    next: String,
    /// The e-mail field was refused: it is marked.
    email_invalid: bool,
    /// The address as typed, put back after a refusal.
    entered_email: String,
}

#[derive(Template, WebTemplate)]
#[template(path = "signin_link.html")]
pub struct LinkPage {
    layout: Layout,
    action: String,
    next: String,
    /// The account the link signs in.
    email: String,
    /// Who is signed in in this browser now, when someone else: continuing
    /// ends that session.
    replaces: Option<String>,
}

/// The identity providers with a browser flow, each returning to `next`
/// (the sign-in page and the invitation page offer the same ones).
pub(crate) fn methods(st: &AppState, next: &str) -> Vec<Method> {
    let next: String = form_urlencoded::byte_serialize(next.as_bytes()).collect();
    st.services
        .config
        .auth
        .providers
        .iter()
        // Providers with only native (app) client ids have no browser flow.
        .filter(|(_, p)| p.client_id.is_some())
        .map(|(name, p)| Method {
            label: format!("Continue with {}", p.label(name)),
            url: format!("/v1/auth/{name}/start?next={next}"),
        })
        .collect()
}

/// How a browser session begun by a link (`method`) is recorded: the
/// `X-Service-Client` and `User-Agent` headers, each cut to 300 characters.
pub(crate) fn browser_meta(headers: &HeaderMap, method: &str) -> SessionMeta {
    let header_text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.chars().take(300).collect::<String>())
    };
    SessionMeta {
        method: method.into(),
        kind: SessionKind::Browser,
        client: header_text("x-service-client"),
        user_agent: header_text(header::USER_AGENT.as_str()),
    }
}

fn notice(code: &str, email_links: bool) -> Option<Notice> {
    let link_invalid = if email_links {
        "It was already used or has expired. Ask for a new one by e-mail below, or ask an admin."
    } else {
        "It was already used or has expired. Ask an admin for a new one."
    };
    let (title, text, kind) = match code.to_ascii_uppercase().as_str() {
        "SIGNIN_NOT_ALLOWED" => (
            "This account may not sign in here",
            "Your identity provider vouched for you, but this hds instance does not admit that account.",
            "banner-error",
        ),
        "INVALID_ID_TOKEN" | "INVALID_STATE" => (
            "Sign-in did not complete",
            "The answer from the identity provider could not be verified, or the sign-in took too long. Start again.",
            "banner-error",
        ),
        "PROVIDER_UNAVAILABLE" => (
            "The identity provider did not answer",
            "hds could not reach your identity provider. Try again in a moment.",
            "banner-error",
        ),
        "PROVIDER_NOT_FOUND" => (
            "Unknown sign-in method",
            "That sign-in method is not configured on this instance.",
            "banner-error",
        ),
        "ACCESS_DENIED" => (
            "Sign-in cancelled",
            "The identity provider reported that sign-in was cancelled.",
            "banner-warn",
        ),
        "AUTH_REQUIRED" => (
            "Sign-in did not complete",
            "The identity provider ended the sign-in without signing you in. Start again, or ask an admin for a one-time sign-in link.",
            "banner-error",
        ),
        "LINK_INVALID" => (
            "This sign-in link no longer works",
            link_invalid,
            "banner-error",
        ),
        "LINK_MAILED" => (
            "Check your e-mail",
            "If an account here uses that address, a sign-in link is on its way to it. The link works once, within 15 minutes. Nothing is sent to an address without an account, nor a second link within a minute.",
            "banner-ok",
        ),
        "EMAIL_INVALID" => (
            "That is not an e-mail address",
            "Give the e-mail address of your account, such as ana@example.com.",
            "banner-error",
        ),
        "PLAN_LIMIT_REACHED" => (
            "The workspace is full",
            "Your e-mail domain may join, but the workspace's plan allows no more members. Ask one of its owners to free a place or change the plan.",
            "banner-error",
        ),
        "INVALID_NEXT" => (
            "That sign-in link leads elsewhere",
            "The link asked to continue to a page that is not on this site, or that holds a secret. Sign in here: you will land on your inbox.",
            "banner-error",
        ),
        "RATE_LIMITED" => (
            "Too many sign-ins from this address",
            "hds refused to start another sign-in for a moment. Wait a minute, then try again.",
            "banner-warn",
        ),
        "SIGNED_OUT" => ("You are signed out", "", "banner-ok"),
        "SESSION_ENDED" => (
            "Your session ended",
            "You were signed out (here or on another device), or the session expired. Sign in again to go back to the page you asked for.",
            "banner-warn",
        ),
        "SESSION_ENDED_UNSAVED" => (
            "Your session ended: what you sent was not saved",
            "You were signed out (here or on another device), or the session expired, so the form you sent was not applied. Sign in again to go back to its page, and send it again.",
            "banner-warn",
        ),
        "ACCOUNT_DELETED" => (
            "Your account is deleted",
            "Your sessions and tokens stopped working, and your e-mail address and name were erased. Decisions, receipts and comments you made stay, under your user id.",
            "banner-ok",
        ),
        _ => (
            "Sign-in did not complete",
            "Something went wrong while signing you in. Start again.",
            "banner-error",
        ),
    };
    Some(Notice {
        title,
        text: text.to_owned(),
        kind,
    })
}

fn signin_page(st: &AppState, next: &str, code: Option<&str>, reason: Option<&str>) -> SigninPage {
    let email_links = st.services.config.email_links();
    let notice = code.and_then(|c| notice(c, email_links));
    let refused = code.is_some_and(|c| c.eq_ignore_ascii_case("SIGNIN_NOT_ALLOWED"));
    // Each state has its own title (a tab, a screen reader's page list):
    // "Sign in: This sign-in link no longer works".
    let title = match (&notice, refused) {
        (_, true) => "Not allowed".to_owned(),
        (Some(n), false) => format!("Sign in: {}", n.title),
        (None, false) => "Sign in".to_owned(),
    };
    SigninPage {
        layout: Layout::public(title),
        methods: methods(st, next),
        notice,
        domains: st.services.config.auth.allowed_email_domains.clone(),
        refused,
        refused_why: match reason {
            Some("unverified_email") => "unverified_email",
            Some("linked_elsewhere") => "linked_elsewhere",
            Some("unusable_email") => "unusable_email",
            _ => "not_admitted",
        },
        email_links,
        next: next.to_owned(),
        email_invalid: code.is_some_and(|c| c.eq_ignore_ascii_case("EMAIL_INVALID")),
        entered_email: String::new(),
    }
}

/// GET /app/signin
pub async fn signin_form(
    State(st): State<AppState>,
    PageQuery(q): PageQuery<SigninQuery>,
) -> Response {
    // An unsafe `next` is dropped here; the start route refuses it outright.
    let next = session::local_next(q.next.as_deref()).unwrap_or_else(|_| "/app".into());
    let code = q.error.as_deref().or(q.done.as_deref());
    let page = signin_page(&st, &next, code, q.reason.as_deref());
    let status = if page.refused {
        StatusCode::FORBIDDEN
    } else {
        StatusCode::OK
    };
    (status, page).into_response()
}

#[derive(Debug, Default, Deserialize)]
pub struct NextQuery {
    #[serde(default)]
    next: Option<String>,
}

/// GET /app/signin/link/{token}: a page with one button. Opening the link
/// does not use it, so a mail scanner fetching it burns nothing.
pub async fn link_form(
    _: PageAddressBudget,
    State(st): State<AppState>,
    PagePath(token): PagePath<String>,
    PageQuery(q): PageQuery<NextQuery>,
    crate::http::session::Visitor(visitor): crate::http::session::Visitor,
) -> Result<Response, UiError> {
    let next = session::local_next(q.next.as_deref()).unwrap_or_else(|_| "/app".into());
    let Some(email) = signin::live_link_email(&st.services, &token).await? else {
        let page = signin_page(&st, &next, Some("LINK_INVALID"), None);
        return Ok((StatusCode::GONE, page).into_response());
    };
    let replaces = visitor
        .map(|p| p.user.email.clone())
        .filter(|e| !e.eq_ignore_ascii_case(&email));
    Ok(LinkPage {
        layout: Layout::public("Sign in with this link"),
        action: format!("/app/signin/link/{token}"),
        next,
        email,
        replaces,
    }
    .into_response())
}

/// POST /app/signin/link/{token}: uses the link, starts the browser session.
pub async fn redeem_link(
    _: PageAddressBudget,
    State(st): State<AppState>,
    session: Session,
    headers: HeaderMap,
    PagePath(token): PagePath<String>,
    form: FormData,
) -> Result<Response, UiError> {
    // No session exists yet, so no form token: the origin check is what stops
    // another site from signing a visitor into someone else's account.
    if !session::same_origin(&headers, &st.services.config) {
        return Err(session::cross_origin(&headers, &st.services.config, "sign-in").into());
    }
    let next = session::local_next(form.get("next"))?;
    let meta = browser_meta(&headers, "link");
    match signin::redeem_link(&st.services, &token, meta).await {
        Ok(signed_in) => {
            session::begin(&st.services, &session, &signed_in).await?;
            Ok(see_other(&next))
        }
        Err(e) if e.code == Code::AuthRequired => {
            let page = signin_page(&st, &next, Some("LINK_INVALID"), None);
            Ok((StatusCode::GONE, page).into_response())
        }
        Err(e) => Err(e.into()),
    }
}

/// POST /app/signin/email: mails a one-time sign-in link to the account
/// with that address (guide: "With a link by e-mail"). Every address gets
/// the same answer, so the page does not tell who has an account.
pub async fn mail_link(
    _: PageAddressBudget,
    State(st): State<AppState>,
    headers: HeaderMap,
    form: FormData,
) -> Result<Response, UiError> {
    if !st.services.config.email_links() {
        return Err(signin::mailed_links_off().into());
    }
    // No session yet, so no form token: the origin check stops another site
    // from having mail sent in a visitor's name.
    if !session::same_origin(&headers, &st.services.config) {
        return Err(session::cross_origin(&headers, &st.services.config, "sign-in").into());
    }
    // A `next` that is no local path (the form's hidden field, changed):
    // the form again, leading to the inbox, with the address kept.
    let typed: String = form.get("email").unwrap_or("").chars().take(254).collect();
    let Ok(next) = session::local_next(form.get("next")) else {
        let mut page = signin_page(&st, "/app", Some("INVALID_NEXT"), None);
        page.entered_email = typed;
        return Ok((StatusCode::UNPROCESSABLE_ENTITY, page).into_response());
    };
    // A `next` that holds another link's secret would be written into the
    // mail (the outbox keeps it until sent): the inbox instead.
    let next = if crate::http::carries_secret(&next) {
        "/app".to_owned()
    } else {
        next
    };
    match signin::mail_link(&st.services, form.get("email").unwrap_or(""), &next).await {
        Ok(_) => {
            let back: String = form_urlencoded::byte_serialize(next.as_bytes()).collect();
            Ok(see_other(&format!(
                "/app/signin?done=link_mailed&next={back}"
            )))
        }
        Err(e) if e.code == Code::ValidationError => {
            let mut page = signin_page(&st, &next, Some("EMAIL_INVALID"), None);
            page.entered_email = typed;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, page).into_response())
        }
        Err(e) => Err(e.into()),
    }
}

/// POST /app/signout: ends this session (the cookie and its row).
pub async fn sign_out(
    State(st): State<AppState>,
    page: PageUser,
    headers: HeaderMap,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &page, &form)?;
    tokens::revoke(&st.services, &page.user, &page.user.credential_id).await?;
    session::end(&page.session).await?;
    Ok(see_other("/app/signin?done=signed_out"))
}
