//! Prefixed, time-sortable identifiers (guide: "Conventions"): `act_`, `src_`, `usr_`, … + a ULID.

/// A new id such as `act_01JD8X…`. ULIDs sort by creation time.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", ulid::Ulid::new())
}

pub const ACTION: &str = "act";
pub const SOURCE: &str = "src";
pub const USER: &str = "usr";
pub const WORKSPACE: &str = "ws";
pub const RECEIPT: &str = "rcp";
pub const TOKEN: &str = "tok";
pub const SESSION: &str = "ses";
pub const INVITATION: &str = "inv";
pub const COMMENT: &str = "cmt";
pub const DELIVERY: &str = "msg";
pub const CONTROL_REQUEST: &str = "ctr";
pub const CONTEXT_REQUEST: &str = "cxr";
pub const MAIL: &str = "mail";
pub const NOTIFICATION: &str = "ntf";
pub const RUN: &str = "run";

/// Whether `s` is shaped like an id with `prefix`: `{prefix}_` and a ULID
/// as hds writes them, in capitals (ids are compared as text).
pub fn is_id(s: &str, prefix: &str) -> bool {
    s.strip_prefix(prefix)
        .and_then(|r| r.strip_prefix('_'))
        .is_some_and(|u| {
            u.len() == 26
                // 26 base-32 digits hold 130 bits: a ULID's first is 0-7.
                && u.as_bytes()[0] <= b'7'
                && !u.bytes().any(|b| b.is_ascii_lowercase())
                && ulid::Ulid::from_string(u).is_ok()
        })
}

/// Whether the id (`{prefix}_` + a ULID) was made more than `days` days
/// before `now`: a cursor that old may name a row housekeeping has since
/// removed, so a list takes it as a position rather than refusing it.
pub fn older_than(id: &str, days: i64, now: crate::domain::time::Timestamp) -> bool {
    let Some(ms) = id
        .split_once('_')
        .and_then(|(_, u)| ulid::Ulid::from_string(u).ok())
        .map(|u| u.timestamp_ms())
    else {
        return false;
    };
    let cutoff = now - ::time::Duration::days(days);
    i128::from(ms) < cutoff.unix_timestamp_nanos() / 1_000_000
}

/// The cursor of a list that pages by id: the id, and the query parameter
/// that carried it (`starting_after`, or its older name `before` on the
/// delivery log and the notifications), so that an id that is not in the
/// list is refused naming the parameter the caller used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub field: &'static str,
    pub id: String,
}

impl Cursor {
    pub fn starting_after(id: impl Into<String>) -> Self {
        Self {
            field: "starting_after",
            id: id.into(),
        }
    }
}

/// What is wrong with `id` as the cursor of a list of ids with `prefix`
/// (`what` names such an id: "a run"), said alike by every list that pages
/// by id: None when it is one.
pub fn cursor_problem(
    field: &str,
    id: &str,
    prefix: &str,
    what: &str,
) -> Option<crate::error::FieldError> {
    (!is_id(id, prefix)).then(|| {
        crate::error::FieldError::new(
            field,
            format!(
                "{field} must be {what} id ({prefix}_ and 26 upper-case letters and digits, as the list gave it), the last id of the previous page"
            ),
        )
    })
}

/// The first id with `prefix` that can be made at `at`: every id made at
/// or after `at` sorts at or after it, every id made before it sorts
/// before (a ULID begins with its millisecond). Before 1970: the first id.
pub fn first_at(prefix: &str, at: crate::domain::time::Timestamp) -> String {
    let ms = u64::try_from(at.unix_timestamp_nanos() / 1_000_000).unwrap_or(0);
    format!("{prefix}_{}", ulid::Ulid::from_parts(ms, 0))
}

/// A new id that sorts after every id this process made before with this
/// function (a monotonic ULID), so a list ordered by id is in creation
/// order even within one millisecond. Every record listed newest first by
/// id uses it: Actions (a Run's Actions), Runs, webhook deliveries, mails and
/// notifications (whose pages merge two tables by id). Not for an id that
/// must be hard to guess: within a millisecond the next one is the last + 1.
pub fn new_ordered_id(prefix: &str) -> String {
    static GENERATOR: std::sync::Mutex<Option<ulid::Generator>> = std::sync::Mutex::new(None);
    let mut g = GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    let id = g
        .get_or_insert_with(ulid::Generator::new)
        .generate()
        // 2^80 ids in one millisecond: not reachable; a fresh ULID then.
        .unwrap_or_else(|_| ulid::Ulid::new());
    format!("{prefix}_{id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_recognised_by_prefix_and_shape() {
        let id = new_ordered_id(ACTION);
        assert!(is_id(&id, ACTION));
        assert!(!is_id(&id, RUN));
        assert!(!is_id(&id.to_lowercase(), ACTION));
        assert!(!is_id("act_", ACTION));
        assert!(
            !is_id("act_8ZZZZZZZZZZZZZZZZZZZZZZZZZ", ACTION),
            "past 2^128"
        );
        assert!(!is_id(&format!("{id}0"), ACTION));
    }

    /// Made one after another, many within one millisecond, across
    /// prefixes: each sorts after the one before (Runs listed newest first
    /// came out of order when two were made in the same millisecond).
    #[test]
    fn ordered_ids_sort_in_the_order_they_were_made() {
        let ids: Vec<String> = (0..2000)
            .map(|i| new_ordered_id(if i % 2 == 0 { RUN } else { ACTION }))
            .collect();
        let tails: Vec<&str> = ids.iter().map(|id| id.split_once('_').unwrap().1).collect();
        assert!(tails.windows(2).all(|w| w[0] < w[1]), "{tails:?}");
    }
}
