//! One at a time per key, within this process: for work that calls out
//! (Stripe) between reading the store and writing what came back, where a
//! transaction cannot span the call. hds runs as one process per data
//! directory, so a lock held here is held for every request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::OwnedMutexGuard;

type Slot = tokio::sync::Mutex<()>;

/// Async locks by key. The map holds each key's lock weakly: it lives while
/// someone holds or awaits it (a wait given up, a request cancelled, lets
/// go of it like a release), and a dead entry is swept at the next lock.
#[derive(Default)]
pub struct Serial {
    slots: Mutex<HashMap<String, Weak<Slot>>>,
}

/// Held until dropped; the next caller with the same key goes on then. It
/// owns its lock, so it may move into a task of its own.
pub struct SerialGuard {
    _held: OwnedMutexGuard<()>,
}

impl Serial {
    /// Waits for every earlier holder of `key` to finish.
    pub async fn lock(&self, key: &str) -> SerialGuard {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            slots.retain(|_, w| w.strong_count() > 0);
            match slots.get(key).and_then(Weak::upgrade) {
                Some(slot) => slot,
                None => {
                    let slot = Arc::new(Slot::default());
                    slots.insert(key.to_owned(), Arc::downgrade(&slot));
                    slot
                }
            }
        };
        SerialGuard {
            _held: slot.lock_owned().await,
        }
    }

    /// Keys held or awaited now, for tests.
    pub fn len(&self) -> usize {
        self.slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .filter(|w| w.strong_count() > 0)
            .count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test]
    async fn one_holder_per_key_and_entries_go_when_released() {
        let serial = Arc::new(Serial::default());
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (serial, inside, most) = (serial.clone(), inside.clone(), most.clone());
                tokio::spawn(async move {
                    let _g = serial.lock("ws_1").await;
                    let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 1);
        assert!(serial.is_empty());
    }

    #[tokio::test]
    async fn a_wait_given_up_leaves_no_entry() {
        let serial = Serial::default();
        let held = serial.lock("ws_1").await;
        let waited = tokio::time::timeout(Duration::from_millis(20), serial.lock("ws_1")).await;
        assert!(waited.is_err(), "the key is held");
        assert_eq!(serial.len(), 1);
        drop(held);
        assert!(serial.is_empty());
    }

    #[tokio::test]
    async fn a_wait_given_up_after_the_holder_left_leaves_no_entry() {
        let serial = Serial::default();
        let held = serial.lock("ws_1").await;
        let mut waiting = Box::pin(serial.lock("ws_1"));
        assert!(futures::poll!(&mut waiting).is_pending());
        // The holder leaves while one waits: the entry stays for the waiter…
        drop(held);
        assert_eq!(serial.len(), 1);
        // …which gives up before it runs again.
        drop(waiting);
        assert!(serial.is_empty());
    }

    #[tokio::test]
    async fn other_keys_do_not_wait() {
        let serial = Serial::default();
        let _a = serial.lock("ws_1").await;
        let b = tokio::time::timeout(Duration::from_secs(5), serial.lock("ws_2")).await;
        assert!(b.is_ok());
        assert_eq!(serial.len(), 2);
        drop(b);
        assert_eq!(serial.len(), 1);
    }
}
