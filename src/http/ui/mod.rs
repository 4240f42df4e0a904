//! The server-rendered dashboard: askama pages under `/app`, embedded assets
//! under `/static`. Every page works without JavaScript.

use axum::Router;

use crate::app::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
}
