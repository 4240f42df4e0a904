//! `/app/unsubscribe/{token}` (guide: "E-mail"): the link in a notification
//! mail's `List-Unsubscribe` header. GET shows what it stops and a button;
//! POST stops it. No session is needed: the token is the credential, and
//! RFC 8058 has the mail provider POST `List-Unsubscribe=One-Click` with no
//! cookie, so the POST reads no form and checks no CSRF token (a forged
//! POST would need the token, which only the mail carries). The path is
//! redacted from the log like the other links that carry a secret.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;

use crate::app::AppState;
use crate::error::{Code, Error};
use crate::http::ui::view::{Layout, PageAddressGate, PagePath, UiError};
use crate::service::unsubscribe::{self, Subscription};

#[derive(Template, WebTemplate)]
#[template(path = "unsubscribe.html")]
pub struct UnsubscribePage {
    layout: Layout,
    sub: Subscription,
    /// The form's target: this page.
    action: String,
    /// Whether this answers the POST that turned e-mail off.
    done: bool,
}

fn page(token: &str, sub: Subscription, done: bool) -> UnsubscribePage {
    UnsubscribePage {
        layout: Layout::public("Unsubscribe"),
        sub,
        action: format!("/app/unsubscribe/{token}"),
        done,
    }
}

/// A link whose MAC does not hold spends a unit of the address's budget of
/// refused credentials (guide: "Rate limiting"): guessing at tokens is
/// throttled; genuine links never are, even those that no longer apply (a
/// provider's one-click POSTs for people who have left).
fn charged(st: &AppState, client: PageAddressGate, e: Error) -> UiError {
    if e.code == Code::NotFound
        && e.details.get("link").and_then(|v| v.as_str()) == Some(unsubscribe::INVALID)
        && let Err(limited) = st.addresses.spend(client.0.0)
    {
        return limited.into();
    }
    e.into()
}

/// GET /app/unsubscribe/{token}: changes nothing (link scanners open it).
pub async fn unsubscribe_page(
    client: PageAddressGate,
    State(st): State<AppState>,
    PagePath(token): PagePath<String>,
) -> Result<UnsubscribePage, UiError> {
    match unsubscribe::show(&st.services, token.clone()).await {
        Ok(sub) => Ok(page(&token, sub, false)),
        Err(e) => Err(charged(&st, client, e)),
    }
}

/// POST /app/unsubscribe/{token}: the one-click POST, or the page's button.
pub async fn unsubscribe(
    client: PageAddressGate,
    State(st): State<AppState>,
    PagePath(token): PagePath<String>,
) -> Result<UnsubscribePage, UiError> {
    match unsubscribe::stop(&st.services, token.clone()).await {
        Ok(sub) => Ok(page(&token, sub, true)),
        Err(e) => Err(charged(&st, client, e)),
    }
}
