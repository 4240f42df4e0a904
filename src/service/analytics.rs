//! Analytics (guide: "Analytics"; DESIGN §14): the summary of the active
//! workspace's Actions read from the daily rollup, and dashboard usage
//! events stored locally.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::domain::access;
use crate::domain::analytics::{self as rules, BUCKETS};
use crate::domain::time;
use crate::error::{Code, Error, FieldError, Result};
use crate::service::Services;
use crate::service::caller::UserCaller;
use crate::service::inbox::string_enum;
use crate::store::analytics::{self as store, DailyRow, NewEvent};

/// Query string of GET /v1/analytics/summary.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct SummaryParams {
    /// 7d, 30d (default), 90d: Actions created in the last 7, 30 or 90 UTC days, today included.
    #[param(schema_with = window_schema)]
    pub window: Option<String>,
    /// live (default), test, or all (both together)
    #[param(schema_with = environment_schema)]
    pub environment: Option<String>,
    /// Only this Source's Actions.
    pub source_id: Option<String>,
}

fn window_schema() -> utoipa::openapi::Object {
    string_enum(rules::WINDOWS)
}
const ENVIRONMENTS: &[&str] = &["live", "test", "all"];
fn environment_schema() -> utoipa::openapi::Object {
    string_enum(ENVIRONMENTS)
}

/// Actions by status.
#[derive(Debug, Default, Clone, Serialize, ToSchema)]
pub struct ByStatus {
    pub open: i64,
    pub resolved: i64,
    pub cancelled: i64,
    pub expired: i64,
}

/// Outcomes the Sources reported.
#[derive(Debug, Default, Clone, Serialize, ToSchema)]
pub struct Outcomes {
    pub success: i64,
    pub failed: i64,
    /// Outcomes (either status) that report a rollback.
    pub rollback: i64,
}

/// Decision time (created → decided) in seconds, from a fixed histogram.
#[derive(Debug, Default, Clone, Serialize, ToSchema)]
pub struct DecisionSeconds {
    pub p50: Option<f64>,
    pub p90: Option<f64>,
}

/// The figures of a set of Actions (guide: "Analytics" defines each).
#[derive(Debug, Default, Clone, Serialize, ToSchema)]
pub struct Stats {
    pub created: i64,
    pub by_status: ByStatus,
    /// Resolved by a person, a quorum or a Source (not by the expiry pass).
    pub decided: i64,
    /// Decided with an approving choice: an option whose id is `approve` or
    /// whose style is `primary`, or on an Action with an approval policy its
    /// approve choice (the first option, or `true`).
    pub approved: i64,
    pub decision_seconds: DecisionSeconds,
    /// approved / decided; null when nothing was decided.
    pub approval_rate: Option<f64>,
    /// Closed by the expiry pass / closed; null when nothing is closed.
    pub expiry_rate: Option<f64>,
    pub outcomes: Outcomes,
}

/// One Source's figures.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SourceStats {
    pub source_id: String,
    pub source_name: Option<String>,
    #[serde(flatten)]
    pub stats: Stats,
}

/// One UTC day of the window (by the day the Actions were created).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DayStats {
    /// `YYYY-MM-DD`
    pub day: String,
    pub created: i64,
    pub decided: i64,
    pub approved: i64,
    pub decision_seconds: DecisionSeconds,
}

/// GET /v1/analytics/summary
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AnalyticsSummary {
    /// Always `analytics_summary`.
    pub object: &'static str,
    pub workspace_id: String,
    pub window: String,
    pub environment: String,
    pub source_id: Option<String>,
    /// First and last UTC day of the window.
    pub from: String,
    pub to: String,
    pub totals: Stats,
    /// Per Source with Actions in the window, most Actions first.
    pub sources: Vec<SourceStats>,
    /// Every day of the window, oldest first, zeros included.
    pub days: Vec<DayStats>,
}

/// Sums rollup rows; the histogram alongside.
#[derive(Default)]
struct Acc {
    stats: Stats,
    timed_out: i64,
    hist: [i64; BUCKETS],
}

