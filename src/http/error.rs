//! The error type as an HTTP response: the JSON envelope of the guide's "Errors" with the
//! status `Code::status` picks, and the one log line of an internal failure.
//! The dashboard wraps it in an HTML page (`ui::view::UiError`).

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::error::Error;

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let e = self.into_inner();
        if let Some(cause) = e.cause() {
            // Logged once, here, with the cause chain; the client sees an opaque 500.
            tracing::error!(
                error.code = e.code.as_str(),
                error.cause = format!("{cause:#}"),
                "request failed"
            );
        }
        let body = json!({ "error": { "code": e.code.as_str(), "message": e.message, "details": e.details } });
        let mut resp = (e.code.status(), axum::Json(body)).into_response();
        if let Some(secs) = e.retry_after
            && let Ok(v) = HeaderValue::from_str(&secs.to_string())
        {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        resp
    }
}
