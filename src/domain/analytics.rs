//! Analytics rules without I/O (guide: "Analytics"): the fixed histogram of
//! decision times and the percentiles read from it, the windows, and what a
//! dashboard usage event may hold.

use crate::domain::time::Timestamp;
use crate::error::{FieldError, Result};

/// Upper bounds, in seconds, of the decision-time buckets `h0`…`h13` of
/// `analytics_daily` (migration 0048 computes the same buckets, in whole
/// milliseconds, so a time on a bound is counted in its bucket); `h14` holds
/// everything beyond seven days.
pub const BOUNDS: [f64; 14] = [
    10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 21600.0, 43200.0, 86400.0,
    172800.0, 604800.0,
];
/// Number of buckets: the bounds and one beyond.
pub const BUCKETS: usize = BOUNDS.len() + 1;

/// The `q`-quantile (0 < q ≤ 1) of the decision times a histogram counts, in
/// seconds: the bucket that holds the rank, interpolated linearly inside it
/// (from 0 for the first bucket). The open last bucket answers its lower
/// bound (7 days), a floor. Rounded to a tenth of a second (no float
/// noise such as 24.000000000000004). None when the histogram is empty.
pub fn percentile(hist: &[i64; BUCKETS], q: f64) -> Option<f64> {
    raw_percentile(hist, q).map(|s| (s * 10.0).round() / 10.0)
}

fn raw_percentile(hist: &[i64; BUCKETS], q: f64) -> Option<f64> {
    let total: i64 = hist.iter().sum();
    if total <= 0 {
        return None;
    }
    let rank = q.clamp(0.0, 1.0) * total as f64;
    let mut below = 0.0;
    for (i, &n) in hist.iter().enumerate() {
        let n = n as f64;
        if n > 0.0 && below + n >= rank {
            let lo = if i == 0 { 0.0 } else { BOUNDS[i - 1] };
            let Some(&hi) = BOUNDS.get(i) else {
                return Some(lo);
            };
            return Some(lo + (hi - lo) * ((rank - below) / n));
        }
        below += n;
    }
    Some(BOUNDS[BOUNDS.len() - 1])
}

/// The windows GET /v1/analytics/summary accepts, in days.
pub const WINDOWS: &[&str] = &["7d", "30d", "90d"];

/// Days in a window: `7d`, `30d` or `90d`.
pub fn window_days(w: &str) -> Option<i64> {
    match w {
        "7d" => Some(7),
        "30d" => Some(30),
        "90d" => Some(90),
        _ => None,
    }
}

/// The first UTC day (`YYYY-MM-DD`) of a window of `days` that ends today.
pub fn first_day(now: Timestamp, days: i64) -> String {
    let d = (now - ::time::Duration::days(days - 1)).date();
    format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
}

/// Longest event name; names are `[a-z0-9_.]{1,64}`.
pub const MAX_EVENT_NAME: usize = 64;
/// Largest `properties` object, serialized, in bytes.
pub const MAX_EVENT_PROPERTIES: usize = 4096;
/// How far back `occurred_at` may lie.
pub const EVENT_PAST_HOURS: i64 = 24;
/// How far ahead `occurred_at` may lie: clocks of browsers drift.
pub const EVENT_FUTURE_SECONDS: i64 = 60;
/// Days events are kept.
pub const EVENT_RETENTION_DAYS: i64 = 90;

/// Checks an event: its name, the size of its properties (serialized) and
/// when it occurred; every problem at once.
pub fn check_event(
    name: &str,
    properties_len: usize,
    occurred_at: Option<Timestamp>,
    occurred_raw: Option<&str>,
    now: Timestamp,
) -> Result<()> {
    let mut errors = Vec::new();
    let name_ok = (1..=MAX_EVENT_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'.');
    if !name_ok {
        errors.push(FieldError::new(
            "name",
            "1 to 64 characters of a-z, 0-9, `_` and `.`, e.g. `inbox.filter_changed`",
        ));
    }
    if properties_len > MAX_EVENT_PROPERTIES {
        errors.push(FieldError::new(
            "properties",
            format!(
                "properties are {properties_len} bytes as JSON; at most {MAX_EVENT_PROPERTIES}"
            ),
        ));
    }
    match (occurred_raw, occurred_at) {
        (Some(_), None) => errors.push(FieldError::new(
            "occurred_at",
            "an RFC 3339 timestamp, e.g. 2026-11-22T11:36:41Z",
        )),
        (_, Some(t))
            if t < now - ::time::Duration::hours(EVENT_PAST_HOURS)
                || t > now + ::time::Duration::seconds(EVENT_FUTURE_SECONDS) =>
        {
            errors.push(FieldError::new(
                "occurred_at",
                "must lie within the last 24 hours and not in the future; leave it out for now",
            ))
        }
        _ => {}
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(crate::error::Error::validation(errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(pairs: &[(usize, i64)]) -> [i64; BUCKETS] {
        let mut h = [0; BUCKETS];
        for &(i, n) in pairs {
            h[i] = n;
        }
        h
    }

    #[test]
    fn percentiles_interpolate_inside_the_bucket_that_holds_the_rank() {
        assert_eq!(percentile(&[0; BUCKETS], 0.5), None);
        // 10 decisions in (60, 120]: p50 is half-way, p90 near the top.
        let h = hist(&[(3, 10)]);
        assert_eq!(percentile(&h, 0.5), Some(90.0));
        assert_eq!(percentile(&h, 0.9), Some(114.0));
        // 9 fast ones (≤ 10 s) and one in (1 h, 2 h]: p50 fast, p90 still fast, p100 slow.
        let h = hist(&[(0, 9), (8, 1)]);
        assert_eq!(percentile(&h, 0.5), Some(5.6), "50/9 s, to a tenth");
        assert_eq!(percentile(&h, 0.9), Some(10.0));
        assert_eq!(percentile(&h, 1.0), Some(7200.0));
        // Beyond a week: the floor of the open bucket.
        assert_eq!(percentile(&hist(&[(14, 3)]), 0.5), Some(604800.0));
        // A single decision: every percentile lies in its bucket.
        assert_eq!(percentile(&hist(&[(4, 1)]), 0.5), Some(210.0));
        // 10 in (10, 30]: 10 + 20 × 0.7 is 24.000000000000004 in floats.
        assert_eq!(percentile(&hist(&[(1, 10)]), 0.7), Some(24.0));
    }

    #[test]
    fn windows_end_today_and_events_are_checked() {
        let now = crate::domain::time::parse("2026-11-23T10:00:00Z").unwrap();
        assert_eq!(first_day(now, 7), "2026-11-17");
        assert_eq!(window_days("30d"), Some(30));
        assert_eq!(window_days("1y"), None);
        assert!(check_event("inbox.opened", 10, None, None, now).is_ok());
        assert!(check_event("Inbox", 10, None, None, now).is_err());
        assert!(check_event("a", 5000, None, None, now).is_err());
        let old = now - ::time::Duration::hours(25);
        assert!(check_event("a", 0, Some(old), Some("x"), now).is_err());
    }
}
