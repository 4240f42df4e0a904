//! The one error type of hds: stable codes (guide: "Every error code"), and the single place that
//! turns a code into an HTTP status. `http::error` renders it as the JSON
//! envelope `{ "error": { "code", "message", "details" } }`.

use axum::http::StatusCode;
use serde::Serialize;
use serde_json::{Map, Value};

/// Stable error codes. The names are the contract with clients; never rename one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    // 400
    InvalidCallbackUrl,
    InvalidExpiration,
    InvalidOpenUrl,
    InvalidResponse,
    OptionNotFound,
    ResponseRequired,
    ResponseTypeMismatch,
    InvalidIdempotencyKey,
    InvalidSignature,
    // 401
    AuthRequired,
    InvalidApiKey,
    SourceRevoked,
    InvalidIdToken,
    // 403 (SPEC leaves the codes open)
    Forbidden,
    SelfApprovalForbidden,
    SigninNotAllowed,
    CsrfFailed,
    InvitationEmailMismatch,
    PlanLimitReached,
    // 404
    ActionNotFound,
    SourceNotFound,
    NotFound,
    ProviderNotFound,
    WorkspaceNotFound,
    MemberNotFound,
    InvitationNotFound,
    DeliveryNotFound,
    ControlNotFound,
    ControlRequestNotFound,
    CommentNotFound,
    NotificationNotFound,
    RunNotFound,
    // 405
    MethodNotAllowed,
    // 409
    ActionNotOpen,
    ActionChanged,
    ActionNotResolved,
    OutcomeAlreadyReported,
    IdempotencyKeyReused,
    DedupeConflict,
    IdempotencyConflict,
    ApprovalVoteRequired,
    VoteAlreadyCast,
    LastOwner,
    AlreadyMember,
    AlreadySubscribed,
    ActionAlreadyClaimed,
    ControlRequestClosed,
    ContextRequestsUnsupported,
    NotificationMandatory,
    RunNotActive,
    // 413
    ActionPayloadTooLarge,
    PayloadTooLarge,
    // 422
    ValidationError,
    // 429
    RateLimited,
    // 500 / 503
    Internal,
    ProviderUnavailable,
    Unavailable,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        use Code::*;
        match self {
            InvalidCallbackUrl => "INVALID_CALLBACK_URL",
            InvalidExpiration => "INVALID_EXPIRATION",
            InvalidOpenUrl => "INVALID_OPEN_URL",
            InvalidResponse => "INVALID_RESPONSE",
            OptionNotFound => "OPTION_NOT_FOUND",
            ResponseRequired => "RESPONSE_REQUIRED",
            ResponseTypeMismatch => "RESPONSE_TYPE_MISMATCH",
            InvalidIdempotencyKey => "INVALID_IDEMPOTENCY_KEY",
            InvalidSignature => "INVALID_SIGNATURE",
            PlanLimitReached => "PLAN_LIMIT_REACHED",
            AuthRequired => "AUTH_REQUIRED",
            InvalidApiKey => "INVALID_API_KEY",
            SourceRevoked => "SOURCE_REVOKED",
            InvalidIdToken => "INVALID_ID_TOKEN",
            Forbidden => "FORBIDDEN",
            SelfApprovalForbidden => "SELF_APPROVAL_FORBIDDEN",
            SigninNotAllowed => "SIGNIN_NOT_ALLOWED",
            CsrfFailed => "CSRF_FAILED",
            InvitationEmailMismatch => "INVITATION_EMAIL_MISMATCH",
            InvitationNotFound => "INVITATION_NOT_FOUND",
            AlreadyMember => "ALREADY_MEMBER",
            AlreadySubscribed => "ALREADY_SUBSCRIBED",
            ProviderNotFound => "PROVIDER_NOT_FOUND",
            ProviderUnavailable => "PROVIDER_UNAVAILABLE",
            ActionNotFound => "ACTION_NOT_FOUND",
            SourceNotFound => "SOURCE_NOT_FOUND",
            NotFound => "NOT_FOUND",
            WorkspaceNotFound => "WORKSPACE_NOT_FOUND",
            MemberNotFound => "MEMBER_NOT_FOUND",
            DeliveryNotFound => "DELIVERY_NOT_FOUND",
            ControlNotFound => "CONTROL_NOT_FOUND",
            ControlRequestNotFound => "CONTROL_REQUEST_NOT_FOUND",
            CommentNotFound => "COMMENT_NOT_FOUND",
            ControlRequestClosed => "CONTROL_REQUEST_CLOSED",
            NotificationNotFound => "NOTIFICATION_NOT_FOUND",
            NotificationMandatory => "NOTIFICATION_MANDATORY",
            RunNotFound => "RUN_NOT_FOUND",
            RunNotActive => "RUN_NOT_ACTIVE",
            ContextRequestsUnsupported => "CONTEXT_REQUESTS_UNSUPPORTED",
            MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ActionNotOpen => "ACTION_NOT_OPEN",
            ActionChanged => "ACTION_CHANGED",
            ActionNotResolved => "ACTION_NOT_RESOLVED",
            OutcomeAlreadyReported => "OUTCOME_ALREADY_REPORTED",
            IdempotencyKeyReused => "IDEMPOTENCY_KEY_REUSED",
            DedupeConflict => "DEDUPE_CONFLICT",
            IdempotencyConflict => "IDEMPOTENCY_CONFLICT",
            ApprovalVoteRequired => "APPROVAL_VOTE_REQUIRED",
            VoteAlreadyCast => "VOTE_ALREADY_CAST",
            LastOwner => "LAST_OWNER",
            ActionAlreadyClaimed => "ACTION_ALREADY_CLAIMED",
            ActionPayloadTooLarge => "ACTION_PAYLOAD_TOO_LARGE",
            PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ValidationError => "VALIDATION_ERROR",
            RateLimited => "RATE_LIMITED",
            Internal => "INTERNAL_ERROR",
            Unavailable => "SERVICE_UNAVAILABLE",
        }
    }

    pub fn status(self) -> StatusCode {
        use Code::*;
        match self {
            InvalidCallbackUrl
            | InvalidExpiration
            | InvalidOpenUrl
            | InvalidResponse
            | OptionNotFound
            | ResponseRequired
            | ResponseTypeMismatch
            | InvalidIdempotencyKey
            | InvalidSignature => StatusCode::BAD_REQUEST,
            AuthRequired | InvalidApiKey | SourceRevoked | InvalidIdToken => {
                StatusCode::UNAUTHORIZED
            }
            Forbidden
            | SigninNotAllowed
            | CsrfFailed
            | InvitationEmailMismatch
            | PlanLimitReached
            | SelfApprovalForbidden => StatusCode::FORBIDDEN,
            ActionNotFound
            | SourceNotFound
            | NotFound
            | ProviderNotFound
            | WorkspaceNotFound
            | MemberNotFound
            | InvitationNotFound
            | DeliveryNotFound
            | NotificationNotFound
            | RunNotFound
            | ControlNotFound
            | ControlRequestNotFound
            | CommentNotFound => StatusCode::NOT_FOUND,
            MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ActionNotOpen
            | ActionChanged
            | ActionNotResolved
            | OutcomeAlreadyReported
            | IdempotencyKeyReused
            | DedupeConflict
            | IdempotencyConflict
            | ApprovalVoteRequired
            | VoteAlreadyCast
            | LastOwner
            | AlreadyMember
            | AlreadySubscribed
            | ActionAlreadyClaimed
            | ControlRequestClosed
            | ContextRequestsUnsupported
            | NotificationMandatory
            | RunNotActive => StatusCode::CONFLICT,
            ActionPayloadTooLarge | PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ValidationError => StatusCode::UNPROCESSABLE_ENTITY,
            RateLimited => StatusCode::TOO_MANY_REQUESTS,
            Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ProviderUnavailable => StatusCode::BAD_GATEWAY,
            Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

/// One problem with one field of a request body or query, listed in
/// `details.errors`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FieldError {
    /// JSON path of the field, e.g. `options[1].label`.
    pub field: String,
    /// The error code this problem maps to (VALIDATION_ERROR or a specific one).
    #[serde(serialize_with = "code_as_str")]
    pub code: Code,
    pub message: String,
    /// Problems this entry counts beyond itself: "and 3 more unknown
    /// fields" stands for 3, so 2 more. Not sent; the summary message
    /// counts with it.
    #[serde(skip)]
    pub more: usize,
}

/// What a request that found the disk full is told.
const DISK_FULL: &str = "the disk holding hds's data is full: what this request would have written was not kept; retry once space is freed";

/// Error text quotes what the caller sent (a field path, an unknown key);
/// control characters, line and paragraph separators, direction overrides
/// and invisible characters in it are written as `\u{…}` escapes, so a
/// message is always one printable line that reads as it is stored.
pub(crate) fn printable(s: String) -> String {
    if !s.chars().any(escaped) {
        return s;
    }
    s.chars()
        .map(|c| {
            if escaped(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// What `printable` writes as an escape.
fn escaped(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'..='\u{1160}'
                | '\u{17B4}'..='\u{17B5}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF9}'..='\u{FFFB}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0001}'
        )
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::with_code(field, Code::ValidationError, message)
    }
    pub fn with_code(field: impl Into<String>, code: Code, message: impl Into<String>) -> Self {
        Self {
            field: printable(field.into()),
            code,
            message: printable(message.into()),
            more: 0,
        }
    }
}

/// An error that becomes an API response. Internal causes are kept for the log
/// and never shown to the client. Boxed so `Result<T>` stays one word wide.
#[derive(Debug)]
pub struct Error(Box<ErrorInner>);

#[derive(Debug)]
pub struct ErrorInner {
    pub code: Code,
    pub message: String,
    pub details: Map<String, Value>,
    pub retry_after: Option<u64>,
    cause: Option<anyhow::Error>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self(Box::new(ErrorInner {
            code,
            message: printable(message.into()),
            details: Map::new(),
            retry_after: None,
            cause: None,
        }))
    }

    pub fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.0.details.insert(key.to_owned(), value.into());
        self
    }

    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.0.retry_after = Some(seconds);
        self
    }

    /// A validation failure. When one of the problems has a specific SPEC code
    /// (INVALID_OPEN_URL, INVALID_EXPIRATION, …) the response carries the first
    /// such code with status 400; otherwise VALIDATION_ERROR (422). Every problem
    /// is listed in `details.errors` either way.
    pub fn validation(errors: Vec<FieldError>) -> Self {
        let specific = errors.iter().find(|e| e.code != Code::ValidationError);
        let (code, message) = match specific {
            Some(e) => (e.code, e.message.clone()),
            None if errors.len() == 1 => (Code::ValidationError, errors[0].message.clone()),
            None => (
                Code::ValidationError,
                format!(
                    "{} problems with the request; see details.errors",
                    errors.len() + errors.iter().map(|e| e.more).sum::<usize>()
                ),
            ),
        };
        let listed = serde_json::to_value(&errors).unwrap_or(Value::Null);
        Self::new(code, message).with_detail("errors", listed)
    }

    pub fn field(field: &str, message: impl Into<String>) -> Self {
        Self::validation(vec![FieldError::new(field, message)])
    }

    pub fn internal(cause: impl Into<anyhow::Error>) -> Self {
        Self::internal_saying("internal error; the request was not applied", cause)
    }

    /// The disk holding the database is full (SQLITE_FULL): 503, nothing of
    /// the write kept.
    pub fn disk_full(cause: impl Into<anyhow::Error>) -> Self {
        let mut e = Self::new(Code::Unavailable, DISK_FULL).retry_after(1);
        e.0.cause = Some(cause.into());
        e
    }

    /// Whether this is [`Error::disk_full`].
    pub fn is_disk_full(&self) -> bool {
        self.code == Code::Unavailable && self.message == DISK_FULL
    }

    /// The active receipt signing key cannot be read (another owner, a
    /// damaged file): 503, nothing applied; `/ready` says so too.
    pub fn signing_key_unreadable(cause: impl Into<anyhow::Error>) -> Self {
        let mut e = Self::new(
            Code::Unavailable,
            "hds cannot read its receipt signing key, so it cannot sign a decision now: nothing was applied; retry once the operator has fixed the key file (the server log says which)",
        )
        .retry_after(30);
        e.0.cause = Some(cause.into());
        e
    }

    /// An internal error whose message says more than "not applied" (the
    /// cause is logged, never shown).
    pub fn internal_saying(message: &str, cause: impl Into<anyhow::Error>) -> Self {
        let mut e = Self::new(Code::Internal, message);
        e.0.cause = Some(cause.into());
        e
    }

    pub fn delivery_not_found() -> Self {
        Self::new(
            Code::DeliveryNotFound,
            "no webhook delivery with that id for this Source",
        )
    }

    pub fn control_request_not_found() -> Self {
        Self::new(
            Code::ControlRequestNotFound,
            "no control request with that id on an Action of this Source (and key environment)",
        )
    }

    /// A `starting_after` that is not an item of the list it pages (another
    /// workspace's, or none at all): 422 naming the field.
    pub fn unknown_cursor(cursor: &crate::domain::ids::Cursor, what: &str) -> Self {
        // Ids are 30-odd ASCII characters: whatever else was sent is not
        // repeated whole.
        let id = &cursor.id;
        let shown: String = id.chars().take(64).collect();
        let more = if shown.len() < id.len() { "…" } else { "" };
        Self::field(
            cursor.field,
            format!("{shown}{more} is not {what}; give the id of the last item of the page before"),
        )
    }

    pub fn run_not_found() -> Self {
        Self::new(
            Code::RunNotFound,
            "no run with that id is visible to this caller (a Source sees its own runs in its key's environment; a person, those of the workspaces they belong to)",
        )
    }

    pub fn action_not_found() -> Self {
        Self::new(
            Code::ActionNotFound,
            "no Action with that id is visible to this caller",
        )
    }

    /// The requester may not decide or vote on their own request (guide:
    /// "Separation of duties").
    pub fn self_approval_forbidden() -> Self {
        Self::new(
            Code::SelfApprovalForbidden,
            "this Action was requested on your behalf: someone else must decide it \
             (separation of duties; only an approval policy's allow_self_approval, \
             which a Source may set on a restricted team Action, lets a requester vote)",
        )
    }
}

