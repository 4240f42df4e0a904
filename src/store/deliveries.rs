//! Webhook deliveries and their attempts (migration 0010; guide: "Webhooks").
//! A delivery is one message to one callback URL; its job in `jobs` says when
//! the next attempt is due.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::Result;

/// A delivery as the delivery log shows it.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct Delivery {
    /// `msg_…`: the `webhook-id` header of every attempt.
    pub id: String,
    /// Always `webhook_delivery`.
    pub object: &'static str,
    pub source_id: String,
    pub action_id: String,
    /// `live` or `test`.
    pub environment: String,
    /// `action.resolved`, `action.control_requested`, …
    pub event_type: String,
    pub url: String,
    /// `pending` (an attempt is due), `delivered` or `failed` (given up).
    pub status: String,
    pub attempts: i64,
    pub last_status_code: Option<i64>,
    pub last_error: Option<String>,
    pub last_attempt_at: Option<String>,
    /// When the next attempt is due; null once delivered or failed.
    pub next_attempt_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// One attempt of a delivery.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct Attempt {
    pub attempt: i64,
    pub started_at: String,
    /// The receiver's HTTP status; null when none came.
    pub status_code: Option<i64>,
    pub duration_ms: i64,
    pub error: Option<String>,
}

/// A new delivery, as the event's transaction writes it.
pub struct NewDelivery<'a> {
    pub id: &'a str,
    pub workspace_id: &'a str,
    pub source_id: &'a str,
    pub action_id: &'a str,
    pub environment: &'a str,
    pub event_type: &'a str,
    pub url: &'a str,
    pub body: &'a str,
    pub now: &'a str,
}

pub fn insert(c: &Connection, d: &NewDelivery) -> Result<()> {
    // The body apart (schema v20): attempts update the delivery's row, never
    // the body.
    c.prepare_cached("INSERT INTO webhook_bodies(body) VALUES (?1)")?
        .execute([d.body])?;
    let body_id = c.last_insert_rowid();
    c.prepare_cached(
        "INSERT INTO webhook_deliveries(id, workspace_id, source_id, action_id, environment,
            event_type, url, body_id, status, next_attempt_at, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'pending', ?9, ?9, ?9)",
    )?
    .execute(params![
        d.id,
        d.workspace_id,
        d.source_id,
        d.action_id,
        d.environment,
        d.event_type,
        d.url,
        body_id,
        d.now
    ])?;
    Ok(())
}

/// What the worker needs to send one attempt. No `Debug`: it holds secrets.
#[derive(Clone)]
pub struct Outgoing {
    pub id: String,
    pub url: String,
    pub body: String,
    /// Attempts made so far (this one is `attempts + 1`).
    pub attempts: i64,
    pub round_start: i64,
    /// The Source's current secret, then the previous one while its overlap lasts.
    pub secrets: Vec<String>,
}

/// What a due webhook job finds of its delivery.
pub enum Pending {
    /// Still pending: this attempt, signed with the secrets of `now`.
    Send(Outgoing),
    /// No longer pending (delivered, failed or forgotten meanwhile).
    Settled,
    /// Pending without its body: the database was edited or damaged
    /// (`give_up` ends it with `NO_BODY`).
    NoBody,
}

/// The last error of a delivery whose body is missing.
pub const NO_BODY: &str = "not sent: its body is missing from the database (table webhook_bodies), \
    which was edited or damaged; it cannot be sent or resent";

/// The delivery `id` as a due job finds it (see `Pending`).
pub fn outgoing(c: &Connection, id: &str, now: &str) -> Result<Pending> {
    let found = c
        .prepare_cached(
            "SELECT d.url, b.body, d.attempts, d.round_start, s.webhook_secret,
                    CASE WHEN s.previous_webhook_secret_expires_at > ?2
                         THEN s.previous_webhook_secret END
             FROM webhook_deliveries d LEFT JOIN webhook_bodies b ON b.id = d.body_id
                  JOIN sources s ON s.id = d.source_id
             WHERE d.id = ?1 AND d.status = 'pending'",
        )?
        .query_row(params![id, now], |r| {
            let mut secrets = vec![r.get::<_, String>(4)?];
            if let Some(old) = r.get::<_, Option<String>>(5)? {
                secrets.push(old);
            }
            let body: Option<String> = r.get(1)?;
            Ok(body.map(|body| -> rusqlite::Result<Outgoing> {
                Ok(Outgoing {
                    id: id.to_owned(),
                    url: r.get(0)?,
                    body,
                    attempts: r.get(2)?,
                    round_start: r.get(3)?,
                    secrets,
                })
            }))
        })
        .optional()?;
    Ok(match found {
        None => Pending::Settled,
        Some(None) => Pending::NoBody,
        Some(Some(out)) => Pending::Send(out?),
    })
}

