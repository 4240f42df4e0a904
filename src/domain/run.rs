//! Runs (guide: "Runs"; DESIGN §13, SPEC §3.2): the record, its six states
//! and which moves are allowed. No I/O; `service::runs` applies these rules
//! in the writer's transaction.

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::domain::action::Environment;
use crate::error::{FieldError, Result};

/// Longest run name (characters, one line).
pub const MAX_NAME: usize = 200;
/// Longest progress message and error text (characters).
pub const MAX_TEXT: usize = 2000;
/// Largest `metadata` and `result` (bytes of JSON), as Action metadata.
pub const MAX_JSON_BYTES: usize = 32 * 1024;
/// Attached Actions a run record lists: the newest.
pub const LISTED_ACTIONS: usize = 100;

/// Every status, in the order the guide lists them.
pub const STATUSES: &[&str] = &[
    "queued",
    "running",
    "waiting",
    "succeeded",
    "failed",
    "cancelled",
];

/// Whether a run in `status` is finished: it refuses every change.
pub fn is_final(status: &str) -> bool {
    matches!(status, "succeeded" | "failed" | "cancelled")
}

/// `{completed, total, message}`: how far a run is, as the Source last said.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct Progress {
    pub completed: Option<i64>,
    pub total: Option<i64>,
    pub message: Option<String>,
}

impl Progress {
    /// The share done, 0–100, when both numbers are known and total > 0.
    pub fn percent(&self) -> Option<i64> {
        match (self.completed, self.total) {
            (Some(c), Some(t)) if t > 0 => Some((c.min(t) * 100) / t),
            _ => None,
        }
    }
}

/// A run as the API shows it (DESIGN §13); every field always present.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct Run {
    /// `run_…`
    pub id: String,
    /// Always `run`.
    pub object: &'static str,
    pub workspace_id: String,
    pub source_id: String,
    pub environment: Environment,
    pub name: String,
    /// `queued`, `running`, `waiting`, `succeeded`, `failed` or `cancelled`.
    pub status: String,
    pub progress: Progress,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
    /// The Actions raised in this run (`run_id` on create), newest first;
    /// at most the newest 100.
    pub action_ids: Vec<String>,
    /// What the Source reported on completion: any JSON value, null when
    /// none was given.
    #[schema(value_type = Value)]
    pub result: Option<Value>,
    pub error: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub started_at: Option<String>,
    #[schema(format = DateTime)]
    pub updated_at: String,
    #[schema(format = DateTime)]
    pub completed_at: Option<String>,
}

/// One line of a run's timeline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunEvent {
    /// `created`, `started`, `waiting`, `progress` or `completed`.
    pub kind: String,
    pub status: String,
    pub message: Option<String>,
    pub at: String,
}

/// A run name: 1–200 characters, one line, not blank. Returns it trimmed.
pub fn check_name(name: &str) -> Result<String, FieldError> {
    let n = name.trim();
    if crate::domain::validate::says_nothing(n) {
        return Err(FieldError::new(
            "name",
            "name is required and must not be blank (spaces or invisible characters only)",
        ));
    }
    if n.chars().count() > MAX_NAME {
        return Err(FieldError::new(
            "name",
            format!("name is longer than {MAX_NAME} characters"),
        ));
    }
    if !crate::domain::validate::is_one_line(n) {
        return Err(FieldError::new(
            "name",
            format!("name {}", crate::domain::validate::ONE_LINE),
        ));
    }
    Ok(n.to_owned())
}

/// A free text (message, error): at most `MAX_TEXT` characters, no NUL and
/// no direction control (a reviewer reads it).
pub fn check_text(field: &str, text: &str) -> Option<FieldError> {
    let n = text.chars().count();
    if n > MAX_TEXT {
        return Some(FieldError::new(
            field,
            format!("{field} is {n} characters; at most {MAX_TEXT} are allowed"),
        ));
    }
    if crate::domain::validate::has_direction_override(text) {
        return Some(FieldError::new(
            field,
            crate::domain::validate::direction_refused(field),
        ));
    }
    text.contains('\0')
        .then(|| FieldError::new(field, format!("{field} may not contain NUL characters")))
}

