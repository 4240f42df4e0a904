//! The router of the `--metrics-listen` address: `GET /metrics` and nothing
//! else (guide: "Metrics"). No authentication: the address is for the
//! operator's network only, never the public reverse proxy.

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::app::AppState;

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/metrics", get(scrape))
        .fallback(|| async { (StatusCode::NOT_FOUND, "only GET /metrics here\n") })
        .with_state(state)
}

/// The exposition, in the OpenMetrics text format.
async fn scrape(State(state): State<AppState>) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE),
            (header::CACHE_CONTROL, "no-store"),
        ],
        state.metrics.render(&state.services).await,
    )
}
