//! The one place that reads the system clock. Use cases read a `Clock` once
//! and pass `now` down; store and domain functions take `now` as a parameter.
//! clippy (`clippy.toml`, `disallowed-methods`) refuses the system clock
//! anywhere else, so expiry, snooze, reminders and backoff are tested by
//! moving a test clock instead of sleeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use tokio::sync::watch;

use crate::domain::time::Timestamp;

/// Wall-clock time for the service: the system clock plus an offset that only
/// tests move (`advance`). Cheap to clone; clones share the offset.
#[derive(Clone)]
pub struct Clock {
    inner: Arc<Inner>,
}

struct Inner {
    /// Milliseconds added to the system clock; 0 in production.
    offset_ms: AtomicI64,
    /// Bumped on every `advance`, so background loops run their pass at once
    /// instead of waiting for their next tick.
    moved: watch::Sender<u64>,
}

impl Default for Clock {
    fn default() -> Self {
        Self::system()
    }
}

impl Clock {
    /// The system clock.
    pub fn system() -> Self {
        Self {
            inner: Arc::new(Inner {
                offset_ms: AtomicI64::new(0),
                moved: watch::Sender::new(0),
            }),
        }
    }

    /// Now, in UTC.
    #[allow(clippy::disallowed_methods)] // the one system clock read
    pub fn now(&self) -> Timestamp {
        let offset = self.inner.offset_ms.load(Ordering::Relaxed);
        time::OffsetDateTime::now_utc() + time::Duration::milliseconds(offset)
    }

    /// Moves this clock (and every clone) forward; for tests of expiry,
    /// snooze and backoff. Background loops wake and run their pass.
    pub fn advance(&self, by: time::Duration) {
        let ms = i64::try_from(by.whole_milliseconds()).unwrap_or(i64::MAX);
        self.inner.offset_ms.fetch_add(ms, Ordering::Relaxed);
        self.inner.moved.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Changes whenever the clock is moved by `advance`.
    pub fn moved(&self) -> watch::Receiver<u64> {
        self.inner.moved.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advance_moves_every_clone() {
        let a = Clock::system();
        let b = a.clone();
        let before = b.now();
        a.advance(time::Duration::hours(2));
        let after = b.now();
        assert!(after - before >= time::Duration::hours(2));
        assert!(after - before < time::Duration::hours(2) + time::Duration::minutes(1));
    }
}
