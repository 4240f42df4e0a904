//! Actions and their append-only history. Terminal transitions are
//! compare-and-set on `status = 'open'`: the first wins, later ones change
//! nothing (guide: "Statuses").

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};
use serde_json::Value;

use crate::domain::action::{
    ActionRecord, ActionSpec, Environment, Outcome, Priority, Resolution, Status,
};
use crate::domain::receipt;
use crate::error::Result;

macro_rules! select_fields {
    () => {
        "SELECT a.id, a.workspace_id, a.source_id, a.environment, a.status, a.action_version,
    a.fingerprint, a.spec, a.resolution, a.outcome, a.snoozed_until, a.created_at, a.updated_at, a.closed_at,
    r.id, r.kid, r.jws"
    };
}
macro_rules! from_actions {
    () => {
        " FROM actions a LEFT JOIN receipts r ON r.id = a.receipt_id"
    };
}
const SELECT: &str = concat!(select_fields!(), from_actions!());

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

/// The `assignee_email` column: the spec's, lower-cased as SQLite's
/// `lower()` does (ASCII letters only), so the inbox's `scope` filters,
/// which compare it with `lower(?)`, find it (migration 0018).
pub fn assignee_email(spec: &ActionSpec) -> Option<String> {
    spec.assignee_email.as_deref().map(str::to_ascii_lowercase)
}

