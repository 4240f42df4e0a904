//! The Action page's controls and context requests: `POST
//! /app/actions/{id}/controls` presses a callback control (a mutating one
//! is confirmed first), `POST …/context-requests` asks the Source a
//! question, and `GET …/requests` is the live list of both, as an HTML
//! fragment `static/app.js` swaps in when `/app/events` says something
//! changed. Each calls the same `service::controls` function as the API.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use crate::app::AppState;
use crate::error::{Error, Result};
use crate::http::session::PageUser;
use crate::http::ui::action::current_page;
use crate::http::ui::action_view::{RequestsVm, requests};
use crate::http::ui::view::{
    Ask, ConfirmPage, FormData, PagePath, UiError, check_csrf, page_with_message, see_other,
};
use crate::service::controls::{self, ContextRequestCreate, InvokeRequest};
use crate::service::dashboard;

/// GET /app/actions/{id}/requests: the live part of the page.
#[derive(Template, WebTemplate)]
#[template(path = "action_requests.html")]
pub struct RequestsFragment {
    requests: RequestsVm,
}

pub async fn requests_fragment(
    State(st): State<AppState>,
    page: PageUser,
    PagePath(id): PagePath<String>,
) -> Result<RequestsFragment, UiError> {
    let view = dashboard::action(&st.services, &page.user, id).await?;
    Ok(RequestsFragment {
        requests: requests(&view, &page.user, st.services.clock.now()),
    })
}

/// `question`: the question typed, put back in its box after a refusal.
async fn back(
    st: &AppState,
    page: &PageUser,
    id: &str,
    done: &str,
    outcome: Result<()>,
    question: Option<String>,
) -> Result<Response, UiError> {
    match outcome {
        Ok(()) => Ok(see_other(&format!("/app/actions/{id}?done={done}"))),
        Err(e) if e.code == crate::error::Code::ActionNotFound => Err(e.into()),
        Err(e) => {
            let message = format!("Not sent: {}", e.message);
            page_with_message(e, message, async {
                let mut out = current_page(st, page, id).await?;
                out.question_draft = question.unwrap_or_default();
                Ok(out)
            })
            .await
        }
    }
}

/// POST /app/actions/{id}/controls: `control_key` is the button pressed.
pub async fn press_control(
    State(st): State<AppState>,
    page: PageUser,
    headers: HeaderMap,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &page, &form)?;
    let s = &st.services;
    let key = form.get("control_key").unwrap_or_default().to_owned();
    let view = dashboard::action(s, &page.user, id.clone()).await?;
    let control = view
        .action
        .spec
        .controls
        .iter()
        .flatten()
        .find(|c| c.key == key);
    let confirm = control.and_then(crate::domain::action::Control::confirmation);
    if let (Some(c), Some(question)) = (control, confirm)
        && form.get("confirmed") != Some("yes")
    {
        let ask = Ask {
            heading: format!("Press “{}”?", c.label),
            message: question,
            post_to: format!("/app/actions/{}/controls", view.action.id),
            confirm_label: format!("Yes, {}", c.label),
            cancel_url: format!("/app/actions/{}", view.action.id),
        };
        return ConfirmPage::ask(&st, &page, "inbox", &form, ask).await;
    }
    let r = match form.get("action_version").and_then(|v| v.parse().ok()) {
        Some(action_version) => {
            let req = InvokeRequest {
                action_version,
                fingerprint: form.get("fingerprint").unwrap_or_default().to_owned(),
            };
            // One press per rendering of the form: a double submit replays.
            let idem = press_key(&form, &key);
            controls::invoke(s, page.user.clone(), id.clone(), key, req, idem)
                .await
                .map(|_| ())
        }
        None => Err(Error::field(
            "action_version",
            "the form lost the version it was shown; reload the page",
        )),
    };
    back(&st, &page, &id, "control", r, None).await
}

/// POST /app/actions/{id}/context-requests
pub async fn ask_for_context(
    State(st): State<AppState>,
    page: PageUser,
    headers: HeaderMap,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &page, &form)?;
    let question = form.get("question").unwrap_or_default().to_owned();
    // One question per rendering of the form: a double submit replays.
    let idem = press_key(&form, "context");
    let r = controls::ask(
        &st.services,
        page.user.clone(),
        id.clone(),
        ContextRequestCreate {
            question: question.clone(),
        },
        idem,
    )
    .await
    .map(|_| ());
    back(&st, &page, &id, "asked", r, Some(question)).await
}

/// The Idempotency-Key of one press of a form (`press_id`, one per
/// rendering of the page) on `what`, held to the rule of the API's header
/// (`idempotency::parse_key`); a press_id the page never made (too long,
/// not printable ASCII) makes no key: the press is then a new one.
fn press_key(form: &FormData, what: &str) -> Option<String> {
    let key = form.text("press_id").map(|p| format!("ui:{p}:{what}"))?;
    crate::service::idempotency::parse_key(Some(&key))
        .ok()
        .flatten()
}
