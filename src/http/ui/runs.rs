//! The runs pages (guide: "Runs"): `GET /app/runs` (the active workspace's
//! runs with status badges and progress bars, filtered by status and
//! environment), `GET /app/runs/{id}` (progress, message, Actions and
//! timeline) and `GET /app/runs/{id}/live`, the page's live part as an HTML
//! fragment `static/app.js` swaps in when `/app/events` says something
//! changed. Each calls the same `service::runs` function as the API.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Deserialize;

use crate::app::AppState;
use crate::domain::action::Environment;
use crate::domain::run::{self, Run, RunEvent};
use crate::domain::time::Timestamp;
use crate::http::session::PageUser;
use crate::http::ui::view::{
    Ask, ConfirmPage, FormData, Layout, PagePath, PageQuery, UiError, When, check_csrf, see_other,
};
use crate::service::actions::EnvFilter;
use crate::service::runs::{self, RunAction};

/// How many runs the list shows at a time.
const PAGE_SIZE: i64 = 50;

/// The list's query: `status`, `environment`, `starting_after`.
#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub environment: Option<String>,
    #[serde(default)]
    pub starting_after: Option<String>,
}

/// A run as the pages show it.
pub struct RunVm {
    pub id: String,
    pub name: String,
    pub status: String,
    pub environment: &'static str,
    pub completed: Option<i64>,
    pub total: Option<i64>,
    pub percent: Option<i64>,
    /// "3 of 10", "3 done", or empty.
    pub counts: String,
    pub message: Option<String>,
    pub error: Option<String>,
    /// Succeeded, failed or cancelled.
    pub finished: bool,
    pub created: When,
    pub updated: When,
}

impl RunVm {
    fn new(r: &Run, now: Timestamp) -> Self {
        let p = &r.progress;
        let counts = match (p.completed, p.total) {
            // A total of 0 says nothing to count ("0 of 0").
            (Some(0) | None, Some(0)) | (None, None) => String::new(),
            (Some(c), Some(0) | None) => format!("{c} done"),
            (Some(c), Some(t)) => format!("{c} of {t}"),
            (None, Some(t)) => format!("0 of {t}"),
        };
        Self {
            id: r.id.clone(),
            name: r.name.clone(),
            status: r.status.clone(),
            environment: r.environment.as_str(),
            completed: p.completed,
            total: p.total,
            percent: p.percent(),
            counts,
            // Blanked ("") is none: no empty paragraph, no empty banner.
            message: p.message.clone().filter(|m| !m.trim().is_empty()),
            error: r.error.clone().filter(|e| !e.trim().is_empty()),
            finished: run::is_final(&r.status),
            created: When::new(&r.created_at, now),
            updated: When::new(&r.updated_at, now),
        }
    }
    /// The line under a run's name in the list: why it ended, when it
    /// failed or was cancelled with a reason, else its progress message.
    pub fn row_note(&self) -> Option<(&str, bool)> {
        let ended_badly = matches!(self.status.as_str(), "failed" | "cancelled");
        match (&self.error, &self.message) {
            (Some(e), _) if ended_badly => Some((e.as_str(), true)),
            (Some(_), None) | (None, None) => None,
            (_, Some(m)) => Some((m.as_str(), false)),
        }
    }
    /// The `<progress>` value and max, when there is a total.
    pub fn bar(&self) -> Option<(i64, i64)> {
        self.total
            .map(|t| (self.completed.unwrap_or(0).min(t), t))
            .filter(|(_, t)| *t > 0)
    }
}

#[derive(Template, WebTemplate)]
#[template(path = "runs.html")]
pub struct RunsPage {
    layout: Layout,
    runs: Vec<RunVm>,
    statuses: &'static [&'static str],
    status: String,
    environment: &'static str,
    more: Option<String>,
    later: bool,
    changes_version: u64,
}

