//! Rate limiting (guide: "Rate limiting": 429 RATE_LIMITED with Retry-After),
//! token buckets in memory (one process serves an instance): per credential
//! (a Source or user, checked after authentication), and per client address
//! for what anyone can do before authenticating: the sign-in routes that write
//! or call out, and refused credentials.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

use crate::app::AppState;
use crate::error::{Code, Error, Result};
use crate::http::client_addr;

pub struct Limiter<K: Hash + Eq + Clone = String> {
    inner: Option<DefaultKeyedRateLimiter<K>>,
    clock: DefaultClock,
}

impl Limiter<String> {
    /// Per Source or user: `per_second` 0 disables limiting; the burst is twice the rate.
    pub fn new(per_second: u32) -> Self {
        Self::with_quota(NonZeroU32::new(per_second).map(|rate| {
            let burst = NonZeroU32::new(per_second.saturating_mul(2)).unwrap_or(rate);
            Quota::per_second(rate).allow_burst(burst)
        }))
    }

    pub fn check(&self, key: &str) -> Result<()> {
        self.spend(&key.to_owned()).map_err(|wait| {
            Error::new(
                Code::RateLimited,
                "too many requests for this credential; wait and retry with backoff",
            )
            .retry_after(whole_seconds(wait))
        })
    }
}

impl<K: Hash + Eq + Clone> Limiter<K> {
    /// `None` disables limiting.
    fn with_quota(quota: Option<Quota>) -> Self {
        Self {
            inner: quota.map(governor::RateLimiter::keyed),
            clock: DefaultClock::default(),
        }
    }

    /// Takes one unit from `key`'s bucket, or says how long until one is there.
    fn spend(&self, key: &K) -> std::result::Result<(), Duration> {
        let Some(limiter) = &self.inner else {
            return Ok(());
        };
        limiter
            .check_key(key)
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }

    /// Drops buckets that are full again, bounding memory.
    pub fn prune(&self) {
        if let Some(l) = &self.inner {
            l.retain_recent();
            l.shrink_to_fit();
        }
    }
}

/// Retry-After: whole seconds, rounded up, at least 1.
fn whole_seconds(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

/// The per-address budget. A client key is what `client_addr::key` returns
/// (None: the peer is unknown, one shared key).
pub struct AddressLimiter {
    budget: Limiter<Option<IpAddr>>,
    /// Addresses that ran out, until their next unit: refused before hds does
    /// any work for a credential it has not seen (`gate`).
    blocked: RwLock<HashMap<Option<IpAddr>, Instant>>,
}

impl AddressLimiter {
    /// `per_minute` 0 disables; `burst` is how many a fresh address may send at
    /// once (at least 1).
    pub fn new(per_minute: u32, burst: u32) -> Self {
        let quota = NonZeroU32::new(per_minute).map(|rate| {
            Quota::per_minute(rate).allow_burst(NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN))
        });
        Self {
            budget: Limiter::with_quota(quota),
            blocked: RwLock::default(),
        }
    }

    /// Spends one unit of `client`'s budget: 429 when it is used up.
    pub fn spend(&self, client: Option<IpAddr>) -> Result<()> {
        self.budget.spend(&client).map_err(|wait| {
            let until = Instant::now() + wait;
            let mut blocked = self.blocked.write().unwrap_or_else(|p| p.into_inner());
            if blocked.insert(client, until).is_none_or(|was| was < Instant::now()) {
                tracing::info!(client.addr = %shown(client), "address over its sign-in and failed-authentication budget");
            }
            refusal(wait)
        })
    }

    /// Refuses, without spending, an address whose budget is used up: called
    /// before looking up a credential, so a client that keeps presenting bad
    /// ones costs a map lookup, not a database read.
    pub fn gate(&self, client: Option<IpAddr>) -> Result<()> {
        if self.budget.inner.is_none() {
            return Ok(());
        }
        let blocked = self.blocked.read().unwrap_or_else(|p| p.into_inner());
        match blocked
            .get(&client)
            .map(|until| until.saturating_duration_since(Instant::now()))
        {
            Some(wait) if !wait.is_zero() => Err(refusal(wait)),
            _ => Ok(()),
        }
    }

    /// A credential was refused: counts against `client`; once the budget is
    /// used up the answer is 429 instead of `e`.
    pub fn refused(&self, client: Option<IpAddr>, e: Error) -> Error {
        let counts = matches!(
            e.code,
            Code::AuthRequired | Code::InvalidApiKey | Code::SourceRevoked
        );
        match counts.then(|| self.spend(client)) {
            Some(Err(limited)) => limited,
            _ => e,
        }
    }

    /// Drops full buckets and ended blocks, bounding memory.
    pub fn prune(&self) {
        self.budget.prune();
        let now = Instant::now();
        let mut blocked = self.blocked.write().unwrap_or_else(|p| p.into_inner());
        blocked.retain(|_, until| *until > now);
        blocked.shrink_to_fit();
    }
}

