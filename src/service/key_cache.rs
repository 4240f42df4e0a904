//! An in-process cache of Source-key lookups: most Source requests then skip a
//! database read. Entries are keyed by the key's SHA-256 (never the key), and
//! the whole cache is dropped whenever a Source changes (rotation, revocation),
//! so a rotated or revoked key stops working at once. An entry carries the
//! end of a replaced key's overlap (`KeyOwner::expires_at`), which the caller
//! checks against its clock on every use, so a cached key does not outlive it.
//! Only this process changes Source keys.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::store::sources::KeyOwner;

/// Bound on entries; past it the cache starts over.
const MAX_ENTRIES: usize = 10_000;

#[derive(Default)]
pub struct KeyCache {
    map: Mutex<HashMap<String, KeyOwner>>,
}

impl KeyCache {
    pub fn get(&self, key_hash: &str) -> Option<KeyOwner> {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key_hash)
            .cloned()
    }

    pub fn put(&self, key_hash: String, owner: KeyOwner) {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_ENTRIES {
            map.clear();
        }
        map.insert(key_hash, owner);
    }

    /// Forget everything: call after any change to Sources or their keys.
    pub fn clear(&self) {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}
