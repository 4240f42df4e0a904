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