/// GET /app/runs
pub async fn runs_page(
    State(st): State<AppState>,
    p: PageUser,
    PageQuery(q): PageQuery<ListQuery>,
) -> Result<RunsPage, UiError> {
    let version = st.services.changes.view(&p.user);
    // live (default), test, or all: both, as the API lists them.
    let (env, env_name) = match q.environment.as_deref() {
        Some("all") => (EnvFilter::All, "all"),
        other => {
            let e = other
                .and_then(Environment::parse)
                .unwrap_or(Environment::Live);
            (EnvFilter::Only(e), e.as_str())
        }
    };
    let status = q.status.filter(|s| run::STATUSES.contains(&s.as_str()));
    let after = q.starting_after.filter(|s| !s.is_empty());
    let later = after.is_some();
    // In no workspace yet: no runs to show, with the page's navigation
    // (the API answers 404 WORKSPACE_NOT_FOUND).
    let (rows, has_more) = match runs::list(
        &st.services,
        p.user.clone(),
        env,
        status.clone(),
        after,
        PAGE_SIZE,
    )
    .await
    {
        Err(e) if e.code == crate::error::Code::WorkspaceNotFound => (Vec::new(), false),
        other => other?,
    };
    let more = match rows.last() {
        Some(last) if has_more => {
            let mut qs = form_urlencoded::Serializer::new(String::new());
            if let Some(s) = &status {
                qs.append_pair("status", s);
            }
            qs.append_pair("environment", env_name);
            qs.append_pair("starting_after", &last.id);
            Some(qs.finish())
        }
        _ => None,
    };
    let now = st.services.clock.now();
    Ok(RunsPage {
        layout: Layout::signed_in(&st, &p, "Runs", "runs").await?,
        runs: rows.iter().map(|r| RunVm::new(r, now)).collect(),
        statuses: run::STATUSES,
        status: status.unwrap_or_default(),
        environment: env_name,
        more,
        later,
        changes_version: version,
    })
}

/// A timeline line as the page shows it.
pub struct EventVm {
    pub what: String,
    pub message: Option<String>,
    pub when: When,
}

/// A timeline line; `before` is the status the line before it left the run
/// in (oldest first), so a move from waiting back to running reads
/// "Resumed".
fn event(e: &RunEvent, before: Option<&str>, now: Timestamp) -> EventVm {
    let what = match e.kind.as_str() {
        "created" => "Created".to_owned(),
        "started" => "Started".to_owned(),
        "waiting" => "Waiting".to_owned(),
        "completed" => format!("Finished: {}", e.status),
        _ if before == Some("waiting") && e.status == "running" => "Resumed".to_owned(),
        _ => "Progress".to_owned(),
    };
    EventVm {
        what,
        message: e.message.clone().filter(|m| !m.trim().is_empty()),
        when: When::new(&e.at, now),
    }
}

/// The live part of the run page.
pub struct LiveVm {
    pub run: RunVm,
    pub actions: Vec<RunAction>,
    pub events: Vec<EventVm>,
    /// Older timeline lines, or older Actions, are left out.
    pub earlier_events: bool,
    pub more_actions: bool,
    pub listed_actions: usize,
    pub timeline_lines: i64,
    /// The form token of a "Cancel run" button: an active run, and someone
    /// who may cancel it.
    pub cancel: Option<String>,
    /// Whether to lead to the inbox narrowed to this run: it has open
    /// Actions (or more than are listed) and is of the active workspace,
    /// the one the inbox lists.
    pub inbox_link: bool,
    /// What the Source completed the run with, and the run's metadata, as
    /// `shown_json` writes them (the run page only; the list shows neither).
    pub result: Option<String>,
    pub metadata: Option<String>,
}

/// Most bytes of indented JSON a run page shows for one value: the stored
/// value is at most 32 KB compact, but indenting a deep nest can make it
/// megabytes, so past this it is shown compact.
const MAX_SHOWN_JSON: usize = 64 * 1024;

/// A JSON value as the run page shows it: indented, or compact when that
/// would be too long (`MAX_SHOWN_JSON`).
fn shown_json(v: &impl serde::Serialize) -> Option<String> {
    let pretty = serde_json::to_string_pretty(v).ok()?;
    if pretty.len() <= MAX_SHOWN_JSON {
        return Some(pretty);
    }
    serde_json::to_string(v).ok()
}

