//! The Action: its states, its stored specification (every create/patch field,
//! validated and normalised) and the JSON it is shown as (guide: "The Action object").

use crate::domain::access::Visibility;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

pub use crate::domain::validate::{ValidationContext, validate_spec};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Environment {
    Live,
    Test,
}

impl Environment {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Live => "live",
            Self::Test => "test",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "live" => Some(Self::Live),
            "test" => Some(Self::Test),
            _ => None,
        }
    }
}

/// Action status (guide: "Statuses"). Only `open` accepts changes; the others are terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Open,
    Resolved,
    Cancelled,
    Expired,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Resolved => "resolved",
            Self::Cancelled => "cancelled",
            Self::Expired => "expired",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "open" => Some(Self::Open),
            "resolved" => Some(Self::Resolved),
            "cancelled" => Some(Self::Cancelled),
            "expired" => Some(Self::Expired),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    Low,
    #[default]
    Normal,
    High,
    Urgent,
}

impl Priority {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Normal => "normal",
            Self::High => "high",
            Self::Urgent => "urgent",
        }
    }
    /// Sort rank for the inbox: most pressing first.
    pub fn rank(self) -> i64 {
        match self {
            Self::Urgent => 0,
            Self::High => 1,
            Self::Normal => 2,
            Self::Low => 3,
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        serde_json::from_value(Value::String(s.to_owned())).ok()
    }
}

/// One option of a single-choice Action. `id`, `style` and `sort_order` are
/// filled in on create when the caller leaves them out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ActionOption {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub label: String,
    /// `primary`, `secondary` (default) or `destructive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style: Option<String>,
    /// Zero-based position; always recomputed from the list order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_order: Option<i64>,
}

/// Typed interaction (guide: "The Action object"), used instead of `options`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Interaction {
    Boolean,
    Text {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_length: Option<u64>,
    },
    Number {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<f64>,
    },
    Choice {
        choices: Vec<Choice>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        multiple: bool,
    },
    Form {
        fields: Vec<FormField>,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Choice {
    pub id: String,
    pub label: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FormField {
    pub key: String,
    pub label: String,
    /// `text`, `number` or `boolean`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
}

/// A control a reviewer can invoke (guide: "Controls").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Control {
    pub key: String,
    pub label: String,
    /// `callback` (needs the Action's callback_url) or `link`.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutating: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<String>,
}

/// Evidence shown to the reviewer (guide: "Context blocks").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum ContextBlock {
    Text {
        text: String,
    },
    Markdown {
        markdown: String,
    },
    Code {
        code: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        language: Option<String>,
    },
    Diff {
        diff: String,
    },
    Link {
        url: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
    },
    Kv {
        items: Vec<KvItem>,
    },
    Image {
        url: String,
        alt: String,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KvItem {
    pub key: String,
    pub value: String,
}

/// What happens when `expires_at` passes while the Action is open.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OnExpire {
    /// `expire` (default), `cancel` or `resolve`.
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalPolicy {
    pub required_approvals: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reject_threshold: Option<u32>,
    #[serde(default)]
    pub allow_self_approval: bool,
}

/// Every field a Source may send on create (guide: "POST /v1/actions"). After
/// `validate_spec` it is also the stored, normalised form.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ActionSpec {
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub priority: Priority,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<ActionOption>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction: Option<Interaction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_expire: Option<OnExpire>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controls: Option<Vec<Control>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Vec<ContextBlock>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Object)]
    pub decision_context: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Object)]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_url: Option<String>,
    /// `unsupported` (default), `poll` or `callback`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_request_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee_email: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee_user_id: Option<String>,
    /// `workspace` (default) or `restricted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer_emails: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer_user_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<ApprovalPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe_key: Option<String>,
}

/// Field names accepted on create, to list every unknown field at once.
pub const CREATE_FIELDS: &[&str] = &[
    "title",
    "description",
    "priority",
    "options",
    "interaction",
    "open_url",
    "expires_at",
    "on_expire",
    "controls",
    "context",
    "decision_class",
    "decision_context",
    "metadata",
    "callback_url",
    "context_request_mode",
    "assignee_email",
    "assignee_user_id",
    "visibility",
    "reviewer_emails",
    "reviewer_user_ids",
    "approval_policy",
    "dedupe_key",
];

