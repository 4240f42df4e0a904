//! Lifetimes of sign-in artefacts (documented in the guide, "Sessions").

use time::Duration;

/// A session (browser cookie or app bearer) ends 30 days after sign-in…
pub const SESSION_LIFETIME: Duration = Duration::days(30);
/// …or after 7 days without a request, whichever comes first.
pub const SESSION_IDLE: Duration = Duration::days(7);
/// `last_used_at` is refreshed at most this often, so reading pages does not
/// turn every request into a write.
pub const TOUCH_EVERY: Duration = Duration::minutes(5);
/// One-time sign-in links.
pub const LINK_LIFETIME: Duration = Duration::hours(24);
/// Sign-in links mailed on request from the sign-in page: short-lived, as
/// the mailbox they travel through may be read later by someone else.
pub const MAILED_LINK_LIFETIME: Duration = Duration::minutes(15);
/// A request for a mailed link sends none when the same address was asked
/// for this recently (account or not)…
pub const MAILED_LINK_SPACING: Duration = Duration::minutes(1);
/// …or this many in `MAILED_LINK_LIFETIME`: the sign-in page cannot be used
/// to flood a mailbox.
pub const MAILED_LINKS_PER_WINDOW: i64 = 5;
/// …or this many in a day.
pub const MAILED_LINKS_PER_DAY: i64 = 10;
/// Native sign-in challenges.
pub const NONCE_LIFETIME: Duration = Duration::minutes(5);

/// Whether a stored credential is usable at `now` (all RFC 3339 strings, which
/// compare in time order).
pub fn is_live(
    kind: &str,
    created_at: &str,
    expires_at: Option<&str>,
    last_used_at: Option<&str>,
    revoked_at: Option<&str>,
    now: crate::domain::time::Timestamp,
) -> bool {
    use crate::domain::time::format;
    if revoked_at.is_some() {
        return false;
    }
    let now_s = format(now);
    if expires_at.is_some_and(|e| e <= now_s.as_str()) {
        return false;
    }
    if kind == "session" {
        let idle_limit = format(now - SESSION_IDLE);
        let last = last_used_at.unwrap_or(created_at);
        if last <= idle_limit.as_str() {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::time::{format, parse};

    #[test]
    fn sessions_end_on_revocation_expiry_or_idleness() {
        let now = parse("2026-11-22T12:00:00Z").unwrap();
        let day_ago = format(now - Duration::days(1));
        let week_ago = format(now - Duration::days(8));
        let later = format(now + Duration::days(1));
        assert!(is_live("session", &day_ago, Some(&later), None, None, now));
        assert!(!is_live(
            "session",
            &week_ago,
            Some(&later),
            None,
            None,
            now
        ));
        assert!(is_live(
            "session",
            &week_ago,
            Some(&later),
            Some(&day_ago),
            None,
            now
        ));
        assert!(!is_live(
            "session",
            &day_ago,
            Some(&day_ago),
            None,
            None,
            now
        ));
        assert!(!is_live("api", &day_ago, None, None, Some(&day_ago), now));
        // API tokens have no idle limit.
        assert!(is_live("api", &week_ago, None, None, None, now));
    }
}
