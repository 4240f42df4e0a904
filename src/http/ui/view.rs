//! What every page shares: the layout context (nav, CSRF token, asset URLs),
//! times as people read them ("3 min ago" with the exact time beside), the
//! HTML error page, a refused form's page again with the reason
//! (`page_with_error`), the `?done=` query, and urlencoded form bodies.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};

use crate::app::AppState;
use crate::domain::time::{self, Timestamp};
use crate::error::{Code, Error};
use crate::http::extract::{ApiPath, ApiQuery};
use crate::http::rate_limit::AddressBudget;
use crate::http::session::PageUser;
use crate::http::ui::assets;
use crate::service::dashboard;

/// The frame of every page: `templates/base.html` reads it.
pub struct Layout {
    pub title: String,
    /// The signed-in person's e-mail; None on the sign-in pages.
    pub user: Option<String>,
    pub csrf: String,
    /// Open live Actions, shown beside "Inbox" ("1,000+" from the cap on).
    pub open_count: String,
    /// Which nav entry is current: `inbox`, `sources`, `invitations`,
    /// `account`, `notifications`, `guide` or empty.
    pub active: &'static str,
    pub css: String,
    pub js: String,
    /// The header's workspace switcher: every workspace of the person.
    pub workspaces: Vec<WorkspaceChoice>,
    /// The header's bell: the person's unread notifications.
    pub bell: Bell,
    /// `services.changes` when the header was read: the script's change
    /// stream starts from it, so a change after that is not missed.
    pub version: u64,
    /// Signed out on a page open to everyone (the guide): a slim header
    /// with the brand, the guide and the way to sign in.
    pub public_nav: bool,
}

/// The header's bell: the unread count as shown and in words.
#[derive(Clone, Debug, Default)]
pub struct Bell {
    pub unread: i64,
    /// "3", or "99+" from a hundred on.
    pub count: String,
    /// "3 unread notifications", "No unread notifications".
    pub label: String,
}

impl Bell {
    pub fn new(unread: i64) -> Self {
        Self {
            unread,
            count: if unread > 99 {
                "99+".to_owned()
            } else {
                unread.to_string()
            },
            label: match unread {
                0 => "No unread notifications".to_owned(),
                1 => "1 unread notification".to_owned(),
                n => format!("{n} unread notifications"),
            },
        }
    }
}

/// One entry of the header's workspace switcher.
pub struct WorkspaceChoice {
    pub id: String,
    pub name: String,
    pub active: bool,
}

impl Layout {
    pub async fn signed_in(
        st: &AppState,
        page: &PageUser,
        title: impl Into<String>,
        active: &'static str,
    ) -> Result<Self, UiError> {
        let open_count = dashboard::open_count(&st.services, &page.user).await?;
        let open_count = crate::service::inbox::count_label(open_count);
        let mut layout = Self::with_count(page, title, active, open_count);
        layout.header(st, page).await?;
        Ok(layout)
    }

    /// Fills what the header shows besides the open count: the workspace
    /// switcher and the bell.
    pub async fn header(&mut self, st: &AppState, page: &PageUser) -> Result<(), UiError> {
        // Read the version first: a notification committed during the count
        // bumps it again, so the script counts once more rather than miss it.
        self.version = st.services.changes.view(&page.user);
        self.workspaces = Self::switcher(st, page).await?;
        let summary =
            crate::service::notifications::summary(&st.services, page.user.clone()).await?;
        self.bell = Bell::new(summary.unread);
        Ok(())
    }

    /// The person's workspaces for the header's switcher.
    pub async fn switcher(st: &AppState, page: &PageUser) -> Result<Vec<WorkspaceChoice>, UiError> {
        let all = crate::service::workspaces::list(&st.services, &page.user).await?;
        Ok(all
            .into_iter()
            .map(|w| WorkspaceChoice {
                id: w.workspace.id,
                name: w.workspace.name,
                active: w.active,
            })
            .collect())
    }

