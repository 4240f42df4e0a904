//! The Action page: `GET /app/actions/{id}` shows it, `POST …/decide` decides
//! it (or votes, under an approval policy) with the version and fingerprint
//! the page was rendered with, `GET …/receipt.json` downloads its receipt.
//! A refused decision re-renders the page with the reason in words; a stale
//! one also shows what changed and a fresh form bound to the new version.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::app::AppState;
use crate::domain::action::{ActionRecord, Interaction};
use crate::domain::approval;
use crate::domain::event::ActionEvent;
use crate::error::{Code, Error, Result};
use crate::http::session::PageUser;
use crate::http::ui::action_view::{self, ActionVm, plain};
use crate::http::ui::view::{
    Ask, ConfirmPage, DoneQuery, FormData, Layout, PagePath, PageQuery, UiError, check_csrf,
    see_other, shows_error,
};
use crate::service::dashboard::{self, ActionView};
use crate::service::decisions::{self, DecisionRequest};
use crate::service::inbox::Next;
use crate::service::votes::{self, VoteRequest};

/// One field the Source changed since the reviewer's version.
pub struct ChangeVm {
    pub field: String,
    pub old: String,
    pub new: String,
    /// False for changes recorded before old values were kept.
    pub known: bool,
}

pub struct StaleVm {
    pub from: i64,
    pub to: i64,
    pub changes: Vec<ChangeVm>,
}

#[derive(Template, WebTemplate)]
#[template(path = "action.html")]
pub struct ActionPage {
    layout: Layout,
    a: ActionVm,
    base_url: String,
    flash: Option<&'static str>,
    error: Option<String>,
    /// The form field the error is about (`reason` ties it to that box).
    error_field: Option<String>,
    stale: Option<StaleVm>,
    /// After a decision or a vote: the next open request in the inbox's
    /// order that the person can act on (id, title), so a reviewer works
    /// through the queue.
    next: Option<(String, String)>,
    /// Whether `next` was looked for (after a decision or a vote).
    next_checked: bool,
    /// Looked for, not found among the first `inbox::NEXT_LOOKS_AT`, and more
    /// requests follow.
    next_not_near: bool,
    next_looked_at: i64,
    /// The inbox of the decided Action's environment, where "nothing else
    /// waits" leads.
    inbox_url: &'static str,
    /// What the reviewer had typed, kept when the page comes back.
    reason: String,
    value: String,
    /// A refused choice answer's picks (every `value` sent).
    chosen: Vec<String>,
    /// A refused form-type answer's values, by field key.
    kept_fields: std::collections::HashMap<String, String>,
    /// The refusal is about the answer itself (not the reason, nor the
    /// Action's state): its inputs are marked invalid and described by it.
    answer_error: bool,
    /// The form field a refused form-type answer names (its key), when it
    /// names one: only that input is marked.
    answer_field: Option<String>,
    /// A refused new comment's text, put back in its box.
    pub(crate) comment_draft: String,
    /// A refused question to the Source, put back in its box.
    pub(crate) question_draft: String,
    /// A refused edit: the comment's id and the text typed, so its form
    /// opens again holding that text (empty id: none).
    pub(crate) edit_draft_id: String,
    pub(crate) edit_draft: String,
    /// `services.changes` when the page was read: the live requests list
    /// refreshes from the next change.
    changes_version: u64,
    /// Names this rendering's control form: a second press of the same
    /// control from the same page (a double click) answers the first.
    press_id: String,
}