/// Inserts a new Action; `spec_json` is `a.spec` serialised by the caller, off
/// the writer thread.
/// `answer_key` is the Idempotency-Key of a create whose stored answer is
/// rebuilt from this Action (store::idempotency::keep_answer finds it so).
pub fn insert(
    c: &Connection,
    a: &ActionRecord,
    spec_json: &str,
    answer_key: Option<&str>,
) -> Result<()> {
    c.prepare_cached(
        "INSERT INTO actions(id, workspace_id, source_id, environment, status, priority, priority_rank, title,
            action_version, fingerprint, spec, dedupe_key, assignee_user_id, assignee_email, visibility, expires_at, created_at, updated_at, run_id, answer_key)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?17, ?18, ?19)",
    )?
    .execute(params![
        a.id, a.workspace_id, a.source_id, a.environment.as_str(), a.status.as_str(),
        a.spec.priority.as_str(), a.spec.priority.rank(), a.spec.title, a.action_version, a.fingerprint,
        spec_json, a.spec.dedupe_key, a.spec.assignee_user_id, assignee_email(&a.spec),
        a.spec.visibility().as_str(), a.spec.expires_at, a.created_at, a.spec.run_id, answer_key,
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

/// The Action as stored, without what `annotate` completes (people's names,
/// comment count, context requests).
pub fn get_plain(c: &Connection, id: &str) -> Result<Option<ActionRecord>> {
    Ok(c.prepare_cached(&format!("{SELECT} WHERE a.id = ?1"))?
        .query_row([id], map_row)
        .optional()?)
}

/// Whether the Action has a callback_url (read from its spec alone).
pub fn has_callback(c: &Connection, id: &str) -> Result<bool> {
    Ok(
        c.prepare_cached(
            "SELECT spec ->> '$.callback_url' IS NOT NULL FROM actions WHERE id = ?1",
        )?
        .query_row([id], |r| r.get(0))
        .optional()?
        .unwrap_or(false),
    )
}

/// The open Action of a Source with this dedupe key, if any, its people
/// completed as `get` completes them.
pub fn open_by_dedupe_key(
    c: &Connection,
    source_id: &str,
    env: Environment,
    key: &str,
) -> Result<Option<ActionRecord>> {
    let mut found = c.prepare_cached(&format!("{SELECT} WHERE a.source_id = ?1 AND a.environment = ?2 AND a.dedupe_key = ?3 AND a.status = 'open'"))?
        .query_row(params![source_id, env.as_str(), key], map_row)
        .optional()?;
    if let Some(a) = found.as_mut() {
        crate::store::work::annotate(c, std::slice::from_mut(a))?;
    }
    Ok(found)
}

/// Writes a changed spec of an open Action. Its title is re-indexed by the
/// `actions_fts_update` trigger, which removes the old title's terms first:
/// never call this in the transaction that created the Action, whose title
/// `index_new_rows` indexes only before COMMIT (PATCH cannot: the id
/// reaches the Source after the create committed). A keyed create's answer
/// that a replay would rebuild from the Action is kept as text first.
pub fn update_spec(c: &Connection, a: &ActionRecord) -> Result<()> {
    crate::store::idempotency::keep_answer(c, &a.id)?;
    c.prepare_cached(
        "UPDATE actions SET spec = ?1, title = ?2, priority = ?3, priority_rank = ?4, action_version = ?5,
            fingerprint = ?6, expires_at = ?7, updated_at = ?8, assignee_email = ?10 WHERE id = ?9 AND status = 'open'",
    )?
    .execute(params![
        serde_json::to_string(&a.spec)?, a.spec.title, a.spec.priority.as_str(), a.spec.priority.rank(),
        a.action_version, a.fingerprint, a.spec.expires_at, a.updated_at, a.id, assignee_email(&a.spec),
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

/// Closes every open Action of a Source, in both environments, in one
/// statement (index `actions_source_inbox`, two seeks); answers (id,
/// version) of each. One UPDATE per Action cost each its own statement
/// journal, and SQLite walks the job's whole in-memory journal to release
/// one: 20,000 Actions took 28 s, now well under one (docs/benchmarks.md,
/// "Webhooks").
/// Closes every open Action of a Source: (id, version, whether it names a
/// requester or an assignee, who hear `action.closed`).
pub fn close_open_of_source(
    c: &Connection,
    source_id: &str,
    status: Status,
    resolution: &Resolution,
) -> Result<Vec<(String, i64, bool)>> {
    let mut st = c.prepare_cached(CLOSE_OPEN_OF_SOURCE)?;
    let rows = st.query_map(
        params![
            source_id,
            status.as_str(),
            serde_json::to_string(resolution)?,
            resolution.decided_at
        ],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

const CLOSE_OPEN_OF_SOURCE: &str =
    "UPDATE actions SET status = ?2, resolution = ?3, closed_at = ?4, updated_at = ?4
     WHERE source_id = ?1 AND environment IN ('live', 'test') AND status = 'open'
     RETURNING id, action_version,
        assignee_user_id IS NOT NULL OR assignee_email IS NOT NULL
        OR json_type(spec, '$.requested_by_user_id') IS 'text'
        OR json_type(spec, '$.requested_by_email') IS 'text'";

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

/// Whether an open Action's deadline has passed by `now` (`actions_expiring`):
/// the expiry pass reads this first, so a pass with nothing to close
/// writes nothing.
pub fn any_due_for_expiry(c: &Connection, now: &str) -> Result<bool> {
    Ok(c.prepare_cached(ANY_DUE_FOR_EXPIRY)?
        .query_row([now], |r| r.get(0))?)
}

const ANY_DUE_FOR_EXPIRY: &str = "SELECT EXISTS (SELECT 1 FROM actions
    WHERE status = 'open' AND expires_at IS NOT NULL AND expires_at <= ?1)";

/// Open Actions whose deadline has passed, oldest deadline first.
pub fn due_for_expiry(c: &Connection, now: &str, limit: i64) -> Result<Vec<ActionRecord>> {
    let mut st = c.prepare_cached(&format!(
        "{SELECT} WHERE a.status = 'open' AND a.expires_at IS NOT NULL AND a.expires_at <= ?1 ORDER BY a.expires_at LIMIT ?2"
    ))?;
    let rows = st.query_map(params![now, limit], map_row)?;
    let mut due: Vec<ActionRecord> = rows.collect::<rusqlite::Result<_>>()?;
    // People completed as `get` completes them, so whatever the expiry pass
    // builds from these (receipts, events) names them the same way.
    crate::store::work::annotate(c, &mut due)?;
    Ok(due)
}

/// The highest rowid of actions (0 when empty): the writer reads it when a
/// write transaction begins, and `index_new_rows` indexes what came after.
pub fn last_rowid(c: &Connection) -> Result<i64> {
    Ok(
        c.prepare_cached("SELECT coalesce(max(rowid), 0) FROM actions")?
            .query_row([], |r| r.get(0))?,
    )
}

/// What a write transaction adds for the Actions created since `after` (a
/// `last_rowid`), once, outside any job's savepoint, before COMMIT:
/// - their titles to actions_fts. FTS5 flushes its pending terms at every
///   savepoint, so a per-row trigger inside each job's savepoint wrote one
///   segment per Action (migration 0009);
/// - their creation to the analytics rollup: +1 created and open per day,
///   Source and environment, one upsert per group instead of one per row
///   (migration 0017). The triggers that close them add deltas too, so an
///   Action closed before this ran is counted right.
///
/// rowids only grow (no Action is ever deleted, and none was when max(rowid)
/// was read), so every new row is above `after`.
pub fn index_new_rows(c: &Connection, after: i64) -> Result<()> {
    c.prepare_cached(NEW_TITLES)?.execute([after])?;
    c.prepare_cached(NEW_IN_ROLLUP)?.execute([after])?;
    Ok(())
}

// `NOT INDEXED`: the new rows are a rowid range at the end of the table;
// without it the planner may walk a whole index that starts with
// (workspace_id, environment) to skip the GROUP BY's sort (test `plans`).
const NEW_TITLES: &str = "INSERT INTO actions_fts(rowid, title, fts_ws)
     SELECT rowid, title, fts_ws FROM actions NOT INDEXED WHERE rowid > ?1";
const NEW_IN_ROLLUP: &str =
    "INSERT INTO analytics_daily(workspace_id, environment, source_id, day, created, open)
     SELECT workspace_id, environment, source_id, substr(created_at, 1, 10), count(*), count(*)
     FROM actions NOT INDEXED WHERE rowid > ?1 GROUP BY 1, 2, 3, 4
     ON CONFLICT(workspace_id, environment, day, source_id)
     DO UPDATE SET created = created + excluded.created, open = open + excluded.open";

/// Which Actions an inbox query asks for (guide: "GET /v1/me/actions").
#[derive(Clone, Debug)]
pub struct InboxQuery {
    pub workspace_id: String,
    pub user_id: String,
    pub user_email: String,
    /// When the person's account was created: their address lists them
    /// only on Actions created since (`VISIBLE`).
    pub user_since: String,
    /// Members who may see every Action, restricted ones included.
    pub sees_restricted: bool,
    /// Members who may vote where they are listed (not viewers):
    /// `scope=needs_my_vote` lists nothing for the others.
    pub may_vote: bool,
    /// `open`, `snoozed`, `resolved`, `cancelled`, `expired` or `all`.
    pub status: String,
    pub search: Option<String>,
    pub source_id: Option<String>,
    /// The Actions raised in one run (`run_id`): a few, read from
    /// `actions_by_run` and sorted.
    pub run_id: Option<String>,
    pub priority: Option<String>,
    /// None = both environments.
    pub environment: Option<Environment>,
    /// `mine`, `unassigned`, `needs_my_vote` or `all`.
    pub scope: String,
    pub limit: i64,
    pub now: String,
    /// `starting_after`: the id of the Action the page continues after, in
    /// this list's order (`inbox_after` reads where it sorts).
    pub after: Option<String>,
}

/// The FTS5 query of a `search`, on the `title` column: each
/// whitespace-separated word becomes a quoted prefix phrase (`"word"*`,
/// inner `"` doubled), all of them required.
/// Quoting makes every input literal: `AND`, `NEAR`, `-`, `*`, `"` or `(` are
/// words or separators, never FTS syntax. Words without a letter or digit hold
/// no token and are dropped; None when no word is left (the search matches
/// nothing). Inside a word, punctuation splits tokens that must follow each
/// other: `café-bar` finds "Cafe bar…".
pub fn fts_query(search: &str) -> Option<String> {
    let words: Vec<String> = search
        .split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .map(|w| format!("\"{}\"*", w.replace('"', "\"\"")))
        .collect();
    (!words.is_empty()).then(|| format!("title : ({})", words.join(" ")))
}

/// `m` (an [`fts_query`]) limited to the Actions of one workspace, through
/// the index's `fts_ws` column: U+E000 and the workspace id after its
/// `ws_`, tokenized as the column is (migration 0046).
fn in_workspace(m: &str, workspace_id: &str) -> String {
    let ws = workspace_id
        .split_once('_')
        .map_or(workspace_id, |(_, rest)| rest);
    format!("fts_ws : \"\u{E000}{}\" AND {m}", ws.replace('"', "\"\""))
}

/// A search matching at most this many Actions of the workspace is driven
/// by its matches: each is read and tested, and the page sorted (and the
/// dashboard counts its tabs); a broader one walks the ordered inbox index
/// and tests each entry against the set of matches, which then fills a page
/// quickly.
/// Measured at 1M Actions (docs/benchmarks.md) when the broad way still
/// copied its matches into a temporary index: both cost about the same near
/// 2,000.
pub const SEARCH_DRIVE_LIMIT: i64 = 2000;

/// Tab counts stop here: a count of COUNT_CAP means "at least that many".
/// Counting more would read one index entry per Actions (800,000 resolved
/// ones at a million) on every page.
pub const COUNT_CAP: i64 = 1000;

/// What the FTS index said about a request's search, read once per request
/// (the list and the tab counts of a page share it): evaluating a two-word
/// prefix query costs about 5 ms at a million titles.
#[derive(Clone, Debug)]
pub enum Matches {
    /// No search, or one with nothing to look for.
    NotSearched,
    /// At most SEARCH_DRIVE_LIMIT matching rowids, as a JSON array: the
    /// queries read them one by one (json_each drives).
    Narrow(String),
    /// More, up to BROAD_SET_LIMIT: every matching rowid, ascending, as
    /// 8-byte little-endian integers. The list walks its ordered inbox index
    /// and tests each entry with `hds_matched(?, a.rowid)`, a binary search
    /// in this set that needs no table row (keep it testable from the index),
    /// and stops at the page's end. (`rowid IN (SELECT … MATCH …)` copied
    /// every match into a temporary index first: 5 of the 7 ms of a word in
    /// 2.5 % of a million titles.)
    Broad(Vec<u8>),
    /// More than BROAD_SET_LIMIT: the list query runs the FTS query itself,
    /// as `rowid IN (SELECT … MATCH …)`, so no request holds megabytes of
    /// rowids (and each of its copies: one per arm, one per binding).
    Vast,
}

/// The most matches a request holds as a `Matches::Broad` set: 2 MiB of
/// rowids. A part so short that it begins most words (`r`) can match most
/// titles of the instance.
pub const BROAD_SET_LIMIT: usize = 1 << 18;

/// Reads the matches of `q`'s search from actions_fts, once per request (the
/// doclist alone, no row is read). First, the list's `source_id` must name
/// a Source of the workspace (revoked ones too): a typo is told, not
/// answered with an empty list.
pub fn matches(c: &Connection, q: &InboxQuery) -> Result<Matches> {
    if let Some(id) = &q.source_id {
        let known = c
            .prepare_cached("SELECT 1 FROM sources WHERE id = ?1 AND workspace_id = ?2")?
            .exists(params![id, q.workspace_id])?;
        if !known {
            return Err(crate::error::Error::validation(vec![
                crate::error::FieldError::new(
                    "source_id",
                    format!("{id} is not a Source of this workspace; GET /v1/sources lists them"),
                ),
            ]));
        }
    }
    if let Some(id) = &q.run_id {
        let known = c
            .prepare_cached("SELECT 1 FROM runs WHERE id = ?1 AND workspace_id = ?2")?
            .exists(params![id, q.workspace_id])?;
        if !known {
            return Err(crate::error::Error::validation(vec![
                crate::error::FieldError::new(
                    "run_id",
                    format!("{id} is not a run of this workspace; GET /v1/runs lists them"),
                ),
            ]));
        }
    }
    let Search::Fts(m) = inbox_filter(q).search else {
        return Ok(Matches::NotSearched);
    };
    // FTS5 yields its matches in ascending rowid order (asked for, so that
    // the planner keeps it); `hds_matched` relies on it.
    let mut st = c.prepare_cached(
        "SELECT rowid FROM actions_fts WHERE actions_fts MATCH ?1 ORDER BY rowid LIMIT ?2",
    )?;
    let mut rows = st.query(rusqlite::params![m, BROAD_SET_LIMIT as i64 + 1])?;
    let mut set: Vec<u8> = Vec::new();
    let mut n = 0usize;
    while let Some(r) = rows.next()? {
        set.extend_from_slice(&r.get::<_, i64>(0)?.to_le_bytes());
        n += 1;
    }
    drop(rows);
    let broad = |set: Vec<u8>| {
        if n > BROAD_SET_LIMIT {
            Matches::Vast
        } else {
            Matches::Broad(set)
        }
    };
    let rowids: Vec<i64> = if n as i64 <= SEARCH_DRIVE_LIMIT {
        set.chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().unwrap_or_default()))
            .collect()
    } else if !others_hold_actions(c, &q.workspace_id)? {
        // Every match is this workspace's.
        return Ok(broad(set));
    } else {
        // More than the limit in every workspace: whether the search is
        // narrow is decided by the matches of this workspace alone (how
        // others' titles match must not show in this person's page). The
        // index stops at the limit's first match beyond it.
        let scoped: Vec<i64> = st
            .query_map(
                rusqlite::params![in_workspace(&m, &q.workspace_id), SEARCH_DRIVE_LIMIT + 1],
                |r| r.get(0),
            )?
            .collect::<rusqlite::Result<_>>()?;
        if scoped.len() as i64 > SEARCH_DRIVE_LIMIT {
            return Ok(broad(set));
        }
        scoped
    };
    Ok(Matches::Narrow(serde_json::to_string(&rowids).map_err(
        |e| crate::error::Error::internal(anyhow::anyhow!("rowids as JSON: {e}")),
    )?))
}

/// Whether any other workspace than `workspace_id` holds an Action: two
/// seeks of an index that starts with the workspace (`actions_by_age`).
/// Where none does, the matches of the whole index are the workspace's.
fn others_hold_actions(c: &Connection, workspace_id: &str) -> Result<bool> {
    Ok(c.prepare_cached(OTHERS_HOLD_ACTIONS)?
        .query_row([workspace_id], |r| r.get(0))?)
}

const OTHERS_HOLD_ACTIONS: &str = "SELECT EXISTS (SELECT 1 FROM actions WHERE workspace_id < ?1)
    OR EXISTS (SELECT 1 FROM actions WHERE workspace_id > ?1)";

/// Registers `hds_matched(set, rowid)` on a connection: true when `rowid` is
/// in `set`, a BLOB of ascending 8-byte little-endian integers
/// (`Matches::Broad`). A binary search in the bound parameter, read in place.
pub fn register_functions(c: &Connection) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    use rusqlite::types::ValueRef;
    c.create_scalar_function(
        "hds_matched",
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let ValueRef::Blob(set) = ctx.get_raw(0) else {
                return Err(rusqlite::Error::InvalidFunctionParameterType(
                    0,
                    ctx.get_raw(0).data_type(),
                ));
            };
            Ok(sorted_contains(set, ctx.get::<i64>(1)?))
        },
    )
}

/// Whether `set` (ascending 8-byte little-endian integers) holds `x`.
fn sorted_contains(set: &[u8], x: i64) -> bool {
    let at = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&set[i * 8..i * 8 + 8]);
        i64::from_le_bytes(b)
    };
    let (mut lo, mut hi) = (0, set.len() / 8);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match at(mid).cmp(&x) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
}