fn shown(client: Option<IpAddr>) -> String {
    client.map_or_else(|| "unknown".to_owned(), |ip| ip.to_string())
}

fn refusal(wait: Duration) -> Error {
    Error::new(
        Code::RateLimited,
        "too many sign-in attempts, failed authentications or refused links from this address; wait and retry",
    )
    .with_detail("scope", "address")
    .retry_after(whole_seconds(wait))
}

/// Spends one unit of the client address's budget before the handler runs:
/// the extractor of every route anyone may call without a credential that
/// writes a row or calls an identity provider. Listed first among a handler's
/// arguments, so it runs before any other extractor. The routes that take it
/// (guide: "Rate limiting"): sign-in start, native challenge, native and Apple
/// code exchanges, sign-in link GET and POST, the invitation link's GET and
/// POST and `POST /v1/workspace-invitations/accept`.
pub struct AddressBudget;

impl FromRequestParts<AppState> for AddressBudget {
    type Rejection = Error;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let client = client_addr::key(parts, &state.services.config);
        state.addresses.spend(client)?;
        Ok(Self)
    }
}

/// The address of a caller whose budget is not used up (`gate`), without
/// spending any: for a route whose link carries its own credential (the
/// unsubscribe link), which spends a unit only when it refuses one
/// (`AddressLimiter::spend`), so the few addresses a mail provider sends
/// its one-click POSTs from are not throttled by valid links.
pub struct AddressGate(pub Option<IpAddr>);

impl FromRequestParts<AppState> for AddressGate {
    type Rejection = Error;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let client = client_addr::key(parts, &state.services.config);
        state.addresses.gate(client)?;
        Ok(Self(client))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_gets_its_burst_then_429_with_retry_after() {
        let limits = AddressLimiter::new(1, 3);
        let a = Some(IpAddr::from([198, 51, 100, 7]));
        for _ in 0..3 {
            limits.spend(a).unwrap();
        }
        let e = limits.spend(a).unwrap_err();
        assert_eq!(e.code, Code::RateLimited);
        assert!(
            e.retry_after.is_some_and(|s| (1..=60).contains(&s)),
            "{:?}",
            e.retry_after
        );
        // Blocked now: refused before any work; other addresses are untouched.
        assert_eq!(limits.gate(a).unwrap_err().code, Code::RateLimited);
        limits.gate(None).unwrap();
        limits.spend(None).unwrap();
    }

    #[test]
    fn only_refused_credentials_count() {
        let limits = AddressLimiter::new(1, 1);
        let a = Some(IpAddr::from([198, 51, 100, 7]));
        let other = Error::new(Code::ValidationError, "no");
        assert_eq!(limits.refused(a, other).code, Code::ValidationError);
        let bad = || Error::new(Code::InvalidApiKey, "unknown key");
        assert_eq!(limits.refused(a, bad()).code, Code::InvalidApiKey);
        assert_eq!(limits.refused(a, bad()).code, Code::RateLimited);
    }

    #[test]
    fn zero_disables() {
        let limits = AddressLimiter::new(0, 10);
        for _ in 0..100 {
            limits.spend(None).unwrap();
        }
        limits.gate(None).unwrap();
    }
}
