//! Secrets waiting for their one showing on a dashboard page
//! (POST-redirect-GET; guide: "The dashboard"): a Source's new keys, a new
//! API token, a new invitation's link. The POST that made them puts them here
//! under a random id that only the person's session holds, then redirects;
//! the GET takes them out and shows them, so a reload shows nothing new and
//! changes nothing. Held in this process's memory only — never in the
//! database, the session record or a URL — for a few minutes at most, so at
//! rest hds still keeps only hashes of keys and tokens. A restart loses what
//! was not yet shown; the person makes them again.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::domain::credentials;
use crate::domain::time::Timestamp;
use crate::store::sources::Secrets;

/// How long secrets wait for the redirect's GET.
const WAIT: time::Duration = time::Duration::minutes(10);
/// Bound on waiting entries; past it the oldest is dropped.
const MAX_ENTRIES: usize = 10_000;
/// Bound on one person's waiting entries; past it their oldest is dropped,
/// so no one can push out another person's secrets.
const MAX_PER_USER: usize = 16;

/// A secret just made, with what its page needs to show it.
#[derive(Clone, Debug)]
pub enum Secret {
    /// New keys and/or webhook secret of a Source (its page), with the
    /// heading they are shown under.
    SourceKeys {
        source_id: String,
        title: String,
        secrets: Secrets,
    },
    /// A new API token (the Account page).
    ApiToken { name: String, token: String },
    /// A new invitation's accept link (the Invitations page); `mailed` when
    /// the invitation e-mail with it is queued.
    InvitationLink {
        email: String,
        url: String,
        mailed: bool,
    },
}

impl Secret {
    /// Which page shows it, and so the session's slot for it: each page
    /// (each Source's) has its own, so a secret waiting for one page is
    /// never taken, or overwritten, by another.
    pub fn slot(&self) -> String {
        match self {
            Secret::SourceKeys { source_id, .. } => Self::source_slot(source_id),
            Secret::ApiToken { .. } => Self::API_TOKEN_SLOT.to_owned(),
            Secret::InvitationLink { .. } => Self::INVITATION_SLOT.to_owned(),
        }
    }

    pub const API_TOKEN_SLOT: &str = "api_token";
    pub const INVITATION_SLOT: &str = "invitation";

    pub fn source_slot(source_id: &str) -> String {
        format!("source:{source_id}")
    }
}

/// A secret made by one person, shown only to them.
#[derive(Clone, Debug)]
pub struct Pending {
    pub user_id: String,
    pub secret: Secret,
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
        let oldest = |map: &HashMap<String, (Timestamp, Pending)>, user: Option<&str>| {
            map.iter()
                .filter(|(_, (_, p))| user.is_none_or(|u| p.user_id == u))
                .min_by_key(|(_, (until, _))| *until)
                .map(|(k, _)| k.clone())
        };
        let mine = map
            .values()
            .filter(|(_, p)| p.user_id == pending.user_id)
            .count();
        if mine >= MAX_PER_USER
            && let Some(k) = oldest(&map, Some(&pending.user_id))
        {
            map.remove(&k);
        }
        if map.len() >= MAX_ENTRIES
            && let Some(k) = oldest(&map, None)
        {
            map.remove(&k);
        }
        map.insert(id.clone(), (now + WAIT, pending));
        id
    }

    /// Takes the secret held under `id` for `user_id` (gone afterwards,
    /// whoever asked); None when there is none, it belongs to someone else
    /// or it waited too long.
    pub fn take(&self, id: &str, user_id: &str, now: Timestamp) -> Option<Secret> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let (until, pending) = map.remove(id)?;
        (until > now && pending.user_id == user_id).then_some(pending.secret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(user: &str) -> Pending {
        Pending {
            user_id: user.into(),
            secret: Secret::ApiToken {
                name: "laptop".into(),
                token: "svc_usr_x".into(),
            },
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

    #[test]
    fn one_person_making_many_pushes_out_only_their_own() {
        let held = ShownOnce::default();
        let now = time::OffsetDateTime::UNIX_EPOCH;
        let theirs = held.put(pending("usr_b"), now);
        let first = held.put(pending("usr_a"), now);
        for i in 1..=MAX_PER_USER as i64 {
            held.put(pending("usr_a"), now + time::Duration::seconds(i));
        }
        assert!(held.take(&first, "usr_a", now).is_none(), "the oldest went");
        assert!(held.take(&theirs, "usr_b", now).is_some(), "not another's");
    }
}
