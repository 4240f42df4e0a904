//! Per-credential rate limiting (guide: "Rate limiting": 429 RATE_LIMITED with Retry-After):
//! a token bucket per Source or user, in memory (one process serves an instance).

use std::num::NonZeroU32;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

use crate::error::{Code, Error, Result};

pub struct Limiter {
    inner: Option<DefaultKeyedRateLimiter<String>>,
    clock: DefaultClock,
}

impl Limiter {
    /// `per_second` 0 disables limiting; the burst is twice the rate.
    pub fn new(per_second: u32) -> Self {
        let inner = NonZeroU32::new(per_second).map(|rate| {
            let burst = NonZeroU32::new(per_second.saturating_mul(2)).unwrap_or(rate);
            governor::RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst))
        });
        Self {
            inner,
            clock: DefaultClock::default(),
        }
    }

    pub fn check(&self, key: &str) -> Result<()> {
        let Some(limiter) = &self.inner else {
            return Ok(());
        };
        match limiter.check_key(&key.to_owned()) {
            Ok(()) => Ok(()),
            Err(not_until) => {
                let wait = not_until.wait_time_from(self.clock.now());
                let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                Err(Error::new(
                    Code::RateLimited,
                    "too many requests for this credential; wait and retry with backoff",
                )
                .retry_after(secs.max(1)))
            }
        }
    }

    /// Drops buckets that are full again, bounding memory.
    pub fn prune(&self) {
        if let Some(l) = &self.inner {
            l.retain_recent();
            l.shrink_to_fit();
        }
    }
}