    /// As `signed_in`, when the page has counted open Actions already.
    pub fn with_count(
        page: &PageUser,
        title: impl Into<String>,
        active: &'static str,
        open_count: String,
    ) -> Self {
        Self {
            title: title.into(),
            user: Some(page.user.email.clone()),
            csrf: page.csrf.clone(),
            open_count,
            active,
            ..Self::public("")
        }
    }

    pub fn public(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            user: None,
            csrf: String::new(),
            open_count: String::new(),
            active: "",
            css: assets::url("app.css"),
            js: assets::url("app.js"),
            workspaces: Vec::new(),
            bell: Bell::default(),
            version: 0,
            public_nav: false,
        }
    }
}

/// A stored timestamp as a page shows it: `<time datetime="{iso}" title="{exact}">{ago}</time>`.
#[derive(Clone, Debug)]
pub struct When {
    pub iso: String,
    pub ago: String,
    pub exact: String,
}

impl When {
    pub fn new(ts: &str, now: Timestamp) -> Self {
        match time::parse(ts) {
            Some(t) => Self {
                iso: ts.to_owned(),
                ago: ago((now - t).whole_seconds()),
                exact: format!(
                    "{:04}-{:02}-{:02} {:02}:{:02} UTC",
                    t.year(),
                    u8::from(t.month()),
                    t.day(),
                    t.hour(),
                    t.minute()
                ),
            },
            None => Self {
                iso: ts.to_owned(),
                ago: ts.to_owned(),
                exact: ts.to_owned(),
            },
        }
    }
    pub fn opt(ts: Option<&str>, now: Timestamp) -> Option<Self> {
        ts.map(|t| Self::new(t, now))
    }
}

/// "just now", "4 min ago", "3 h ago", "2 days ago"; negative = the future.
pub fn ago(secs: i64) -> String {
    let (n, future) = (secs.unsigned_abs(), secs < 0);
    let span = match n {
        0..45 => return "just now".into(),
        45..5_400 => format!("{} min", (n + 30) / 60),
        5_400..129_600 => format!("{} h", (n + 1_800) / 3_600),
        _ => match (n + 43_200) / 86_400 {
            1 => "1 day".to_owned(),
            d => format!("{d} days"),
        },
    };
    if future {
        format!("in {span}")
    } else {
        format!("{span} ago")
    }
}

/// A dashboard failure: the error's status with an HTML page in words.
#[derive(Debug)]
pub struct UiError(pub Error);

/// A path parameter of a dashboard route; one that does not decode (say,
/// invalid UTF-8) gets the error page, never a bare text answer.
pub struct PagePath<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned + Send> axum::extract::FromRequestParts<S>
    for PagePath<T>
{
    type Rejection = UiError;
    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, UiError> {
        let ApiPath(v) = ApiPath::<T>::from_request_parts(parts, state).await?;
        Ok(Self(v))
    }
}

/// The query of a dashboard route, refused with the error page when it does
/// not parse.
pub struct PageQuery<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> axum::extract::FromRequestParts<S>
    for PageQuery<T>
{
    type Rejection = UiError;
    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, UiError> {
        let ApiQuery(v) = ApiQuery::<T>::from_request_parts(parts, state).await?;
        Ok(Self(v))
    }
}

/// `AddressBudget` for a dashboard route: over budget, the error page (429,
/// Retry-After).
pub struct PageAddressBudget;

impl axum::extract::FromRequestParts<AppState> for PageAddressBudget {
    type Rejection = UiError;
    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Self, UiError> {
        AddressBudget::from_request_parts(parts, state).await?;
        Ok(Self)
    }
}

/// [`crate::http::rate_limit::AddressGate`] for a page: a blocked address
/// gets the HTML error page.
pub struct PageAddressGate(pub crate::http::rate_limit::AddressGate);

impl axum::extract::FromRequestParts<AppState> for PageAddressGate {
    type Rejection = UiError;
    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Self, UiError> {
        Ok(Self(
            crate::http::rate_limit::AddressGate::from_request_parts(parts, state).await?,
        ))
    }
}