impl Acc {
    fn add(&mut self, r: &DailyRow) {
        let s = &mut self.stats;
        s.created += r.created;
        s.by_status.open += r.open;
        s.by_status.resolved += r.resolved;
        s.by_status.cancelled += r.cancelled;
        s.by_status.expired += r.expired;
        s.decided += r.decided;
        s.approved += r.approved;
        s.outcomes.success += r.outcome_success;
        s.outcomes.failed += r.outcome_failed;
        s.outcomes.rollback += r.outcome_rollback;
        self.timed_out += r.timed_out;
        for (h, n) in self.hist.iter_mut().zip(r.hist) {
            *h += n;
        }
    }

    fn finish(mut self) -> Stats {
        let s = &mut self.stats;
        let ratio = |a: i64, b: i64| (b > 0).then(|| a as f64 / b as f64);
        s.approval_rate = ratio(s.approved, s.decided);
        s.expiry_rate = ratio(self.timed_out, s.created - s.by_status.open);
        s.decision_seconds = seconds(&self.hist);
        self.stats
    }
}

fn seconds(hist: &[i64; BUCKETS]) -> DecisionSeconds {
    DecisionSeconds {
        p50: rules::percentile(hist, 0.5),
        p90: rules::percentile(hist, 0.9),
    }
}

/// The summary of the active workspace.
pub async fn summary(
    s: &Services,
    user: &UserCaller,
    p: SummaryParams,
) -> Result<AnalyticsSummary> {
    summary_of(s, user, p, false).await
}

/// `summary` for the dashboard's page: a person in no workspace gets the
/// window with nothing counted (`workspace_id` empty) instead of 404.
pub async fn summary_or_none(
    s: &Services,
    user: &UserCaller,
    p: SummaryParams,
) -> Result<AnalyticsSummary> {
    summary_of(s, user, p, true).await
}

async fn summary_of(
    s: &Services,
    user: &UserCaller,
    p: SummaryParams,
    none_is_empty: bool,
) -> Result<AnalyticsSummary> {
    let mut errors = Vec::new();
    let window = p.window.unwrap_or_else(|| "30d".into());
    let days = rules::window_days(&window);
    if days.is_none() {
        errors.push(FieldError::new(
            "window",
            format!(
                "window must be 7d, 30d or 90d, not `{}`",
                crate::domain::words::as_named(&window)
            ),
        ));
    }
    let environment = p.environment.unwrap_or_else(|| "live".into());
    if !ENVIRONMENTS.contains(&environment.as_str()) {
        errors.push(FieldError::new(
            "environment",
            format!(
                "environment must be live, test or all, not `{}`",
                crate::domain::words::as_named(&environment)
            ),
        ));
    }
    if p.source_id
        .as_deref()
        .is_some_and(|id| id.trim().is_empty())
    {
        errors.push(FieldError::new(
            "source_id",
            "source_id is empty: name a Source, or leave it out for every Source",
        ));
    } else if p
        .source_id
        .as_deref()
        .is_some_and(|id| id.len() > 64 || id.chars().any(char::is_control))
    {
        // Answered back in the summary: what could be no id is refused
        // (an unknown id of a plausible shape matches nothing).
        errors.push(FieldError::new(
            "source_id",
            "source_id is not a Source id (src_…, as GET /v1/sources lists them)",
        ));
    }
    let Some(days) = days.filter(|_| errors.is_empty()) else {
        return Err(Error::validation(errors));
    };
    let m = match user.active_or_404() {
        Ok(m) => Some(m),
        Err(e) if none_is_empty && e.code == Code::WorkspaceNotFound => None,
        Err(e) => return Err(e),
    };
    if m.is_some_and(|m| !access::can_read_analytics(m.role)) {
        return Err(Error::new(
            Code::Forbidden,
            "you may not read this workspace's analytics",
        ));
    }
    let ws = m.map(|m| m.workspace_id.clone()).unwrap_or_default();
    let now = s.clock.now();
    let from = rules::first_day(now, days);
    let to = rules::first_day(now, 1);
    let (w, e, f, src) = (
        ws.clone(),
        environment.clone(),
        from.clone(),
        p.source_id.clone(),
    );
    let rows = if w.is_empty() {
        Vec::new()
    } else {
        s.db.read(move |c| {
            let envs: &[&str] = match e.as_str() {
                "all" => &["live", "test"],
                one => &[one],
            };
            let mut rows = Vec::new();
            for env in envs {
                rows.extend(store::daily(c, &w, env, &f, src.as_deref())?);
            }
            Ok(rows)
        })
        .await?
    };

    let mut totals = Acc::default();
    let mut by_source: BTreeMap<String, (Option<String>, Acc)> = BTreeMap::new();
    let mut by_day: BTreeMap<String, Acc> = (0..days)
        .map(|i| (rules::first_day(now, days - i), Acc::default()))
        .collect();
    for r in &rows {
        totals.add(r);
        let entry = by_source
            .entry(r.source_id.clone())
            .or_insert_with(|| (r.source_name.clone(), Acc::default()));
        entry.1.add(r);
        by_day.entry(r.day.clone()).or_default().add(r);
    }
    let mut sources: Vec<SourceStats> = by_source
        .into_iter()
        .map(|(id, (name, acc))| SourceStats {
            source_id: id,
            source_name: name,
            stats: acc.finish(),
        })
        .collect();
    sources.sort_by_key(|s| std::cmp::Reverse(s.stats.created));
    let days = by_day
        .into_iter()
        .map(|(day, acc)| {
            let st = acc.finish();
            DayStats {
                day,
                created: st.created,
                decided: st.decided,
                approved: st.approved,
                decision_seconds: st.decision_seconds,
            }
        })
        .collect();
    Ok(AnalyticsSummary {
        object: "analytics_summary",
        workspace_id: ws,
        window,
        environment,
        source_id: p.source_id,
        from,
        to,
        totals: totals.finish(),
        sources,
        days,
    })
}

