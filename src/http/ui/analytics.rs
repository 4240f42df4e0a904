//! The Analytics page (`/app/analytics`): the summary of GET
//! /v1/analytics/summary drawn as inline SVG on the server (no script, no
//! library), each chart with its figures in a table beside it.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use serde::Deserialize;

use crate::app::AppState;
use crate::http::session::PageUser;
use crate::http::ui::view::{Layout, PageQuery, UiError};
use crate::service::analytics::{self, AnalyticsSummary, SummaryParams};

/// Chart area, in SVG user units.
const W: f64 = 600.0;
const H: f64 = 160.0;

/// One bar of a vertical bar chart.
pub struct Bar {
    pub x: String,
    pub w: String,
    pub y_created: String,
    pub h_created: String,
    pub y_decided: String,
    pub h_decided: String,
    pub label: String,
}

/// One day's decision times as plotted.
pub struct TimePoint {
    pub day: String,
    pub x: String,
    pub y50: String,
    pub y90: String,
    pub p50: String,
    pub p90: String,
}

/// One Source's approval rate as a horizontal bar.
pub struct RateBar {
    pub name: String,
    pub y: String,
    pub w: String,
    pub rate: String,
    pub decided: i64,
}

/// A row of the per-day table.
pub struct DayRow {
    pub day: String,
    pub created: i64,
    pub decided: i64,
}

#[derive(Template, WebTemplate)]
#[template(path = "analytics.html")]
pub struct AnalyticsPage {
    layout: Layout,
    /// `live`, `test` or `all`, as the API takes it.
    environment: String,
    /// The Source shown alone, or empty for every Source.
    source_id: String,
    /// The workspace's Sources for the filter: (id, name).
    source_choices: Vec<(String, String)>,
    /// What the figures count, in words ("Live Actions", "Test Actions from Deploy bot").
    counted: String,
    /// The filters besides the window, for the window links (`&environment=…`).
    filters: String,
    window: String,
    windows: &'static [&'static str],
    s: AnalyticsSummary,
    approval: String,
    expiry: String,
    p50: String,
    p90: String,
    bars: Vec<Bar>,
    max_day: i64,
    days: Vec<DayRow>,
    points: Vec<TimePoint>,
    line50: String,
    line90: String,
    max_seconds: String,
    rates: Vec<RateBar>,
    rates_h: String,
}

#[derive(Debug, Default, Deserialize)]
pub struct AnalyticsQuery {
    #[serde(default)]
    window: Option<String>,
    #[serde(default)]
    environment: Option<String>,
    #[serde(default)]
    source_id: Option<String>,
}

fn pct(r: Option<f64>) -> String {
    r.map_or_else(|| "—".to_owned(), |r| format!("{:.0}%", r * 100.0))
}

/// Seconds as a person reads them: 42 s, 3.5 min, 2.0 h, 1.5 d. Under
/// 10 s, the histogram's first bucket, reads "under 10 s": the figure is
/// interpolated inside that bucket, so "5 s" would claim more than is known.
pub fn duration(s: Option<f64>) -> String {
    match s {
        None => "—".to_owned(),
        Some(s) if s < 10.0 => "under 10 s".to_owned(),
        Some(s) if s < 60.0 => format!("{s:.0} s"),
        Some(s) if s < 3600.0 => format!("{:.1} min", s / 60.0),
        Some(s) if s < 86400.0 => format!("{:.1} h", s / 3600.0),
        Some(s) => format!("{:.1} d", s / 86400.0),
    }
}

fn f(v: f64) -> String {
    format!("{v:.1}")
}

