//! The Action page's work controls: `POST /app/actions/{id}/claim`,
//! `…/assign`, `…/snooze` (presets) and `…/comments`. Each calls the same
//! `service::work` function as the API, then returns to the page; a refusal
//! shows the page again with the reason.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use crate::app::AppState;
use crate::domain::time::{self, Timestamp};
use crate::error::{Code, Error, Result};
use crate::http::session::PageUser;
use crate::http::ui::action::current_page;
use crate::http::ui::view::{
    Ask, ConfirmPage, FormData, PagePath, UiError, check_csrf, page_with_message, see_other,
};
use crate::service::work::{self, AssignmentUpdate, CommentCreate, SnoozeRequest};

/// What a refused comment form had typed, to put back on the page.
enum Draft {
    None,
    Comment(String),
    Edit { comment_id: String, body: String },
}

async fn back(
    st: &AppState,
    page: &PageUser,
    id: &str,
    done: &str,
    outcome: Result<()>,
) -> Result<Response, UiError> {
    back_with(st, page, id, done, outcome, Draft::None).await
}

async fn back_with(
    st: &AppState,
    page: &PageUser,
    id: &str,
    done: &str,
    outcome: Result<()>,
    draft: Draft,
) -> Result<Response, UiError> {
    match outcome {
        Ok(()) => Ok(see_other(&format!("/app/actions/{id}?done={done}"))),
        // The Action gone or out of sight: the error page, not the page.
        Err(e) if e.code == Code::ActionNotFound => Err(e.into()),
        Err(e) => {
            // A comment's text is "the comment" to the person, not `body`.
            let said = match &draft {
                Draft::Comment(_) | Draft::Edit { .. } if e.message.starts_with("body ") => {
                    e.message.replacen("body ", "the comment ", 1)
                }
                _ => e.message.clone(),
            };
            let message = format!("Not done: {said}");
            let shown = async {
                let mut out = current_page(st, page, id).await?;
                match draft {
                    Draft::None => {}
                    Draft::Comment(body) => out.comment_draft = body,
                    // A comment gone meanwhile has no form: the text goes
                    // to the new comment's box, to be posted again.
                    Draft::Edit { comment_id, body } => {
                        if out.may_edit_comment(&comment_id) {
                            out.edit_draft_id = comment_id;
                            out.edit_draft = body;
                        } else {
                            out.comment_draft = body;
                        }
                    }
                }
                Ok(out)
            };
            page_with_message(e, message, shown).await
        }
    }
}

/// POST /app/actions/{id}/claim
pub async fn claim(
    State(st): State<AppState>,
    page: PageUser,
    headers: HeaderMap,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &page, &form)?;
    let r = work::claim(&st.services, page.user.clone(), id.clone()).await;
    back(&st, &page, &id, "claimed", r.map(|_| ())).await
}

/// POST /app/actions/{id}/assign: an empty choice unassigns.
pub async fn assign(
    State(st): State<AppState>,
    page: PageUser,
    headers: HeaderMap,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &page, &form)?;
    let req = AssignmentUpdate {
        assignee_user_id: form.text("assignee_user_id"),
        assignee_email: None,
    };
    let r = work::assign(&st.services, page.user.clone(), id.clone(), req).await;
    back(&st, &page, &id, "assigned", r.map(|_| ())).await
}

/// The snooze buttons: (form value, label).
pub const PRESETS: [(&str, &str); 3] = [
    ("1h", "1 hour"),
    ("tomorrow", "Tomorrow 09:00 UTC"),
    ("week", "Monday 09:00 UTC"),
];

/// The snooze buttons the API would take for an Action that expires at
/// `expires_at`: a snooze must end before it.
pub fn presets_before(
    expires_at: Option<Timestamp>,
    now: Timestamp,
) -> Vec<(&'static str, &'static str)> {
    PRESETS
        .into_iter()
        .filter(|(name, _)| {
            let until = preset(name, now).ok().flatten();
            match (until.as_deref().and_then(time::parse), expires_at) {
                (Some(u), Some(e)) => u < e,
                _ => true,
            }
        })
        .collect()
}

/// When a snooze preset ends: in an hour, tomorrow at 09:00 UTC, next Monday
/// at 09:00 UTC; `clear` un-snoozes.
pub fn preset(name: &str, now: Timestamp) -> Result<Option<String>> {
    let nine = |days: i64| {
        let day = (now + ::time::Duration::days(days)).date();
        time::format(day.with_hms(9, 0, 0).map_or(now, |t| t.assume_utc()))
    };
    Ok(match name {
        "1h" => Some(time::format(now + ::time::Duration::hours(1))),
        "tomorrow" => Some(nine(1)),
        "week" => Some(nine(7 - i64::from(now.weekday().number_days_from_monday()))),
        "clear" => None,
        _ => return Err(Error::field("preset", "choose one of the snooze buttons")),
    })
}