impl From<Error> for UiError {
    fn from(e: Error) -> Self {
        Self(e)
    }
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage {
    layout: Layout,
    heading: &'static str,
    message: String,
    code: &'static str,
    next: (&'static str, &'static str),
}

impl IntoResponse for UiError {
    fn into_response(self) -> Response {
        let (code, message) = (self.0.code, self.0.message.clone());
        let wrong_origin = self.0.details.contains_key("expected_origin");
        // The API rendering logs an internal cause once and picks the status
        // and Retry-After; only the body is replaced by the page.
        let mut resp = self.0.into_response();
        let heading = match code {
            Code::Forbidden
            | Code::CsrfFailed
            | Code::SigninNotAllowed
            | Code::InvitationEmailMismatch => "Not allowed",
            Code::ActionNotFound
            | Code::SourceNotFound
            | Code::DeliveryNotFound
            | Code::NotFound
            | Code::WorkspaceNotFound
            | Code::MemberNotFound
            | Code::InvitationNotFound => "Not found",
            Code::Internal | Code::Unavailable => "Something went wrong",
            _ => "That did not work",
        };
        // A person in no workspace is pointed to where they get one.
        let no_workspace =
            code == Code::WorkspaceNotFound && message == crate::service::caller::NO_WORKSPACE;
        let heading = if no_workspace {
            "No workspace yet"
        } else {
            heading
        };
        let message = match code {
            Code::WorkspaceNotFound if no_workspace => "You belong to no workspace yet, so this page has nothing to show. Create one on the Workspaces page, or ask an owner of a workspace to invite you.".to_owned(),
            // A wrong --base-url says so; a stale form gets the plain advice.
            Code::CsrfFailed if !wrong_origin => "This form expired or was sent from another site. Go back, reload the page and try again.".to_owned(),
            // The API's words are for a program; a person is told where
            // such an Action may be.
            Code::ActionNotFound => "No Action with this id is visible to you. It may be in another of your workspaces (switch workspace in the header), restricted to other reviewers, or the link may be mistyped.".to_owned(),
            _ => message,
        };
        let shown = ErrorShown {
            heading,
            message,
            code: code.as_str(),
            next: if no_workspace {
                ("/app/workspaces", "Go to Workspaces")
            } else {
                ("/app", "Go to the inbox")
            },
        };
        let body = shown.render(Layout::public(heading));
        resp.headers_mut().remove(header::CONTENT_TYPE);
        let (mut parts, _) = resp.into_parts();
        parts.extensions.insert(shown);
        (parts, Html(body)).into_response()
    }
}

/// What an error page says, kept on its response so that
/// [`error_page_nav`] can render it again in a signed-in person's frame.
#[derive(Clone)]
pub struct ErrorShown {
    heading: &'static str,
    message: String,
    code: &'static str,
    /// The page's one way on: (href, label).
    next: (&'static str, &'static str),
}

impl ErrorShown {
    fn render(&self, layout: Layout) -> String {
        ErrorPage {
            layout,
            heading: self.heading,
            message: self.message.clone(),
            code: self.code,
            next: self.next,
        }
        .render()
        .unwrap_or_else(|_| self.heading.to_owned())
    }
}

/// Middleware: a dashboard error page seen by a signed-in person (a page
/// not found, a form refused, an Action of another workspace) keeps the
/// header (nav, workspace switcher, bell, sign-out), as every other page
/// does. `UiError` cannot read the session itself, so it leaves
/// [`ErrorShown`] on its response and this renders it again. Without a live
/// session, on a refusal of the address (429) or an unavailable service
/// (503), and when the header cannot be read, the plain page stays.
pub async fn error_page_nav(
    axum::extract::State(st): axum::extract::State<AppState>,
    req: Request,
    next: axum::middleware::Next,
) -> Response {
    let session = req.extensions().get::<tower_sessions::Session>().cloned();
    let resp = next.run(req).await;
    let Some(session) = session else {
        return resp;
    };
    if matches!(
        resp.status(),
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
    ) {
        return resp;
    }
    let Some(shown) = resp.extensions().get::<ErrorShown>().cloned() else {
        return resp;
    };
    let Ok(Some((user, csrf))) = crate::http::session::cookie_user(&st, &session).await else {
        return resp;
    };
    let page = PageUser {
        user,
        csrf,
        session,
    };
    let Ok(layout) = Layout::signed_in(&st, &page, shown.heading, "").await else {
        return resp;
    };
    let body = shown.render(layout);
    let (mut parts, _) = resp.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    (parts, Html(body)).into_response()
}

/// A page that can say, above its content, why a form was not done.
pub trait ShowsError {
    fn show_error(&mut self, message: String);
    /// The form field the error is about (`details.errors[0].field`), for
    /// pages whose template ties the message to that field
    /// (`aria-invalid`, `aria-describedby`).
    fn show_field(&mut self, _field: String) {}
}

/// The field a refusal is about: the first of `details.errors`.
pub fn error_field(e: &Error) -> Option<String> {
    e.details
        .get("errors")
        .and_then(|v| v.get(0))
        .and_then(|v| v.get("field"))
        .and_then(|v| v.as_str())
        .map(str::to_owned)
}

/// Implements [`ShowsError`] for page structs whose template shows an
/// `error: Option<String>` field.
macro_rules! shows_error {
    (fields: $($page:ty),+ $(,)?) => {$(
        impl $crate::http::ui::view::ShowsError for $page {
            fn show_error(&mut self, message: String) {
                self.error = Some(message);
            }
            fn show_field(&mut self, field: String) {
                self.error_field = Some(field);
            }
        }
    )+};
    ($($page:ty),+ $(,)?) => {$(
        impl $crate::http::ui::view::ShowsError for $page {
            fn show_error(&mut self, message: String) {
                self.error = Some(message);
            }
        }
    )+};
}
pub(crate) use shows_error;

/// After a refused form: `page` again with `e` in words and `e`'s status
/// when it is something the person can act on (a 4xx); anything else
/// becomes the error page, and `page` is then not built.
pub async fn page_with_error<P: ShowsError + IntoResponse>(
    e: Error,
    page: impl Future<Output = Result<P, UiError>>,
) -> Result<Response, UiError> {
    let message = e.message.clone();
    page_with_message(e, message, page).await
}

/// As [`page_with_error`], with the words chosen by the caller.
pub async fn page_with_message<P: ShowsError + IntoResponse>(
    e: Error,
    message: String,
    page: impl Future<Output = Result<P, UiError>>,
) -> Result<Response, UiError> {
    if !e.code.status().is_client_error() {
        return Err(e.into());
    }
    let mut out = page.await?;
    out.show_error(message);
    if let Some(field) = error_field(&e) {
        out.show_field(field);
    }
    Ok((e.code.status(), out).into_response())
}

/// The query of a page a form sends the browser back to: `done` names what
/// was just done, for the page's one-line confirmation.
#[derive(Debug, Default, serde::Deserialize)]
pub struct DoneQuery {
    #[serde(default)]
    pub done: Option<String>,
}

/// An `application/x-www-form-urlencoded` body, keeping repeated keys (a
/// multiple-choice answer sends one `value` per box ticked).
pub struct FormData(Vec<(String, String)>);

impl FormData {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
    pub fn all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
    /// A trimmed, non-empty value.
    pub fn text(&self, key: &str) -> Option<String> {
        self.get(key)
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    }
    pub fn pairs(&self) -> &[(String, String)] {
        &self.0
    }
}

impl<S: Send + Sync> FromRequest<S> for FormData {
    type Rejection = UiError;
    async fn from_request(req: Request, state: &S) -> Result<Self, UiError> {
        // Refused at once when its Content-Length is over the limit.
        let bytes = crate::http::extract::body(req, state, false)
            .await
            .map_err(UiError)?;
        Ok(Self(form_urlencoded::parse(&bytes).into_owned().collect()))
    }
}

/// Every unsafe dashboard request: same origin and the session's form token.
pub fn check_csrf(
    st: &AppState,
    headers: &HeaderMap,
    page: &PageUser,
    form: &FormData,
) -> Result<(), UiError> {
    page.check_form(
        headers,
        &st.services.config,
        form.get("_csrf").unwrap_or(""),
    )?;
    Ok(())
}

/// "Are you sure?" for a destructive step, as its own page so it works
/// without JavaScript: the same form again, plus `confirmed=yes`.
#[derive(Template, WebTemplate)]
#[template(path = "confirm.html")]
pub struct ConfirmPage {
    pub layout: Layout,
    pub heading: String,
    pub message: String,
    pub post_to: String,
    /// The fields of the original form, sent again (the CSRF token comes
    /// from the layout).
    pub hidden: Vec<(String, String)>,
    pub confirm_label: String,
    pub cancel_url: String,
}

/// What a confirmation page asks: the question, what happens, where the
/// confirmed form goes, and where "cancel" leads.
pub struct Ask {
    pub heading: String,
    pub message: String,
    pub post_to: String,
    pub confirm_label: String,
    pub cancel_url: String,
}

impl Ask {
    /// The page's title: the heading when it is the question, else the
    /// heading and the message's first sentence ("This is destructive:
    /// Choose “Reject” for “…”?"), so each confirmation is told apart.
    fn title(&self) -> String {
        if self.heading.ends_with('?') {
            return self.heading.clone();
        }
        let end = self
            .message
            .find(['?', '.'])
            .map_or(self.message.len(), |i| i + 1);
        let first: String = self.message[..end].chars().take(120).collect();
        format!("{}: {}", self.heading, first)
    }
}

impl ConfirmPage {
    /// The page that asks first, carrying `form` over with `confirmed=yes`.
    pub async fn ask(
        st: &crate::app::AppState,
        p: &PageUser,
        nav: &'static str,
        form: &FormData,
        ask: Ask,
    ) -> Result<Response, UiError> {
        Ok(ConfirmPage {
            // The page's title is its question ("Revoke this Source?"), not a
            // "Confirm" shared by every confirmation.
            layout: Layout::signed_in(st, p, ask.title(), nav).await?,
            heading: ask.heading,
            message: ask.message,
            post_to: ask.post_to,
            hidden: Self::resend(form),
            confirm_label: ask.confirm_label,
            cancel_url: ask.cancel_url,
        }
        .into_response())
    }

