//! Stored responses of idempotent requests (guide: "Idempotency"). The response row is
//! written in the same transaction as the side effect, so a replay can never
//! disagree with what happened.
//!
//! Most keyed requests are creates whose answer is the new Action itself
//! (about 2 KB of JSON, a whole page of its own per row). Their row keeps
//! only the Action's id, and a replay rebuilds the answer from the Action
//! (`ActionRecord::as_created`); the text is kept (`keep_answer`) before
//! the first write that could make the rebuilt answer differ: a PATCH of
//! the spec, or a claim or assignment, which write the assignee into it.

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use crate::domain::action::{Environment, envelope_json};
use crate::error::{Error, Result};

pub struct Stored {
    pub request_hash: String,
    pub status_code: u16,
    pub response: Value,
}

/// Marks a request hash taken over the parsed request, documented defaults
/// left out (`service::idempotency::typed_request_hash`): such a row is the
/// same request only when the hashes are equal.
pub const TYPED_HASH: &str = "t2:";

/// Marks the typed hash of rows stored before documented defaults were left
/// out (`service::idempotency::typed_request_hash_v1`): the request as
/// parsed. Such a row is compared with that hash of the retry.
pub const TYPED_HASH_V1: &str = "t1:";

/// The stored response for `key`. A create's answer that is rebuilt from its
/// Action is not rebuilt for a request that has another typed hash: that
/// request is refused without it (its `response` is then null).
/// Text is always read: rows stored before rebuilt answers have text and an
/// older kind of hash, which the caller may compare differently.
pub fn get(
    c: &Connection,
    source_id: &str,
    env: Environment,
    key: &str,
    request_hash: &str,
) -> Result<Option<Stored>> {
    let row = c
        .prepare_cached("SELECT request_hash, status_code, response, action_id FROM idempotency_keys WHERE source_id = ?1 AND environment = ?2 AND key = ?3")?
        .query_row(params![source_id, env.as_str(), key], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, u16>(1)?, r.get::<_, Option<String>>(2)?, r.get::<_, Option<String>>(3)?))
        })
        .optional()?;
    let Some((stored_hash, status_code, text, action_id)) = row else {
        return Ok(None);
    };
    let response = match (text, action_id) {
        (Some(text), _) => serde_json::from_str(&text)?,
        // A typed hash that differs is another request (refused without
        // the answer); any other hash may still match by the caller's
        // older comparison, so the answer is built.
        (None, Some(_)) if stored_hash != request_hash && stored_hash.starts_with(TYPED_HASH) => {
            Value::Null
        }
        (None, Some(id)) => serde_json::from_str(&created_answer(c, &id)?)?,
        (None, None) => {
            return Err(Error::internal(anyhow::anyhow!(
                "a stored response has neither text nor Action"
            )));
        }
    };
    Ok(Some(Stored {
        request_hash: stored_hash,
        status_code,
        response,
    }))
}

/// The answer the create of Action `id` sent.
fn created_answer(c: &Connection, id: &str) -> Result<String> {
    let a = crate::store::actions::get_plain(c, id)?.ok_or_else(|| {
        Error::internal(anyhow::anyhow!(
            "the Action of a stored create answer is missing"
        ))
    })?;
    Ok(envelope_json(&a.as_created(), false)?)
}

/// What a new row keeps to answer a replay with.
pub enum Answer<'a> {
    /// The JSON text as sent, so the writer thread stores what the caller
    /// already serialised instead of serialising again.
    Text(&'a str),
    /// The answer of a create that named no people, rebuilt from this
    /// Action on replay.
    Created(&'a str),
}

/// A new stored response.
pub struct New<'a> {
    pub request_hash: &'a str,
    pub status_code: u16,
    pub response: Answer<'a>,
    pub created_at: &'a str,
}

