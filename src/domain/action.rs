//! The Action: its states, its stored specification (every create/patch field,
//! validated and normalised) and the JSON it is shown as (guide: "The Action object").

use crate::domain::access::Visibility;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
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
    #[schema(pattern = "^[A-Za-z0-9_.:-]{1,64}$")]
    pub id: Option<String>,
    /// 1-100 characters on one line.
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069][^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*$"
    )]
    pub label: String,
    /// `primary`, `secondary` (default) or `destructive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style: Option<String>,
    /// Zero-based position; always recomputed from the list order.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::domain::strict_json::optional_integer"
    )]
    pub sort_order: Option<i64>,
    /// A decision choosing this option must say why (`reason`), as GitHub's
    /// "Request changes" needs a comment. Left out when false, so Actions
    /// made before it keep their fingerprints.
    #[serde(
        default,
        skip_serializing_if = "std::ops::Not::not",
        deserialize_with = "crate::domain::strict_json::flag"
    )]
    #[schema(value_type = Option<bool>)]
    pub reason_required: bool,
}

/// Typed interaction (guide: "The Action object"), used instead of `options`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Interaction {
    /// A struct variant, not a unit one: serde then refuses unknown keys
    /// (`{"type": "boolean", "default": true}`) as it does on the others.
    Boolean {},
    Text {
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "crate::domain::strict_json::optional_integer"
        )]
        max_length: Option<u64>,
        /// A proposed answer the reviewer starts from and may edit (an
        /// agent's draft): held to the rules of a response. Part of what
        /// is decided, so in the fingerprint; left out when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        default: Option<String>,
    },
    Number {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<f64>,
        /// A proposed number the reviewer starts from, within min and max.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        default: Option<f64>,
    },
    Choice {
        choices: Vec<Choice>,
        #[serde(
            default,
            skip_serializing_if = "std::ops::Not::not",
            deserialize_with = "crate::domain::strict_json::flag"
        )]
        #[schema(value_type = Option<bool>)]
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
    /// 1-100 characters on one line.
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069][^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*$"
    )]
    pub label: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FormField {
    pub key: String,
    /// 1-100 characters on one line.
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069][^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*$"
    )]
    pub label: String,
    /// `text`, `number` or `boolean`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(
        default,
        skip_serializing_if = "std::ops::Not::not",
        deserialize_with = "crate::domain::strict_json::flag"
    )]
    #[schema(value_type = Option<bool>)]
    pub required: bool,
}

/// A control a reviewer can invoke (guide: "Controls").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Control {
    /// 1-64 characters of a-z, 0-9, _ or -; unique per Action.
    #[schema(pattern = "^[a-z0-9_-]{1,64}$")]
    pub key: String,
    /// 1-100 characters on one line.
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069][^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*$"
    )]
    pub label: String,
    /// `callback` (needs the Action's callback_url) or `link`.
    #[schema(schema_with = control_kind_schema)]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutating: Option<bool>,
    /// Asked before the control is pressed: 1-500 characters on one line,
    /// not blank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        min_length = 1,
        max_length = 500,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069][^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*$"
    )]
    pub confirm: Option<String>,
}

impl Control {
    /// What the dashboard asks before pressing it: its `confirm` text, else
    /// for a mutating control a default question, else nothing.
    pub fn confirmation(&self) -> Option<String> {
        self.confirm
            .clone()
            .filter(|t| !crate::domain::validate::says_nothing(t))
            .or_else(|| {
                (self.mutating == Some(true))
                    .then(|| format!("“{}” changes something. Press it?", self.label))
            })
    }
}

/// Evidence shown to the reviewer (guide: "Context blocks").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum ContextBlock {
    Text {
        #[schema(max_length = 20000)]
        text: String,
    },
    Markdown {
        #[schema(max_length = 20000)]
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
    #[serde(deserialize_with = "crate::domain::strict_json::integer")]
    pub required_approvals: u32,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::domain::strict_json::optional_integer"
    )]
    pub reject_threshold: Option<u32>,
    #[serde(default)]
    pub allow_self_approval: bool,
}

