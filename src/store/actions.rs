//! Actions and their append-only history. Terminal transitions are
//! compare-and-set on `status = 'open'`: the first wins, later ones change
//! nothing (guide: "Statuses").

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};
use serde_json::Value;

use crate::domain::action::{ActionRecord, Environment, Outcome, Priority, Resolution, Status};
use crate::domain::receipt;
use crate::error::Result;

const SELECT: &str = "SELECT a.id, a.workspace_id, a.source_id, a.environment, a.status, a.action_version,
    a.fingerprint, a.spec, a.resolution, a.outcome, a.snoozed_until, a.created_at, a.updated_at, a.closed_at,
    r.id, r.kid, r.jws
    FROM actions a LEFT JOIN receipts r ON r.id = a.receipt_id";

/// A nullable JSON column decoded as `T`.
fn json_col<T: serde::de::DeserializeOwned>(
    r: &rusqlite::Row,
    i: usize,
) -> rusqlite::Result<Option<T>> {
    let s: Option<String> = r.get(i)?;
    s.map(|s| serde_json::from_str(&s))
        .transpose()
        .map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))
        })
}

fn map_row(r: &rusqlite::Row) -> rusqlite::Result<ActionRecord> {
    let bad = |i: usize, what: &str| {
        rusqlite::Error::FromSqlConversionFailure(
            i,
            rusqlite::types::Type::Text,
            what.to_owned().into(),
        )
    };
    let spec: String = r.get(7)?;
    let spec: crate::domain::action::ActionSpec = serde_json::from_str(&spec).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(7, rusqlite::types::Type::Text, Box::new(e))
    })?;
    let receipt = match (
        r.get::<_, Option<String>>(14)?,
        r.get::<_, Option<String>>(15)?,
        r.get::<_, Option<String>>(16)?,
    ) {
        (Some(id), Some(kid), Some(jws)) => {
            let payload = jws.split('.').nth(1).and_then(|p| {
                use base64::Engine;
                let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(p)
                    .ok()?;
                serde_json::from_slice::<Value>(&bytes).ok()
            });
            Some(receipt::receipt_object(
                &id,
                &kid,
                &jws,
                &payload.unwrap_or(Value::Null),
            ))
        }
        _ => None,
    };
    Ok(ActionRecord {
        id: r.get(0)?,
        workspace_id: r.get(1)?,
        source_id: r.get(2)?,
        environment: Environment::parse(&r.get::<_, String>(3)?)
            .ok_or_else(|| bad(3, "environment"))?,
        status: Status::parse(&r.get::<_, String>(4)?).ok_or_else(|| bad(4, "status"))?,
        action_version: r.get(5)?,
        fingerprint: r.get(6)?,
        work: crate::domain::action::Work::from_spec(&spec),
        spec,
        resolution: json_col::<Resolution>(r, 8)?,
        receipt,
        outcome: json_col::<Outcome>(r, 9)?,
        snoozed_until: r.get(10)?,
        created_at: r.get(11)?,
        updated_at: r.get(12)?,
        closed_at: r.get(13)?,
    })
}

/// Inserts a new Action; `spec_json` is `a.spec` serialised by the caller, off
/// the writer thread.
pub fn insert(c: &Connection, a: &ActionRecord, spec_json: &str) -> Result<()> {
    c.prepare_cached(
        "INSERT INTO actions(id, workspace_id, source_id, environment, status, priority, priority_rank, title,
            action_version, fingerprint, spec, dedupe_key, assignee_user_id, visibility, expires_at, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?16)",
    )?
    .execute(params![
        a.id, a.workspace_id, a.source_id, a.environment.as_str(), a.status.as_str(),
        a.spec.priority.as_str(), a.spec.priority.rank(), a.spec.title, a.action_version, a.fingerprint,
        spec_json, a.spec.dedupe_key, a.spec.assignee_user_id, a.spec.visibility().as_str(),
        a.spec.expires_at, a.created_at,
    ])?;
    Ok(())
}

/// One Action by id, unscoped: callers must check ownership (see `service`).
/// Its assignee, requester and comment count are read beside it.
pub fn get(c: &Connection, id: &str) -> Result<Option<ActionRecord>> {
    let mut a = c
        .prepare_cached(&format!("{SELECT} WHERE a.id = ?1"))?
        .query_row([id], map_row)
        .optional()?;
    if let Some(a) = a.as_mut() {
        crate::store::work::annotate(c, std::slice::from_mut(a))?;
    }
    Ok(a)
}