/// POST /app/actions/{id}/snooze
pub async fn snooze(
    State(st): State<AppState>,
    page: PageUser,
    headers: HeaderMap,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &page, &form)?;
    let r = match preset(
        form.get("preset").unwrap_or_default(),
        st.services.clock.now(),
    ) {
        Ok(until) => work::snooze(
            &st.services,
            page.user.clone(),
            id.clone(),
            SnoozeRequest { until },
        )
        .await
        .map(|_| ()),
        Err(e) => Err(e),
    };
    back(&st, &page, &id, "snoozed", r).await
}

/// POST /app/actions/{id}/withdraw (owners and admins)
pub async fn withdraw(
    State(st): State<AppState>,
    page: PageUser,
    headers: HeaderMap,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &page, &form)?;
    // Without JavaScript the button's dialog does not run: a page asks
    // instead, when the person may withdraw it (else the refusal below).
    if form.get("confirmed") != Some("yes") {
        let view = crate::service::dashboard::action(&st.services, &page.user, id.clone()).await?;
        if view.work.may_withdraw {
            let ask = Ask {
                heading: "Withdraw the request?".into(),
                message: format!(
                    "“{}” closes as cancelled: nothing is decided, no receipt is issued, and the Source is told.",
                    view.action.spec.title
                ),
                post_to: format!("/app/actions/{id}/withdraw"),
                confirm_label: "Withdraw".into(),
                cancel_url: format!("/app/actions/{id}"),
            };
            return ConfirmPage::ask(&st, &page, "inbox", &form, ask).await;
        }
    }
    let req = crate::service::decisions::CancelRequest {
        reason: form.text("reason"),
    };
    let r =
        crate::service::decisions::withdraw(&st.services, page.user.clone(), id.clone(), req).await;
    back(&st, &page, &id, "withdrawn", r.map(|_| ())).await
}

/// POST /app/actions/{id}/comments
pub async fn comment(
    State(st): State<AppState>,
    page: PageUser,
    headers: HeaderMap,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &page, &form)?;
    let body = comment_body(&form);
    let r = work::add_comment(
        &st.services,
        page.user.clone(),
        id.clone(),
        CommentCreate { body: body.clone() },
    )
    .await;
    let draft = Draft::Comment(body);
    back_with(&st, &page, &id, "commented", r.map(|_| ()), draft).await
}

/// A comment form's Markdown, with the browser's CRLF line ends as LF.
fn comment_body(form: &FormData) -> String {
    form.get("body").unwrap_or_default().replace("\r\n", "\n")
}

/// POST /app/actions/{id}/comments/{comment_id}/edit
pub async fn edit_comment(
    State(st): State<AppState>,
    page: PageUser,
    headers: HeaderMap,
    PagePath((id, comment_id)): PagePath<(String, String)>,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &page, &form)?;
    let body = comment_body(&form);
    let r = work::edit_comment(
        &st.services,
        page.user.clone(),
        id.clone(),
        comment_id.clone(),
        CommentCreate { body: body.clone() },
    )
    .await;
    let draft = Draft::Edit { comment_id, body };
    back_with(&st, &page, &id, "comment_edited", r.map(|_| ()), draft).await
}

/// POST /app/actions/{id}/comments/{comment_id}/delete
pub async fn delete_comment(
    State(st): State<AppState>,
    page: PageUser,
    headers: HeaderMap,
    PagePath((id, comment_id)): PagePath<(String, String)>,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &page, &form)?;
    let r = work::delete_comment(&st.services, page.user.clone(), id.clone(), comment_id).await;
    back(&st, &page, &id, "comment_deleted", r).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_land_on_the_documented_times() {
        // A Wednesday.
        let now = time::parse("2026-11-25T15:30:00Z").unwrap();
        assert_eq!(
            preset("1h", now).unwrap().unwrap(),
            "2026-11-25T16:30:00.000Z"
        );
        assert_eq!(
            preset("tomorrow", now).unwrap().unwrap(),
            "2026-11-26T09:00:00.000Z"
        );
        assert_eq!(
            preset("week", now).unwrap().unwrap(),
            "2026-11-30T09:00:00.000Z"
        );
        assert_eq!(preset("clear", now).unwrap(), None);
        assert!(preset("forever", now).is_err());
    }
}
