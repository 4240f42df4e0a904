//! Secrets waiting for their one showing on a dashboard page
//! (POST-redirect-GET; guide: "Rotating keys"). The POST that made them puts
//! them here under a random id that only the person's session holds, then
//! redirects; the GET takes them out and shows them, so a reload shows nothing
//! new and changes nothing. Held in this process's memory only — never in the
//! database, the session record or a URL — for a few minutes at most, so at
//! rest hds still keeps only hashes of keys. A restart loses what was not yet
//! shown; the person replaces the keys again.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::domain::credentials;
use crate::domain::time::Timestamp;
use crate::store::sources::Secrets;

/// How long secrets wait for the redirect's GET.
const WAIT: time::Duration = time::Duration::minutes(10);
/// Bound on waiting entries; past it the oldest are dropped wholesale.
const MAX_ENTRIES: usize = 1_000;

/// Secrets of one Source made by one person, with the heading they are shown under.
#[derive(Clone, Debug)]
pub struct Pending {
    pub user_id: String,
    pub source_id: String,
    pub title: String,
    pub secrets: Secrets,
}

#[derive(Default)]
pub struct ShownOnce {
    map: Mutex<HashMap<String, (Timestamp, Pending)>>,
}

impl ShownOnce {
    /// Holds `pending` until `now` + a few minutes; returns the id to keep in
    /// the session.
    pub fn put(&self, pending: Pending, now: Timestamp) -> String {
        let id = credentials::new_secret();
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, (until, _)| *until > now);
        if map.len() >= MAX_ENTRIES {
            map.clear();
        }
        map.insert(id.clone(), (now + WAIT, pending));
        id
    }

    /// Takes the secrets held under `id` for `user_id` (gone afterwards,
    /// whoever asked); None when there are none, they belong to someone else
    /// or they waited too long.
    pub fn take(&self, id: &str, user_id: &str, now: Timestamp) -> Option<Pending> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let (until, pending) = map.remove(id)?;
        (until > now && pending.user_id == user_id).then_some(pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(user: &str) -> Pending {
        Pending {
            user_id: user.into(),
            source_id: "src_1".into(),
            title: "New keys".into(),
            secrets: Secrets::default(),
        }
    }

    #[test]
    fn secrets_are_taken_once_by_their_owner_within_the_wait() {
        let held = ShownOnce::default();
        let now = time::OffsetDateTime::UNIX_EPOCH;
        let id = held.put(pending("usr_a"), now);
        assert!(held.take(&id, "usr_a", now).is_some());
        assert!(held.take(&id, "usr_a", now).is_none(), "only once");

        let id = held.put(pending("usr_a"), now);
        assert!(held.take(&id, "usr_b", now).is_none(), "not someone else's");
        assert!(
            held.take(&id, "usr_a", now).is_none(),
            "dropped on a wrong take"
        );

        let id = held.put(pending("usr_a"), now);
        assert!(
            held.take(&id, "usr_a", now + WAIT).is_none(),
            "waited too long"
        );
    }
}
