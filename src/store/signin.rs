//! Sign-in records: identities (issuer, subject) → user, one-time links,
//! native-flow nonces, pending invitations. Secrets are stored as SHA-256.

use rusqlite::{Connection, OptionalExtension, params};

use crate::domain::credentials::hash_secret;
use crate::error::Result;

/// The user an identity was linked to, if any; refreshes `last_seen_at`.
pub fn user_of_identity(
    c: &Connection,
    issuer: &str,
    subject: &str,
    now: &str,
) -> Result<Option<String>> {
    let user: Option<String> = c
        .query_row(
            "SELECT user_id FROM identities WHERE issuer = ?1 AND subject = ?2",
            params![issuer, subject],
            |r| r.get(0),
        )
        .optional()?;
    if user.is_some() {
        c.execute(
            "UPDATE identities SET last_seen_at = ?3 WHERE issuer = ?1 AND subject = ?2",
            params![issuer, subject, now],
        )?;
    }
    Ok(user)
}

/// Whether the user already has another identity at this issuer.
pub fn has_identity_at(c: &Connection, user_id: &str, issuer: &str) -> Result<bool> {
    Ok(c.query_row(
        "SELECT EXISTS (SELECT 1 FROM identities WHERE user_id = ?1 AND issuer = ?2)",
        params![user_id, issuer],
        |r| r.get(0),
    )?)
}

pub fn link_identity(
    c: &Connection,
    issuer: &str,
    subject: &str,
    user_id: &str,
    email: Option<&str>,
    now: &str,
) -> Result<()> {
    c.execute(
        "INSERT INTO identities(issuer, subject, user_id, email, created_at, last_seen_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
        params![issuer, subject, user_id, email, now],
    )?;
    Ok(())
}

/// Whether a pending (unaccepted, unrevoked, unexpired) invitation names this e-mail.
pub fn has_pending_invitation(c: &Connection, email: &str, now: &str) -> Result<bool> {
    Ok(c.query_row(
        "SELECT EXISTS (SELECT 1 FROM invitations WHERE email = ?1 AND accepted_at IS NULL
           AND revoked_at IS NULL AND expires_at > ?2)",
        params![email, now],
        |r| r.get(0),
    )?)
}

/// Stores a one-time link secret for `user_id`.
pub fn insert_link(
    c: &Connection,
    secret: &str,
    user_id: &str,
    now: &str,
    expires_at: &str,
) -> Result<()> {
    c.execute(
        "INSERT INTO signin_links(token_hash, user_id, created_at, expires_at) VALUES (?1, ?2, ?3, ?4)",
        params![hash_secret(secret), user_id, now, expires_at],
    )?;
    Ok(())
}

/// The key a request for a mailed link is counted by: a hash of the
/// address as asked for (trimmed, ASCII letters lower-cased, as the
/// accounts' `COLLATE NOCASE` compares), whether or not an account has it.
pub fn address_key(email: &str) -> String {
    hash_secret(&email.trim().to_ascii_lowercase())
}

/// Requests for a mailed link to this address (`address_key`) after
/// `since`: how many, and the latest.
pub fn requests_since(
    c: &Connection,
    address_key: &str,
    since: &str,
) -> Result<(i64, Option<String>)> {
    Ok(c.prepare_cached(
        "SELECT count(*), max(requested_at) FROM signin_requests
          WHERE address_hash = ?1 AND requested_at > ?2",
    )?
    .query_row(params![address_key, since], |r| Ok((r.get(0)?, r.get(1)?)))?)
}

/// Records a request for a mailed link (not throttled).
pub fn record_request(c: &Connection, address_key: &str, at: &str) -> Result<()> {
    c.prepare_cached("INSERT INTO signin_requests(address_hash, requested_at) VALUES (?1, ?2)")?
        .execute(params![address_key, at])?;
    Ok(())
}

/// Forgets the requests for an address (an account deleted).
pub fn forget_requests(c: &Connection, email: &str) -> Result<()> {
    c.prepare_cached("DELETE FROM signin_requests WHERE address_hash = ?1")?
        .execute([address_key(email)])?;
    Ok(())
}

/// Housekeeping: requests older than the throttle's day
/// (`signin_requests_by_age`).
pub fn prune_requests(c: &Connection, before: &str) -> Result<usize> {
    Ok(c.execute(
        "DELETE FROM signin_requests WHERE requested_at <= ?1",
        [before],
    )?)
}

/// Uses the link once: returns its user when it was unused and unexpired.
pub fn redeem_link(c: &Connection, secret: &str, now: &str) -> Result<Option<String>> {
    Ok(c.query_row(
        "UPDATE signin_links SET used_at = ?2
         WHERE token_hash = ?1 AND used_at IS NULL AND expires_at > ?2 RETURNING user_id",
        params![hash_secret(secret), now],
        |r| r.get(0),
    )
    .optional()?)
}

/// Whether a link is still usable, without using it (the confirmation page).
/// The e-mail address of the account a live link signs in (unused, not
/// expired); None for any other secret.
pub fn live_link_email(c: &Connection, secret: &str, now: &str) -> Result<Option<String>> {
    Ok(c.query_row(
        "SELECT u.email FROM signin_links l JOIN users u ON u.id = l.user_id
         WHERE l.token_hash = ?1 AND l.used_at IS NULL AND l.expires_at > ?2",
        params![hash_secret(secret), now],
        |r| r.get(0),
    )
    .optional()?)
}

pub fn insert_nonce(
    c: &Connection,
    nonce: &str,
    provider: &str,
    now: &str,
    expires_at: &str,
) -> Result<()> {
    c.execute(
        "INSERT INTO auth_nonces(nonce_hash, provider, created_at, expires_at) VALUES (?1, ?2, ?3, ?4)",
        params![hash_secret(nonce), provider, now, expires_at],
    )?;
    Ok(())
}

/// Spends a nonce: true when it was issued for this provider, unused and unexpired.
pub fn consume_nonce(c: &Connection, nonce: &str, provider: &str, now: &str) -> Result<bool> {
    Ok(c.execute(
        "UPDATE auth_nonces SET used_at = ?3
         WHERE nonce_hash = ?1 AND provider = ?2 AND used_at IS NULL AND expires_at > ?3",
        params![hash_secret(nonce), provider, now],
    )? == 1)
}

/// Housekeeping: spent or expired links, nonces and login transactions.
pub fn prune(c: &Connection, now: &str) -> Result<usize> {
    let mut n = c.execute("DELETE FROM signin_links WHERE expires_at <= ?1", [now])?;
    n += c.execute("DELETE FROM auth_nonces WHERE expires_at <= ?1", [now])?;
    n += c.execute("DELETE FROM oidc_logins WHERE expires_at <= ?1", [now])?;
    Ok(n)
}
