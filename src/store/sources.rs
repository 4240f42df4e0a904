//! Sources (machine callers) and their keys. Keys are stored as SHA-256 only;
//! the clear key exists once, in the response that created it.
//!
//! A key's `revoked_at` is its end: NULL for the current key of an
//! environment, a past time for a key that no longer works, a future time for
//! a replaced key still in its overlap (guide: "Rotating keys"). A key works
//! while `revoked_at IS NULL OR revoked_at > now`; at most two keys of an
//! environment work at once, the current one and the one it replaced.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use crate::domain::action::Environment;
use crate::domain::credentials::{self, hashes_match};
use crate::domain::ids;
use crate::domain::time::{self, Timestamp};
use crate::error::Result;

#[derive(Clone, Debug, Serialize)]
pub struct KeyInfo {
    pub environment: String,
    /// The key's first characters, for telling keys apart; never the key.
    pub hint: String,
    pub created_at: String,
    /// When a replaced key stops working (it is in its overlap); None for
    /// the current key.
    pub expires_at: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Source {
    pub id: String,
    pub object: &'static str,
    pub workspace_id: String,
    pub name: String,
    pub description: Option<String>,
    pub status: &'static str,
    pub keys: Vec<KeyInfo>,
    /// While a replaced webhook secret still signs beside the current one
    /// (its overlap): until when. None when only the current one signs.
    pub previous_webhook_secret_expires_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub revoked_at: Option<String>,
}

/// Secrets shown once, when created or rotated.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Secrets {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook_secret: Option<String>,
}

/// Who a presented Source key belongs to.
#[derive(Clone, Debug)]
pub struct KeyOwner {
    pub source_id: String,
    pub workspace_id: String,
    pub workspace_kind: String,
    pub environment: Environment,
    pub source_revoked: bool,
    /// The end of a replaced key's overlap; None for a current key.
    pub expires_at: Option<Timestamp>,
}

impl KeyOwner {
    /// Whether the key still works at `now` (a cached lookup outlives the
    /// overlap it was read in).
    pub fn works_at(&self, now: Timestamp) -> bool {
        self.expires_at.is_none_or(|end| end > now)
    }
}

pub fn create(
    c: &Connection,
    workspace_id: &str,
    name: &str,
    description: Option<&str>,
    now: &str,
) -> Result<(Source, Secrets)> {
    let id = ids::new_id(ids::SOURCE);
    let webhook_secret = credentials::new_webhook_secret();
    c.execute(
        "INSERT INTO sources(id, workspace_id, name, description, webhook_secret, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
        params![id, workspace_id, name, description, webhook_secret, now],
    )?;
    let mut secrets = insert_keys(c, &id, &[Environment::Live, Environment::Test], now)?;
    secrets.webhook_secret = Some(webhook_secret);
    let source = get(c, workspace_id, &id, now)?
        .ok_or_else(|| anyhow::anyhow!("source vanished after insert"))?;
    Ok((source, secrets))
}

fn insert_keys(
    c: &Connection,
    source_id: &str,
    envs: &[Environment],
    now: &str,
) -> Result<Secrets> {
    let mut secrets = Secrets::default();
    for env in envs {
        let key = credentials::new_source_key(*env);
        c.execute(
            "INSERT INTO source_keys(key_hash, source_id, environment, hint, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![credentials::hash_secret(&key), source_id, env.as_str(), credentials::key_hint(&key), now],
        )?;
        match env {
            Environment::Live => secrets.live_key = Some(key),
            Environment::Test => secrets.test_key = Some(key),
        }
    }
    Ok(secrets)
}

/// Replaces the keys of the given environments (and the webhook secret when
/// asked). Each replaced key works until `key_overlap_until` (`now` ends it at
/// once); a key still in the overlap of an earlier rotation ends now, so only
/// the new key and the one it replaced work. An old webhook secret keeps
/// signing beside the new one until `secret_overlap_until`, when given.
#[allow(clippy::too_many_arguments)]
pub fn rotate_keys(
    c: &Connection,
    workspace_id: &str,
    id: &str,
    envs: &[Environment],
    key_overlap_until: &str,
    webhook_secret: bool,
    secret_overlap_until: Option<&str>,
    now: &str,
) -> Result<Option<(Source, Secrets)>> {
    let Some(s) = get(c, workspace_id, id, now)? else {
        return Ok(None);
    };
    if s.revoked_at.is_some() {
        return Ok(None);
    }
    for env in envs {
        c.execute(
            "UPDATE source_keys SET revoked_at = ?1 WHERE source_id = ?2 AND environment = ?3 AND revoked_at > ?1",
            params![now, id, env.as_str()],
        )?;
        c.execute(
            "UPDATE source_keys SET revoked_at = ?1 WHERE source_id = ?2 AND environment = ?3 AND revoked_at IS NULL",
            params![key_overlap_until, id, env.as_str()],
        )?;
    }
    let mut secrets = insert_keys(c, id, envs, now)?;
    if webhook_secret {
        let secret = credentials::new_webhook_secret();
        c.execute(
            "UPDATE sources SET previous_webhook_secret = CASE WHEN ?3 IS NULL THEN NULL ELSE webhook_secret END,
                previous_webhook_secret_expires_at = ?3, webhook_secret = ?1 WHERE id = ?2",
            params![secret, id, secret_overlap_until],
        )?;
        secrets.webhook_secret = Some(secret);
    }
    c.execute(
        "UPDATE sources SET updated_at = ?1 WHERE id = ?2",
        params![now, id],
    )?;
    Ok(get(c, workspace_id, id, now)?.map(|s| (s, secrets)))
}