/// Who is not an owner or admin sees a restricted Action only when listed as
/// its reviewer: by user id, or by e-mail address if their account existed
/// when the Action was created (`service::actions::is_listed`). Bound after
/// it: the user id, the account's creation time, the e-mail address.
const VISIBLE: &str = " AND (a.visibility = 'workspace'
               OR EXISTS (SELECT 1 FROM json_each(a.spec, '$.reviewer_user_ids') WHERE value = ?)
               OR (a.created_at >= ?
                   AND EXISTS (SELECT 1 FROM json_each(a.spec, '$.reviewer_emails') WHERE value = ? COLLATE NOCASE)))";

/// Where the Action a page continues after (`starting_after`) sorts: the
/// values of every list order, and its rowid, which breaks ties (two
/// Actions created in the same millisecond).
#[derive(Clone, Debug)]
pub struct After {
    rank: i64,
    created_at: String,
    /// Empty when it has none, which sorts before every wake-up time.
    snoozed_until: String,
    rowid: i64,
}

/// Reads where `q.after` sorts; None without one. An id that is no Action of
/// the workspace the caller may see is refused alike, whether it exists or
/// not. Its place is read as it is now: an Action that has left the list
/// since (decided, snoozed, given another priority) still has a place in
/// its order, so the page goes on from there.
pub fn inbox_after(c: &Connection, q: &InboxQuery) -> Result<Option<After>> {
    let Some(id) = &q.after else {
        return Ok(None);
    };
    let mut sql = String::from(
        "SELECT a.priority_rank, a.created_at, coalesce(a.snoozed_until, ''), a.rowid FROM actions a
         WHERE a.id = ? AND a.workspace_id = ?",
    );
    let mut args: Vec<SqlValue> = vec![id.clone().into(), q.workspace_id.clone().into()];
    if !q.sees_restricted {
        sql.push_str(VISIBLE);
        args.push(q.user_id.clone().into());
        args.push(q.user_since.clone().into());
        args.push(q.user_email.clone().into());
    }
    let found = c
        .prepare_cached(&sql)?
        .query_row(params_from_iter(args), |r| {
            Ok(After {
                rank: r.get(0)?,
                created_at: r.get(1)?,
                snoozed_until: r.get(2)?,
                rowid: r.get(3)?,
            })
        })
        .optional()?;
    found.map(Some).ok_or_else(|| unknown_after(id))
}