impl Error {
    /// Takes the error apart, for the one place that renders it (`http::error`).
    pub(crate) fn into_inner(self) -> ErrorInner {
        *self.0
    }

    /// For a person at a terminal (the CLI, a server that cannot start):
    /// an internal error's cause (a path, an OS error), which a client of
    /// the API never sees; any other error as the API words it.
    pub fn for_operator(self) -> anyhow::Error {
        let shown = self.to_string();
        match self.0.cause {
            Some(cause) if self.0.code == Code::Internal => cause,
            _ => anyhow::anyhow!(shown),
        }
    }
}

impl ErrorInner {
    /// The internal cause, logged and never shown to the client.
    pub(crate) fn cause(&self) -> Option<&anyhow::Error> {
        self.cause.as_ref()
    }
}

impl std::ops::Deref for Error {
    type Target = ErrorInner;
    fn deref(&self) -> &ErrorInner {
        &self.0
    }
}

/// Codes go on the wire as their stable names.
fn code_as_str<S: serde::Serializer>(code: &Code, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(code.as_str())
}

impl Error {
    /// The error as a log line outside a request (workers): its code and
    /// message, then the cause chain, which an internal error's message
    /// ("internal error; the request was not applied") leaves out.
    pub fn for_log(&self) -> String {
        match self.0.cause() {
            Some(cause) => format!("{self}; cause: {cause:#}"),
            None => self.to_string(),
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for Error {}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        // A full disk refuses the statement, and the write it was part of
        // is undone (the writer's savepoint, or its whole batch): nothing
        // kept, worth a retry once space is freed.
        if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull) {
            return Self::disk_full(e);
        }
        Self::internal(e)
    }
}
impl From<r2d2::Error> for Error {
    fn from(e: r2d2::Error) -> Self {
        Self::internal(e)
    }
}
impl From<anyhow::Error> for Error {
    fn from(e: anyhow::Error) -> Self {
        Self::internal(e)
    }
}
impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Self::internal(e)
    }
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn quoted_input_reads_as_it_is_stored() {
        assert_eq!(printable("bo\ndy".into()), "bo\\u{a}dy");
        assert_eq!(
            printable("a\u{202e}b\u{2066}c".into()),
            "a\\u{202e}b\\u{2066}c"
        );
        assert_eq!(
            printable("x\u{200b}y\u{2028}".into()),
            "x\\u{200b}y\\u{2028}"
        );
        assert_eq!(printable("a\u{e0001}b".into()), "a\\u{e0001}b");
        assert_eq!(printable("café – ok".into()), "café – ok");
        // What ordinary text needs stays: emoji presentation, flag tags.
        let flag = "Ops ⚠\u{fe0f} 🏴\u{e0067}\u{e007f}";
        assert_eq!(printable(flag.into()), flag);
    }
}
