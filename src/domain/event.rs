//! The Action's history as types: every kind of event, with the data it
//! records. Written by `store::events::record` and read back by the same
//! module, so the API, the dashboard and later features (comments, assignment,
//! notifications, webhooks) decode nothing by hand. On the wire each entry is
//! `{type, actor, action_version, data, created_at}` (guide: "Reading an
//! Action").

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::domain::action::{Actor, Outcome};

/// What happened to an Action. `type` names the kind and `data` holds its
/// fields, as they are stored in `action_events`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum ActionEvent {
    Created {
        fingerprint: String,
    },
    Updated {
        /// The fields the PATCH named.
        #[serde(default)]
        fields: Vec<String>,
        /// Whether the material content (and so the version) changed.
        #[serde(default)]
        material: bool,
        fingerprint: String,
        /// The earlier value of each named field whose value changed, so a
        /// stale decision can be shown what changed since the reviewer looked.
        /// Empty in events recorded before hds kept it (schema v1).
        #[serde(default)]
        before: Map<String, Value>,
    },
    Resolved {
        option_id: Option<String>,
        response: Option<Value>,
        receipt_id: String,
        reason: Option<String>,
    },
    VoteCast {
        vote: String,
        /// The voter's reason, as given; absent in events recorded before
        /// hds kept it here (it was in the vote's row alone).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Cancelled by the Source, or by `on_expire: cancel` (reason `expired`).
    Cancelled {
        reason: Option<String>,
    },
    Expired {
        reason: Option<String>,
    },
    /// The execution outcome the Source reported, as stored on the Action.
    OutcomeReported(Outcome),
    /// A member took the Action for themselves (POST …/claim).
    Claimed {
        /// Who held it before (a create-time assignee), if anyone.
        #[serde(default)]
        previous_user_id: Option<String>,
    },
    /// Assigned to someone, or unassigned (`assignee_user_id` null).
    Assigned {
        assignee_user_id: Option<String>,
        #[serde(default)]
        previous_user_id: Option<String>,
        /// Why hds itself released it (`member removed`, `role changed to
        /// viewer`); absent when a person (un)assigned it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Hidden from the inbox until `until`; null un-snoozes.
    Snoozed {
        until: Option<String>,
        /// Why hds itself ended the snooze (the Source moved `expires_at`
        /// to or before its end); absent when a person (un)snoozed it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A comment; `mentions` are the user ids of members it @mentions.
    Commented {
        comment_id: String,
        #[serde(default)]
        mentions: Vec<String>,
    },
    /// Its author changed a comment's body; `mentions` are the members the
    /// new body @mentions that the old one did not.
    CommentEdited {
        comment_id: String,
        #[serde(default)]
        mentions: Vec<String>,
    },
    /// A comment was deleted (by its author, or an owner or admin).
    CommentDeleted {
        comment_id: String,
    },
    /// A reviewer pressed a callback control (guide: "Controls").
    ControlRequested {
        control_request_id: String,
        control_key: String,
    },
    /// A reviewer asked the Source for more context (guide: "Context requests").
    ContextRequested {
        context_request_id: String,
    },
}

impl ActionEvent {
    /// The kind's name, as stored and shown (`type`).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Created { .. } => "created",
            Self::Updated { .. } => "updated",
            Self::Resolved { .. } => "resolved",
            Self::VoteCast { .. } => "vote_cast",
            Self::Cancelled { .. } => "cancelled",
            Self::Expired { .. } => "expired",
            Self::OutcomeReported(_) => "outcome_reported",
            Self::Claimed { .. } => "claimed",
            Self::Assigned { .. } => "assigned",
            Self::Snoozed { .. } => "snoozed",
            Self::Commented { .. } => "commented",
            Self::CommentEdited { .. } => "comment_edited",
            Self::CommentDeleted { .. } => "comment_deleted",
            Self::ControlRequested { .. } => "control_requested",
            Self::ContextRequested { .. } => "context_requested",
        }
    }

    /// Whether long polls waiting on the Action answer when it is recorded:
    /// it closed, or a reviewer asked its Source a question (which the
    /// Source must see to answer: a poll-mode Source learns of it so, and
    /// a blocking create would otherwise wait out its hold on a reviewer
    /// who waits for the answer).
    pub fn wakes_waiters(&self) -> bool {
        self.closes() || matches!(self, Self::ContextRequested { .. })
    }

    /// Whether it closes the Action.
    pub fn closes(&self) -> bool {
        matches!(
            self,
            Self::Resolved { .. } | Self::Cancelled { .. } | Self::Expired { .. }
        )
    }

    /// The event's data object (the `data` of the wire form).
    pub fn data(&self) -> Value {
        match serde_json::to_value(self) {
            Ok(Value::Object(mut o)) => o.remove("data").unwrap_or(Value::Null),
            _ => Value::Null,
        }
    }

    /// Rebuilds an event from its stored kind and data.
    pub fn from_stored(kind: &str, data: Value) -> serde_json::Result<Self> {
        let mut o = Map::new();
        o.insert("type".into(), Value::String(kind.to_owned()));
        o.insert("data".into(), data);
        serde_json::from_value(Value::Object(o))
    }
}