/// The open Action of a Source with this dedupe key, if any.
pub fn open_by_dedupe_key(
    c: &Connection,
    source_id: &str,
    env: Environment,
    key: &str,
) -> Result<Option<ActionRecord>> {
    Ok(c.prepare_cached(&format!("{SELECT} WHERE a.source_id = ?1 AND a.environment = ?2 AND a.dedupe_key = ?3 AND a.status = 'open'"))?
        .query_row(params![source_id, env.as_str(), key], map_row)
        .optional()?)
}

/// Writes a changed spec of an open Action.
pub fn update_spec(c: &Connection, a: &ActionRecord) -> Result<()> {
    c.prepare_cached(
        "UPDATE actions SET spec = ?1, title = ?2, priority = ?3, priority_rank = ?4, action_version = ?5,
            fingerprint = ?6, expires_at = ?7, updated_at = ?8 WHERE id = ?9 AND status = 'open'",
    )?
    .execute(params![
        serde_json::to_string(&a.spec)?, a.spec.title, a.spec.priority.as_str(), a.spec.priority.rank(),
        a.action_version, a.fingerprint, a.spec.expires_at, a.updated_at, a.id,
    ])?;
    Ok(())
}

/// Moves an open Action to a terminal status. Returns false when it was no
/// longer open: someone else won, and nothing was written.
pub fn close(c: &Connection, id: &str, status: Status, resolution: &Resolution) -> Result<bool> {
    let n = c
        .prepare_cached("UPDATE actions SET status = ?1, resolution = ?2, closed_at = ?3, updated_at = ?3 WHERE id = ?4 AND status = 'open'")?
        .execute(params![status.as_str(), serde_json::to_string(resolution)?, resolution.decided_at, id])?;
    Ok(n == 1)
}