/// Every field a Source may send on create (guide: "POST /v1/actions"). After
/// `validate_spec` it is also the stored, normalised form.
///
/// Rules across fields, which this schema does not carry: exactly one of
/// `options` and `interaction`; `expires_at` an RFC 3339 time with an offset,
/// in the future and within 366 days (400 INVALID_EXPIRATION); `open_url` an
/// absolute http(s) URL (400 INVALID_OPEN_URL) and `callback_url` a public
/// https URL without credentials or fragment, stored normalised (400
/// INVALID_CALLBACK_URL); `visibility: restricted` with exactly one
/// non-empty list of `reviewer_emails` or `reviewer_user_ids`, and those
/// lists only then; `callback` controls and `context_request_mode: callback`
/// need a `callback_url`; option ids unique; `on_expire.option_id` names an
/// option. The guide lists every rule with its error.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ActionCreate)]
pub struct ActionSpec {
    /// 1-200 characters on one line.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069][^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*$"
    )]
    pub title: String,
    /// Markdown, at most 20,000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 20000)]
    pub description: Option<String>,
    #[serde(default)]
    pub priority: Priority,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_items = 1, max_items = 20)]
    pub options: Option<Vec<ActionOption>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction: Option<Interaction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_expire: Option<OnExpire>,
    /// At most 12, at most 3 of them mutating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_items = 12)]
    pub controls: Option<Vec<Control>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_items = 100)]
    pub context: Option<Vec<ContextBlock>>,
    /// 1-100 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 100)]
    pub decision_class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub decision_context: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_url: Option<String>,
    /// `unsupported` (default), `poll` or `callback`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = context_request_mode_schema)]
    pub context_request_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee_email: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee_user_id: Option<String>,
    /// `workspace` (default) or `restricted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = visibility_schema)]
    pub visibility: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_items = 15)]
    pub reviewer_emails: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_items = 15)]
    pub reviewer_user_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<ApprovalPolicy>,
    /// 1-255 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 255)]
    pub dedupe_key: Option<String>,
    /// The person on whose behalf the Source asks (guide: "Separation of
    /// duties"): unless `approval_policy.allow_self_approval`, they may not
    /// decide or vote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by_email: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by_user_id: Option<String>,
    /// The Source's own active run (same environment) this Action is raised
    /// in (guide: "Runs"). Not material.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 64)]
    pub run_id: Option<String>,
}

fn nullable_string_enum(values: &[&str]) -> utoipa::openapi::Object {
    use utoipa::openapi::{ObjectBuilder, Type, schema::SchemaType};
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .enum_values(Some(values.iter().copied().map(Some).chain([None])))
        .build()
}

fn context_request_mode_schema() -> utoipa::openapi::Object {
    nullable_string_enum(&["unsupported", "poll", "callback"])
}

fn visibility_schema() -> utoipa::openapi::Object {
    nullable_string_enum(&["workspace", "restricted"])
}

fn control_kind_schema() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::String)
        .enum_values(Some(["callback", "link"]))
        .build()
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
    "requested_by_email",
    "requested_by_user_id",
    "run_id",
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
    /// Whether `user_id` / `email` is the person the Source asks on behalf
    /// of, and the approval policy does not let them decide their own request.
    pub fn forbids_self_approval(&self, user_id: &str, email: &str) -> bool {
        let allowed = self
            .approval_policy
            .as_ref()
            .is_some_and(|p| p.allow_self_approval);
        let is_requester = self.requested_by_user_id.as_deref() == Some(user_id)
            || self
                .requested_by_email
                .as_deref()
                .is_some_and(|e| e.eq_ignore_ascii_case(email));
        is_requester && !allowed
    }
    pub fn option(&self, id: &str) -> Option<&ActionOption> {
        self.options
            .as_ref()?
            .iter()
            .find(|o| o.id.as_deref() == Some(id))
    }
}

/// Who made a change or a decision. Receipts carry it without e-mail addresses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Actor {
    #[serde(rename = "type")]
    pub kind: ActorKind,
    pub id: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
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

impl Resolution {
    /// A decision: the option chosen (or the typed response), by whom, when.
    pub fn chosen(
        option_id: Option<String>,
        response: Option<Value>,
        reason: Option<String>,
        decided_by: Actor,
        decided_at: String,
    ) -> Self {
        Self {
            option_id,
            response,
            reason,
            decided_by,
            decided_at,
            votes: None,
        }
    }

    /// An end without a choice (cancelled, expired, revoked).
    pub fn without_choice(reason: Option<String>, decided_by: Actor, decided_at: String) -> Self {
        Self::chosen(None, None, reason, decided_by, decided_at)
    }
}

/// The execution outcome a Source reported (guide: "Outcome"); immutable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Outcome {
    /// `success` or `failed`.
    pub status: String,
    pub duration_ms: u64,
    pub rollback: bool,
    /// The binding the Source acted on.
    pub action_version: i64,
    pub fingerprint: String,
    #[serde(default)]
    pub message: Option<String>,
    pub reported_at: String,
}

