//! Batch decisions from the inbox: `POST /app/inbox/decide` decides the
//! picked rows with one option, each bound to the `action_version` and
//! `fingerprint` its row was rendered with, through the same use case as
//! `POST /v1/actions/decisions`; then back to the inbox (POST-redirect-GET)
//! with the result held in the session for one showing (`?batch=done`),
//! which `result` turns into words: a link cannot make the inbox claim a
//! result, and a reload shows it no more. A row whose Action changed since
//! shown stays open and is named.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use serde::{Deserialize, Serialize};

use crate::app::AppState;
use crate::error::{Code, Error};
use crate::http::session::{PageUser, session_error};
use crate::http::ui::inbox::Filters;
use crate::http::ui::view::{Ask, ConfirmPage, FormData, UiError, check_csrf, see_other};
use crate::service::batch::{self, BatchItem};
use crate::service::{Services, dashboard};

/// The inbox's query after a batch: `batch=done` (the result waits in the
/// session) or `batch_error` (nothing was sent).
#[derive(Debug, Default, Deserialize)]
pub struct BatchQuery {
    #[serde(default)]
    pub batch: String,
    /// Why nothing was sent: `none` (no row picked), `option` (no option).
    #[serde(default)]
    pub batch_error: String,
}

/// What a batch did, held in the session until the inbox shows it.
#[derive(Debug, Default, Deserialize, Serialize)]
struct Outcome {
    decided: usize,
    /// Ids that changed since shown (left open).
    changed: Vec<String>,
    /// The other refusals: (id, code).
    failed: Vec<(String, String)>,
}

/// The session key of the waiting `Outcome`.
const OUTCOME: &str = "batch_outcome";

/// What a batch refused before deciding anything held: the rows picked
/// and the reason typed, put back on the inbox so the person corrects the
/// one thing that was wrong instead of picking again.
#[derive(Debug, Default, Deserialize, Serialize)]
pub struct Kept {
    pub picks: Vec<String>,
    pub reason: String,
}

/// The session key of the waiting `Kept`.
const KEPT: &str = "batch_kept";

/// Redirects back to the inbox with `error`, the picks and reason kept.
async fn refused(
    page: &PageUser,
    back: &str,
    error: &str,
    items: &[BatchItem],
    reason: Option<&str>,
) -> Result<Response, UiError> {
    let kept = Kept {
        picks: items.iter().map(|i| i.action_id.clone()).collect(),
        reason: reason.unwrap_or_default().to_owned(),
    };
    page.session
        .insert(KEPT, kept)
        .await
        .map_err(session_error)?;
    Ok(see_other(&format!("{back}&batch_error={error}")))
}

/// One Action the batch left open, in words.
pub struct LeftOpen {
    pub id: String,
    pub title: String,
    pub why: String,
    /// False when the id names nothing the person may see: no link then.
    pub link: bool,
}

/// The banner above the inbox after a batch.
pub struct BatchResultVm {
    pub decided: usize,
    pub changed: Vec<LeftOpen>,
    pub failed: Vec<LeftOpen>,
    pub error: Option<&'static str>,
    /// After a refusal: the rows still picked and the reason typed.
    pub kept: Kept,
}

/// POST /app/inbox/decide
pub async fn decide_batch(
    State(st): State<AppState>,
    page: PageUser,
    headers: HeaderMap,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &page, &form)?;
    let s = &st.services;
    // Back to the same tab, filters and page (re-encoded, never echoed as
    // sent).
    let filters: Filters =
        serde_urlencoded::from_str(form.get("back").unwrap_or_default()).unwrap_or_default();
    let back = format!("/app?{}", filters.page_query());
    let items = picks(&form)?;
    if items.is_empty() {
        return Ok(see_other(&format!("{back}&batch_error=none")));
    }
    let reason = form.text("reason").map(|r| r.replace("\r\n", "\n"));
    let Some(option_id) = form.text("option_id") else {
        return refused(&page, &back, "option", &items, reason.as_deref()).await;
    };
    // The batch's own limits (1..=100, no repeats) before any read.
    batch::check(&items)?;
    // An option that needs a reason, chosen without one: said before a
    // destructive option's confirmation, and nothing is decided. One read
    // of the picked rows answers both.
    let ids = items.iter().map(|i| i.action_id.clone()).collect();
    let picked = batch::picked_option(s, &page.user, ids, option_id.clone()).await?;
    if picked.needs_reason.is_some()
        && reason
            .as_deref()
            .is_none_or(crate::domain::validate::says_nothing)
    {
        return refused(&page, &back, "reason", &items, reason.as_deref()).await;
    }
    // A reason too long would refuse every row alike: said once, up front.
    if reason
        .as_deref()
        .is_some_and(|r| r.chars().count() > crate::domain::decision::MAX_REASON)
    {
        return refused(&page, &back, "reason_long", &items, reason.as_deref()).await;
    }
    if reason
        .as_deref()
        .is_some_and(crate::domain::validate::has_direction_override)
    {
        return refused(&page, &back, "reason_direction", &items, reason.as_deref()).await;
    }
    if form.get("confirmed") != Some("yes")
        && let Some(label) = picked.destructive
    {
        let n = items.len();
        let ask = Ask {
            heading: "This is destructive".into(),
            message: format!(
                "Choose “{label}” for {n} request{}? It cannot be undone.",
                if n == 1 { "" } else { "s" }
            ),
            post_to: "/app/inbox/decide".into(),
            confirm_label: format!("Yes, {label}"),
            cancel_url: back,
        };
        return ConfirmPage::ask(&st, &page, "inbox", &form, ask).await;
    }
    // One reason, kept with each decision (as typed, like the Action page's).
    let items = items
        .into_iter()
        .map(|mut i| {
            i.option_id = Some(option_id.clone());
            i.reason = reason.clone();
            i
        })
        .collect();
    let done = batch::decide_many(s, page.user.clone(), items).await?;
    let mut outcome = Outcome::default();
    for o in done {
        match o.result {
            Ok(_) => outcome.decided += 1,
            Err(e) if e.code == Code::ActionChanged => outcome.changed.push(o.action_id),
            Err(e) => outcome
                .failed
                .push((o.action_id, e.code.as_str().to_owned())),
        }
    }
    page.session
        .insert(OUTCOME, outcome)
        .await
        .map_err(session_error)?;
    Ok(see_other(&format!("{back}&batch=done")))
}