const SELECT: &str = "SELECT id, workspace_id, name, description, created_at, updated_at, revoked_at, \
     previous_webhook_secret_expires_at FROM sources";

/// A Source with the keys that work at `now`: per environment the current
/// key, then a replaced one still in its overlap.
/// The keys of a Source that work at `?2`: the current ones and those in
/// their overlap (`source_keys_by_source`).
const KEYS: &str = "SELECT environment, hint, created_at, revoked_at FROM source_keys
     WHERE source_id = ?1 AND (revoked_at IS NULL OR revoked_at > ?2)
     ORDER BY environment, revoked_at IS NOT NULL, created_at DESC";

fn row(c: &Connection, r: &rusqlite::Row, now: &str) -> Result<Source> {
    let id: String = r.get(0)?;
    let revoked_at: Option<String> = r.get(6)?;
    let mut st = c.prepare_cached(KEYS)?;
    let keys = st
        .query_map(params![id, now], |k| {
            Ok(KeyInfo {
                environment: k.get(0)?,
                hint: k.get(1)?,
                created_at: k.get(2)?,
                expires_at: k.get(3)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(Source {
        id,
        object: "source",
        workspace_id: r.get(1)?,
        name: r.get(2)?,
        description: r.get(3)?,
        status: if revoked_at.is_some() {
            "revoked"
        } else {
            "active"
        },
        keys: if revoked_at.is_some() {
            Vec::new()
        } else {
            keys
        },
        previous_webhook_secret_expires_at: r
            .get::<_, Option<String>>(7)?
            .filter(|until| revoked_at.is_none() && until.as_str() > now),
        created_at: r.get(4)?,
        updated_at: r.get(5)?,
        revoked_at,
    })
}

/// The Source, with the keys that work at `now`.
pub fn get(c: &Connection, workspace_id: &str, id: &str, now: &str) -> Result<Option<Source>> {
    let mut st = c.prepare_cached(&format!("{SELECT} WHERE id = ?1 AND workspace_id = ?2"))?;
    let mut rows = st.query(params![id, workspace_id])?;
    match rows.next()? {
        Some(r) => Ok(Some(row(c, r, now)?)),
        None => Ok(None),
    }
}

/// Only the Source's name (no keys read), e.g. for notifications.
pub fn name(c: &Connection, workspace_id: &str, id: &str) -> Result<Option<String>> {
    Ok(
        c.prepare_cached("SELECT name FROM sources WHERE id = ?1 AND workspace_id = ?2")?
            .query_row(params![id, workspace_id], |r| r.get(0))
            .optional()?,
    )
}

/// The workspace's Sources, newest first, with the keys that work at `now`.
pub fn list(c: &Connection, workspace_id: &str, now: &str) -> Result<Vec<Source>> {
    let mut st = c.prepare_cached(&format!(
        "{SELECT} WHERE workspace_id = ?1 ORDER BY created_at DESC"
    ))?;
    let mut rows = st.query([workspace_id])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        out.push(row(c, r, now)?);
    }
    Ok(out)
}

pub fn update(
    c: &Connection,
    workspace_id: &str,
    id: &str,
    name: Option<&str>,
    description: Option<Option<&str>>,
    now: &str,
) -> Result<Option<Source>> {
    let n = c.execute(
        "UPDATE sources SET name = COALESCE(?1, name),
                            description = CASE WHEN ?2 THEN ?3 ELSE description END,
                            updated_at = ?4
         WHERE id = ?5 AND workspace_id = ?6 AND revoked_at IS NULL",
        params![
            name,
            description.is_some(),
            description.flatten(),
            now,
            id,
            workspace_id
        ],
    )?;
    if n == 0 {
        Ok(None)
    } else {
        get(c, workspace_id, id, now)
    }
}

/// Revokes a Source; its Actions and their history stay. Replaced keys still
/// in their overlap end now too (the current ones answer SOURCE_REVOKED).
pub fn revoke(c: &Connection, workspace_id: &str, id: &str, now: &str) -> Result<bool> {
    let n = c.execute(
        "UPDATE sources SET revoked_at = COALESCE(revoked_at, ?1), updated_at = ?1 WHERE id = ?2 AND workspace_id = ?3",
        params![now, id, workspace_id],
    )?;
    if n > 0 {
        c.execute(
            "UPDATE source_keys SET revoked_at = ?1 WHERE source_id = ?2 AND revoked_at > ?1",
            params![now, id],
        )?;
    }
    Ok(n > 0)
}

/// Whether the Source was revoked, read inside a write: a request whose key
/// was checked before a revocation committed must not create anything after
/// it (the revocation cancelled every open Action in its commit).
pub fn is_revoked(c: &Connection, id: &str) -> Result<bool> {
    Ok(
        c.prepare_cached("SELECT revoked_at IS NOT NULL FROM sources WHERE id = ?1")?
            .query_row([id], |r| r.get::<_, bool>(0))
            .optional()?
            .unwrap_or(true),
    )
}

/// Open Actions of a Source, counted up to `cap` (a revocation cancels
/// them; its confirmation says how many): read through the workspace's open
/// Actions (`actions_inbox`), not through every Action the Source ever sent.
const OPEN_OF_SOURCE: &str = "SELECT count(*) FROM (SELECT 1 FROM actions
      WHERE workspace_id = ?1 AND environment IN ('live', 'test') AND status = 'open'
        AND source_id = ?2 LIMIT ?3)";

pub fn open_actions(c: &Connection, workspace_id: &str, id: &str, cap: i64) -> Result<i64> {
    Ok(c.prepare_cached(OPEN_OF_SOURCE)?
        .query_row(params![workspace_id, id, cap], |r| r.get(0))?)
}

/// Resolves a presented key at `now`. A key past its end finds nothing; a
/// key of a revoked Source is found and flagged, so the caller can say
/// SOURCE_REVOKED.
pub fn by_key(c: &Connection, key: &str, now: &str) -> Result<Option<KeyOwner>> {
    by_key_hash(c, &credentials::hash_secret(key), now)
}

/// As `by_key`, for a key already hashed with `credentials::hash_secret`.
pub fn by_key_hash(c: &Connection, hash: &str, now: &str) -> Result<Option<KeyOwner>> {
    let found = c
        .prepare_cached(
            "SELECT k.key_hash, k.environment, s.id, s.workspace_id, w.kind, s.revoked_at IS NOT NULL, k.revoked_at
             FROM source_keys k JOIN sources s ON s.id = k.source_id JOIN workspaces w ON w.id = s.workspace_id
             WHERE k.key_hash = ?1 AND (k.revoked_at IS NULL OR k.revoked_at > ?2)",
        )?
        .query_row(params![hash, now], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get::<_, Option<String>>(6)?))
        })
        .optional()?;
    Ok(found.and_then(
        |(stored, env, source_id, workspace_id, workspace_kind, source_revoked, ends)| {
            let environment = Environment::parse(&env)?;
            hashes_match(&stored, hash).then_some(KeyOwner {
                source_id,
                workspace_id,
                workspace_kind,
                environment,
                source_revoked,
                expires_at: ends.as_deref().and_then(time::parse),
            })
        },
    ))
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::{KEYS, OPEN_OF_SOURCE};

    #[test]
    fn a_sources_open_actions_are_counted_among_the_open_ones() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        let plan = crate::store::query_plan(&c, OPEN_OF_SOURCE).join("\n");
        assert!(
            plan.contains("SEARCH actions USING INDEX actions_inbox (workspace_id=? AND environment=? AND status=?)"),
            "{plan}"
        );
        assert!(!plan.contains("SCAN actions"), "{plan}");
    }

    #[test]
    fn a_sources_keys_are_read_by_source() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        for (sql, wants) in [
            (KEYS, "source_keys_by_source (source_id=?)"),
            (
                "UPDATE source_keys SET revoked_at = ?1 WHERE source_id = ?2 AND revoked_at > ?1",
                "source_keys_by_source (source_id=?)",
            ),
        ] {
            let plan = crate::store::query_plan(&c, sql);
            assert!(
                plan.iter().any(|p| p.contains(wants))
                    && !plan.iter().any(|p| p.starts_with("SCAN")),
                "{sql}\nwanted {wants}\ngot {plan:?}"
            );
        }
    }
}
