//! In-process wake-ups for long polls: a waiter registers interest in an Action
//! before reading it, and whoever closes the Action wakes it after the commit.
//! No database connection is held while waiting.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{Notify, watch};

pub struct Waiters {
    by_action: Mutex<HashMap<String, Arc<Notify>>>,
    /// How many Actions have a waiter, published on every change, so an
    /// observer (the tests) can await a held long poll instead of polling.
    held: watch::Sender<usize>,
    /// Live subscriptions: requests waiting on an Action (the metrics'
    /// `hds_long_polls_held`); two polls on one Action count twice.
    polls: AtomicUsize,
}

impl Default for Waiters {
    fn default() -> Self {
        Self {
            by_action: Mutex::default(),
            held: watch::Sender::new(0),
            polls: AtomicUsize::new(0),
        }
    }
}

/// Interest in one Action; dropping it cleans up the entry when it was the last.
pub struct Subscription<'a> {
    waiters: &'a Waiters,
    action_id: String,
    notify: Arc<Notify>,
}

impl Waiters {
    pub fn subscribe(&self, action_id: &str) -> Subscription<'_> {
        let mut map = self.by_action.lock().unwrap_or_else(|p| p.into_inner());
        let notify = map.entry(action_id.to_owned()).or_default().clone();
        self.polls.fetch_add(1, Ordering::Relaxed);
        self.held.send_replace(map.len());
        Subscription {
            waiters: self,
            action_id: action_id.to_owned(),
            notify,
        }
    }

    /// Wakes every waiter of this Action. Call after the change is committed.
    pub fn wake(&self, action_id: &str) {
        let map = self.by_action.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = map.get(action_id) {
            n.notify_waiters();
        }
    }

    pub fn len(&self) -> usize {
        self.by_action.lock().map(|m| m.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Requests subscribed right now: held long polls and blocking creates
    /// (a Source's plain read subscribes too, for the moment it reads).
    pub fn polls(&self) -> usize {
        self.polls.load(Ordering::Relaxed)
    }

    /// Watches [`Waiters::len`]: the receiver sees each new count.
    pub fn held(&self) -> watch::Receiver<usize> {
        self.held.subscribe()
    }
}

impl Subscription<'_> {
    /// A future that completes on the next wake; create it *before* reading
    /// the state it guards, so a wake in between is not lost.
    pub fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.notify.notified()
    }
}

impl Drop for Subscription<'_> {
    fn drop(&mut self) {
        self.waiters.polls.fetch_sub(1, Ordering::Relaxed);
        let mut map = self
            .waiters
            .by_action
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        // Two references left (the map's and ours) means nobody else is waiting.
        if Arc::strong_count(&self.notify) <= 2 {
            map.remove(&self.action_id);
            self.waiters.held.send_replace(map.len());
        }
    }
}