impl Outcome {
    /// Whether `other` reports the same thing (the time it was reported aside):
    /// an exact retry rather than a second, different outcome.
    pub fn same_report(&self, other: &Outcome) -> bool {
        Outcome {
            reported_at: other.reported_at.clone(),
            ..self.clone()
        } == *other
    }
}

/// A signed decision receipt as an Action carries it (guide: "Receipts").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Receipt {
    /// `rcp_…`
    pub id: String,
    pub kid: String,
    /// Always `EdDSA`.
    pub alg: String,
    /// The compact JWS; verify it with the published keys.
    pub jws: String,
    /// The claims the JWS signs, decoded for convenience.
    #[schema(value_type = Object)]
    pub payload: Value,
}

/// A person an Action names (its assignee, its requester): `user_id` when
/// they are a known user, `email` and `name` as known.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = ActionPerson)]
pub struct Person {
    pub user_id: Option<String>,
    pub email: Option<String>,
    pub name: Option<String>,
}

/// Who is working on an Action, read beside it (guide: "Claim, assignment,
/// snooze and comments"). None of it is material: it changes neither
/// `action_version` nor `fingerprint`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Work {
    pub assignee: Option<Person>,
    pub requested_by: Option<Person>,
    pub comment_count: i64,
    /// Oldest first, in `poll` and `callback` modes; None in `unsupported`
    /// mode (guide: "Context requests").
    pub context_requests: Option<Vec<crate::domain::requests::ContextRequest>>,
}

impl Work {
    /// What the spec alone says (ids and e-mails as the Source sent them);
    /// `store::work::annotate` completes it from the users table.
    pub fn from_spec(s: &ActionSpec) -> Self {
        let person = |id: &Option<String>, email: &Option<String>| {
            (id.is_some() || email.is_some()).then(|| Person {
                user_id: id.clone(),
                email: email.clone(),
                name: None,
            })
        };
        Self {
            assignee: person(&s.assignee_user_id, &s.assignee_email),
            requested_by: person(&s.requested_by_user_id, &s.requested_by_email),
            comment_count: 0,
            // A new Action has none yet; `annotate` reads them for stored ones.
            context_requests: crate::domain::requests::ContextMode::of(
                s.context_request_mode.as_deref(),
            )
            .lists()
            .then(Vec::new),
        }
    }
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
    pub receipt: Option<Receipt>,
    pub outcome: Option<Outcome>,
    pub snoozed_until: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub closed_at: Option<String>,
    /// Assignee, requester and comment count (not material).
    pub work: Work,
}

impl ActionRecord {
    /// The Action as its create answered it, rebuilt from the stored one:
    /// open, never decided, snoozed, commented on or asked for context,
    /// `updated_at` its creation time. Exact only while the spec (and so the
    /// version and fingerprint) is still as created, and only for an Action
    /// created without naming people (the answer completes them from the
    /// members): the idempotency store rebuilds a create's answer with it
    /// only then, and every write to the spec keeps the answer's text first
    /// (`store::idempotency::keep_answer`).
    pub fn as_created(&self) -> ActionRecord {
        ActionRecord {
            status: Status::Open,
            resolution: None,
            receipt: None,
            outcome: None,
            snoozed_until: None,
            updated_at: self.created_at.clone(),
            closed_at: None,
            work: Work::from_spec(&self.spec),
            ..self.clone()
        }
    }
}

/// The JSON text of a single-Action answer, `{"data": …, "idempotent_replay": …}`.
pub fn envelope_json(a: &ActionRecord, replay: bool) -> serde_json::Result<String> {
    #[derive(Serialize)]
    struct Envelope {
        data: ActionOut,
        idempotent_replay: bool,
    }
    serde_json::to_string(&Envelope {
        data: ActionOut::from(a),
        idempotent_replay: replay,
    })
}