    /// Carries `form` over, minus its token, plus the confirmation.
    pub fn resend(form: &FormData) -> Vec<(String, String)> {
        form.pairs()
            .iter()
            .filter(|(k, _)| k != "_csrf" && k != "confirmed")
            .cloned()
            .chain([("confirmed".to_owned(), "yes".to_owned())])
            .collect()
    }
}

/// 303 See Other: after a POST, the browser GETs the next page.
pub fn see_other(location: &str) -> Response {
    (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, location.to_owned())],
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::{Ask, ago};

    /// Each confirmation page has a title of its own: its question.
    #[test]
    fn a_confirmation_is_titled_by_its_question() {
        let ask = |heading: &str, message: &str| Ask {
            heading: heading.into(),
            message: message.into(),
            post_to: String::new(),
            confirm_label: String::new(),
            cancel_url: String::new(),
        };
        assert_eq!(
            ask(
                "Revoke this Source?",
                "“Deploy” can no longer send anything."
            )
            .title(),
            "Revoke this Source?"
        );
        assert_eq!(
            ask(
                "This is destructive",
                "Choose “Reject” for “Bulk item 5”? This is destructive."
            )
            .title(),
            "This is destructive: Choose “Reject” for “Bulk item 5”?"
        );
        assert_eq!(
            ask(
                "This is destructive",
                "Choose “Reject” for 2 requests? It cannot be undone."
            )
            .title(),
            "This is destructive: Choose “Reject” for 2 requests?"
        );
    }

    #[test]
    fn ages_read_like_people_say_them() {
        assert_eq!(ago(3), "just now");
        assert_eq!(ago(200), "3 min ago");
        assert_eq!(ago(3 * 3_600 + 100), "3 h ago");
        assert_eq!(ago(86_400 * 2), "2 days ago");
        assert_eq!(ago(-120), "in 2 min");
    }
}