async fn live(st: &AppState, p: &PageUser, id: String) -> Result<LiveVm, UiError> {
    let runs::RunPage {
        run: r,
        events,
        earlier_events,
        actions,
        more_actions,
    } = runs::page(&st.services, p.user.clone(), id).await?;
    let now = st.services.clock.now();
    let may_cancel = p
        .user
        .role_in(&r.workspace_id)
        .is_some_and(crate::domain::access::can_cancel_runs);
    let active = p.user.active_workspace().map(|m| m.workspace_id.as_str());
    let inbox_link = active == Some(r.workspace_id.as_str())
        && (more_actions || actions.iter().any(|a| a.status == "open"));
    let result = r
        .result
        .as_ref()
        .filter(|v| !v.is_null())
        .and_then(shown_json);
    let metadata = r
        .metadata
        .as_ref()
        .filter(|m| !m.is_empty())
        .and_then(shown_json);
    Ok(LiveVm {
        inbox_link,
        result,
        metadata,
        cancel: (may_cancel && !run::is_final(&r.status)).then(|| p.csrf.clone()),
        run: RunVm::new(&r, now),
        actions,
        earlier_events,
        more_actions,
        listed_actions: run::LISTED_ACTIONS,
        timeline_lines: crate::store::runs::TIMELINE,
        events: events
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let before = i.checked_sub(1).map(|j| events[j].status.as_str());
                event(e, before, now)
            })
            .collect(),
    })
}

/// POST /app/runs/{id}/cancel: asks first, then cancels as the API does.
pub async fn cancel_run(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    if form.get("confirmed") != Some("yes") {
        let (r, _) = runs::get_for_user(&st.services, p.user.clone(), id.clone()).await?;
        // Asked only of someone who may cancel it; anyone else gets the
        // refusal the cancel itself would give.
        let may = p
            .user
            .role_in(&r.workspace_id)
            .is_some_and(crate::domain::access::can_cancel_runs);
        if !may {
            return Err(runs::cancel_refused().into());
        }
        let ask = Ask {
            heading: format!("Cancel the run “{}”?", r.name),
            message: "It ends as cancelled at once, and its Source is refused any further progress. Its open Actions stay open.".into(),
            post_to: format!("/app/runs/{id}/cancel"),
            confirm_label: "Cancel the run".into(),
            cancel_url: format!("/app/runs/{id}"),
        };
        return ConfirmPage::ask(&st, &p, "runs", &form, ask).await;
    }
    let req = runs::RunCancel {
        reason: form.text("reason"),
    };
    runs::cancel_for_user(&st.services, p.user.clone(), id.clone(), req).await?;
    Ok(see_other(&format!("/app/runs/{id}")))
}

#[derive(Template, WebTemplate)]
#[template(path = "run.html")]
pub struct RunPage {
    layout: Layout,
    live: LiveVm,
    changes_version: u64,
}

/// GET /app/runs/{id}
pub async fn run_page(
    State(st): State<AppState>,
    p: PageUser,
    PagePath(id): PagePath<String>,
) -> Result<RunPage, UiError> {
    // Read the version first: a report committed during the read bumps it
    // again, so the live part cannot miss it.
    let version = st.services.changes.view(&p.user);
    let live = live(&st, &p, id).await?;
    Ok(RunPage {
        layout: Layout::signed_in(&st, &p, format!("Run {}", live.run.name), "runs").await?,
        live,
        changes_version: version,
    })
}

#[derive(Template, WebTemplate)]
#[template(path = "run_live.html")]
pub struct RunFragment {
    live: LiveVm,
}

/// GET /app/runs/{id}/live
pub async fn run_fragment(
    State(st): State<AppState>,
    p: PageUser,
    PagePath(id): PagePath<String>,
) -> Result<RunFragment, UiError> {
    Ok(RunFragment {
        live: live(&st, &p, id).await?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Indented while short; a deep nest that indenting would blow up to
    /// megabytes is shown compact.
    #[test]
    fn shown_json_is_indented_unless_too_long() {
        let small = serde_json::json!({"rows": 1200});
        assert_eq!(shown_json(&small).unwrap(), "{\n  \"rows\": 1200\n}");
        let mut deep = serde_json::Value::Array(vec![0.into(); 8000]);
        for _ in 0..100 {
            deep = serde_json::Value::Array(vec![deep]);
        }
        let compact = serde_json::to_string(&deep).unwrap();
        assert!(compact.len() < 32 * 1024);
        assert!(serde_json::to_string_pretty(&deep).unwrap().len() > MAX_SHOWN_JSON);
        assert_eq!(shown_json(&deep).unwrap(), compact);
    }
}
