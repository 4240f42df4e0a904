//! The account page: the signed-in person's sessions and API tokens, with
//! create and revoke. A new token is shown once by POST-redirect-GET
//! (`ui::shown_once`), so a reload shows no token and makes none. Revoking
//! this session signs out.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::app::AppState;
use crate::domain::time;
use crate::error::{Error, FieldError};
use crate::http::session::{self, PageUser};
use crate::http::ui::shown_once;
use crate::http::ui::view::{
    Ask, ConfirmPage, FormData, Layout, PagePath, PageQuery, UiError, When, check_csrf, see_other,
};
use crate::service::account;
use crate::service::shown_once::Secret;
use crate::service::signin::INVITATION_METHOD;
use crate::service::tokens::{self, INVITATION_SESSION_NO_TOKENS, MAX_TOKEN_DAYS};
use crate::store::users::Credential;

pub struct CredVm {
    pub id: String,
    pub name: String,
    pub method: String,
    pub client: Option<String>,
    pub agent: Option<String>,
    pub created: When,
    pub last_used: Option<When>,
    pub expires: Option<When>,
    pub current: bool,
}

pub struct NewToken {
    pub name: String,
    pub token: String,
}

#[derive(Template, WebTemplate)]
#[template(path = "account.html")]
pub struct AccountPage {
    layout: Layout,
    email: String,
    /// The person's name; empty when none is set.
    name: String,
    sessions: Vec<CredVm>,
    tokens: Vec<CredVm>,
    new_token: Option<NewToken>,
    /// Redirected here after a new token, but it was already shown.
    shown_before: bool,
    max_days: u32,
    /// Why this session may not create API tokens (an invitation link
    /// opened it); None when it may.
    no_tokens: Option<&'static str>,
    flash: Option<&'static str>,
    error: Option<String>,
    /// The form field the error is about.
    error_field: Option<String>,
    /// What was typed in a refused form, shown again to be corrected: the
    /// new token's name and expiry, the deletion's confirmation address.
    typed: Typed,
}

#[derive(Default)]
struct Typed {
    token_name: String,
    token_days: String,
    confirm: String,
}

/// "Chrome on Linux" from a User-Agent header; None when unrecognised.
fn browser(ua: &str) -> Option<String> {
    let name = [
        ("Edg/", "Edge"),
        ("Firefox/", "Firefox"),
        ("Chrome/", "Chrome"),
        ("Safari/", "Safari"),
    ]
    .iter()
    .find(|(m, _)| ua.contains(m))
    .map(|(_, n)| *n);
    let os = [
        ("Android", "Android"),
        ("iPhone", "iOS"),
        ("iPad", "iPadOS"),
        ("Windows", "Windows"),
        ("Mac OS X", "macOS"),
        ("Linux", "Linux"),
    ]
    .iter()
    .find(|(m, _)| ua.contains(m))
    .map(|(_, n)| *n);
    match (name, os) {
        (Some(n), Some(o)) => Some(format!("{n} on {o}")),
        (Some(n), None) => Some(n.to_owned()),
        (None, Some(o)) => Some(o.to_owned()),
        (None, None) => None,
    }
}

fn cred_vm(c: &Credential, current: &str, now: time::Timestamp) -> CredVm {
    CredVm {
        id: c.id.clone(),
        name: c.name.clone(),
        method: match c.method.as_deref() {
            Some("link") => "one-time link".to_owned(),
            Some(INVITATION_METHOD) => "invitation link".to_owned(),
            Some(m) => m.to_owned(),
            None => "created here".to_owned(),
        },
        client: c.client.clone(),
        agent: c.user_agent.as_deref().and_then(browser),
        created: When::new(&c.created_at, now),
        last_used: When::opt(c.last_used_at.as_deref(), now),
        expires: When::opt(c.expires_at.as_deref(), now),
        current: c.id == current,
    }
}

async fn page(st: &AppState, p: &PageUser) -> Result<AccountPage, UiError> {
    let now = st.services.clock.now();
    let me = account::get(&st.services, &p.user).await?;
    let creds = tokens::list(&st.services, &p.user).await?;
    let by_invitation = creds
        .iter()
        .any(|c| c.id == p.user.credential_id && c.method.as_deref() == Some(INVITATION_METHOD));
    let live = creds.iter().filter(|c| c.is_live(now));
    let (sessions, api): (Vec<&Credential>, Vec<&Credential>) =
        live.partition(|c| c.kind == "session");
    let vm = |list: Vec<&Credential>| {
        list.into_iter()
            .map(|c| cred_vm(c, &p.user.credential_id, now))
            .collect()
    };
    Ok(AccountPage {
        layout: Layout::signed_in(st, p, "Account", "account").await?,
        email: p.user.email.clone(),
        name: me.name.unwrap_or_default(),
        sessions: vm(sessions),
        tokens: vm(api),
        new_token: None,
        shown_before: false,
        max_days: MAX_TOKEN_DAYS,
        no_tokens: by_invitation.then_some(INVITATION_SESSION_NO_TOKENS),
        flash: None,
        error: None,
        error_field: None,
        typed: Typed::default(),
    })
}