/// Field names PATCH may change (guide: "PATCH /v1/actions/{action_id}").
pub const PATCH_FIELDS: &[&str] = &[
    "title",
    "description",
    "priority",
    "open_url",
    "expires_at",
    "on_expire",
    "controls",
    "context",
    "decision_class",
    "decision_context",
    "metadata",
];

impl ActionSpec {
    /// Who may read it; a validated spec names a known visibility.
    pub fn visibility(&self) -> Visibility {
        self.visibility
            .as_deref()
            .and_then(Visibility::parse)
            .unwrap_or_default()
    }
    pub fn option(&self, id: &str) -> Option<&ActionOption> {
        self.options
            .as_ref()?
            .iter()
            .find(|o| o.id.as_deref() == Some(id))
    }
}

/// Who made a change or a decision. Receipts carry it without e-mail addresses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Actor {
    #[serde(rename = "type")]
    pub kind: ActorKind,
    pub id: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActorKind {
    User,
    Source,
    System,
}

impl ActorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Source => "source",
            Self::System => "system",
        }
    }
}

impl Actor {
    pub fn user(id: &str) -> Self {
        Self {
            kind: ActorKind::User,
            id: Some(id.to_owned()),
        }
    }
    pub fn source(id: &str) -> Self {
        Self {
            kind: ActorKind::Source,
            id: Some(id.to_owned()),
        }
    }
    pub fn system() -> Self {
        Self {
            kind: ActorKind::System,
            id: None,
        }
    }
    /// The approval policy, resolving an Action when its quorum is reached.
    pub fn approval_policy() -> Self {
        Self {
            kind: ActorKind::System,
            id: Some("approval_policy".to_owned()),
        }
    }
}

/// How a terminal Action ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Resolution {
    #[serde(default)]
    pub option_id: Option<String>,
    #[serde(default)]
    pub response: Option<Value>,
    #[serde(default)]
    pub reason: Option<String>,
    pub decided_by: Actor,
    pub decided_at: String,
    /// The votes that reached an approval policy's quorum, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub votes: Option<Value>,
}

/// A stored Action with everything the API shows of it.
#[derive(Clone, Debug)]
pub struct ActionRecord {
    pub id: String,
    pub workspace_id: String,
    pub source_id: String,
    pub environment: Environment,
    pub status: Status,
    pub action_version: i64,
    pub fingerprint: String,
    pub spec: ActionSpec,
    pub resolution: Option<Resolution>,
    pub receipt: Option<Value>,
    pub outcome: Option<Value>,
    pub snoozed_until: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub closed_at: Option<String>,
}

impl ActionRecord {
    /// The Action as the API shows it (guide: "The Action object").
    pub fn to_json(&self) -> Value {
        let s = &self.spec;
        let r = self.resolution.as_ref();
        json!({
            "id": self.id,
            "object": "action",
            "status": self.status.as_str(),
            "environment": self.environment.as_str(),
            "workspace_id": self.workspace_id,
            "source_id": self.source_id,
            "title": s.title,
            "description": s.description,
            "priority": s.priority.as_str(),
            "action_version": self.action_version,
            "fingerprint": self.fingerprint,
            "options": s.options,
            "interaction": s.interaction,
            "context": s.context,
            "controls": s.controls,
            "decision_class": s.decision_class,
            "decision_context": s.decision_context,
            "open_url": s.open_url,
            "metadata": s.metadata,
            "callback_url": s.callback_url,
            "context_request_mode": s.context_request_mode.as_deref().unwrap_or("unsupported"),
            "on_expire": s.on_expire,
            "assignee_email": s.assignee_email,
            "assignee_user_id": s.assignee_user_id,
            "visibility": s.visibility().as_str(),
            "reviewer_emails": s.reviewer_emails,
            "reviewer_user_ids": s.reviewer_user_ids,
            "approval_policy": s.approval_policy,
            "dedupe_key": s.dedupe_key,
            "response": r.and_then(|r| r.response.clone()),
            "resolution_option_id": r.and_then(|r| r.option_id.clone()),
            "resolution_reason": r.and_then(|r| r.reason.clone()),
            "resolved_by": r.map(|r| &r.decided_by),
            "resolved_at": r.map(|r| &r.decided_at),
            "receipt": self.receipt,
            "outcome": self.outcome,
            "snoozed_until": self.snoozed_until,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "closed_at": self.closed_at,
            "expires_at": s.expires_at,
        })
    }
}