/// Ends a pending delivery that cannot be sent: failed, with `error`.
pub fn give_up(c: &Connection, id: &str, error: &str, now: &str) -> Result<()> {
    c.prepare_cached(
        "UPDATE webhook_deliveries SET status = 'failed', last_error = ?2,
            next_attempt_at = NULL, updated_at = ?3
         WHERE id = ?1 AND status = 'pending'",
    )?
    .execute(params![id, error, now])?;
    Ok(())
}

/// A delivery's attempts so far and where its current round started.
pub fn counts(c: &Connection, id: &str) -> Result<Option<(i64, i64)>> {
    Ok(
        c.prepare_cached("SELECT attempts, round_start FROM webhook_deliveries WHERE id = ?1")?
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?,
    )
}

/// What an attempt leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    Delivered,
    /// Try again at the given time (kept in `next_attempt_at`).
    RetryAt,
    Failed,
}

/// Records an attempt and the delivery's new state.
pub fn record_attempt(
    c: &Connection,
    id: &str,
    a: &Attempt,
    next: Next,
    next_attempt_at: Option<&str>,
) -> Result<()> {
    // OR REPLACE: should an attempt's number come twice (a database edited
    // by hand), the last record is kept rather than failing the turn.
    c.prepare_cached(
        "INSERT OR REPLACE INTO webhook_attempts(delivery_id, attempt, started_at, status_code, duration_ms, error)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![id, a.attempt, a.started_at, a.status_code, a.duration_ms, a.error])?;
    let status = match next {
        Next::Delivered => "delivered",
        Next::RetryAt => "pending",
        Next::Failed => "failed",
    };
    c.prepare_cached(
        "UPDATE webhook_deliveries SET status = ?2, attempts = ?3, last_status_code = ?4,
            last_error = ?5, last_attempt_at = ?6, next_attempt_at = ?7, updated_at = ?6
         WHERE id = ?1",
    )?
    .execute(params![
        id,
        status,
        a.attempt,
        a.status_code,
        a.error,
        a.started_at,
        next_attempt_at
    ])?;
    Ok(())
}

/// The columns `map_row` reads, in its order.
macro_rules! fields {
    () => {
        "id, source_id, action_id, environment, event_type, url, status, attempts,
    last_status_code, last_error, last_attempt_at, next_attempt_at, created_at, updated_at"
    };
}
const FIELDS: &str = fields!();

fn map_row(r: &rusqlite::Row) -> rusqlite::Result<Delivery> {
    Ok(Delivery {
        id: r.get(0)?,
        object: "webhook_delivery",
        source_id: r.get(1)?,
        action_id: r.get(2)?,
        environment: r.get(3)?,
        event_type: r.get(4)?,
        url: r.get(5)?,
        status: r.get(6)?,
        attempts: r.get(7)?,
        last_status_code: r.get(8)?,
        last_error: r.get(9)?,
        last_attempt_at: r.get(10)?,
        next_attempt_at: r.get(11)?,
        created_at: r.get(12)?,
        updated_at: r.get(13)?,
    })
}

/// The newest deliveries of a Source, newest first (ids are ULIDs, so id
/// order is creation order); `before` (a delivery id) pages back
/// (`webhook_deliveries_by_source`).
pub fn list_for_source(
    c: &Connection,
    source_id: &str,
    before: Option<&str>,
    limit: i64,
) -> Result<Vec<Delivery>> {
    let mut st = c.prepare_cached(&format!(
        "SELECT {FIELDS} FROM webhook_deliveries
         WHERE source_id = ?1 AND (?2 IS NULL OR id < ?2)
         ORDER BY id DESC LIMIT ?3"
    ))?;
    let rows = st.query_map(params![source_id, before, limit], map_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A Source's deliveries of one environment, newest first, as the Source
/// reads them (`webhook_deliveries_by_source`; the other environment's
/// rows are passed over).
const ENV_PAGE: &str = concat!(
    "SELECT ",
    fields!(),
    " FROM webhook_deliveries
    WHERE source_id = ?1 AND environment = ?2 AND (?3 IS NULL OR id < ?3)
    ORDER BY id DESC LIMIT ?4"
);

/// The same, given up ones only (`webhook_deliveries_failed`).
const FAILED_PAGE: &str = concat!(
    "SELECT ",
    fields!(),
    " FROM webhook_deliveries
    WHERE source_id = ?1 AND environment = ?2 AND status = 'failed' AND (?3 IS NULL OR id < ?3)
    ORDER BY id DESC LIMIT ?4"
);

/// The given-up deliveries of a Source and environment made at or after
/// `from` (a delivery id, the first possible at a time), oldest first
/// (`webhook_deliveries_failed`).
const FAILED_SINCE: &str = "SELECT id FROM webhook_deliveries
    WHERE source_id = ?1 AND environment = ?2 AND status = 'failed'
      AND id >= max(?3, coalesce(?5, '')) AND (?5 IS NULL OR id > ?5)
    ORDER BY id LIMIT ?4";

/// A Source's deliveries of one environment, newest first; `failed_only`
/// keeps the given-up ones.
pub fn list_for_source_env(
    c: &Connection,
    source_id: &str,
    environment: &str,
    failed_only: bool,
    before: Option<&str>,
    limit: i64,
) -> Result<Vec<Delivery>> {
    let sql = if failed_only { FAILED_PAGE } else { ENV_PAGE };
    let mut st = c.prepare_cached(sql)?;
    let rows = st.query_map(params![source_id, environment, before, limit], map_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Ids of the given-up deliveries of a Source and environment from `from`
/// on (a delivery id) and after `after` (the last one a previous call
/// took), oldest first, at most `limit`.
pub fn failed_since(
    c: &Connection,
    source_id: &str,
    environment: &str,
    from: &str,
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<String>> {
    let mut st = c.prepare_cached(FAILED_SINCE)?;
    let rows = st.query_map(params![source_id, environment, from, limit, after], |r| {
        r.get(0)
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// One delivery of a Source.
pub fn get(c: &Connection, source_id: &str, id: &str) -> Result<Option<Delivery>> {
    Ok(c.prepare_cached(&format!(
        "SELECT {FIELDS} FROM webhook_deliveries WHERE id = ?1 AND source_id = ?2"
    ))?
    .query_row(params![id, source_id], map_row)
    .optional()?)
}

/// The attempts of a delivery, first first.
pub fn attempts(c: &Connection, id: &str) -> Result<Vec<Attempt>> {
    let mut st = c.prepare_cached(
        "SELECT attempt, started_at, status_code, duration_ms, error FROM webhook_attempts
         WHERE delivery_id = ?1 ORDER BY attempt",
    )?;
    let rows = st.query_map([id], |r| {
        Ok(Attempt {
            attempt: r.get(0)?,
            started_at: r.get(1)?,
            status_code: r.get(2)?,
            duration_ms: r.get(3)?,
            error: r.get(4)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Starts a new round of attempts (a resend): pending again, due now, the
/// retry schedule restarting after the attempts made so far.
pub fn restart(c: &Connection, id: &str, now: &str) -> Result<()> {
    c.prepare_cached(
        "UPDATE webhook_deliveries SET status = 'pending', round_start = attempts,
            next_attempt_at = ?2, updated_at = ?2 WHERE id = ?1",
    )?
    .execute(params![id, now])?;
    Ok(())
}

/// Days a delivered or failed delivery stays in the log.
pub const KEEP_DAYS: i64 = 30;

/// The deliveries one prune forgets: settled before ?1, oldest first.
const OLDEST: &str = "SELECT id FROM webhook_deliveries
    WHERE status <> 'pending' AND updated_at < ?1 ORDER BY updated_at, id LIMIT 10000";

/// Forgets deliveries settled before `before`, with their attempts and
/// bodies; at most 10,000 a call (the oldest, by
/// `webhook_deliveries_settled`), so the writer is never held long. The
/// three deletes pick the same rows.
pub fn prune(c: &Connection, before: &str) -> Result<usize> {
    c.execute(
        &format!("DELETE FROM webhook_attempts WHERE delivery_id IN ({OLDEST})"),
        [before],
    )?;
    c.execute(
        &format!(
            "DELETE FROM webhook_bodies WHERE id IN
                (SELECT body_id FROM webhook_deliveries WHERE id IN ({OLDEST}))"
        ),
        [before],
    )?;
    Ok(c.execute(
        &format!("DELETE FROM webhook_deliveries WHERE id IN ({OLDEST})"),
        [before],
    )?)
}

#[cfg(test)]
mod tests {
    /// The delivery log's page reads `webhook_deliveries_by_source` in order,
    /// and the prune reads `webhook_deliveries_settled`.
    #[test]
    fn the_log_and_the_prune_use_their_indexes() {
        let mut c = rusqlite::Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        for (sql, index) in [
            (
                "SELECT id FROM webhook_deliveries WHERE source_id = 'src_1' AND ('msg_9' IS NULL OR id < 'msg_9') ORDER BY id DESC LIMIT 21",
                "webhook_deliveries_by_source",
            ),
            (
                "SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND updated_at < '2026' ORDER BY updated_at, id LIMIT 10000",
                "webhook_deliveries_settled",
            ),
            (
                format!(
                    "DELETE FROM webhook_bodies WHERE id IN
                        (SELECT body_id FROM webhook_deliveries WHERE id IN ({}))",
                    super::OLDEST
                )
                .as_str(),
                "webhook_deliveries_settled",
            ),
        ] {
            let plan = crate::store::query_plan(&c, sql);
            let text = plan.join("\n");
            assert!(text.contains(index), "{sql}:\n{text}");
            assert!(
                !text.contains("SCAN webhook_deliveries\n")
                    && !text.ends_with("SCAN webhook_deliveries")
                    && !text.contains("SCAN webhook_bodies"),
                "{text}"
            );
        }
    }

    /// The Source's own pages and its recovery read their indexes in order.
    #[test]
    fn the_source_reads_its_deliveries_in_index_order() {
        let mut c = rusqlite::Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        for (sql, index) in [
            (super::ENV_PAGE, "webhook_deliveries_by_source"),
            (super::FAILED_PAGE, "webhook_deliveries_failed"),
            (super::FAILED_SINCE, "webhook_deliveries_failed"),
        ] {
            let text = crate::store::query_plan(&c, sql).join("\n");
            assert!(
                text.contains(&format!("INDEX {index} "))
                    && !text.contains("TEMP B-TREE")
                    && !text.contains("SCAN webhook_deliveries"),
                "{sql}:\n{text}"
            );
        }
    }

    /// The prune forgets a settled delivery with its attempts and body, and
    /// keeps a pending one and a newer one whole.
    #[test]
    fn the_prune_takes_the_body_and_attempts_along() {
        use super::*;
        let mut c = rusqlite::Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        c.execute_batch("PRAGMA foreign_keys = OFF;").unwrap();
        for (id, now) in [
            ("msg_1", "2026-01-01"),
            ("msg_2", "2026-01-01"),
            ("msg_3", "2026-03-01"),
        ] {
            insert(
                &c,
                &NewDelivery {
                    id,
                    workspace_id: "ws_1",
                    source_id: "src_1",
                    action_id: "act_1",
                    environment: "live",
                    event_type: "action.resolved",
                    url: "https://a.example/",
                    body: &format!(r#"{{"id":"{id}"}}"#),
                    now,
                },
            )
            .unwrap();
        }
        for (id, at) in [("msg_1", "2026-01-01"), ("msg_3", "2026-03-01")] {
            let a = Attempt {
                attempt: 1,
                started_at: at.into(),
                status_code: Some(200),
                duration_ms: 1,
                error: None,
            };
            record_attempt(&c, id, &a, Next::Delivered, None).unwrap();
        }
        assert_eq!(prune(&c, "2026-02-01").unwrap(), 1);
        let left = |sql: &str| -> Vec<String> {
            c.prepare(sql)
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap()
        };
        assert_eq!(
            left("SELECT id FROM webhook_deliveries ORDER BY id"),
            ["msg_2", "msg_3"]
        );
        assert_eq!(
            left("SELECT body FROM webhook_bodies ORDER BY id"),
            [r#"{"id":"msg_2"}"#, r#"{"id":"msg_3"}"#]
        );
        assert_eq!(left("SELECT delivery_id FROM webhook_attempts"), ["msg_3"]);
    }
}