async fn page_for(
    st: &AppState,
    page: &PageUser,
    view: &ActionView,
    changes_version: u64,
) -> Result<ActionPage, UiError> {
    let a = ActionVm::new(view, &page.user, st.services.clock.now());
    // A proposed answer fills the input; a refused form puts back what was
    // typed instead (`refused`).
    let value = a.answer.proposed.clone().unwrap_or_default();
    Ok(ActionPage {
        layout: Layout::signed_in(st, page, view.action.spec.title.clone(), "inbox").await?,
        a,
        base_url: st.services.config.base_url.clone(),
        flash: None,
        error: None,
        error_field: None,
        stale: None,
        next: None,
        next_checked: false,
        next_not_near: false,
        next_looked_at: crate::service::inbox::NEXT_LOOKS_AT,
        inbox_url: match view.action.environment {
            crate::domain::action::Environment::Test => "/app?environment=test",
            crate::domain::action::Environment::Live => "/app",
        },
        reason: String::new(),
        value,
        kept_fields: std::collections::HashMap::new(),
        chosen: Vec::new(),
        answer_error: false,
        answer_field: None,
        comment_draft: String::new(),
        question_draft: String::new(),
        edit_draft_id: String::new(),
        edit_draft: String::new(),
        changes_version,
        press_id: ulid::Ulid::new().to_string(),
    })
}

/// The page as it is now, for showing again after a refused form.
pub(crate) async fn current_page(
    st: &AppState,
    page: &PageUser,
    id: &str,
) -> Result<ActionPage, UiError> {
    let version = st.services.changes.view(&page.user);
    let view = dashboard::action(&st.services, &page.user, id.to_owned()).await?;
    page_for(st, page, &view, version).await
}

shows_error!(fields: ActionPage);

impl ActionPage {
    /// Whether a form-type answer's input `key` is the one refused: the one
    /// its refusal names, or every one when it names none.
    fn refused_field(&self, key: &str) -> bool {
        self.answer_error && self.answer_field.as_deref().is_none_or(|k| k == key)
    }

    /// Whether the person already voted on this version (the vote form then
    /// shows their vote, and no reason box without a button to send it).
    fn voted(&self) -> bool {
        self.a.answer.kind == "vote"
            && self
                .a
                .approval
                .as_ref()
                .is_some_and(|p| p.my_vote.is_some())
    }

    /// Whether a refused choice answer had picked `id`.
    fn picked(&self, id: &str) -> bool {
        self.chosen.iter().any(|c| c == id)
    }

    /// The value a refused form-type answer held for `key` (empty if none).
    fn kept(&self, key: &str) -> &str {
        self.kept_fields.get(key).map_or("", String::as_str)
    }

    /// Whether the page offers an Edit form for this comment.
    pub(crate) fn may_edit_comment(&self, comment_id: &str) -> bool {
        self.a
            .work
            .comments
            .iter()
            .any(|c| c.id == comment_id && c.may_edit)
    }
}

/// GET /app/actions/{id}
pub async fn action_page(
    State(st): State<AppState>,
    page: PageUser,
    PagePath(id): PagePath<String>,
    PageQuery(q): PageQuery<DoneQuery>,
) -> Result<ActionPage, UiError> {
    // Read the version first: a change committed during the read bumps it
    // again, so the live list cannot miss it.
    let version = st.services.changes.view(&page.user);
    let view = dashboard::action(&st.services, &page.user, id).await?;
    let mut out = page_for(&st, &page, &view, version).await?;
    out.flash = match q.done.as_deref() {
        Some("decided") if view.action.spec.callback_url.is_some() => {
            Some("Decision recorded. The Source is being told; the receipt below is its proof.")
        }
        Some("decided") => Some(
            "Decision recorded. The Source learns of it when it next reads the request; the receipt below is its proof.",
        ),
        Some("voted") => Some("Vote recorded."),
        Some("claimed") => Some("You hold this request now."),
        Some("assigned") => Some("Assignment saved."),
        Some("snoozed") => Some("Snooze saved."),
        Some("commented") => Some("Comment added."),
        Some("withdrawn") => Some(
            "Withdrawn: the request is cancelled, nothing was decided, and the Source is told.",
        ),
        Some("comment_edited") => Some("Comment saved."),
        Some("comment_deleted") => Some("Comment deleted."),
        Some("control") => Some("Sent to the Source. Its progress shows below as it reports it."),
        Some("asked") => Some("Question sent to the Source."),
        _ => None,
    };
    if matches!(q.done.as_deref(), Some("decided" | "voted")) {
        match next_in_inbox(&st, &page, &view.action).await? {
            Next::Request(id, title) => out.next = Some((id, title)),
            Next::Nothing => {}
            Next::NotNear => out.next_not_near = true,
        }
        out.next_checked = true;
    }
    Ok(out)
}