/// The refusal of a `starting_after` that is no Action the caller may see
/// in their active workspace (none at all when they belong to none).
pub fn unknown_after(id: &str) -> crate::error::Error {
    crate::error::Error::validation(vec![crate::error::FieldError::new(
        "starting_after",
        format!(
            "{id} is not an Action of this workspace that you can see; give the id of the last Action of the page before"
        ),
    )])
}

/// The inbox's WHERE clause: workspace, visibility and every filter but
/// `status` (which `inbox` adds and `inbox_counts` groups by), and the arms
/// the query is the disjoint union of (one, or two for scope=mine).
struct Filter {
    sql: String,
    args: Vec<SqlValue>,
    arms: Vec<(&'static str, Vec<SqlValue>)>,
    search: Search,
    /// environment=all where an index led by the environment serves the
    /// filter (every scope but mine): open lists merge one arm per
    /// environment, counts say `IN ('live','test')`.
    split_environments: bool,
}

enum Search {
    None,
    /// A search without a letter or digit: nothing to look for, nothing matches.
    Nothing,
    /// The FTS5 query, matched on actions_fts.
    Fts(String),
}

/// `scope=needs_my_vote`.
pub const NEEDS_MY_VOTE: &str = "needs_my_vote";

/// `scope=needs_my_vote`: open Actions under an approval policy that list
/// the person (by user id or e-mail, as `VISIBLE`), on whose current version
/// they have not voted, and that are not their own request (unless the
/// policy allows self-approval), as `ActionAccess::can_vote` and
/// `forbids_self_approval` say. Every term is on the Action's row or one
/// vote's primary key. Arguments: user id, the account's creation time,
/// e-mail, user id, user id, e-mail.
const AWAITS_MY_VOTE: &str = " AND a.status = 'open' AND a.visibility = 'restricted'
    AND json_type(a.spec, '$.approval_policy') = 'object'
    AND (EXISTS (SELECT 1 FROM json_each(a.spec, '$.reviewer_user_ids') WHERE value = ?)
         OR (a.created_at >= ?
             AND EXISTS (SELECT 1 FROM json_each(a.spec, '$.reviewer_emails') WHERE value = ? COLLATE NOCASE)))
    AND NOT EXISTS (SELECT 1 FROM action_votes v
                     WHERE v.action_id = a.id AND v.action_version = a.action_version AND v.user_id = ?)
    AND (coalesce(json_extract(a.spec, '$.approval_policy.allow_self_approval'), 0)
         OR NOT (coalesce(json_extract(a.spec, '$.requested_by_user_id') = ?, 0)
                 OR coalesce(json_extract(a.spec, '$.requested_by_email') = ? COLLATE NOCASE, 0)))";

/// Whether the query is forced onto `actions_by_run`: a run filter, unless
/// the filter holds a literal false (a search without a word, or
/// needs_my_vote for someone who may not vote). SQLite folds `AND 0` into
/// the whole WHERE clause, dropping `run_id = ?`, so the partial index
/// could not serve it and `INDEXED BY` would fail ("no query solution").
fn by_run(q: &InboxQuery) -> bool {
    // A search without a word is `Search::Nothing` in `inbox_filter`.
    q.run_id.is_some()
        && (q.scope != NEEDS_MY_VOTE || q.may_vote)
        && !matches!(q.search.as_deref().map(fts_query), Some(None))
}

/// The FROM of an inbox query: for `scope=needs_my_vote`, the partial index
/// of open restricted Actions (the planner, without statistics, would walk
/// `actions_inbox`, every open Action of the workspace).
fn actions_from(q: &InboxQuery) -> &'static str {
    if by_run(q) {
        " FROM actions a INDEXED BY actions_by_run LEFT JOIN receipts r ON r.id = a.receipt_id"
    } else if q.scope == NEEDS_MY_VOTE && q.may_vote {
        " FROM actions a INDEXED BY actions_restricted_open LEFT JOIN receipts r ON r.id = a.receipt_id"
    } else {
        from_actions!()
    }
}