pub fn put(c: &Connection, source_id: &str, env: Environment, key: &str, s: &New) -> Result<()> {
    let (text, action_id) = match s.response {
        Answer::Text(t) => (Some(t), None),
        Answer::Created(id) => (None, Some(id)),
    };
    c.prepare_cached(
        "INSERT INTO idempotency_keys(source_id, environment, key, request_hash, status_code, response, action_id, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![source_id, env.as_str(), key, s.request_hash, s.status_code, text, action_id, s.created_at])?;
    Ok(())
}

/// Stores the text of the create answer of Action `id` if a replay would
/// rebuild it: call before any write that changes the Action's spec (PATCH,
/// claim, assign), while the Action is still as it was created. The Action
/// keeps the key of that row (`answer_key`), cleared here: one read of the
/// Action's row by its id when there is none.
pub fn keep_answer(c: &Connection, id: &str) -> Result<()> {
    let row: Option<(String, String, String)> = c
        .prepare_cached(
            "SELECT source_id, environment, answer_key FROM actions WHERE id = ?1 AND answer_key IS NOT NULL",
        )?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    let Some((source_id, environment, key)) = row else {
        return Ok(());
    };
    let text = created_answer(c, id)?;
    // No row when the key was pruned; none to change when its text is kept.
    c.prepare_cached(
        "UPDATE idempotency_keys SET response = ?1, action_id = NULL
         WHERE source_id = ?2 AND environment = ?3 AND key = ?4 AND action_id = ?5",
    )?
    .execute(params![text, source_id, environment, key, id])?;
    c.prepare_cached("UPDATE actions SET answer_key = NULL WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// Forgets keys older than `before` (retention is at least 24 h). Rows go
/// in rowid order, which is the order they were written: every row before
/// the first one not yet old enough, so no row is forgotten early. A row
/// stamped later than `now` (written while the clock ran ahead) would hold
/// back every row after it until it is old enough itself: such rows are
/// stamped `now` instead, which still keeps each at least as long as its
/// own write time says. No index on the time: a keyed create writes one
/// index entry, its key's.
pub fn prune(c: &Connection, before: &str, now: &str) -> Result<usize> {
    let first_kept: Option<(i64, String)> = c
        .prepare_cached(
            "SELECT rowid, created_at FROM idempotency_keys WHERE created_at >= ?1 ORDER BY rowid LIMIT 1",
        )?
        .query_row([before], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let deleted = match &first_kept {
        Some((rowid, _)) => c
            .prepare_cached("DELETE FROM idempotency_keys WHERE rowid < ?1")?
            .execute([rowid])?,
        None => c
            .prepare_cached("DELETE FROM idempotency_keys")?
            .execute([])?,
    };
    if let Some((_, at)) = first_kept
        && at.as_str() > now
    {
        // A scan, but only after the clock went back.
        let n = c.execute(
            "UPDATE idempotency_keys SET created_at = ?1 WHERE created_at > ?1",
            [now],
        )?;
        tracing::warn!(
            count = n,
            "idempotency keys stamped later than now (the clock went back) are stamped now, so that the keys after them can be forgotten"
        );
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put_at(c: &Connection, key: &str, at: &str) {
        let new = New {
            request_hash: "t1:h",
            status_code: 201,
            response: Answer::Text("{}"),
            created_at: at,
        };
        put(c, "src_1", Environment::Live, key, &new).unwrap();
    }

    fn keys(c: &Connection) -> Vec<String> {
        c.prepare("SELECT key FROM idempotency_keys ORDER BY rowid")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    /// The prune forgets rows in the order they were written, up to the
    /// first one not old enough: a row written after the clock went back
    /// is kept longer, and no row is forgotten before its time. A row
    /// stamped in the future is stamped now, so that it holds back the
    /// rows after it for no longer than the retention. Its plans read the
    /// table by rowid, with no index on the time.
    #[test]
    fn the_prune_goes_by_rowid_and_never_forgets_a_key_early() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        let now = "2026-11-25T00:00:00.000Z";
        assert_eq!(
            prune(&c, "2026-11-24T00:00:00.000Z", now).unwrap(),
            0,
            "empty"
        );
        put_at(&c, "a", "2026-11-23T10:00:00.000Z");
        put_at(&c, "b", "2026-11-23T11:00:00.000Z");
        // The clock went back an hour.
        put_at(&c, "c", "2026-11-23T10:30:00.000Z");
        put_at(&c, "d", "2026-11-23T12:00:00.000Z");
        assert_eq!(prune(&c, "2026-11-23T09:00:00.000Z", now).unwrap(), 0);
        // a is old enough; b is not, so c waits behind it.
        assert_eq!(prune(&c, "2026-11-23T10:45:00.000Z", now).unwrap(), 1);
        assert_eq!(keys(&c), ["b", "c", "d"]);
        assert_eq!(prune(&c, "2026-11-23T11:30:00.000Z", now).unwrap(), 2);
        assert_eq!(keys(&c), ["d"]);
        // Every row old enough: all go.
        assert_eq!(prune(&c, "2026-11-24T00:00:00.000Z", now).unwrap(), 1);
        assert!(keys(&c).is_empty());
        // Written while the clock ran a year ahead, then set right.
        put_at(&c, "e", "2026-11-23T10:00:00.000Z");
        put_at(&c, "ahead", "2027-11-23T10:00:00.000Z");
        put_at(&c, "f", "2026-11-23T10:05:00.000Z");
        assert_eq!(prune(&c, "2026-11-24T00:00:00.000Z", now).unwrap(), 1);
        assert_eq!(keys(&c), ["ahead", "f"]);
        let at: String = c
            .query_row(
                "SELECT created_at FROM idempotency_keys WHERE key = 'ahead'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(at, now, "stamped now");
        // Once that is old enough, the rows behind it go too.
        let later = "2026-11-27T00:00:00.000Z";
        assert_eq!(prune(&c, "2026-11-25T00:00:01.000Z", later).unwrap(), 2);
        assert!(keys(&c).is_empty());
        for sql in [
            "SELECT rowid, created_at FROM idempotency_keys WHERE created_at >= '2026' ORDER BY rowid LIMIT 1",
            "DELETE FROM idempotency_keys WHERE rowid < 5",
        ] {
            let plan = crate::store::query_plan(&c, sql).join("\n");
            assert!(!plan.contains("TEMP B-TREE"), "{plan}");
            assert!(!plan.contains("USING INDEX"), "{plan}");
        }
        let plan =
            crate::store::query_plan(&c, "DELETE FROM idempotency_keys WHERE rowid < 5").join("\n");
        assert!(
            plan.contains("USING INTEGER PRIMARY KEY (rowid<?)"),
            "{plan}"
        );
    }
}
