//! The `SessionStore` behind the `service_session` cookie (tower-sessions).
//! No maintained store fits tower-sessions 0.15 with our rusqlite, so this is
//! ours: records in `web_sessions`, reads on the pool, writes on the writer.
//! A row is keyed by the SHA-256 of the cookie value ([`stored_id`]), like every
//! other credential, so a copy of the database or a backup opens no session.

use crate::clock::Clock;
use rusqlite::{OptionalExtension, params};
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, SessionStore};

use crate::store::Db;

#[derive(Clone)]
pub struct SqliteSessionStore {
    db: Db,
    clock: Clock,
}

impl std::fmt::Debug for SqliteSessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SqliteSessionStore")
    }
}

impl SqliteSessionStore {
    pub fn new(db: Db, clock: Clock) -> Self {
        Self { db, clock }
    }
}

/// The key a session's row is stored under: the hex SHA-256 of its cookie
/// value (the session id).
pub fn stored_id(cookie_value: &str) -> String {
    crate::domain::credentials::hash_secret(cookie_value)
}

fn backend(e: crate::error::Error) -> session_store::Error {
    session_store::Error::Backend(e.to_string())
}

fn encode(r: &Record) -> session_store::Result<Vec<u8>> {
    serde_json::to_vec(&r.data).map_err(|e| session_store::Error::Encode(e.to_string()))
}

#[async_trait::async_trait]
impl SessionStore for SqliteSessionStore {
    /// Inserts under a fresh id, drawing again on the (astronomically rare)
    /// collision instead of overwriting someone else's session.
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        let data = encode(record)?;
        let expires = record.expiry_date.unix_timestamp();
        let mut id = record.id;
        let id = self
            .db
            .write(move |c| {
                for _ in 0..8 {
                    let n = c.execute(
                        "INSERT OR IGNORE INTO web_sessions(id, data, expires_at) VALUES (?1, ?2, ?3)",
                        params![stored_id(&id.to_string()), data, expires],
                    )?;
                    if n == 1 {
                        return Ok(id);
                    }
                    id = Id::default();
                }
                Err(crate::error::Error::internal(anyhow::anyhow!(
                    "could not draw an unused session id"
                )))
            })
            .await
            .map_err(backend)?;
        record.id = id;
        Ok(())
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        let data = encode(record)?;
        let (id, expires) = (
            stored_id(&record.id.to_string()),
            record.expiry_date.unix_timestamp(),
        );
        self.db
            .write(move |c| {
                c.execute(
                    "INSERT INTO web_sessions(id, data, expires_at) VALUES (?1, ?2, ?3)
                     ON CONFLICT(id) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at",
                    params![id, data, expires],
                )?;
                Ok(())
            })
            .await
            .map_err(backend)
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        let key = stored_id(&id.to_string());
        let now = self.clock.now().unix_timestamp();
        let row: Option<(Vec<u8>, i64)> = self
            .db
            .read(move |c| {
                Ok(c.prepare_cached(
                    "SELECT data, expires_at FROM web_sessions WHERE id = ?1 AND expires_at > ?2",
                )?
                .query_row(params![key, now], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?)
            })
            .await
            .map_err(backend)?;
        let Some((data, expires)) = row else {
            return Ok(None);
        };
        Ok(Some(Record {
            id: *id,
            data: serde_json::from_slice(&data)
                .map_err(|e| session_store::Error::Decode(e.to_string()))?,
            expiry_date: time::OffsetDateTime::from_unix_timestamp(expires)
                .map_err(|e| session_store::Error::Decode(e.to_string()))?,
        }))
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        let key = stored_id(&id.to_string());
        self.db
            .write(move |c| {
                c.execute("DELETE FROM web_sessions WHERE id = ?1", [key])?;
                Ok(())
            })
            .await
            .map_err(backend)
    }
}

/// Housekeeping: drops expired records.
pub fn delete_expired(c: &rusqlite::Connection, now_unix: i64) -> crate::error::Result<usize> {
    Ok(c.execute(
        "DELETE FROM web_sessions WHERE expires_at <= ?1",
        [now_unix],
    )?)
}