/// Which index serves which filter (each asserted by `tests::plans`):
/// - environment=live|test: `actions_inbox` (workspace, environment, status,
///   priority_rank, created_at, snoozed_until): an ordered seek, LIMIT stops it.
/// - environment=all, open Actions: a UNION ALL of the same seek for live
///   and for test, merged in order (an `IN ('live','test')` would need a
///   sort); the other statuses' indexes hold the environment last, so they
///   have no environment term (the CHECK allows only live and test), and the
///   tab counts say `IN ('live','test')`, two seeks where the environment
///   leads the index. (`actions_inbox_all`, which held the open ones of both
///   in order, cost every create an index write: migration 0017.)
/// - priority: one more equality column of the same indexes.
/// - source_id: `actions_source_inbox` (source_id, environment, status, …);
///   on a closed status, `actions_source_closed` (source_id, environment,
///   status, created_at; partial), newest first.
/// - run_id: `actions_by_run` (run_id, id; partial), forced by
///   `actions_from` (without statistics the planner would walk the
///   workspace's inbox index): a run's Actions, sorted for the page.
/// - scope=mine: a UNION ALL of `assignee_user_id = me` (partial index
///   `actions_assignee_user`) and `assignee_email = my e-mail` not already
///   mine by id (`actions_assignee_email`, on the lower-cased `assignee_email` column),
///   merged in order; an OR of the two would walk the whole open inbox.
/// - scope=unassigned: the partial index `actions_unassigned`.
/// - scope=needs_my_vote: the partial index `actions_restricted_open`
///   (workspace, environment, priority_rank, created_at; open restricted
///   Actions only), forced by `actions_from`; in its order for the open
///   list, sorted (a few rows) for the others.
/// - status=resolved|cancelled|expired: the partial index `actions_closed`
///   (workspace, status, created_at, environment), newest first; status=all:
///   `actions_by_age` (workspace, created_at, environment).
/// - status=snoozed: the partial index `actions_snoozed`, in its order
///   (wake-up time, then age), so LIMIT stops the walk.
/// - search, broad (more than SEARCH_DRIVE_LIMIT matches): the filter's own
///   ordered index is walked as without a search, each entry tested by
///   `hds_matched` against the set `matches` read (no temporary copy), until
///   the page is full; narrow: the rowids `matches` read drive (json_each
///   CROSS JOIN), each match read once by rowid, the page sorted.
fn inbox_filter(q: &InboxQuery) -> Filter {
    let mut sql = String::from(" WHERE a.workspace_id = ?");
    let mut args: Vec<SqlValue> = vec![q.workspace_id.clone().into()];
    if let Some(env) = q.environment {
        // scope=mine: `+` keeps the planner off actions_inbox (an equality
        // as long as the assignee index's), which would walk every open
        // Action; the assignee indexes test the environment themselves.
        sql.push_str(if q.scope == "mine" {
            " AND +a.environment = ?"
        } else {
            " AND a.environment = ?"
        });
        args.push(env.as_str().to_owned().into());
    }
    let search = match q.search.as_deref().map(fts_query) {
        None => Search::None,
        Some(None) => Search::Nothing,
        Some(Some(m)) => Search::Fts(m),
    };
    if let Some(s) = &q.source_id {
        sql.push_str(" AND a.source_id = ?");
        args.push(s.clone().into());
    }
    if let Some(r) = &q.run_id {
        sql.push_str(" AND a.run_id = ?");
        args.push(r.clone().into());
    }
    // By rank, which the inbox indexes hold (the name is not indexed).
    if let Some(rank) = q
        .priority
        .as_deref()
        .and_then(Priority::parse)
        .map(Priority::rank)
    {
        sql.push_str(" AND a.priority_rank = ?");
        args.push(rank.into());
    }
    let mut arms: Vec<(&'static str, Vec<SqlValue>)> = vec![("", Vec::new())];
    match q.scope.as_str() {
        "mine" => {
            // assignee_email is the spec's, lower-cased as lower() does
            // (migration 0018): lower() folds ASCII as COLLATE NOCASE did. The
            // e-mail counts only while no user id holds the Action, as for
            // `assignee` in the Action's JSON.
            arms = vec![
                (
                    " AND a.assignee_user_id = ?",
                    vec![q.user_id.clone().into()],
                ),
                (
                    " AND a.assignee_email = lower(?) AND a.assignee_user_id IS NULL",
                    vec![q.user_email.clone().into()],
                ),
            ];
        }
        "unassigned" => {
            sql.push_str(" AND a.assignee_user_id IS NULL AND a.assignee_email IS NULL");
        }
        NEEDS_MY_VOTE if !q.may_vote => sql.push_str(" AND 0"),
        NEEDS_MY_VOTE => {
            sql.push_str(AWAITS_MY_VOTE);
            for arg in [
                &q.user_id,
                &q.user_since,
                &q.user_email,
                &q.user_id,
                &q.user_id,
                &q.user_email,
            ] {
                args.push(arg.clone().into());
            }
        }
        _ => {}
    }
    if !q.sees_restricted {
        sql.push_str(VISIBLE);
        args.push(q.user_id.clone().into());
        args.push(q.user_since.clone().into());
        args.push(q.user_email.clone().into());
    }
    Filter {
        sql,
        args,
        arms,
        search,
        split_environments: q.environment.is_none() && q.scope != "mine",
    }
}

/// The SQL and arguments of `inbox` (apart so the plan test can EXPLAIN it),
/// for the `matches` of its search.
fn inbox_sql(q: &InboxQuery, matches: &Matches, after: Option<&After>) -> (String, Vec<SqlValue>) {
    let mut f = inbox_filter(q);
    let mut from = actions_from(q).to_owned();
    match (&f.search, matches) {
        (Search::None, _) => {}
        (Search::Nothing, _) => f.sql.push_str(" AND 0"),
        (Search::Fts(_), Matches::Narrow(rowids)) => {
            from = " FROM json_each(?) j CROSS JOIN actions a ON a.rowid = j.value \
                    LEFT JOIN receipts r ON r.id = a.receipt_id"
                .to_owned();
            f.args.insert(0, rowids.clone().into());
            // The matches drive and the page is sorted: one arm is enough.
            f.split_environments = false;
        }
        (Search::Fts(_), Matches::Broad(set)) => {
            f.sql.push_str(" AND hds_matched(?, a.rowid)");
            f.args.push(SqlValue::Blob(set.clone()));
        }
        // Too many to hold, or not read yet (`matches`): the FTS set, probed.
        (Search::Fts(m), Matches::Vast | Matches::NotSearched) => {
            f.sql.push_str(
                " AND a.rowid IN (SELECT rowid FROM actions_fts WHERE actions_fts MATCH ?)",
            );
            f.args.push(m.clone().into());
        }
    }
    let mut status_sql = String::new();
    let mut status_args: Vec<SqlValue> = Vec::new();
    match q.status.as_str() {
        "all" => {}
        "open" => {
            status_sql.push_str(
                " AND a.status = 'open' AND (a.snoozed_until IS NULL OR a.snoozed_until <= ?)",
            );
            status_args.push(q.now.clone().into());
        }
        // After an Action that wakes later than now, its wake-up time bounds
        // the walk instead of now (which it implies), so the page is a seek
        // there; after one that wakes earlier (it is back already), every
        // snoozed Action sorts after it.
        "snoozed" => {
            let from = after
                .map(|at| at.snoozed_until.as_str())
                .filter(|s| *s > q.now.as_str());
            if let Some(from) = from {
                status_sql.push_str(" AND a.status = 'open' AND a.snoozed_until >= ?");
                status_args.push(from.to_owned().into());
            } else {
                status_sql.push_str(" AND a.status = 'open' AND a.snoozed_until > ?");
                status_args.push(q.now.clone().into());
            }
        }
        other => {
            // The partial index actions_closed states `status <> 'open'`;
            // the planner uses it only when the query says so in those words.
            status_sql.push_str(" AND a.status = ? AND a.status <> 'open'");
            status_args.push(other.to_owned().into());
        }
    }
    // The page after `after`, in the list's order with the rowid last: the
    // first comparison is a range on the ordered index (the columns follow
    // its equalities), the second leaves out the ties up to `after` itself.
    if let Some(at) = after {
        let (sort, key, tie): (&str, [SqlValue; 2], &str) = match q.status.as_str() {
            "snoozed" => (
                "(a.snoozed_until, a.created_at) >",
                [
                    at.snoozed_until.clone().into(),
                    at.created_at.clone().into(),
                ],
                "a.rowid >",
            ),
            "open" => (
                "(a.priority_rank, a.created_at) >",
                [at.rank.into(), at.created_at.clone().into()],
                "a.rowid >",
            ),
            _ => (
                "(a.created_at) <",
                [at.created_at.clone().into(), SqlValue::Null],
                "a.rowid <",
            ),
        };
        if q.status == "snoozed" || q.status == "open" {
            status_sql.push_str(&format!(
                " AND {sort}= (?, ?) AND ({sort} (?, ?) OR {tie} ?)"
            ));
            status_args.extend(key.iter().cloned());
            status_args.extend(key.iter().cloned());
        } else {
            status_sql.push_str(&format!(" AND {sort}= ? AND ({sort} ? OR {tie} ?)"));
            status_args.push(key[0].clone());
            status_args.push(key[0].clone());
        }
        status_args.push(at.rowid.into());
    }
    if f.split_environments && q.status == "open" {
        // Only the unscoped or unassigned arm is here (not scope=mine).
        f.arms = vec![
            (" AND a.environment = 'live'", Vec::new()),
            (" AND a.environment = 'test'", Vec::new()),
        ];
    }
    let mut sql = String::new();
    let mut args = Vec::new();
    for (i, (arm, arm_args)) in f.arms.iter().enumerate() {
        if i > 0 {
            sql.push_str(" UNION ALL ");
        }
        // Columns 18 and 19 are priority_rank and rowid, for the ORDER BY of
        // the union.
        sql.push_str(&format!(
            "{}, a.priority_rank, a.rowid{from}{}{arm}{status_sql}",
            select_fields!(),
            f.sql
        ));
        args.extend(f.args.iter().cloned());
        args.extend(arm_args.iter().cloned());
        args.extend(status_args.iter().cloned());
    }
    // Result columns (1-based): 11 snoozed_until, 12 created_at, 18
    // priority_rank, 19 rowid. Snoozed ones by wake-up time (the next back
    // first), as their index holds them; open ones by priority, then age;
    // the rowid last, so that the order is total and `starting_after` neither
    // repeats nor skips an Action.
    if q.status == "snoozed" {
        sql.push_str(" ORDER BY 11, 12, 19");
    } else if q.status == "open" {
        sql.push_str(" ORDER BY 18, 12, 19");
    } else {
        sql.push_str(" ORDER BY 12 DESC, 19 DESC");
    }
    sql.push_str(" LIMIT ?");
    args.push((q.limit + 1).into());
    (sql, args)
}

/// Lists the inbox; fetches one more than asked so the caller knows `has_more`.
/// `matches` is `matches(c, q)`, read once for the list and its counts.
pub fn inbox(c: &Connection, q: &InboxQuery, matches: &Matches) -> Result<Vec<ActionRecord>> {
    let after = inbox_after(c, q)?;
    let (sql, args) = inbox_sql(q, matches, after.as_ref());
    let mut st = c.prepare_cached(&sql)?;
    let rows = st.query_map(params_from_iter(args), map_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// How many Actions each inbox tab holds under the same filters, each
/// counted up to COUNT_CAP.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct InboxCounts {
    pub open: i64,
    pub snoozed: i64,
    pub resolved: i64,
    pub cancelled: i64,
    pub expired: i64,
}

/// The tabs in order: the status each counts, as SQL on the inbox filter.
/// Snoozed ones: without other filters `actions_snoozed` counts them (only
/// snoozed Actions are in it); with a scope, Source or priority the filter's
/// own index does (each holds snoozed_until), and `+` keeps the planner off
/// `actions_snoozed`, which would read every snoozed row to test those.
fn tabs(q: &InboxQuery) -> [&'static str; 5] {
    let narrowed =
        q.scope != "all" || q.source_id.is_some() || q.priority.is_some() || q.run_id.is_some();
    [
        " AND a.status = 'open' AND (a.snoozed_until IS NULL OR a.snoozed_until <= ?)",
        if narrowed {
            " AND a.status = 'open' AND +a.snoozed_until > ?"
        } else {
            " AND a.status = 'open' AND a.snoozed_until > ?"
        },
        " AND a.status = 'resolved'",
        " AND a.status = 'cancelled'",
        " AND a.status = 'expired'",
    ]
}

/// The count queries of `inbox_counts`: one statement per arm (one, or two
/// for scope=mine), returning the five tabs; None when nothing can match.
/// Without a search, each tab is a
/// `count(*)` of at most COUNT_CAP rows of its own ordered seek on an index
/// that holds every column it tests (`actions_inbox`, the assignee and
/// unassigned indexes, `actions_snoozed`): a few thousand
/// index entries at most, whatever the history holds. A narrow search is
/// counted in one pass over its matches (CROSS JOIN: the rowids drive, at
/// most SEARCH_DRIVE_LIMIT rows read), exactly.
fn counts_sql(q: &InboxQuery, matches: &Matches) -> Option<Vec<(String, Vec<SqlValue>)>> {
    let mut f = inbox_filter(q);
    if f.split_environments {
        f.sql.push_str(" AND a.environment IN ('live', 'test')");
    }
    let mut out = Vec::new();
    for (arm, arm_args) in &f.arms {
        let mut base = f.args.clone();
        base.extend(arm_args.iter().cloned());
        match &f.search {
            Search::Nothing => return None,
            Search::Fts(_) => {
                // A broad search is not counted (see `inbox_counts`).
                let Matches::Narrow(rowids) = matches else {
                    return None;
                };
                let rest = f.sql.strip_prefix(" WHERE").unwrap_or(&f.sql);
                let sql = format!(
                    "SELECT count(*) FILTER (WHERE a.status = 'open' AND (a.snoozed_until IS NULL OR a.snoozed_until <= ?1)),
                        count(*) FILTER (WHERE a.status = 'open' AND a.snoozed_until > ?1),
                        count(*) FILTER (WHERE a.status = 'resolved'),
                        count(*) FILTER (WHERE a.status = 'cancelled'),
                        count(*) FILTER (WHERE a.status = 'expired')
                     FROM json_each(?2) j CROSS JOIN actions a ON a.rowid = j.value
                     WHERE{rest}{arm}"
                );
                let mut all: Vec<SqlValue> = vec![q.now.clone().into(), rowids.clone().into()];
                all.extend(base);
                out.push((sql, all));
            }
            Search::None => {
                let ix = if by_run(q) {
                    " INDEXED BY actions_by_run"
                } else if q.scope == NEEDS_MY_VOTE && q.may_vote {
                    " INDEXED BY actions_restricted_open"
                } else {
                    ""
                };
                let tabs: Vec<String> = tabs(q)
                    .iter()
                    .map(|tab| {
                        format!(
                            "(SELECT count(*) FROM (SELECT 1 FROM actions a{ix}{w}{arm}{tab} LIMIT {COUNT_CAP}))",
                            w = f.sql
                        )
                    })
                    .collect();
                let sql = format!("SELECT {}", tabs.join(", "));
                let mut all: Vec<SqlValue> = Vec::new();
                for i in 0..5 {
                    all.extend(base.iter().cloned());
                    if i < 2 {
                        all.push(q.now.clone().into());
                    }
                }
                out.push((sql, all));
            }
        }
    }
    Some(out)
}

/// How many Actions each inbox tab holds under the same filters, each up to
/// COUNT_CAP, for the `matches` of its search. None for a search matching more
/// than SEARCH_DRIVE_LIMIT Actions: counting those per tab would probe every
/// match against each tab's index (60 ms for a word in 2.5 % of a million
/// titles).
pub fn inbox_counts(
    c: &Connection,
    q: &InboxQuery,
    matches: &Matches,
) -> Result<Option<InboxCounts>> {
    if matches!(matches, Matches::Broad(_) | Matches::Vast)
        && matches!(inbox_filter(q).search, Search::Fts(_))
    {
        return Ok(None);
    }
    let mut n = InboxCounts::default();
    let Some(queries) = counts_sql(q, matches) else {
        return Ok(Some(n));
    };
    for (sql, args) in queries {
        let r: [i64; 5] = c
            .prepare_cached(&sql)?
            .query_row(params_from_iter(args), |r| {
                Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?])
            })?;
        // Two arms (scope=mine) are disjoint; their sum stops at the cap too.
        n.open = (n.open + r[0]).min(COUNT_CAP);
        n.snoozed = (n.snoozed + r[1]).min(COUNT_CAP);
        n.resolved = (n.resolved + r[2]).min(COUNT_CAP);
        n.cancelled = (n.cancelled + r[3]).min(COUNT_CAP);
        n.expired = (n.expired + r[4]).min(COUNT_CAP);
    }
    Ok(Some(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(f: impl FnOnce(&mut InboxQuery)) -> InboxQuery {
        let mut q = InboxQuery {
            workspace_id: "ws".into(),
            user_id: "usr".into(),
            user_email: "Me@Example.com".into(),
            user_since: "2026-01-01T00:00:00.000Z".into(),
            sees_restricted: true,
            may_vote: true,
            status: "open".into(),
            search: None,
            source_id: None,
            run_id: None,
            priority: None,
            environment: Some(Environment::Live),
            scope: "all".into(),
            limit: 100,
            now: "2026-01-01T00:00:00.000Z".into(),
            after: None,
        };
        f(&mut q);
        q
    }

    /// `query` in both environments (environment=all).
    fn both(f: impl FnOnce(&mut InboxQuery)) -> InboxQuery {
        query(|q| {
            f(q);
            q.environment = None;
        })
    }

    /// A step that reads every row of actions (an FTS step must use MATCH).
    fn scans(step: &str) -> bool {
        let full = |t: &str| step == t || step.starts_with(&format!("{t} "));
        full("SCAN a")
            || full("SCAN actions")
            || (step.contains("actions_fts") && !step.contains(":M"))
    }

    /// Whether a plan sorts whole rows: a sort of the last ORDER BY term only
    /// (`RIGHT PART` / `LAST TERM`) orders the few Actions that tie on the
    /// index's order (created in the same millisecond) by rowid, as the
    /// index walk yields them.
    fn sorts_all(plan: &str) -> bool {
        plan.lines().any(|l| {
            l.contains("TEMP B-TREE")
                && !l.contains("RIGHT PART OF ORDER BY")
                && !l.contains("LAST TERM OF ORDER BY")
        })
    }

    fn plan(c: &Connection, sql: &str, args: &[SqlValue]) -> Vec<String> {
        let mut st = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        st.query_map(params_from_iter(args), |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    /// `hds_matched` finds exactly the members of its set, at either end,
    /// and refuses a set that is not a BLOB.
    #[test]
    fn matched_is_membership_in_the_sorted_set() {
        let c = Connection::open_in_memory().unwrap();
        register_functions(&c).unwrap();
        let set: Vec<i64> = vec![-5, 1, 2, 9, 1 << 40, i64::MAX];
        let blob: Vec<u8> = set.iter().flat_map(|r| r.to_le_bytes()).collect();
        for x in [-6, -5, 0, 1, 2, 3, 9, 10, 1 << 40, i64::MAX - 1, i64::MAX] {
            let found: bool = c
                .query_row(
                    "SELECT hds_matched(?1, ?2)",
                    rusqlite::params![blob, x],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(found, set.contains(&x), "{x}");
        }
        let empty: bool = c
            .query_row("SELECT hds_matched(x'', 1)", [], |r| r.get(0))
            .unwrap();
        assert!(!empty);
        assert!(
            c.query_row("SELECT hds_matched('1', 1)", [], |r| r.get::<_, bool>(0))
                .is_err()
        );
    }

    /// What a write transaction adds for its new Actions reads only them:
    /// a rowid range, whatever indexes start with the GROUP BY's columns;
    /// a revoked Source's open Actions are two seeks.
    #[test]
    fn new_rows_are_read_by_rowid() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        c.execute_batch(
            "CREATE INDEX by_ws_env ON actions(workspace_id, environment, source_id, created_at)",
        )
        .unwrap();
        let text = crate::store::query_plan(&c, CLOSE_OPEN_OF_SOURCE).join("\n");
        assert!(
            text.contains("actions_source_inbox (source_id=? AND environment=? AND status=?)"),
            "{text}"
        );
        for sql in [NEW_TITLES, NEW_IN_ROLLUP] {
            let text = crate::store::query_plan(&c, sql).join("\n");
            assert!(
                text.contains("SEARCH actions USING INTEGER PRIMARY KEY (rowid>?)"),
                "{text}"
            );
            assert!(!text.contains("by_ws_env"), "{text}");
        }
        // The expiry pass's first read seeks the partial index of deadlines.
        let text = crate::store::query_plan(&c, ANY_DUE_FOR_EXPIRY).join("\n");
        assert!(
            text.contains("SEARCH actions USING COVERING INDEX actions_expiring"),
            "{text}"
        );
    }

    /// Every inbox filter (with the default status=open order and limit) and
    /// its tab counts seek an index or the FTS table: no step scans actions,
    /// and the lists need no sort but where the set is small (snoozed, mine
    /// by e-mail merge).
    #[test]
    #[allow(clippy::print_stdout)] // the plans are shown with `--nocapture`
    fn plans() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        register_functions(&c).unwrap();
        // The matches come from the FTS index in rowid order, unsorted.
        let text = plan(
            &c,
            "SELECT rowid FROM actions_fts WHERE actions_fts MATCH ?1 ORDER BY rowid LIMIT ?2",
            &["x".to_owned().into(), 5.into()],
        )
        .join("\n");
        assert!(!text.contains("TEMP B-TREE"), "{text}");
        // Whether other workspaces hold Actions: two index seeks.
        let text = plan(&c, OTHERS_HOLD_ACTIONS, &["ws".to_owned().into()]).join("\n");
        assert!(
            text.matches("USING COVERING INDEX").count() == 2 && !text.contains("SCAN actions"),
            "{text}"
        );
        let cases: Vec<(&str, InboxQuery, &str)> = vec![
            ("default", query(|_| {}), "actions_inbox "),
            ("environment=all", both(|_| {}), "MERGE"),
            (
                "scope=unassigned+all",
                both(|q| q.scope = "unassigned".into()),
                "actions_unassigned",
            ),
            (
                "source_id+all",
                both(|q| q.source_id = Some("src".into())),
                "actions_source_inbox",
            ),
            (
                "search",
                query(|q| q.search = Some("deploy prod".into())),
                "actions_inbox ",
            ),
            ("search+all", both(|q| q.search = Some("x".into())), "MERGE"),
            (
                "search+mine",
                query(|q| {
                    q.search = Some("x".into());
                    q.scope = "mine".into();
                }),
                "actions_assignee_user",
            ),
            (
                "scope=mine",
                query(|q| q.scope = "mine".into()),
                "actions_assignee_email",
            ),
            (
                "scope=mine+all",
                both(|q| q.scope = "mine".into()),
                "actions_assignee_user",
            ),
            (
                "scope=unassigned",
                query(|q| q.scope = "unassigned".into()),
                "actions_unassigned",
            ),
            (
                "scope=needs_my_vote",
                query(|q| q.scope = NEEDS_MY_VOTE.into()),
                "actions_restricted_open",
            ),
            (
                "scope=needs_my_vote+all",
                both(|q| q.scope = NEEDS_MY_VOTE.into()),
                "actions_restricted_open",
            ),
            (
                "scope=needs_my_vote+member",
                query(|q| {
                    q.scope = NEEDS_MY_VOTE.into();
                    q.sees_restricted = false;
                }),
                "actions_restricted_open",
            ),
            (
                "priority",
                query(|q| q.priority = Some("high".into())),
                "priority_rank=?",
            ),
            (
                "priority+all",
                both(|q| q.priority = Some("high".into())),
                "priority_rank=?",
            ),
            (
                "source_id",
                query(|q| q.source_id = Some("src".into())),
                "actions_source_inbox",
            ),
            // GET /v1/source/actions: each status of one Source (not
            // `all`, which no index orders for a Source), and a later page.
            // A closed status reads the Source's own closed Actions newest
            // first (`actions_source_closed`, partial: written on close).
            (
                "source_id+status=resolved",
                query(|q| {
                    q.source_id = Some("src".into());
                    q.status = "resolved".into();
                }),
                "actions_source_closed",
            ),
            (
                "source_id+status=snoozed",
                query(|q| {
                    q.source_id = Some("src".into());
                    q.status = "snoozed".into();
                }),
                "actions_snoozed",
            ),
            (
                "source_id+after",
                query(|q| {
                    q.source_id = Some("src".into());
                    q.after = Some("act_x".into());
                }),
                "actions_source_inbox",
            ),
            (
                "status=snoozed",
                query(|q| q.status = "snoozed".into()),
                "snoozed_until>?",
            ),
            (
                "status=snoozed+all",
                both(|q| q.status = "snoozed".into()),
                "snoozed_until>?",
            ),
            (
                "member",
                query(|q| q.sees_restricted = false),
                "actions_inbox ",
            ),
            (
                "status=resolved",
                query(|q| q.status = "resolved".into()),
                "actions_closed",
            ),
            (
                "status=expired+all",
                both(|q| q.status = "expired".into()),
                "actions_closed",
            ),
            (
                "status=all",
                query(|q| q.status = "all".into()),
                "actions_by_age",
            ),
            (
                "status=all+all",
                both(|q| q.status = "all".into()),
                "actions_by_age",
            ),
        ];
        let after = After {
            rank: 2,
            created_at: "2026-11-26T10:00:00.000Z".into(),
            // Later than the queries' now: snoozed pages seek to it.
            snoozed_until: "2026-11-26T11:00:00.000Z".into(),
            rowid: 7,
        };
        for (name, q, index) in cases {
            for at in [None, Some(&after)] {
                let (sql, args) = inbox_sql(&q, &Matches::Broad(Vec::new()), at);
                let p = plan(&c, &sql, &args);
                let text = p.join("\n");
                println!("{name} (after: {}):\n{text}\n", at.is_some());
                assert!(
                    p.iter().any(|s| s.contains(index)),
                    "{name}: expected {index}:\n{text}"
                );
                for step in &p {
                    assert!(!scans(step), "{name} scans:\n{text}");
                }
                assert!(!sorts_all(&text), "{name} sorts:\n{text}");
            }
            for (sql, args) in counts_sql(&q, &Matches::NotSearched).into_iter().flatten() {
                let p = plan(&c, &sql, &args);
                let text = p.join("\n");
                for step in &p {
                    assert!(!scans(step), "{name} counts scan:\n{text}");
                }
                // Unfiltered, the snoozed ones are counted from their own
                // index, not by walking every open Action; filtered, never
                // from it (it would read each snoozed row).
                let narrowed = q.scope != "all" || q.source_id.is_some() || q.priority.is_some();
                assert_eq!(
                    text.contains("actions_snoozed"),
                    !narrowed,
                    "{name} counts:\n{text}"
                );
            }
            if q.search.is_none() {
                continue;
            }
            // Too many matches to hold: the FTS set, probed while the same
            // index is walked.
            let (sql, args) = inbox_sql(&q, &Matches::Vast, None);
            let vast = plan(&c, &sql, &args);
            let text = vast.join("\n");
            assert!(
                vast.iter().any(|s| s.contains(index)),
                "{name} vast:\n{text}"
            );
            assert!(
                vast.iter().any(|s| s.contains(":M")),
                "{name} vast:\n{text}"
            );
            assert!(!vast.iter().any(|s| scans(s)), "{name} vast scans:\n{text}");
            // A narrow search: its rowids drive, each match read by rowid.
            let rowids = Matches::Narrow("[1, 2]".into());
            let (sql, args) = inbox_sql(&q, &rowids, None);
            let mut narrow = plan(&c, &sql, &args);
            let (sql, args) = &counts_sql(&q, &rowids).unwrap()[0];
            narrow.extend(plan(&c, sql, args));
            let text = narrow.join("\n");
            println!("{name} (narrow):\n{text}\n");
            assert!(
                narrow.iter().any(|s| s.starts_with("SCAN j VIRTUAL TABLE")),
                "{name} narrow: expected the rowids to drive:\n{text}"
            );
            assert!(
                narrow
                    .iter()
                    .all(|s| !s.contains("SEARCH a") || s.contains("rowid=?")),
                "{name} narrow: actions read by rowid only:\n{text}"
            );
        }
    }

    /// A run's Actions are read from `actions_by_run`, whatever else the
    /// filter holds (statuses, both environments, scopes, a search of any
    /// breadth, a page after an Action), and counted from it: never a scan
    /// of actions, and a sort of that run's rows only.
    #[test]
    #[allow(clippy::print_stdout)] // the plans are shown with `--nocapture`
    fn a_run_filter_reads_the_runs_index() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        register_functions(&c).unwrap();
        let run = |f: fn(&mut InboxQuery)| {
            query(|q| {
                q.run_id = Some("run_x".into());
                f(q);
            })
        };
        let after = After {
            rank: 2,
            created_at: "2026-11-26T10:00:00.000Z".into(),
            snoozed_until: "2026-11-26T11:00:00.000Z".into(),
            rowid: 7,
        };
        let cases: Vec<(&str, InboxQuery)> = vec![
            ("run", run(|_| {})),
            ("run+all", run(|q| q.environment = None)),
            ("run+resolved", run(|q| q.status = "resolved".into())),
            ("run+snoozed", run(|q| q.status = "snoozed".into())),
            ("run+mine", run(|q| q.scope = "mine".into())),
            ("run+vote", run(|q| q.scope = NEEDS_MY_VOTE.into())),
            ("run+member", run(|q| q.sees_restricted = false)),
            ("run+search", run(|q| q.search = Some("deploy".into()))),
        ];
        // A filter that holds a literal false is planned without the forced
        // index (it would have no solution), and matches nothing.
        for (name, q) in [
            (
                "run+vote+viewer",
                run(|q| {
                    q.scope = NEEDS_MY_VOTE.into();
                    q.may_vote = false;
                }),
            ),
            ("run+wordless", run(|q| q.search = Some("- #".into()))),
        ] {
            let (sql, args) = inbox_sql(&q, &Matches::NotSearched, None);
            let text = plan(&c, &sql, &args).join("\n");
            assert!(!text.contains("actions_by_run"), "{name}:\n{text}");
            let (sql, args) = inbox_sql(&q, &Matches::NotSearched, Some(&after));
            plan(&c, &sql, &args);
            for (sql, args) in counts_sql(&q, &Matches::NotSearched).into_iter().flatten() {
                plan(&c, &sql, &args);
            }
        }
        for (name, q) in cases {
            let mut plans = Vec::new();
            for m in [Matches::Broad(Vec::new()), Matches::Vast] {
                for at in [None, Some(&after)] {
                    let (sql, args) = inbox_sql(&q, &m, at);
                    plans.push(plan(&c, &sql, &args).join("\n"));
                }
            }
            for (sql, args) in counts_sql(&q, &Matches::NotSearched).into_iter().flatten() {
                plans.push(plan(&c, &sql, &args).join("\n"));
            }
            for text in plans {
                println!("{name}:\n{text}\n");
                assert!(text.contains("actions_by_run"), "{name}:\n{text}");
                for step in text.lines() {
                    assert!(
                        !scans(step.trim_start_matches(|c: char| !c.is_alphabetic())),
                        "{name} scans:\n{text}"
                    );
                }
            }
            if q.search.is_some() {
                // A narrow search: its rowids drive, as without a run.
                let rowids = Matches::Narrow("[1, 2]".into());
                let (sql, args) = inbox_sql(&q, &rowids, None);
                let text = plan(&c, &sql, &args).join("\n");
                assert!(
                    text.contains("SCAN j VIRTUAL TABLE"),
                    "{name} narrow:\n{text}"
                );
            }
        }
    }

    #[test]
    fn fts_queries_quote_every_word() {
        assert_eq!(
            fts_query("Deploy prod").as_deref(),
            Some("title : (\"Deploy\"* \"prod\"*)")
        );
        assert_eq!(fts_query("a\"b").as_deref(), Some("title : (\"a\"\"b\"*)"));
        assert_eq!(
            fts_query(" AND - * \" NEAR( ").as_deref(),
            Some("title : (\"AND\"* \"NEAR(\"*)")
        );
        assert_eq!(
            in_workspace("title : (\"x\"*)", "ws_01KB"),
            "fts_ws : \"\u{E000}01KB\" AND title : (\"x\"*)"
        );
        assert_eq!(fts_query("- * \""), None);
    }
}
