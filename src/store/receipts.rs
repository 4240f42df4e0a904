//! Receipt signing keys (public halves) and the receipt chain.

use rusqlite::{Connection, OptionalExtension, params};

use crate::domain::receipt::PublicKey;
use crate::error::Result;

pub fn active_kid(c: &Connection) -> Result<Option<String>> {
    Ok(
        c.prepare_cached("SELECT kid FROM signing_keys WHERE status = 'active'")?
            .query_row([], |r| r.get(0))
            .optional()?,
    )
}

/// Every key that ever signed, oldest first (the JWKS never drops one).
pub fn keys(c: &Connection) -> Result<Vec<PublicKey>> {
    let mut st = c.prepare_cached(
        "SELECT kid, x, status, created_at, retired_at FROM signing_keys ORDER BY created_at, kid",
    )?;
    let rows = st.query_map([], |r| {
        Ok(PublicKey {
            kid: r.get(0)?,
            x: r.get(1)?,
            status: r.get(2)?,
            created_at: r.get(3)?,
            retired_at: r.get(4)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Makes `kid` the active key; the previous one becomes retired (still published).
pub fn activate(c: &Connection, kid: &str, x: &str, now: &str) -> Result<()> {
    c.execute(
        "UPDATE signing_keys SET status = 'retired', retired_at = ?1 WHERE status = 'active'",
        [now],
    )?;
    c.execute(
        "INSERT INTO signing_keys(kid, x, status, created_at) VALUES (?1, ?2, 'active', ?3)",
        params![kid, x, now],
    )?;
    Ok(())
}

/// The status a key has, None for an unknown kid.
pub fn status(c: &Connection, kid: &str) -> Result<Option<String>> {
    Ok(c.query_row(
        "SELECT status FROM signing_keys WHERE kid = ?1",
        [kid],
        |r| r.get(0),
    )
    .optional()?)
}

/// Makes `kid` (public half `x`) revoked: published, and refused by every
/// verifier. Listed or not, active or not (a restored database may hold it
/// as either). Whether anything changed.
pub fn mark_revoked(c: &Connection, kid: &str, x: &str, now: &str) -> Result<bool> {
    let n = c.execute(
        "INSERT INTO signing_keys(kid, x, status, created_at, retired_at) VALUES (?1, ?2, 'revoked', ?3, ?3)
         ON CONFLICT(kid) DO UPDATE SET status = 'revoked', retired_at = coalesce(retired_at, ?3)
          WHERE status <> 'revoked'",
        params![kid, x, now],
    )?;
    Ok(n > 0)
}

/// Publishes a key the database did not list, as retired.
pub fn insert_retired(
    c: &Connection,
    kid: &str,
    x: &str,
    created_at: &str,
    retired_at: &str,
) -> Result<()> {
    c.execute(
        "INSERT INTO signing_keys(kid, x, status, created_at, retired_at) VALUES (?1, ?2, 'retired', ?3, ?4)",
        params![kid, x, created_at, retired_at],
    )?;
    Ok(())
}

/// The last receipt's (seq, compact JWS), if any.
pub fn chain_head(c: &Connection) -> Result<Option<(i64, String)>> {
    Ok(
        c.prepare_cached("SELECT seq, jws FROM receipts ORDER BY seq DESC LIMIT 1")?
            .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?,
    )
}

pub fn insert(
    c: &Connection,
    id: &str,
    seq: i64,
    action_id: &str,
    kid: &str,
    jws: &str,
    now: &str,
) -> Result<()> {
    c.prepare_cached("INSERT INTO receipts(id, seq, action_id, kid, jws, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?
        .execute(params![id, seq, action_id, kid, jws, now])?;
    Ok(())
}