/// The first open request of the inbox, in the environment of the one
/// just decided, that the person can act on (`inbox::next_to_decide`).
async fn next_in_inbox(
    st: &AppState,
    page: &PageUser,
    done: &ActionRecord,
) -> Result<Next, UiError> {
    Ok(crate::service::inbox::next_to_decide(
        &st.services,
        page.user.clone(),
        done.environment,
        done.id.clone(),
    )
    .await?)
}

enum Submission {
    Decide(DecisionRequest),
    Vote(VoteRequest),
}

/// POST /app/actions/{id}/decide
pub async fn decide_action(
    State(st): State<AppState>,
    page: PageUser,
    headers: HeaderMap,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &page, &form)?;
    let s = &st.services;
    let view = dashboard::action(s, &page.user, id.clone()).await?;
    if let Some(label) = unconfirmed_destructive(&view.action, &form) {
        // A reason the option needs is asked for before the confirmation,
        // not after it (other refusals come from the decision itself).
        let spec = &view.action.spec;
        // The option chosen, or the vote (which stands for an option).
        let given = match (form.get("option_id"), form.get("vote")) {
            (Some(id), _) => {
                crate::domain::decision::check_reason_given(spec, Some(id), form.get("reason"))
            }
            (None, Some(v)) => {
                crate::domain::decision::check_vote_reason(spec, v, form.get("reason"))
            }
            (None, None) => Ok(()),
        };
        if let Err(e) = given {
            return refused(&st, &page, &id, &form, e).await;
        }
        let ask = Ask {
            heading: "This is destructive".into(),
            message: action_view::confirm_question(&view.action.spec.title, &label),
            post_to: format!("/app/actions/{}/decide", view.action.id),
            confirm_label: format!("Yes, {label}"),
            cancel_url: format!("/app/actions/{}", view.action.id),
        };
        return ConfirmPage::ask(&st, &page, "inbox", &form, ask).await;
    }
    let outcome = match submission(&view.action, &form) {
        Ok(Submission::Decide(req)) => decisions::decide(s, page.user.clone(), id.clone(), req)
            .await
            .map(|_| "decided"),
        Ok(Submission::Vote(req)) => votes::cast(s, page.user.clone(), id.clone(), req)
            .await
            .map(|_| "voted"),
        Err(e) => Err(e),
    };
    match outcome {
        Ok(done) => Ok(see_other(&format!(
            "/app/actions/{}?done={done}",
            view.action.id
        ))),
        // Everything the reviewer can act on is said on the page itself.
        Err(e) if e.code.status().is_client_error() && e.code != Code::ActionNotFound => {
            refused(&st, &page, &id, &form, e).await
        }
        Err(e) => Err(e.into()),
    }
}

/// The option chosen, when it is destructive and not yet confirmed: by
/// `option_id`, or the option a vote stands for (one vote may close the
/// Action with it: a single rejection, by default).
fn unconfirmed_destructive(a: &ActionRecord, form: &FormData) -> Option<String> {
    let o = match (form.get("option_id"), form.get("vote")) {
        (Some(id), _) => a.spec.option(id)?,
        (None, Some(v)) => approval::voted_option(&a.spec, v == "approve")?,
        (None, None) => return None,
    };
    (o.style.as_deref() == Some("destructive") && form.get("confirmed") != Some("yes"))
        .then(|| o.label.clone())
}

