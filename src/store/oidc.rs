//! Browser sign-in transactions (`oidc_logins`): what the callback needs to
//! finish a login it started — nonce, PKCE verifier, destination, browser
//! binding. Keyed by the SHA-256 of `state`; each row is used at most once.

use rusqlite::{Connection, OptionalExtension, params};

use crate::domain::credentials::hash_secret;
use crate::error::Result;

/// One started sign-in, as the callback reads it back.
#[derive(Clone, Debug)]
pub struct Login {
    pub provider: String,
    pub nonce: String,
    pub pkce_verifier: String,
    /// A local path, checked when the login started.
    pub next: String,
    /// SHA-256 of the binding cookie's value.
    pub binding_hash: String,
    pub expires_at: String,
}

/// Records a started sign-in under `state` (stored hashed).
pub fn insert(c: &Connection, state: &str, login: &Login, now: &str) -> Result<()> {
    c.execute(
        "INSERT INTO oidc_logins(state_hash, provider, nonce, pkce_verifier, next, binding_hash, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            hash_secret(state),
            login.provider,
            login.nonce,
            login.pkce_verifier,
            login.next,
            login.binding_hash,
            now,
            login.expires_at
        ],
    )?;
    Ok(())
}

/// Takes the sign-in started under `state`: returns it and deletes it, so a
/// replayed callback finds nothing. An expired row is deleted and not returned.
pub fn take(c: &Connection, state: &str, now: &str) -> Result<Option<Login>> {
    let found = c
        .query_row(
            "DELETE FROM oidc_logins WHERE state_hash = ?1
             RETURNING provider, nonce, pkce_verifier, next, binding_hash, expires_at",
            [hash_secret(state)],
            |r| {
                Ok(Login {
                    provider: r.get(0)?,
                    nonce: r.get(1)?,
                    pkce_verifier: r.get(2)?,
                    next: r.get(3)?,
                    binding_hash: r.get(4)?,
                    expires_at: r.get(5)?,
                })
            },
        )
        .optional()?;
    Ok(found.filter(|l| l.expires_at.as_str() > now))
}

/// Deletes abandoned sign-ins (the person never came back); returns how many.
pub fn purge_expired(c: &Connection, now: &str) -> Result<usize> {
    Ok(c.execute("DELETE FROM oidc_logins WHERE expires_at <= ?1", [now])?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Connection {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        c
    }

    fn login(expires_at: &str) -> Login {
        Login {
            provider: "op".into(),
            nonce: "n".into(),
            pkce_verifier: "v".into(),
            next: "/app".into(),
            binding_hash: hash_secret("b"),
            expires_at: expires_at.into(),
        }
    }

    #[test]
    fn a_login_is_taken_once() {
        let c = db();
        insert(
            &c,
            "s1",
            &login("2026-01-01T00:10:00.000Z"),
            "2026-01-01T00:00:00.000Z",
        )
        .unwrap();
        let got = take(&c, "s1", "2026-01-01T00:01:00.000Z").unwrap().unwrap();
        assert_eq!(got.nonce, "n");
        assert!(
            take(&c, "s1", "2026-01-01T00:01:00.000Z")
                .unwrap()
                .is_none()
        );
        assert!(
            take(&c, "other", "2026-01-01T00:01:00.000Z")
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn an_expired_login_is_not_returned_and_is_purged() {
        let c = db();
        insert(
            &c,
            "s1",
            &login("2026-01-01T00:10:00.000Z"),
            "2026-01-01T00:00:00.000Z",
        )
        .unwrap();
        assert!(
            take(&c, "s1", "2026-01-01T00:10:00.000Z")
                .unwrap()
                .is_none()
        );
        insert(
            &c,
            "s2",
            &login("2026-01-01T00:10:00.000Z"),
            "2026-01-01T00:00:00.000Z",
        )
        .unwrap();
        assert_eq!(purge_expired(&c, "2026-01-01T00:11:00.000Z").unwrap(), 1);
    }
}
