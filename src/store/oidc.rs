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

/// What [`take`] found under a `state`.
#[derive(Debug)]
pub enum Taken {
    /// None, or an expired one (deleted).
    Missing,
    /// One the caller's check refused (another provider, another browser):
    /// left in place, so whoever saw the callback's address cannot end the
    /// sign-in of the browser that started it.
    Refused(Login),
    /// Returned and deleted, so a replayed callback finds nothing.
    Login(Login),
}

/// Takes the sign-in started under `state` when `belongs` accepts it.
pub fn take(
    c: &Connection,
    state: &str,
    now: &str,
    belongs: impl FnOnce(&Login) -> bool,
) -> Result<Taken> {
    let state_hash = hash_secret(state);
    let found = c
        .query_row(
            "SELECT provider, nonce, pkce_verifier, next, binding_hash, expires_at
             FROM oidc_logins WHERE state_hash = ?1",
            [&state_hash],
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
    let Some(login) = found else {
        return Ok(Taken::Missing);
    };
    let live = login.expires_at.as_str() > now;
    if live && !belongs(&login) {
        return Ok(Taken::Refused(login));
    }
    c.execute(
        "DELETE FROM oidc_logins WHERE state_hash = ?1",
        [&state_hash],
    )?;
    Ok(if live {
        Taken::Login(login)
    } else {
        Taken::Missing
    })
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
        let at = "2026-01-01T00:01:00.000Z";
        // Refused by the caller's check: kept for the browser it belongs to.
        assert!(matches!(
            take(&c, "s1", at, |_| false).unwrap(),
            Taken::Refused(_)
        ));
        let Taken::Login(got) = take(&c, "s1", at, |_| true).unwrap() else {
            panic!("not taken")
        };
        assert_eq!(got.nonce, "n");
        assert!(matches!(
            take(&c, "s1", at, |_| true).unwrap(),
            Taken::Missing
        ));
        assert!(matches!(
            take(&c, "other", at, |_| true).unwrap(),
            Taken::Missing
        ));
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
        assert!(matches!(
            take(&c, "s1", "2026-01-01T00:10:00.000Z", |_| true).unwrap(),
            Taken::Missing
        ));
        assert_eq!(
            c.query_row("SELECT count(*) FROM oidc_logins", [], |r| r
                .get::<_, i64>(0))
                .unwrap(),
            0
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
