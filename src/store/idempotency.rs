//! Stored responses of idempotent requests (guide: "Idempotency"). The response row is
//! written in the same transaction as the side effect, so a replay can never
//! disagree with what happened.

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use crate::domain::action::Environment;
use crate::error::Result;

pub struct Stored {
    pub request_hash: String,
    pub status_code: u16,
    pub response: Value,
}

pub fn get(c: &Connection, source_id: &str, env: Environment, key: &str) -> Result<Option<Stored>> {
    let row = c
        .prepare_cached("SELECT request_hash, status_code, response FROM idempotency_keys WHERE source_id = ?1 AND environment = ?2 AND key = ?3")?
        .query_row(params![source_id, env.as_str(), key], |r| Ok((r.get::<_, String>(0)?, r.get::<_, u16>(1)?, r.get::<_, String>(2)?)))
        .optional()?;
    row.map(|(request_hash, status_code, body)| {
        Ok(Stored {
            request_hash,
            status_code,
            response: serde_json::from_str(&body)?,
        })
    })
    .transpose()
}

/// A new stored response. `response` is the JSON text as sent, so the writer
/// thread stores what the caller already serialised instead of serialising again.
pub struct New<'a> {
    pub request_hash: &'a str,
    pub status_code: u16,
    pub response: &'a str,
    pub created_at: &'a str,
}

pub fn put(c: &Connection, source_id: &str, env: Environment, key: &str, s: &New) -> Result<()> {
    c.prepare_cached(
        "INSERT INTO idempotency_keys(source_id, environment, key, request_hash, status_code, response, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![source_id, env.as_str(), key, s.request_hash, s.status_code, s.response, s.created_at])?;
    Ok(())
}

/// Forgets keys older than `before` (retention is at least 24 h).
pub fn prune(c: &Connection, before: &str) -> Result<usize> {
    Ok(c.execute(
        "DELETE FROM idempotency_keys WHERE created_at < ?1",
        [before],
    )?)
}