/// The Action as the API shows it (guide: "The Action object"): every field always present,
/// `null` when unset. It lives beside the record rather than in
/// `http::api::wire` because use cases build replies that the idempotency
/// store keeps and replays (`envelope_json`).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ActionOut {
    pub id: String,
    /// Always `action`.
    pub object: &'static str,
    pub status: Status,
    pub environment: Environment,
    pub workspace_id: String,
    pub source_id: String,
    pub title: String,
    pub description: Option<String>,
    pub priority: Priority,
    pub action_version: i64,
    pub fingerprint: String,
    #[schema(min_items = 1, max_items = 20)]
    pub options: Option<Vec<ActionOption>>,
    pub interaction: Option<Interaction>,
    pub context: Option<Vec<ContextBlock>>,
    pub controls: Option<Vec<Control>>,
    pub decision_class: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub decision_context: Option<Value>,
    pub open_url: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
    pub callback_url: Option<String>,
    /// `unsupported`, `poll` or `callback`.
    pub context_request_mode: String,
    pub on_expire: Option<OnExpire>,
    pub assignee_email: Option<String>,
    pub assignee_user_id: Option<String>,
    /// `workspace` or `restricted`.
    pub visibility: &'static str,
    pub reviewer_emails: Option<Vec<String>>,
    pub reviewer_user_ids: Option<Vec<String>>,
    pub approval_policy: Option<ApprovalPolicy>,
    pub dedupe_key: Option<String>,
    /// The decision's response value, for typed interactions.
    #[schema(value_type = Option<Object>)]
    pub response: Option<Value>,
    pub resolution_option_id: Option<String>,
    pub resolution_reason: Option<String>,
    pub resolved_by: Option<Actor>,
    pub resolved_at: Option<String>,
    /// The signed decision receipt (guide: "Receipts").
    pub receipt: Option<Receipt>,
    pub outcome: Option<Outcome>,
    pub snoozed_until: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub closed_at: Option<String>,
    pub expires_at: Option<String>,
    /// Who is working on it: set by claim or assignment (or `assignee_*` on
    /// create). Not material.
    pub assignee: Option<Person>,
    /// Comments so far. Not material.
    pub comment_count: i64,
    /// The person on whose behalf the Source asks (`requested_by_*` on create).
    pub requested_by: Option<Person>,
    /// The reviewers' questions, oldest first, in `poll` and `callback`
    /// modes; null in `unsupported` mode (guide: "Context requests").
    pub context_requests: Option<Vec<crate::domain::requests::ContextRequest>>,
    /// The run this Action was raised in (`run_id` on create), if any.
    pub run_id: Option<String>,
}

