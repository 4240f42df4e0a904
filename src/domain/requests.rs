//! What a reviewer asks of a Source while an Action is open (guide:
//! "Controls", "Context requests"): control requests (a callback control was
//! pressed; the Source reports `running`, `succeeded`, `failed`) and context
//! requests (a question; a material PATCH answers it). The state rules live
//! here; storage is `store::requests`, the use cases `service::controls`.

use serde::Serialize;
use utoipa::ToSchema;

/// Longest control result message and context question, in characters.
pub const MAX_TEXT: usize = 2000;

/// The person who pressed the control or asked the question.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct RequestedBy {
    /// `usr_…`
    pub user_id: String,
    pub name: Option<String>,
}

/// A callback control pressed by a reviewer (guide: "Controls").
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ControlRequest {
    /// `ctr_…`
    pub id: String,
    /// Always `control_request`.
    pub object: &'static str,
    pub action_id: String,
    pub control_key: String,
    /// `pending` (as invoked), `running`, `succeeded` or `failed`; the last
    /// two are final.
    #[schema(schema_with = control_status_schema)]
    pub status: String,
    /// The Source's last message, if any.
    pub message: Option<String>,
    pub requested_by: RequestedBy,
    /// The version the reviewer was shown when pressing it.
    pub action_version: i64,
    pub created_at: String,
    pub updated_at: String,
}

fn control_status_schema() -> utoipa::openapi::Object {
    crate::service::inbox::string_enum(&["pending", "running", "succeeded", "failed"])
}

/// Whether a result may move a request from `from` to `to`. `pending` and
/// `running` move to `running`, `succeeded` or `failed`; the last two are
/// final.
pub fn result_allowed(from: &str, to: &str) -> bool {
    matches!(from, "pending" | "running") && matches!(to, "running" | "succeeded" | "failed")
}

/// Whether a control request's status is final.
pub fn is_final(status: &str) -> bool {
    matches!(status, "succeeded" | "failed")
}

/// A reviewer's question to the Source (guide: "Context requests").
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ContextRequest {
    /// `cxr_…`
    pub id: String,
    /// Always `context_request`.
    pub object: &'static str,
    pub action_id: String,
    /// 1-2,000 characters.
    pub question: String,
    /// `open`, or `answered` once a PATCH changed the material content.
    #[schema(schema_with = context_status_schema)]
    pub status: String,
    pub requested_by: RequestedBy,
    pub created_at: String,
    pub answered_at: Option<String>,
    /// The `action_version` whose content answered it.
    pub answered_in_version: Option<i64>,
}

fn context_status_schema() -> utoipa::openapi::Object {
    crate::service::inbox::string_enum(&["open", "answered"])
}

/// How an Action takes context requests (`context_request_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContextMode {
    Unsupported,
    Poll,
    Callback,
}

impl ContextMode {
    pub fn of(mode: Option<&str>) -> Self {
        match mode {
            Some("poll") => Self::Poll,
            Some("callback") => Self::Callback,
            _ => Self::Unsupported,
        }
    }

    /// Whether the Action lists its context requests.
    pub fn lists(self) -> bool {
        self != Self::Unsupported
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_move_forward_and_final_states_stay() {
        for from in ["pending", "running"] {
            for to in ["running", "succeeded", "failed"] {
                assert!(result_allowed(from, to), "{from} → {to}");
            }
            assert!(!result_allowed(from, "pending"));
        }
        for from in ["succeeded", "failed"] {
            assert!(is_final(from));
            for to in ["running", "succeeded", "failed"] {
                assert!(!result_allowed(from, to));
            }
        }
    }

    #[test]
    fn only_poll_and_callback_list_context_requests() {
        assert!(!ContextMode::of(None).lists());
        assert!(!ContextMode::of(Some("unsupported")).lists());
        assert!(ContextMode::of(Some("poll")).lists());
        assert_eq!(ContextMode::of(Some("callback")), ContextMode::Callback);
    }
}