/// One entry of an Action's history.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HistoryEntry {
    #[serde(flatten)]
    pub event: ActionEvent,
    pub actor: Actor,
    /// The Action's version when it happened.
    pub action_version: i64,
    pub created_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_round_trip_through_their_stored_form() {
        let events = [
            ActionEvent::Created {
                fingerprint: "sha256:ab".into(),
            },
            ActionEvent::Updated {
                fields: vec!["title".into()],
                material: true,
                fingerprint: "sha256:cd".into(),
                before: json!({"title": "Old"}).as_object().cloned().unwrap(),
            },
            ActionEvent::Resolved {
                option_id: Some("approve".into()),
                response: None,
                receipt_id: "rcp_1".into(),
                reason: None,
            },
            ActionEvent::VoteCast {
                vote: "approve".into(),
                reason: Some("tests are green".into()),
            },
            ActionEvent::Cancelled { reason: None },
            ActionEvent::Expired {
                reason: Some("expired".into()),
            },
            ActionEvent::OutcomeReported(Outcome {
                status: "success".into(),
                duration_ms: 1200,
                rollback: false,
                action_version: 1,
                fingerprint: "sha256:ab".into(),
                message: None,
                reported_at: "2026-11-23T10:00:00.000Z".into(),
            }),
            ActionEvent::Claimed {
                previous_user_id: None,
            },
            ActionEvent::Assigned {
                assignee_user_id: Some("usr_2".into()),
                previous_user_id: Some("usr_1".into()),
                reason: None,
            },
            ActionEvent::Assigned {
                assignee_user_id: None,
                previous_user_id: Some("usr_1".into()),
                reason: Some("member removed".into()),
            },
            ActionEvent::Snoozed {
                until: Some("2026-11-24T09:00:00.000Z".into()),
                reason: None,
            },
            ActionEvent::Snoozed {
                until: None,
                reason: Some("expires_at moved before the snooze's end".into()),
            },
            ActionEvent::Commented {
                comment_id: "cmt_1".into(),
                mentions: vec!["usr_2".into()],
            },
            ActionEvent::CommentEdited {
                comment_id: "cmt_1".into(),
                mentions: vec!["usr_3".into()],
            },
            ActionEvent::CommentDeleted {
                comment_id: "cmt_1".into(),
            },
            ActionEvent::ControlRequested {
                control_request_id: "ctr_1".into(),
                control_key: "restart".into(),
            },
            ActionEvent::ContextRequested {
                context_request_id: "cxr_1".into(),
            },
        ];
        for e in events {
            let back = ActionEvent::from_stored(e.kind(), e.data()).unwrap();
            assert_eq!(back, e);
        }
    }

    #[test]
    fn updates_recorded_before_hds_kept_before_still_read() {
        let v1 = json!({"fields": ["title"], "material": true, "fingerprint": "sha256:cd"});
        let e = ActionEvent::from_stored("updated", v1).unwrap();
        assert!(
            matches!(e, ActionEvent::Updated { before, material: true, .. } if before.is_empty())
        );
    }

    #[test]
    fn a_history_entry_has_the_wire_shape() {
        let entry = HistoryEntry {
            event: ActionEvent::VoteCast {
                vote: "reject".into(),
                reason: None,
            },
            actor: Actor::user("usr_1"),
            action_version: 2,
            created_at: "2026-11-23T10:00:00.000Z".into(),
        };
        assert_eq!(
            serde_json::to_value(&entry).unwrap(),
            json!({"type": "vote_cast", "data": {"vote": "reject"}, "actor": {"type": "user", "id": "usr_1"},
                   "action_version": 2, "created_at": "2026-11-23T10:00:00.000Z"})
        );
    }
}
