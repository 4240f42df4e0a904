//! JSON handlers of `/v1`, one file per resource. Each handler extracts, makes
//! one service call and maps the result to a response.

pub mod actions;
pub mod me;
pub mod sources;
pub mod system;

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::service::idempotency::Reply;

/// Header value as text, if present and readable.
pub fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A possibly replayed response: replays carry `Idempotent-Replayed: true`.
pub fn reply(r: Reply) -> Response {
    let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::OK);
    let mut resp = (status, axum::Json(r.body)).into_response();
    if r.replayed {
        resp.headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    resp
}
