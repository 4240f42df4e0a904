//! JSON handlers of `/v1`, one file per resource. Each handler extracts, makes
//! one service call and maps the result to a response.

pub mod account;
pub mod actions;
pub mod analytics;
pub mod auth;
pub mod billing;
pub mod controls;
pub mod invitations;
pub mod mail;
pub mod me;
pub mod notifications;
pub mod paging;
pub mod runs;
pub mod session;
pub mod sources;
pub mod system;
pub mod wire;
pub mod work;
pub mod workspaces;

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::service::idempotency::Reply;

/// A possibly replayed response: every replay (idempotency key, dedupe match,
/// exact outcome or vote retry) carries `Idempotent-Replayed: true`.
pub fn reply(r: Reply) -> Response {
    let replayed = r.replayed || r.body["idempotent_replay"] == true;
    let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::OK);
    replayable(status, r.body, replayed)
}

/// A JSON body, marked `Idempotent-Replayed: true` when it repeats an earlier answer.
pub fn replayable(status: StatusCode, body: impl serde::Serialize, replayed: bool) -> Response {
    let mut resp = (status, axum::Json(body)).into_response();
    if replayed {
        resp.headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    resp
}
