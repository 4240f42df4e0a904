//! /v1/analytics routes (guide: "Analytics").

use axum::Json;
use axum::extract::State;

use crate::app::AppState;
use crate::error::Result;
use crate::http::auth::UserAuth;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::service::analytics::{
    self, AnalyticsEventRequest, AnalyticsSummary, EventAccepted, SummaryParams,
};

/// Summarise the active workspace's Actions created in a window: counts by status, decision time p50/p90, approval and expiry rates, outcomes, per Source and per day.
#[utoipa::path(get, path = "/v1/analytics/summary", tag = "analytics", params(SummaryParams),
    responses((status = 200, description = "the summary", body = AnalyticsSummary),
        (status = 422, description = "VALIDATION_ERROR: window, environment, a source_id that could be no id, or an unknown parameter (details.errors)", body = crate::http::openapi::ErrorBody),
        (status = 404, description = "WORKSPACE_NOT_FOUND: the caller belongs to no workspace", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn analytics_summary(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiQuery(p): ApiQuery<SummaryParams>,
) -> Result<Json<AnalyticsSummary>> {
    Ok(Json(analytics::summary(&st.services, &user, p).await?))
}

/// Record a dashboard usage event; stored on this instance only, kept 90 days.
#[utoipa::path(post, path = "/v1/analytics/events", tag = "analytics", request_body = AnalyticsEventRequest,
    responses((status = 200, description = "stored", body = EventAccepted),
        (status = 422, description = "VALIDATION_ERROR: name, properties or occurred_at (details.errors); nothing is stored", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn record_analytics_event(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiJson(req): ApiJson<AnalyticsEventRequest>,
) -> Result<Json<EventAccepted>> {
    Ok(Json(
        analytics::record_event(&st.services, &user, req).await?,
    ))
}