#[derive(Debug, Default, Deserialize)]
pub struct AccountQuery {
    #[serde(default)]
    done: Option<String>,
}

/// A refused form: the page again with the reason, the field it is about
/// marked (`adjust` may say otherwise); a failure of the server goes to the
/// error page.
async fn refused(
    st: &AppState,
    p: &PageUser,
    e: Error,
    adjust: impl FnOnce(&mut AccountPage),
) -> Result<Response, UiError> {
    if !e.code.status().is_client_error() {
        return Err(e.into());
    }
    let mut out = page(st, p).await?;
    out.error = Some(e.message.clone());
    out.error_field = crate::http::ui::view::error_field(&e);
    adjust(&mut out);
    Ok((e.code.status(), out).into_response())
}

/// GET /app/account
pub async fn account_page(
    State(st): State<AppState>,
    p: PageUser,
    PageQuery(q): PageQuery<AccountQuery>,
) -> Result<AccountPage, UiError> {
    let mut out = page(&st, &p).await?;
    match q.done.as_deref() {
        Some("revoked") => out.flash = Some("Revoked. It stopped working at once."),
        Some("named") => out.flash = Some("Saved. People now see this name beside your address."),
        Some("unnamed") => out.flash = Some("Name removed. People now see your address alone."),
        Some("signed_out_elsewhere") => {
            out.flash = Some(
                "Signed out everywhere else: every other session stopped working at once. API tokens keep working.",
            )
        }
        Some("created") => {
            out.new_token = shown_once::take(&st, &p, Secret::API_TOKEN_SLOT, |held| match held {
                Secret::ApiToken { name, token } => Some(NewToken { name, token }),
                _ => None,
            })
            .await?;
            out.shown_before = out.new_token.is_none();
        }
        _ => {}
    }
    Ok(out)
}

/// POST /app/account/tokens: creates the token and redirects to the account
/// page, which shows it once.
pub async fn create_token(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    let name = form.get("name").unwrap_or_default().to_owned();
    // A whole number in range goes on; any other is refused here with the
    // range (the service says the same of one out of range).
    let days = match form.text("expires_in_days").map(|d| d.parse::<i64>()) {
        None => Ok(None),
        Some(Ok(d)) if (1..=i64::from(MAX_TOKEN_DAYS)).contains(&d) => Ok(Some(d as u32)),
        Some(_) => Err(Error::validation(vec![FieldError::new(
            "expires_in_days",
            format!(
                "the expiry is a whole number of days between 1 and {MAX_TOKEN_DAYS}; leave it empty for no expiry"
            ),
        )])),
    };
    let made = match days {
        Ok(days) => tokens::create_api_token(&st.services, &p.user, &name, days).await,
        Err(e) => Err(e),
    };
    match made {
        Ok((token, cred)) => {
            let secret = Secret::ApiToken {
                name: cred.name,
                token,
            };
            shown_once::hold(&st, &p, secret, "/app/account?done=created").await
        }
        Err(e) => {
            let days = form.get("expires_in_days").unwrap_or_default().to_owned();
            refused(&st, &p, e, |out| {
                out.typed.token_name = name;
                out.typed.token_days = days;
            })
            .await
        }
    }
}

/// POST /app/account/name: sets the name (an empty one clears it), the use
/// case of `PATCH /v1/account`.
pub async fn set_name(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    let name = form
        .get("display_name")
        .unwrap_or_default()
        .trim()
        .to_owned();
    let cleared = name.is_empty();
    let req = account::AccountUpdate {
        name: Some((!cleared).then_some(name)),
    };
    match account::update(&st.services, &p.user, req).await {
        Ok(_) if cleared => Ok(see_other("/app/account?done=unnamed")),
        Ok(_) => Ok(see_other("/app/account?done=named")),
        // The form's field is `display_name` (the token form has a `name`);
        // it shows what was typed, to be corrected.
        Err(e) => {
            let typed = form.get("display_name").unwrap_or_default().to_owned();
            refused(&st, &p, e, |out| {
                out.error_field = Some("display_name".to_owned());
                out.name = typed;
            })
            .await
        }
    }
}