/// (id, version) of every open Action of a Source, in both environments
/// (index `actions_by_source`).
pub fn open_of_source(c: &Connection, source_id: &str) -> Result<Vec<(String, i64)>> {
    let mut st = c.prepare_cached(
        "SELECT id, action_version FROM actions WHERE source_id = ?1 AND status = 'open' ORDER BY created_at",
    )?;
    let rows = st.query_map([source_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub fn set_receipt(c: &Connection, id: &str, receipt_id: &str) -> Result<()> {
    c.prepare_cached("UPDATE actions SET receipt_id = ?1 WHERE id = ?2")?
        .execute(params![receipt_id, id])?;
    Ok(())
}

/// Records the execution outcome once; returns false when one already exists.
pub fn set_outcome(c: &Connection, id: &str, outcome: &Outcome, now: &str) -> Result<bool> {
    let n = c
        .prepare_cached("UPDATE actions SET outcome = ?1, updated_at = ?2 WHERE id = ?3 AND outcome IS NULL AND status = 'resolved'")?
        .execute(params![serde_json::to_string(outcome)?, now, id])?;
    Ok(n == 1)
}

/// Open Actions whose deadline has passed, oldest deadline first.
pub fn due_for_expiry(c: &Connection, now: &str, limit: i64) -> Result<Vec<ActionRecord>> {
    let mut st = c.prepare_cached(&format!(
        "{SELECT} WHERE a.status = 'open' AND a.expires_at IS NOT NULL AND a.expires_at <= ?1 ORDER BY a.expires_at LIMIT ?2"
    ))?;
    let rows = st.query_map(params![now, limit], map_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Which Actions an inbox query asks for (guide: "GET /v1/me/actions").
#[derive(Clone, Debug)]
pub struct InboxQuery {
    pub workspace_id: String,
    pub user_id: String,
    pub user_email: String,
    /// Members who may see every Action, restricted ones included.
    pub sees_restricted: bool,
    /// `open`, `snoozed`, `resolved`, `cancelled`, `expired` or `all`.
    pub status: String,
    pub search: Option<String>,
    pub source_id: Option<String>,
    pub priority: Option<String>,
    /// None = both environments.
    pub environment: Option<Environment>,
    /// `mine`, `unassigned` or `all`.
    pub scope: String,
    pub limit: i64,
    pub now: String,
}

/// The inbox's WHERE clause: workspace, visibility and every filter but
/// `status` (which `inbox` adds and `inbox_counts` groups by).
fn inbox_filter(q: &InboxQuery) -> (String, Vec<SqlValue>) {
    let mut sql = String::from(" WHERE a.workspace_id = ?");
    let mut args: Vec<SqlValue> = vec![q.workspace_id.clone().into()];
    match q.environment {
        Some(env) => {
            sql.push_str(" AND a.environment = ?");
            args.push(env.as_str().to_owned().into());
        }
        None => sql.push_str(" AND a.environment IN ('live', 'test')"),
    }
    if let Some(s) = &q.search {
        let escaped = s
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        sql.push_str(" AND a.title LIKE ? ESCAPE '\\'");
        args.push(format!("%{escaped}%").into());
    }
    if let Some(s) = &q.source_id {
        sql.push_str(" AND a.source_id = ?");
        args.push(s.clone().into());
    }
    // By rank, which the inbox index holds (the name is not indexed).
    if let Some(rank) = q
        .priority
        .as_deref()
        .and_then(Priority::parse)
        .map(Priority::rank)
    {
        sql.push_str(" AND a.priority_rank = ?");
        args.push(rank.into());
    }
    match q.scope.as_str() {
        "mine" => {
            sql.push_str(" AND (a.assignee_user_id = ? OR json_extract(a.spec, '$.assignee_email') = ? COLLATE NOCASE)");
            args.push(q.user_id.clone().into());
            args.push(q.user_email.clone().into());
        }
        "unassigned" => sql.push_str(
            " AND a.assignee_user_id IS NULL AND json_extract(a.spec, '$.assignee_email') IS NULL",
        ),
        _ => {}
    }
    if !q.sees_restricted {
        sql.push_str(
            " AND (a.visibility = 'workspace'
               OR EXISTS (SELECT 1 FROM json_each(a.spec, '$.reviewer_user_ids') WHERE value = ?)
               OR EXISTS (SELECT 1 FROM json_each(a.spec, '$.reviewer_emails') WHERE value = ? COLLATE NOCASE))",
        );
        args.push(q.user_id.clone().into());
        args.push(q.user_email.clone().into());
    }
    (sql, args)
}

/// Lists the inbox; fetches one more than asked so the caller knows `has_more`.
pub fn inbox(c: &Connection, q: &InboxQuery) -> Result<Vec<ActionRecord>> {
    let (filter, mut args) = inbox_filter(q);
    let mut sql = format!("{SELECT}{filter}");
    match q.status.as_str() {
        "all" => {}
        "open" => {
            sql.push_str(
                " AND a.status = 'open' AND (a.snoozed_until IS NULL OR a.snoozed_until <= ?)",
            );
            args.push(q.now.clone().into());
        }
        "snoozed" => {
            sql.push_str(" AND a.status = 'open' AND a.snoozed_until > ?");
            args.push(q.now.clone().into());
        }
        other => {
            sql.push_str(" AND a.status = ?");
            args.push(other.to_owned().into());
        }
    }
    if q.status == "open" || q.status == "snoozed" {
        sql.push_str(" ORDER BY a.priority_rank, a.created_at");
    } else {
        sql.push_str(" ORDER BY a.created_at DESC");
    }
    sql.push_str(" LIMIT ?");
    args.push((q.limit + 1).into());
    let mut st = c.prepare_cached(&sql)?;
    let rows = st.query_map(params_from_iter(args), map_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// How many Actions each inbox tab holds under the same filters.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct InboxCounts {
    pub open: i64,
    pub snoozed: i64,
    pub resolved: i64,
    pub cancelled: i64,
    pub expired: i64,
}

/// One `count(*)` per tab, each an equality seek on `actions_tabs`: without
/// text or visibility filters the counts never read the table, so closed
/// history does not slow the inbox down.
pub fn inbox_counts(c: &Connection, q: &InboxQuery) -> Result<InboxCounts> {
    let (filter, args) = inbox_filter(q);
    let count = |condition: &str, extra: Option<&str>| -> Result<i64> {
        let sql = format!("SELECT count(*) FROM actions a{filter} AND {condition}");
        let mut all = args.clone();
        if let Some(x) = extra {
            all.push(x.to_owned().into());
        }
        Ok(c.prepare_cached(&sql)?
            .query_row(params_from_iter(all), |r| r.get(0))?)
    };
    let open_all = count("a.status = 'open'", None)?;
    let snoozed = count("a.status = 'open' AND a.snoozed_until > ?", Some(&q.now))?;
    Ok(InboxCounts {
        open: open_all - snoozed,
        snoozed,
        resolved: count("a.status = 'resolved'", None)?,
        cancelled: count("a.status = 'cancelled'", None)?,
        expired: count("a.status = 'expired'", None)?,
    })
}
