//! Wire types: the body of every 2xx JSON response of `/v1`, one module per
//! resource, each `Serialize + ToSchema` so the OpenAPI document describes
//! what is sent. Handlers build them from the records use cases return.
//! Request bodies stay beside the use cases that read them.

pub mod actions;
pub mod invitations;
pub mod session;
pub mod sources;
pub mod system;
pub mod work;
pub mod workspaces;

use serde::Serialize;
use utoipa::ToSchema;

/// `{data, idempotent_replay}`: one Action-shaped resource (guide: "Endpoints").
#[derive(Debug, Serialize, ToSchema)]
pub struct Envelope<T> {
    pub data: T,
    /// True when this answer repeats an earlier one (idempotency key, dedupe match).
    pub idempotent_replay: bool,
}

impl<T> Envelope<T> {
    pub fn fresh(data: T) -> Self {
        Self {
            data,
            idempotent_replay: false,
        }
    }
}

/// `{data}`: one resource without replay semantics (Sources, sessions).
#[derive(Debug, Serialize, ToSchema)]
pub struct Data<T> {
    pub data: T,
}

/// `{object: "list", data, has_more}`: a page of resources.
#[derive(Debug, Serialize, ToSchema)]
pub struct List<T> {
    /// Always `list`.
    pub object: &'static str,
    pub data: Vec<T>,
    pub has_more: bool,
}

impl<T> List<T> {
    pub fn new(data: Vec<T>, has_more: bool) -> Self {
        Self {
            object: "list",
            data,
            has_more,
        }
    }
}
