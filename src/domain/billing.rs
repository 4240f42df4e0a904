//! Plans' rules without I/O (guide: "Plans and billing"; DESIGN §14): what
//! is limited, the calendar month a use counts in, and whether one more fits.

use time::{Date, Month, OffsetDateTime, Time, UtcOffset};

use crate::config::PlanConfig;
use crate::domain::time::Timestamp;

/// What a plan limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// Actions created this month.
    Actions,
    /// Runs started this month.
    Runs,
    /// Members plus pending invitations.
    Members,
    /// Sources not revoked.
    Sources,
}

impl Resource {
    pub fn as_str(self) -> &'static str {
        match self {
            Resource::Actions => "actions",
            Resource::Runs => "runs",
            Resource::Members => "members",
            Resource::Sources => "sources",
        }
    }

    /// Whether the use is counted per calendar month (else it is a level).
    pub fn monthly(self) -> bool {
        matches!(self, Resource::Actions | Resource::Runs)
    }

    /// The plan's limit on it; None: unlimited.
    pub fn limit(self, plan: &PlanConfig) -> Option<u64> {
        match self {
            Resource::Actions => plan.actions_per_month,
            Resource::Runs => plan.runs_per_month,
            Resource::Members => plan.members,
            Resource::Sources => plan.sources,
        }
    }
}

/// One calendar month in UTC: `key` (`YYYY-MM`, the counter row's period),
/// its first instant and the first instant of the next month.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Period {
    pub key: String,
    pub start: Timestamp,
    pub end: Timestamp,
}

/// The calendar month (UTC) `now` falls in.
pub fn period(now: Timestamp) -> Period {
    let now = now.to_offset(UtcOffset::UTC);
    let first = |y: i32, m: Month| {
        // The first of a month always exists.
        Date::from_calendar_date(y, m, 1)
            .map(|d| OffsetDateTime::new_utc(d, Time::MIDNIGHT))
            .unwrap_or(now)
    };
    let (y, m) = (now.year(), now.month());
    let (ny, nm) = match m {
        Month::December => (y + 1, Month::January),
        _ => (y, m.next()),
    };
    Period {
        key: format!("{y:04}-{:02}", u8::from(m)),
        start: first(y, m),
        end: first(ny, nm),
    }
}

/// Whether one more use fits under `limit` when `used` are used.
pub fn one_more_fits(limit: Option<u64>, used: u64) -> bool {
    limit.is_none_or(|l| used < l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::time::{format, parse};

    #[test]
    fn the_period_is_the_calendar_month_in_utc() {
        let p = period(parse("2026-12-31T23:30:00-02:00").unwrap());
        assert_eq!(p.key, "2027-01");
        assert_eq!(format(p.start), "2027-01-01T00:00:00.000Z");
        assert_eq!(format(p.end), "2027-02-01T00:00:00.000Z");
        let p = period(parse("2026-11-30T12:00:00Z").unwrap());
        assert_eq!(
            (p.key.as_str(), format(p.end)),
            ("2026-11", "2026-12-01T00:00:00.000Z".into())
        );
    }

    #[test]
    fn exactly_the_limit_fits() {
        assert!(one_more_fits(None, 1_000_000));
        assert!(one_more_fits(Some(3), 2));
        assert!(!one_more_fits(Some(3), 3));
        assert!(!one_more_fits(Some(0), 0));
    }
}
