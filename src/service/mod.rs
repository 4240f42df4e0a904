//! Use cases: each public function is one thing a caller can do (create an
//! Action, decide it, rotate a key…). They combine `domain` rules with `store`
//! queries inside one writer transaction, so handlers stay a single call and the
//! API and the dashboard share the same code.

pub mod actions;
pub mod caller;
pub mod dashboard;
pub mod decisions;
pub mod idempotency;
pub mod inbox;
pub mod key_cache;
pub mod keyring;
pub mod oidc;
pub mod signin;
pub mod sources;
pub mod tokens;
pub mod votes;
pub mod waiters;

use std::sync::Arc;

use crate::config::Config;
use crate::store::Db;

/// What every use case may need. Cheap to clone.
#[derive(Clone)]
pub struct Services {
    pub db: Db,
    pub config: Arc<Config>,
    pub keyring: Arc<keyring::Keyring>,
    pub waiters: Arc<waiters::Waiters>,
    pub inflight: Arc<idempotency::InFlight>,
    pub key_cache: Arc<key_cache::KeyCache>,
    /// Bumped after every committed change to any Action, so open dashboards
    /// refresh their inbox (the value itself means nothing).
    pub changes: Arc<tokio::sync::watch::Sender<u64>>,
    /// Identity providers' discovery documents and keys, fetched on first use.
    pub oidc: Arc<oidc::Providers>,
}

impl Services {
    pub fn new(db: Db, config: Arc<Config>) -> Self {
        let keyring = Arc::new(keyring::Keyring::new(config.data_dir.join("keys")));
        Self {
            db,
            config,
            keyring,
            waiters: Arc::default(),
            inflight: Arc::default(),
            key_cache: Arc::default(),
            changes: Arc::new(tokio::sync::watch::Sender::new(0)),
            oidc: Arc::default(),
        }
    }

    /// Tells open dashboards that some Action changed. Call after the commit.
    pub fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }
}