/// The page again, after a refusal: the current Action, the reason in words,
/// and for a stale decision what changed since the reviewer's version.
async fn refused(
    st: &AppState,
    page: &PageUser,
    id: &str,
    form: &FormData,
    e: Error,
) -> Result<Response, UiError> {
    let version = st.services.changes.view(&page.user);
    let view = dashboard::action(&st.services, &page.user, id.to_owned()).await?;
    let mut out = page_for(st, page, &view, version).await?;
    out.reason = form.get("reason").unwrap_or_default().to_owned();
    out.value = form.get("value").unwrap_or_default().to_owned();
    out.chosen = form.all("value").map(str::to_owned).collect();
    if let Some(Interaction::Form { fields }) = &view.action.spec.interaction {
        out.kept_fields = fields
            .iter()
            .filter_map(|f| {
                let v = form.get(&format!("field.{}", f.key))?;
                Some((f.key.clone(), v.to_owned()))
            })
            .collect();
    }
    if e.code == Code::ActionChanged {
        let seen = form
            .get("action_version")
            .and_then(|v| v.parse().ok())
            .unwrap_or(view.action.action_version);
        out.stale = Some(changes_since(&view, seen));
    } else {
        out.error = Some(in_words(&e, &view.action));
        out.error_field = crate::http::ui::view::error_field(&e);
        out.answer_error = matches!(
            e.code,
            Code::ResponseRequired | Code::InvalidResponse | Code::ResponseTypeMismatch
        );
        if let Some(Interaction::Form { fields }) = &view.action.spec.interaction {
            out.answer_field = fields
                .iter()
                .find(|f| e.message.contains(&format!("`{}`", f.key)))
                .map(|f| f.key.clone());
        }
    }
    Ok((e.code.status(), out).into_response())
}

fn in_words(e: &Error, a: &ActionRecord) -> String {
    match e.code {
        Code::ActionNotOpen => format!(
            "Nothing was decided: this request is already {}.",
            a.status.as_str()
        ),
        Code::ResponseRequired => match &a.spec.interaction {
            Some(Interaction::Text { .. }) => "Type your answer before submitting.".into(),
            Some(Interaction::Number { .. }) => "Enter a number before submitting.".into(),
            Some(Interaction::Form { .. }) => "Fill in the form before submitting.".into(),
            _ => "Choose an answer before submitting.".into(),
        },
        Code::InvalidResponse
        | Code::ResponseTypeMismatch
        | Code::OptionNotFound
        | Code::ValidationError => {
            let mut said = e.message.trim_end_matches('.').to_owned();
            // A form's fields by the labels the reviewer sees, not their keys.
            if let Some(Interaction::Form { fields }) = &a.spec.interaction {
                for f in fields {
                    said = said.replace(&format!("field `{}`", f.key), &format!("“{}”", f.label));
                }
            }
            format!("Your answer was not accepted: {said}.")
        }
        _ => format!("Nothing was decided: {}.", e.message.trim_end_matches('.')),
    }
}

/// Fields changed by material updates after version `seen`: the value the
/// reviewer saw (the first `before` recorded) and the value now.
fn changes_since(view: &ActionView, seen: i64) -> StaleVm {
    let now = serde_json::to_value(&view.action.spec).unwrap_or(Value::Null);
    let mut changes: Vec<ChangeVm> = Vec::new();
    let later = view.history.iter().filter_map(|ev| match &ev.event {
        ActionEvent::Updated {
            material: true,
            fields,
            before,
            ..
        } if ev.action_version > seen => Some((fields, before)),
        _ => None,
    });
    // The first update after the version seen holds, for each field it
    // changed, the value the reviewer saw; a later update's `before` is a
    // value they never saw. A field changed and changed back shows nothing.
    let mut settled: Vec<&String> = Vec::new();
    for (fields, before) in later {
        let before = Some(before);
        for field in fields {
            if settled.contains(&field) {
                continue;
            }
            settled.push(field);
            let old = before.and_then(|b| b.get(field));
            let new = now.get(field).unwrap_or(&Value::Null);
            if old.is_some_and(|o| o == new) || (before.is_some() && old.is_none()) {
                continue;
            }
            changes.push(ChangeVm {
                field: field.to_owned(),
                old: old.map(plain).unwrap_or_default(),
                new: plain(new),
                known: old.is_some(),
            });
        }
    }
    StaleVm {
        from: seen,
        to: view.action.action_version,
        changes,
    }
}