/// The picked rows, each `{id} {action_version} {fingerprint}` as rendered.
fn picks(form: &FormData) -> Result<Vec<BatchItem>, Error> {
    form.all("pick")
        .map(|p| {
            let mut parts = p.split(' ');
            let (Some(id), Some(version), Some(fp), None) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Err(Error::field(
                    "pick",
                    "a picked row lost the version it was shown with; reload the inbox",
                ));
            };
            let action_version = version.parse().map_err(|_| {
                Error::field(
                    "pick",
                    "a picked row's version is not a number; reload the inbox",
                )
            })?;
            Ok(BatchItem {
                action_id: id.to_owned(),
                action_version,
                fingerprint: fp.to_owned(),
                option_id: None,
                response: None,
                reason: None,
            })
        })
        .collect()
}

/// The banner for the batch's result, with each Action left open named
/// by its title (as the person may see it now).
pub async fn result(
    s: &Services,
    page: &PageUser,
    q: &BatchQuery,
) -> Result<Option<BatchResultVm>, Error> {
    let error = match q.batch_error.as_str() {
        "none" => Some("Nothing was decided: pick at least one request first."),
        "option" => Some("Nothing was decided: choose an option for the picked requests."),
        "reason" => Some(
            "Nothing was decided: that option needs a reason. The requests are still picked: write a reason in the box, then choose the option again.",
        ),
        "reason_long" => Some(
            "Nothing was decided: the reason is longer than 2,000 characters. The requests are still picked: shorten it, then choose again.",
        ),
        "reason_direction" => Some(
            "Nothing was decided: the reason holds a Unicode direction control (U+202A–U+202E or U+2066–U+2069), which reorders what others read. The requests are still picked: type the reason again without it, then choose again.",
        ),
        _ => None,
    };
    // Only with the refusal it goes with (a reload shows none).
    let kept = match error {
        Some(_) => page
            .session
            .remove::<Kept>(KEPT)
            .await
            .map_err(session_error)?
            .unwrap_or_default(),
        None => Kept::default(),
    };
    let outcome = if q.batch == "done" {
        page.session
            .remove::<Outcome>(OUTCOME)
            .await
            .map_err(session_error)?
    } else {
        None
    };
    let Some(outcome) = outcome else {
        return Ok(error.map(|e| BatchResultVm {
            decided: 0,
            changed: Vec::new(),
            failed: Vec::new(),
            error: Some(e),
            kept,
        }));
    };
    let decided = outcome.decided;
    let mut changed = Vec::new();
    for id in &outcome.changed {
        changed.push(named(s, page, id, None).await?);
    }
    let mut failed = Vec::new();
    for (id, code) in &outcome.failed {
        failed.push(named(s, page, id, Some(code)).await?);
    }
    Ok(Some(BatchResultVm {
        decided,
        changed,
        failed,
        error,
        kept,
    }))
}

fn in_words(code: &str) -> &'static str {
    match code {
        "ACTION_NOT_OPEN" => "already closed",
        "ACTION_NOT_FOUND" => "not found",
        "FORBIDDEN" => "you may not decide it",
        "SELF_APPROVAL_FORBIDDEN" => "you requested it, so someone else decides it",
        "OPTION_NOT_FOUND" => "it has no such option",
        "VALIDATION_ERROR" => "its option needs a reason",
        "APPROVAL_VOTE_REQUIRED" => "it needs approval votes",
        _ => "refused",
    }
}

/// An Action left undecided by the batch, by its title, with why: `code`
/// is the refusal's, None for one changed since it was shown.
async fn named(
    s: &Services,
    page: &PageUser,
    id: &str,
    code: Option<&str>,
) -> Result<LeftOpen, Error> {
    let (title, link, mine) = match dashboard::action(s, &page.user, id.to_owned()).await {
        Ok(v) => {
            // Closed by this very person (the same batch sent twice, from
            // another tab or by a retry): their decision stands.
            let mine = v.action.resolution.as_ref().is_some_and(|r| {
                r.decided_by.kind == crate::domain::action::ActorKind::User
                    && r.decided_by.id.as_deref() == Some(page.user.user_id.as_str())
            });
            (v.action.spec.title, true, mine)
        }
        Err(e) if e.code.status().is_client_error() => (id.to_owned(), false, false),
        Err(e) => return Err(e),
    };
    let why = match code {
        None => "changed since you saw it",
        Some("ACTION_NOT_OPEN") if mine => {
            "already decided by you (from another tab, or a batch sent twice)"
        }
        Some(code) => in_words(code),
    };
    Ok(LeftOpen {
        id: id.to_owned(),
        title,
        why: why.to_owned(),
        link,
    })
}
