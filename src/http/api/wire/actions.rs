//! Action bodies (guide: "The Action object"). `ActionOut` itself lives in
//! `domain::action`, because use cases build the replies the idempotency
//! store keeps and replays; this module re-exports it with the shapes built
//! around it.

use serde::Serialize;
use utoipa::ToSchema;

pub use crate::domain::action::ActionOut;
use crate::domain::event::HistoryEntry;
pub use crate::service::votes::Tally;

/// An Action with its history, oldest event first (GET /v1/actions/{id}).
#[derive(Debug, Serialize, ToSchema)]
pub struct ActionDetail {
    #[serde(flatten)]
    pub action: ActionOut,
    /// `{type, data, actor, action_version, created_at}` per event.
    #[schema(value_type = Vec<Object>)]
    pub history: Vec<HistoryEntry>,
}

/// The answer to a vote: the Action as it now is and the running tally.
#[derive(Debug, Serialize, ToSchema)]
pub struct VoteOut {
    pub data: ActionOut,
    pub idempotent_replay: bool,
    pub tally: Tally,
}

/// The answer to a batch of decisions (POST /v1/actions/decisions): one
/// result per item, in request order, and the counts.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchOut {
    pub data: Vec<BatchItemOut>,
    pub summary: BatchSummary,
}

/// What became of one item of a batch.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchItemOut {
    pub action_id: String,
    /// `decided` or `error`.
    #[schema(schema_with = batch_status_schema)]
    pub status: &'static str,
    /// The decided Action with its resolution and receipt (as the single
    /// decision route answers it); only when `status` is `decided`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<ActionOut>,
    /// The error the single decision route would have answered for this
    /// item; only when `status` is `error`. Nothing was decided for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<crate::http::openapi::ErrorDetail>,
}

fn batch_status_schema() -> utoipa::openapi::Object {
    crate::service::inbox::string_enum(&["decided", "error"])
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BatchSummary {
    pub decided: usize,
    pub failed: usize,
}

impl From<Vec<crate::service::batch::ItemOutcome>> for BatchOut {
    fn from(items: Vec<crate::service::batch::ItemOutcome>) -> Self {
        let data: Vec<BatchItemOut> = items
            .into_iter()
            .map(|o| match o.result {
                Ok(a) => BatchItemOut {
                    action_id: o.action_id,
                    status: "decided",
                    action: Some(ActionOut::from(&a)),
                    error: None,
                },
                Err(e) => BatchItemOut {
                    action_id: o.action_id,
                    status: "error",
                    action: None,
                    error: Some(crate::http::openapi::ErrorDetail::from(e)),
                },
            })
            .collect();
        let decided = data.iter().filter(|d| d.action.is_some()).count();
        let failed = data.len() - decided;
        Self {
            data,
            summary: BatchSummary { decided, failed },
        }
    }
}