/// The form as the service's request, typed by the Action's interaction.
fn submission(a: &ActionRecord, f: &FormData) -> Result<Submission> {
    let action_version = f
        .get("action_version")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| {
            Error::field(
                "action_version",
                "the form lost the version it was shown; reload the page",
            )
        })?;
    let fingerprint = f.get("fingerprint").unwrap_or_default().to_owned();
    let reason = f.text("reason").map(|r| r.replace("\r\n", "\n"));
    if a.spec.approval_policy.is_some() {
        return Ok(Submission::Vote(VoteRequest {
            vote: f.get("vote").unwrap_or_default().to_owned(),
            action_version,
            fingerprint,
            reason,
        }));
    }
    let (option_id, response) = if a.spec.options.is_some() {
        (f.text("option_id"), None)
    } else {
        (None, response(a, f)?.map(|v| json!({ "value": v })))
    };
    Ok(Submission::Decide(DecisionRequest {
        action_version,
        fingerprint,
        option_id,
        response,
        reason,
    }))
}

/// The typed value a form sent; None when it sent nothing (the service then
/// says an answer is required).
fn response(a: &ActionRecord, f: &FormData) -> Result<Option<Value>> {
    Ok(match &a.spec.interaction {
        None => None,
        Some(Interaction::Boolean {}) => match f.get("value") {
            Some("true") => Some(json!(true)),
            Some("false") => Some(json!(false)),
            _ => None,
        },
        Some(Interaction::Text { .. }) => f
            .get("value")
            .filter(|v| !v.trim().is_empty())
            .map(|v| json!(v.replace("\r\n", "\n"))),
        Some(Interaction::Number { .. }) => f.text("value").map(|v| number(&v)).transpose()?,
        Some(Interaction::Choice { multiple: true, .. }) => {
            let ids: Vec<&str> = f.all("value").collect();
            (!ids.is_empty()).then(|| json!(ids))
        }
        Some(Interaction::Choice { .. }) => f.text("value").map(Value::String),
        Some(Interaction::Form { fields }) => {
            let mut obj = Map::new();
            for field in fields {
                let Some(raw) = f.text(&format!("field.{}", field.key)) else {
                    continue;
                };
                let v = match field.kind.as_str() {
                    "number" => number(&raw)?,
                    "boolean" => json!(raw == "true"),
                    _ => json!(raw),
                };
                obj.insert(field.key.clone(), v);
            }
            Some(Value::Object(obj))
        }
    })
}

fn number(raw: &str) -> Result<Value> {
    if let Ok(i) = raw.parse::<i64>() {
        return Ok(json!(i));
    }
    raw.parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map(Value::Number)
        .ok_or_else(|| Error::new(Code::InvalidResponse, format!("`{raw}` is not a number")))
}

/// GET /app/actions/{id}/receipt.json: the receipt object, as a download.
/// `hds verify-receipt` and any JOSE library check it offline.
pub async fn download_receipt(
    State(st): State<AppState>,
    page: PageUser,
    PagePath(id): PagePath<String>,
) -> Result<Response, UiError> {
    let view = dashboard::action(&st.services, &page.user, id).await?;
    let Some(receipt) = &view.action.receipt else {
        return Err(Error::new(
            Code::NotFound,
            "this Action has no receipt: only decided (resolved) Actions have one",
        )
        .into());
    };
    let body = serde_json::to_string_pretty(receipt).map_err(Error::from)?;
    let disposition = format!("attachment; filename=\"receipt-{}.json\"", view.action.id);
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json".to_owned()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        body,
    )
        .into_response())
}
