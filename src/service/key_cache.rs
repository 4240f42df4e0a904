//! An in-process cache of Source-key lookups: most Source requests then skip a
//! database read. Entries are keyed by the key's SHA-256 (never the key), and
//! the whole cache is dropped whenever a Source changes (rotation, revocation),
//! so a rotated or revoked key stops working at once. An entry carries the
//! end of a replaced key's overlap (`KeyOwner::expires_at`), which the caller
//! checks against its clock on every use, so a cached key does not outlive it;
//! a lookup that raced a change is not cached (`put_if`, a generation count).
//! Only this process changes Source keys.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::store::sources::KeyOwner;

/// Bound on entries; past it the cache starts over.
const MAX_ENTRIES: usize = 10_000;

#[derive(Default)]
pub struct KeyCache {
    map: Mutex<HashMap<String, KeyOwner>>,
    /// Bumped by every `clear`: a lookup read before a change must not be
    /// cached after it (`put_if`).
    generation: AtomicU64,
}

impl KeyCache {
    /// The generation to pass to `put_if`: take it before the database read.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Caches a lookup unless a change cleared the cache since `generation`
    /// was taken: a read that raced a rotation or revocation would otherwise
    /// put the old key back as current.
    pub fn put_if(&self, generation: u64, key_hash: String, owner: KeyOwner) {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if self.generation.load(Ordering::SeqCst) != generation {
            return;
        }
        if map.len() >= MAX_ENTRIES {
            map.clear();
        }
        map.insert(key_hash, owner);
    }

    /// Drops one entry (a replaced key whose overlap has ended).
    pub fn forget(&self, key_hash: &str) {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key_hash);
    }

    pub fn get(&self, key_hash: &str) -> Option<KeyOwner> {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key_hash)
            .cloned()
    }

    /// Forget everything: call after any change to Sources or their keys
    /// has committed.
    pub fn clear(&self) {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        self.generation.fetch_add(1, Ordering::SeqCst);
        map.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner() -> KeyOwner {
        KeyOwner {
            source_id: "src_1".into(),
            workspace_id: "ws_1".into(),
            workspace_kind: "personal".into(),
            environment: crate::domain::action::Environment::Live,
            source_revoked: false,
            expires_at: None,
        }
    }

    #[test]
    fn a_lookup_read_before_a_change_is_not_cached_after_it() {
        let cache = KeyCache::default();
        let before = cache.generation();
        // A rotation commits and clears while the lookup is in flight.
        cache.clear();
        cache.put_if(before, "h".into(), owner());
        assert!(cache.get("h").is_none());
        cache.put_if(cache.generation(), "h".into(), owner());
        assert!(cache.get("h").is_some());
        cache.forget("h");
        assert!(cache.get("h").is_none());
    }
}