/// POST /v1/analytics/events
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalyticsEventRequest {
    /// What happened, e.g. `inbox.filter_changed`.
    #[schema(min_length = 1, max_length = 64, pattern = r"^[a-z0-9_.]{1,64}$")]
    pub name: String,
    /// Any JSON object of at most 4 KB (serialized).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub properties: Option<serde_json::Map<String, Value>>,
    /// When it happened: within the last 24 hours, not in the future; default now.
    #[serde(default)]
    #[schema(format = DateTime)]
    pub occurred_at: Option<String>,
}

/// The answer to an accepted event.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventAccepted {
    pub accepted: bool,
}

/// Stores one usage event of the caller, in their active workspace (if any).
pub async fn record_event(
    s: &Services,
    user: &UserCaller,
    req: AnalyticsEventRequest,
) -> Result<EventAccepted> {
    let now = s.clock.now();
    let props = serde_json::to_string(&req.properties.unwrap_or_default())?;
    let at = req.occurred_at.as_deref().and_then(time::parse);
    rules::check_event(&req.name, props.len(), at, req.occurred_at.as_deref(), now)?;
    let occurred_at = time::format(at.unwrap_or(now));
    let created_at = time::format(now);
    let uid = user.user_id.clone();
    let ws = user.active_workspace().map(|m| m.workspace_id.clone());
    let name = req.name;
    s.db.write(move |c| {
        store::insert_event(
            c,
            &NewEvent {
                user_id: &uid,
                workspace_id: ws.as_deref(),
                name: &name,
                properties: &props,
                occurred_at: &occurred_at,
                created_at: &created_at,
            },
        )
    })
    .await?;
    Ok(EventAccepted { accepted: true })
}

/// Deletes usage events that occurred more than 90 days ago (hourly
/// housekeeping); returns how many.
pub async fn prune_events(s: &Services) -> Result<usize> {
    let cutoff = time::format(s.clock.now() - ::time::Duration::days(rules::EVENT_RETENTION_DAYS));
    s.db.write(move |c| store::delete_events_before(c, &cutoff))
        .await
}