impl From<&ActionRecord> for ActionOut {
    fn from(a: &ActionRecord) -> Self {
        let s = &a.spec;
        let r = a.resolution.as_ref();
        Self {
            id: a.id.clone(),
            object: "action",
            status: a.status,
            environment: a.environment,
            workspace_id: a.workspace_id.clone(),
            source_id: a.source_id.clone(),
            title: s.title.clone(),
            description: s.description.clone(),
            priority: s.priority,
            action_version: a.action_version,
            fingerprint: a.fingerprint.clone(),
            options: s.options.clone(),
            interaction: s.interaction.clone(),
            context: s.context.clone(),
            controls: s.controls.clone(),
            decision_class: s.decision_class.clone(),
            decision_context: s.decision_context.clone(),
            open_url: s.open_url.clone(),
            metadata: s.metadata.clone(),
            callback_url: s.callback_url.clone(),
            context_request_mode: s
                .context_request_mode
                .clone()
                .unwrap_or_else(|| "unsupported".to_owned()),
            on_expire: s.on_expire.clone(),
            assignee_email: s.assignee_email.clone(),
            assignee_user_id: s.assignee_user_id.clone(),
            visibility: s.visibility().as_str(),
            reviewer_emails: s.reviewer_emails.clone(),
            reviewer_user_ids: s.reviewer_user_ids.clone(),
            approval_policy: s.approval_policy.clone(),
            dedupe_key: s.dedupe_key.clone(),
            response: r.and_then(|r| r.response.clone()),
            resolution_option_id: r.and_then(|r| r.option_id.clone()),
            resolution_reason: r.and_then(|r| r.reason.clone()),
            resolved_by: r.map(|r| r.decided_by.clone()),
            resolved_at: r.map(|r| r.decided_at.clone()),
            receipt: a.receipt.clone(),
            outcome: a.outcome.clone(),
            snoozed_until: a.snoozed_until.clone(),
            created_at: a.created_at.clone(),
            updated_at: a.updated_at.clone(),
            closed_at: a.closed_at.clone(),
            expires_at: s.expires_at.clone(),
            assignee: a.work.assignee.clone(),
            comment_count: a.work.comment_count,
            requested_by: a.work.requested_by.clone(),
            context_requests: a.work.context_requests.clone(),
            run_id: s.run_id.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The hand-written `json!` that `ActionOut` replaced, kept as the reference
    /// the typed shape must match key for key.
    fn to_json(a: &ActionRecord) -> Value {
        let s = &a.spec;
        let r = a.resolution.as_ref();
        let mut out = json!({
            "id": a.id,
            "object": "action",
            "status": a.status.as_str(),
            "environment": a.environment.as_str(),
            "workspace_id": a.workspace_id,
            "source_id": a.source_id,
            "title": s.title,
            "description": s.description,
            "priority": s.priority.as_str(),
            "action_version": a.action_version,
            "fingerprint": a.fingerprint,
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
            "receipt": a.receipt,
            "outcome": a.outcome,
            "snoozed_until": a.snoozed_until,
            "created_at": a.created_at,
            "updated_at": a.updated_at,
            "closed_at": a.closed_at,
            "expires_at": s.expires_at,
        });
        // The fields of working on an Action (json! would recurse too deep).
        out["assignee"] = json!(a.work.assignee);
        out["comment_count"] = json!(a.work.comment_count);
        out["requested_by"] = json!(a.work.requested_by);
        out["context_requests"] = json!(a.work.context_requests);
        out["run_id"] = json!(s.run_id);
        out
    }

    fn rich() -> ActionRecord {
        let spec: ActionSpec = serde_json::from_value(json!({
            "title": "Deploy", "description": "to prod", "priority": "high",
            "options": [{"id": "yes", "label": "Yes", "style": "primary", "sort_order": 0}],
            "open_url": "https://example.com/x", "expires_at": "2030-01-01T00:00:00.000Z",
            "on_expire": {"action": "resolve", "option_id": "yes"},
            "controls": [{"key": "k", "label": "L", "kind": "link", "url": "https://e.com"}],
            "context": [{"type": "text", "text": "t"}, {"type": "kv", "items": [{"key": "a", "value": "b"}]}],
            "decision_class": "deploy", "decision_context": {"n": 1}, "metadata": {"m": [1, 2]},
            "callback_url": "https://e.com/cb", "context_request_mode": "poll",
            "assignee_email": "a@e.com", "visibility": "restricted",
            "reviewer_emails": ["r@e.com"], "reviewer_user_ids": ["usr_1"],
            "approval_policy": {"required_approvals": 2}, "dedupe_key": "d"
        }))
        .unwrap();
        ActionRecord {
            id: "act_1".into(),
            workspace_id: "wks_1".into(),
            source_id: "src_1".into(),
            environment: Environment::Test,
            status: Status::Resolved,
            action_version: 3,
            fingerprint: "sha256:ab".into(),
            spec,
            resolution: Some(Resolution {
                option_id: Some("yes".into()),
                response: Some(json!({"value": true})),
                reason: Some("ok".into()),
                decided_by: Actor::user("usr_1"),
                decided_at: "2026-01-01T00:00:00.000Z".into(),
                votes: None,
            }),
            receipt: Some(Receipt {
                id: "rcp_1".into(),
                kid: "k".into(),
                alg: "EdDSA".into(),
                jws: "x".into(),
                payload: json!({"seq": 1}),
            }),
            outcome: Some(Outcome {
                status: "success".into(),
                duration_ms: 5,
                rollback: false,
                action_version: 1,
                fingerprint: "sha256:ab".into(),
                message: None,
                reported_at: "2026-11-23T10:00:00.000Z".into(),
            }),
            snoozed_until: Some("2026-02-01T00:00:00.000Z".into()),
            created_at: "2025-12-31T00:00:00.000Z".into(),
            updated_at: "2026-01-01T00:00:00.000Z".into(),
            closed_at: Some("2026-01-01T00:00:00.000Z".into()),
            work: Work {
                assignee: Some(Person {
                    user_id: Some("usr_2".into()),
                    email: Some("a@e.com".into()),
                    name: Some("A".into()),
                }),
                requested_by: None,
                comment_count: 2,
                context_requests: Some(vec![crate::domain::requests::ContextRequest {
                    id: "cxr_1".into(),
                    object: "context_request",
                    action_id: "act_1".into(),
                    question: "Which region?".into(),
                    status: "open".into(),
                    requested_by: crate::domain::requests::RequestedBy {
                        user_id: "usr_2".into(),
                        name: None,
                    },
                    created_at: "2026-01-01T00:00:00.000Z".into(),
                    answered_at: None,
                    answered_in_version: None,
                }]),
            },
        }
    }

    #[test]
    fn action_out_serialises_exactly_as_to_json() {
        let a = rich();
        assert_eq!(
            serde_json::to_value(ActionOut::from(&a)).unwrap(),
            to_json(&a)
        );
        let bare = ActionRecord {
            spec: ActionSpec {
                title: "t".into(),
                ..Default::default()
            },
            resolution: None,
            receipt: None,
            outcome: None,
            snoozed_until: None,
            closed_at: None,
            status: Status::Open,
            ..a
        };
        assert_eq!(
            serde_json::to_value(ActionOut::from(&bare)).unwrap(),
            to_json(&bare)
        );
    }
}
