//! Timestamps: one wire and storage format, RFC 3339 in UTC with milliseconds,
//! so stored text sorts in time order.

use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

pub type Timestamp = OffsetDateTime;

/// `2026-11-22T11:36:41.123Z`
pub fn format(t: Timestamp) -> String {
    let t = t.to_offset(UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

/// Parses any RFC 3339 timestamp (offset or `Z`).
pub fn parse(s: &str) -> Option<Timestamp> {
    OffsetDateTime::parse(s, &Rfc3339).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_is_utc_millis_and_round_trips() {
        let t = parse("2026-11-22T12:36:41.5+01:00").unwrap();
        assert_eq!(format(t), "2026-11-22T11:36:41.500Z");
        assert_eq!(parse(&format(t)).unwrap(), t);
    }
}