/// GET /app/analytics
pub async fn analytics_page(
    State(st): State<AppState>,
    p: PageUser,
    PageQuery(q): PageQuery<AnalyticsQuery>,
) -> Result<AnalyticsPage, UiError> {
    let environment = q
        .environment
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| "live".into());
    let source_id = q.source_id.filter(|id| !id.is_empty());
    let params = SummaryParams {
        window: q.window,
        environment: Some(environment.clone()),
        source_id: source_id.clone(),
    };
    let s = analytics::summary_or_none(&st.services, &p.user, params).await?;
    // In no workspace (nothing counted), there are no Sources to offer.
    let mut source_choices: Vec<(String, String)> = if s.workspace_id.is_empty() {
        Vec::new()
    } else {
        crate::service::sources::list(&st.services, p.user.clone())
            .await?
            .into_iter()
            .map(|src| (src.id, src.name))
            .collect()
    };
    // A Source asked for that the list does not hold (revoked, or no Source
    // of this workspace) is still named, and selected, so the page never
    // reads as counting every Source.
    if let Some(id) = &source_id
        && !source_choices.iter().any(|(sid, _)| sid == id)
    {
        let name = match s.sources.iter().find(|x| &x.source_id == id) {
            Some(x) => x.source_name.clone().unwrap_or_else(|| id.clone()),
            None => format!("{id} (no Source of this workspace)"),
        };
        source_choices.push((id.clone(), name));
    }
    let env_words = match environment.as_str() {
        "test" => "Test Actions",
        "all" => "Live and test Actions",
        _ => "Live Actions",
    };
    let counted = match source_id
        .as_ref()
        .and_then(|id| source_choices.iter().find(|(sid, _)| sid == id))
    {
        Some((_, name)) => format!("{env_words} from {name}"),
        None => env_words.to_owned(),
    };
    let filters = {
        let mut qs = form_urlencoded::Serializer::new(String::new());
        qs.append_pair("environment", &environment);
        if let Some(id) = &source_id {
            qs.append_pair("source_id", id);
        }
        qs.finish()
    };
    let n = s.days.len().max(1) as f64;
    let step = W / n;
    let max_day = s.days.iter().map(|d| d.created).max().unwrap_or(0).max(1);
    let scale = |v: i64| v as f64 / max_day as f64 * H;
    let bars = s
        .days
        .iter()
        .enumerate()
        .map(|(i, d)| Bar {
            x: f(i as f64 * step + step * 0.1),
            w: f(step * 0.8),
            y_created: f(H - scale(d.created)),
            h_created: f(scale(d.created)),
            y_decided: f(H - scale(d.decided)),
            h_decided: f(scale(d.decided)),
            label: format!("{}: {} created, {} decided", d.day, d.created, d.decided),
        })
        .collect();
    let max_s = s
        .days
        .iter()
        .filter_map(|d| d.decision_seconds.p90)
        .fold(1.0_f64, f64::max);
    // The highest point sits a dot's radius below the top, drawn whole.
    let ys = |v: f64| f(H - v / max_s * (H - 4.0));
    let points: Vec<TimePoint> = s
        .days
        .iter()
        .enumerate()
        .filter_map(|(i, d)| {
            let (p50, p90) = (d.decision_seconds.p50?, d.decision_seconds.p90?);
            Some(TimePoint {
                day: d.day.clone(),
                x: f(i as f64 * step + step / 2.0),
                y50: ys(p50),
                y90: ys(p90),
                p50: duration(Some(p50)),
                p90: duration(Some(p90)),
            })
        })
        .collect();
    let line = |pick: fn(&TimePoint) -> &String| {
        points
            .iter()
            .map(|p| format!("{},{}", p.x, pick(p)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (line50, line90) = (line(|p| &p.y50), line(|p| &p.y90));
    let rates: Vec<RateBar> = s
        .sources
        .iter()
        .enumerate()
        .map(|(i, src)| RateBar {
            name: src
                .source_name
                .clone()
                .unwrap_or_else(|| src.source_id.clone()),
            y: f(i as f64 * 28.0),
            w: f(src.stats.approval_rate.unwrap_or(0.0) * 600.0),
            rate: pct(src.stats.approval_rate),
            decided: src.stats.decided,
        })
        .collect();
    let days = s
        .days
        .iter()
        .map(|d| DayRow {
            day: d.day.clone(),
            created: d.created,
            decided: d.decided,
        })
        .collect();
    Ok(AnalyticsPage {
        layout: Layout::signed_in(&st, &p, "Analytics", "analytics").await?,
        environment,
        source_id: source_id.unwrap_or_default(),
        source_choices,
        counted,
        filters,
        window: s.window.clone(),
        windows: crate::domain::analytics::WINDOWS,
        approval: pct(s.totals.approval_rate),
        expiry: pct(s.totals.expiry_rate),
        p50: duration(s.totals.decision_seconds.p50),
        p90: duration(s.totals.decision_seconds.p90),
        rates_h: f((rates.len().max(1) as f64) * 28.0),
        bars,
        max_day,
        days,
        points,
        line50,
        line90,
        max_seconds: duration(Some(max_s)),
        rates,
        s,
    })
}