/// POST /app/account/credentials/{id}/revoke: a session or an API token.
pub async fn revoke_credential(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    // Signing this session out asks nothing; ending another, or a token a
    // script uses, cannot be undone: asked first (a page without
    // JavaScript, as for every destructive form).
    if id != p.user.credential_id && form.get("confirmed") != Some("yes") {
        let creds = tokens::list(&st.services, &p.user).await?;
        if let Some(c) = creds.iter().find(|c| c.id == id) {
            let ask = if c.kind == "session" {
                let place = c
                    .user_agent
                    .as_deref()
                    .and_then(browser)
                    .or_else(|| c.client.clone())
                    .unwrap_or_else(|| "an unknown client".into());
                Ask {
                    heading: "Sign that session out?".into(),
                    message: format!(
                        "The session in {place}, signed in {}, ends at once: whoever uses it must sign in again.",
                        When::new(&c.created_at, st.services.clock.now()).exact
                    ),
                    post_to: format!("/app/account/credentials/{id}/revoke"),
                    confirm_label: "Sign it out".into(),
                    cancel_url: "/app/account".into(),
                }
            } else {
                Ask {
                    heading: format!("Revoke the token “{}”?", c.name),
                    message: "Scripts and apps that use it are refused from now on (401); a revoked token cannot be brought back.".into(),
                    post_to: format!("/app/account/credentials/{id}/revoke"),
                    confirm_label: "Revoke the token".into(),
                    cancel_url: "/app/account".into(),
                }
            };
            return ConfirmPage::ask(&st, &p, "account", &form, ask).await;
        }
    }
    tokens::revoke(&st.services, &p.user, &id).await?;
    if id == p.user.credential_id {
        session::end(&p.session).await?;
        return Ok(see_other("/app/signin?done=signed_out"));
    }
    Ok(see_other("/app/account?done=revoked"))
}

/// POST /app/account/sessions/end-others: signs out everywhere but here.
pub async fn end_other_sessions(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    if form.get("confirmed") != Some("yes") {
        let ask = Ask {
            heading: "Sign out everywhere else?".into(),
            message: "Every other session of yours ends at once (other browsers and devices must sign in again); this one and your API tokens stay.".into(),
            post_to: "/app/account/sessions/end-others".into(),
            confirm_label: "Sign out everywhere else".into(),
            cancel_url: "/app/account".into(),
        };
        return ConfirmPage::ask(&st, &p, "account", &form, ask).await;
    }
    tokens::end_other_sessions(&st.services, &p.user).await?;
    Ok(see_other("/app/account?done=signed_out_elsewhere"))
}

/// POST /app/account/delete: the form asks for the person's own e-mail and
/// a tick that they understand; the account goes and the browser is signed
/// out (guide: "Account: export and deletion").
pub async fn delete_account(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    let confirm = form.get("confirm").unwrap_or_default().to_owned();
    let done = if confirm.trim().is_empty() {
        // The API's words ("send {\"confirm\": …}") are not the form's.
        Err(Error::field(
            "confirm",
            "type your own e-mail address to confirm that the account is to be deleted",
        ))
    } else if form.get("understood") == Some("yes") {
        let req = account::AccountDeleteRequest { confirm };
        account::delete(&st.services, &p.user, req).await
    } else {
        Err(Error::field(
            "understood",
            "tick the box to confirm that you understand deletion cannot be undone",
        ))
    };
    match done {
        Ok(()) => {
            // Best effort: the account is gone (its credential revoked, so
            // the cookie signs no one in either way).
            if let Err(e) = session::end(&p.session).await {
                tracing::warn!(error = %e, "could not end the deleted account's browser session");
            }
            Ok(see_other("/app/signin?done=account_deleted"))
        }
        Err(e) => {
            let typed = form.get("confirm").unwrap_or_default().to_owned();
            refused(&st, &p, e, |out| out.typed.confirm = typed).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::browser;

    #[test]
    fn user_agents_read_as_browser_and_system() {
        let chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Safari/537.36";
        assert_eq!(browser(chrome).as_deref(), Some("Chrome on Linux"));
        let iphone = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1";
        assert_eq!(browser(iphone).as_deref(), Some("Safari on iOS"));
        assert_eq!(browser("curl/8.0"), None);
    }
}