/// What a status outside the route's list is told, as other fixed lists
/// are (guide: "Errors"): the value sent (its first 40 characters), then
/// what to send.
pub fn status_refused(got: &str, expected: &str) -> String {
    let shown: String = got.chars().take(40).collect();
    let more = if got.chars().count() > 40 { "…" } else { "" };
    format!("`{shown}{more}` is not a value this field takes: use {expected}")
}

/// A run's `error` when a person cancels it with a reason: "Cancelled by
/// EMAIL: REASON", at most `MAX_TEXT` characters (the reason's end gives
/// way to "…").
pub fn cancelled_by(email: &str, reason: &str) -> String {
    let head = format!("Cancelled by {email}: ");
    let room = MAX_TEXT.saturating_sub(head.chars().count());
    if reason.chars().count() <= room {
        return format!("{head}{reason}");
    }
    let kept: String = reason.chars().take(room.saturating_sub(1)).collect();
    format!("{head}{}…", kept.trim_end())
}

/// A JSON value (metadata, result) of at most 32 KB.
pub fn check_size(field: &str, v: &impl Serialize) -> Option<FieldError> {
    let size = serde_json::to_vec(v).map(|b| b.len()).unwrap_or(usize::MAX);
    (size > MAX_JSON_BYTES).then(|| {
        FieldError::new(
            field,
            format!("{field} is {size} bytes; the limit is {MAX_JSON_BYTES} (32 KB)"),
        )
    })
}

/// The counts after a progress report: each given number replaces the
/// stored one; a known total bounds the count.
pub fn next_counts(
    stored: (Option<i64>, Option<i64>),
    completed: Option<i64>,
    total: Option<i64>,
) -> Result<(Option<i64>, Option<i64>), FieldError> {
    let c = completed.or(stored.0);
    let t = total.or(stored.1);
    if let (Some(c), Some(t)) = (c, t)
        && c > t
    {
        let field = if completed.is_some() {
            "completed"
        } else {
            "total"
        };
        return Err(FieldError::new(
            field,
            format!("completed ({c}) may not exceed total ({t})"),
        ));
    }
    Ok((c, t))
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_cancel_reason_keeps_the_error_within_its_limit() {
        assert_eq!(cancelled_by("a@b.c", "why"), "Cancelled by a@b.c: why");
        let long = cancelled_by("admin@example.com", &"é".repeat(MAX_TEXT));
        assert_eq!(long.chars().count(), MAX_TEXT);
        assert!(long.starts_with("Cancelled by admin@example.com: éé"));
        assert!(long.ends_with("é…"));
        let fits = "x".repeat(MAX_TEXT - "Cancelled by a@b.c: ".len());
        assert_eq!(cancelled_by("a@b.c", &fits).chars().count(), MAX_TEXT);
        assert!(!cancelled_by("a@b.c", &fits).ends_with('…'));
    }

    use super::*;

    #[test]
    fn names_are_one_trimmed_line() {
        assert_eq!(check_name("  nightly  ").unwrap(), "nightly");
        assert!(check_name("   ").is_err());
        assert!(check_name("a\nb").is_err());
        assert!(check_name(&"x".repeat(201)).is_err());
        assert!(check_name(&"é".repeat(200)).is_ok());
    }

    #[test]
    fn counts_are_bounded_by_a_known_total() {
        assert_eq!(
            next_counts((None, None), Some(3), None),
            Ok((Some(3), None))
        );
        assert_eq!(
            next_counts((Some(3), Some(10)), None, Some(5)),
            Ok((Some(3), Some(5)))
        );
        assert_eq!(
            next_counts((Some(3), Some(10)), Some(11), None)
                .unwrap_err()
                .field,
            "completed"
        );
        assert_eq!(
            next_counts((Some(8), Some(10)), None, Some(5))
                .unwrap_err()
                .field,
            "total"
        );
    }

    #[test]
    fn percent_needs_both_numbers() {
        let p = |c, t| {
            Progress {
                completed: c,
                total: t,
                message: None,
            }
            .percent()
        };
        assert_eq!(p(Some(1), Some(4)), Some(25));
        assert_eq!(p(Some(1), None), None);
        assert_eq!(p(Some(0), Some(0)), None);
    }

    #[test]
    fn three_states_are_final() {
        assert!(STATUSES.iter().filter(|s| is_final(s)).count() == 3);
        assert!(!is_final("waiting"));
    }
}
