//! Use cases: each public function is one thing a caller can do (create an
//! Action, decide it, rotate a key…). They combine `domain` rules with `store`
//! queries inside one writer transaction, so handlers stay a single call and the
//! API and the dashboard share the same code.

pub mod account;
pub mod actions;
pub mod analytics;
pub mod batch;
pub mod billing;
pub mod caller;
pub mod changes;
pub mod controls;
pub mod dashboard;
pub mod decisions;
pub mod effects;
pub mod idempotency;
pub mod inbox;
pub mod invitations;
pub mod key_cache;
pub mod keyring;
pub mod mail;
pub mod notification_mail;
pub mod notifications;
pub mod oidc;
pub mod runs;
pub mod serial;
pub mod shown_once;
pub mod signin;
pub mod sources;
pub mod tokens;
pub mod unsubscribe;
pub mod votes;
pub mod waiters;
pub mod webhooks;
pub mod work;
pub mod workspaces;

use std::sync::Arc;

use rusqlite::Connection;

use crate::clock::Clock;
use crate::config::Config;
use crate::error::Result;
use crate::store::Db;
use effects::Effects;

/// What every use case may need. Cheap to clone.
#[derive(Clone)]
pub struct Services {
    pub db: Db,
    pub config: Arc<Config>,
    /// The only source of the current time (tests move it).
    pub clock: Clock,
    pub keyring: Arc<keyring::Keyring>,
    pub waiters: Arc<waiters::Waiters>,
    pub inflight: Arc<idempotency::InFlight>,
    pub key_cache: Arc<key_cache::KeyCache>,
    /// Moved after every committed change that open dashboards show, by
    /// workspace and person, so a page refreshes when what it shows changed.
    pub changes: Arc<changes::Changes>,
    /// Identity providers' discovery documents and keys, fetched on first use.
    pub oidc: Arc<oidc::Providers>,
    /// Wakes the job worker after a commit that queued a job.
    pub jobs_wake: Arc<tokio::sync::Notify>,
    /// The ids of the jobs the worker is running, for the metrics (which
    /// jobs run is kept by the worker, not in their rows).
    pub jobs_running: Arc<std::sync::Mutex<Vec<i64>>>,
    /// New keys and secrets between a dashboard POST and the GET that shows them.
    pub shown_once: Arc<shown_once::ShownOnce>,
    /// Set when the server begins to stop: held requests (long polls,
    /// X-Service-Blocking, the dashboard's event stream) answer at once, so
    /// a stop does not wait out their holds.
    pub stop: Arc<tokio::sync::watch::Sender<bool>>,
    /// One Stripe Checkout start at a time per workspace (billing::checkout).
    pub checkouts: Arc<serial::Serial>,
}

impl Services {
    pub fn new(db: Db, config: Arc<Config>, clock: Clock) -> Self {
        let keyring = Arc::new(keyring::Keyring::new(config.data_dir.join("keys")));
        let changes = Arc::new(changes::Changes::new(changes_base(&clock)));
        Self {
            db,
            config,
            clock,
            keyring,
            waiters: Arc::default(),
            inflight: Arc::default(),
            key_cache: Arc::default(),
            changes,
            stop: Arc::new(tokio::sync::watch::Sender::new(false)),
            oidc: Arc::default(),
            jobs_wake: Arc::default(),
            jobs_running: Arc::default(),
            shown_once: Arc::default(),
            checkouts: Arc::default(),
        }
    }

    /// Resolves once the server has begun to stop (`stop`).
    pub async fn stopping(&self) {
        let mut rx = self.stop.subscribe();
        let _ = rx.wait_for(|stopping| *stopping).await;
    }

    /// Runs `job` in the writer's transaction, then, once it has committed,
    /// applies the effects the job declared (see `effects`).
    pub async fn write<T, F>(&self, job: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &mut Effects) -> Result<T> + Send + 'static,
    {
        let (out, fx) = self.db.write(with_effects(job)).await?;
        self.apply(&fx);
        Ok(out)
    }

    /// `write` for a job that returns `Err` only before its first change
    /// (`Db::write_checks_first`): no savepoint.
    pub async fn write_checks_first<T, F>(&self, job: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &mut Effects) -> Result<T> + Send + 'static,
    {
        let (out, fx) = self.db.write_checks_first(with_effects(job)).await?;
        self.apply(&fx);
        Ok(out)
    }

    /// Applies committed effects: wakes long polls on Actions that closed or
    /// were asked a question, and tells open dashboards that something
    /// changed.
    pub fn apply(&self, fx: &Effects) {
        for id in fx.woken() {
            self.waiters.wake(id);
        }
        if fx.jobs_queued() {
            self.jobs_wake.notify_one();
        }
        self.changes.bump(fx.changed_topics());
    }
}

/// This start's time in milliseconds: the base of every page's view
/// (`changes`), so a view from before a restart is not taken for a current one.
fn changes_base(clock: &Clock) -> u64 {
    u64::try_from(clock.now().unix_timestamp_nanos() / 1_000_000).unwrap_or(0)
}

/// A job with the effects it declares, as a writer closure.
fn with_effects<T>(
    job: impl FnOnce(&Connection, &mut Effects) -> Result<T>,
) -> impl FnOnce(&Connection) -> Result<(T, Effects)> {
    move |c| {
        let mut fx = Effects::default();
        let out = job(c, &mut fx)?;
        Ok((out, fx))
    }
}
