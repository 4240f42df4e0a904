//! Runs (guide: "Runs"): rows of `runs` and their timeline `run_events`, and
//! the Actions attached to a run (`actions.run_id`). The rules (which moves,
//! who may) are in `domain::run` and `service::runs`.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::{Map, Value};

use crate::domain::action::{Environment, Person};
use crate::domain::run::{LISTED_ACTIONS, Progress, Run, RunEvent};
use crate::error::Result;

const SELECT: &str = "SELECT id, workspace_id, source_id, environment, name, status, completed, \
    total, message, metadata, result, error, created_at, started_at, updated_at, completed_at \
    FROM runs";

/// A page of a workspace's runs in one environment, newest first, before
/// the cursor `?3` (`~` sorts after every id: the first page).
const PAGE: &str = "SELECT id, workspace_id, source_id, environment, name, status, completed, \
    total, message, metadata, result, error, created_at, started_at, updated_at, completed_at \
    FROM runs WHERE workspace_id = ?1 AND environment = ?2 AND id < ?3 ORDER BY id DESC LIMIT ?4";
/// `PAGE` in one status.
const STATUS_PAGE: &str = "SELECT id, workspace_id, source_id, environment, name, status, completed, \
    total, message, metadata, result, error, created_at, started_at, updated_at, completed_at \
    FROM runs WHERE workspace_id = ?1 AND environment = ?2 AND status = ?5 AND id < ?3 \
    ORDER BY id DESC LIMIT ?4";
/// A page of one Source's runs in one environment, newest first, before
/// the cursor `?3` (by `runs_by_source`).
const SOURCE_PAGE: &str = "SELECT id, workspace_id, source_id, environment, name, status, completed, \
    total, message, metadata, result, error, created_at, started_at, updated_at, completed_at \
    FROM runs WHERE source_id = ?1 AND environment = ?2 AND id < ?3 ORDER BY id DESC LIMIT ?4";
/// `SOURCE_PAGE` in one status (by `runs_by_source_status`).
const SOURCE_STATUS_PAGE: &str = "SELECT id, workspace_id, source_id, environment, name, status, \
    completed, total, message, metadata, result, error, created_at, started_at, updated_at, \
    completed_at FROM runs WHERE source_id = ?1 AND environment = ?2 AND status = ?5 AND id < ?3 \
    ORDER BY id DESC LIMIT ?4";
/// The newest Actions of a run.
const ACTION_IDS: &str = "SELECT id FROM actions WHERE run_id = ?1 ORDER BY id DESC LIMIT ?2";
/// The first page's cursor: after every `run_…` id.
pub const FIRST: &str = "~";

fn json_of<T: serde::de::DeserializeOwned>(s: Option<String>) -> Option<T> {
    s.and_then(|s| serde_json::from_str(&s).ok())
}

fn row(r: &Row) -> rusqlite::Result<Run> {
    let env: String = r.get(3)?;
    Ok(Run {
        id: r.get(0)?,
        object: "run",
        workspace_id: r.get(1)?,
        source_id: r.get(2)?,
        environment: Environment::parse(&env).unwrap_or(Environment::Live),
        name: r.get(4)?,
        status: r.get(5)?,
        progress: Progress {
            completed: r.get(6)?,
            total: r.get(7)?,
            message: r.get(8)?,
        },
        metadata: json_of::<Map<String, Value>>(r.get(9)?),
        action_ids: Vec::new(),
        result: json_of::<Value>(r.get(10)?),
        error: r.get(11)?,
        created_at: r.get(12)?,
        started_at: r.get(13)?,
        updated_at: r.get(14)?,
        completed_at: r.get(15)?,
    })
}

fn with_actions(c: &Connection, mut run: Run) -> Result<Run> {
    let mut st = c.prepare_cached(ACTION_IDS)?;
    run.action_ids = st
        .query_map(params![run.id, LISTED_ACTIONS as i64], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(run)
}

pub fn insert(c: &Connection, r: &Run) -> Result<()> {
    let metadata = r.metadata.as_ref().map(serde_json::to_string).transpose()?;
    c.prepare_cached(
        "INSERT INTO runs(id, workspace_id, source_id, environment, name, status, completed, total,
            message, metadata, created_at, started_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?11)",
    )?
    .execute(params![
        r.id,
        r.workspace_id,
        r.source_id,
        r.environment.as_str(),
        r.name,
        r.status,
        r.progress.completed,
        r.progress.total,
        r.progress.message,
        metadata,
        r.created_at,
        r.started_at,
    ])?;
    Ok(())
}

/// One run by id, unscoped (callers check ownership), with its newest Actions.
pub fn get(c: &Connection, id: &str) -> Result<Option<Run>> {
    let run = c
        .prepare_cached(&format!("{SELECT} WHERE id = ?1"))?
        .query_row([id], row)
        .optional()?;
    run.map(|r| with_actions(c, r)).transpose()
}

/// The owner, environment and status of a run: the one lookup Action
/// create makes when it names a `run_id`.
pub fn owner_of(c: &Connection, id: &str) -> Result<Option<(String, String, String)>> {
    Ok(
        c.prepare_cached("SELECT source_id, environment, status FROM runs WHERE id = ?1")?
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?,
    )
}

/// Which runs a page reads: a workspace's (GET /v1/runs) or a Source's
/// (GET /v1/source/runs), in one environment.
#[derive(Clone, Copy, Debug)]
pub enum Owner<'a> {
    Workspace(&'a str),
    Source(&'a str),
}

/// A page of runs (`limit` + 1 are read by callers wanting `has_more`),
/// newest first, before the run `before` (none: the first page).
pub fn page(
    c: &Connection,
    owner: Owner,
    environment: Environment,
    status: Option<&str>,
    before: Option<&str>,
    limit: i64,
) -> Result<Vec<Run>> {
    let before = before.unwrap_or(FIRST);
    let env = environment.as_str();
    let (sql, owner_id) = match (owner, status) {
        (Owner::Workspace(w), Some(_)) => (STATUS_PAGE, w),
        (Owner::Workspace(w), None) => (PAGE, w),
        (Owner::Source(s), Some(_)) => (SOURCE_STATUS_PAGE, s),
        (Owner::Source(s), None) => (SOURCE_PAGE, s),
    };
    let mut st = c.prepare_cached(sql)?;
    let runs: Vec<Run> = match status {
        Some(s) => st
            .query_map(params![owner_id, env, before, limit, s], row)?
            .collect::<rusqlite::Result<_>>()?,
        None => st
            .query_map(params![owner_id, env, before, limit], row)?
            .collect::<rusqlite::Result<_>>()?,
    };
    runs.into_iter().map(|r| with_actions(c, r)).collect()
}

/// Writes a progress report: status, counts, message and (on the first
/// move to running) started_at.
pub fn set_progress(c: &Connection, r: &Run) -> Result<()> {
    c.prepare_cached(
        "UPDATE runs SET status = ?2, completed = ?3, total = ?4, message = ?5,
            started_at = ?6, updated_at = ?7 WHERE id = ?1",
    )?
    .execute(params![
        r.id,
        r.status,
        r.progress.completed,
        r.progress.total,
        r.progress.message,
        r.started_at,
        r.updated_at
    ])?;
    Ok(())
}

/// Finishes a run.
pub fn complete(
    c: &Connection,
    id: &str,
    status: &str,
    result: Option<&Value>,
    error: Option<&str>,
    now: &str,
) -> Result<()> {
    let result = result.map(serde_json::to_string).transpose()?;
    c.prepare_cached(
        "UPDATE runs SET status = ?2, result = ?3, error = ?4, updated_at = ?5, completed_at = ?5
          WHERE id = ?1",
    )?
    .execute(params![id, status, result, error, now])?;
    Ok(())
}

/// A run's name and status, in its workspace: what an Action's page shows
/// of the run it was raised in.
pub fn name_and_status(
    c: &Connection,
    workspace_id: &str,
    id: &str,
) -> Result<Option<(String, String)>> {
    Ok(
        c.prepare_cached("SELECT name, status FROM runs WHERE id = ?1 AND workspace_id = ?2")?
            .query_row([id, workspace_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?,
    )
}

/// The ids of a Source's runs that are still active (queued, running,
/// waiting), by `runs_by_source_status`.
pub fn active_of_source(
    c: &Connection,
    workspace_id: &str,
    source_id: &str,
) -> Result<Vec<String>> {
    let mut st = c.prepare_cached(
        "SELECT id FROM runs
          WHERE workspace_id = ?1 AND environment IN ('live', 'test')
            AND status IN ('queued', 'running', 'waiting') AND source_id = ?2",
    )?;
    let ids = st.query_map(params![workspace_id, source_id], |r| r.get(0))?;
    Ok(ids.collect::<rusqlite::Result<_>>()?)
}

/// Timeline lines within which progress messages are kept: a progress line
/// that falls this far behind the newest line is deleted, so a Source that
/// reports a new message every second cannot grow its run without bound.
/// Lifecycle lines (created, started, waiting, completed) are always kept.
pub const KEPT_PROGRESS: i64 = 1_000;

/// Appends a line to a run's timeline, and drops the progress line that
/// falls `KEPT_PROGRESS` behind it (each position is looked at once, when
/// the line that many after it is written).
pub fn add_event(
    c: &Connection,
    run_id: &str,
    kind: &str,
    status: &str,
    message: Option<&str>,
    at: &str,
) -> Result<()> {
    let seq: i64 = c
        .prepare_cached(
            "INSERT INTO run_events(run_id, seq, kind, status, message, at)
             VALUES (?1, (SELECT coalesce(max(seq), 0) + 1 FROM run_events WHERE run_id = ?1), ?2, ?3, ?4, ?5)
             RETURNING seq",
        )?
        .query_row(params![run_id, kind, status, message, at], |r| r.get(0))?;
    c.prepare_cached(
        "DELETE FROM run_events WHERE run_id = ?1 AND seq = ?2 AND kind = 'progress'",
    )?
    .execute(params![run_id, seq - KEPT_PROGRESS])?;
    Ok(())
}

/// Most timeline lines the run page shows: the newest.
pub const TIMELINE: i64 = 200;

/// A run's timeline, oldest first: the newest `TIMELINE` lines, and one
/// more when there are more (the caller tells that earlier lines are left
/// out, and drops it).
pub fn events(c: &Connection, run_id: &str) -> Result<Vec<RunEvent>> {
    let mut st = c.prepare_cached(
        "SELECT kind, status, message, at FROM
            (SELECT seq, kind, status, message, at FROM run_events WHERE run_id = ?1
              ORDER BY seq DESC LIMIT ?2)
          ORDER BY seq",
    )?;
    let rows = st.query_map(params![run_id, TIMELINE + 1], |r| {
        Ok(RunEvent {
            kind: r.get(0)?,
            status: r.get(1)?,
            message: r.get(2)?,
            at: r.get(3)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The members of a workspace with their roles (`domain::access` picks
/// who hears of a failed run).
pub fn members(c: &Connection, workspace_id: &str) -> Result<Vec<(String, String)>> {
    let mut st =
        c.prepare_cached("SELECT user_id, role FROM memberships WHERE workspace_id = ?1")?;
    let rows = st.query_map([workspace_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The assignees of a run's open Actions, as each names them: by user
/// id, or by e-mail (a Source's `assignee_email`, matched to a member by
/// the caller).
pub fn open_assignees(c: &Connection, run_id: &str) -> Result<Vec<Person>> {
    let mut st = c.prepare_cached(
        "SELECT DISTINCT assignee_user_id, assignee_email FROM actions
          WHERE run_id = ?1 AND status = 'open'
            AND (assignee_user_id IS NOT NULL OR assignee_email IS NOT NULL)",
    )?;
    let rows = st.query_map([run_id], |r| {
        Ok(Person {
            user_id: r.get(0)?,
            email: r.get(1)?,
            name: None,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The newest Actions of a run as the run page lists them: id, title,
/// status and visibility (the page hides a restricted one's title); one
/// more than `LISTED_ACTIONS` when there are more, for the caller to tell.
pub fn actions_of(c: &Connection, run_id: &str) -> Result<Vec<(String, String, String, String)>> {
    let mut st = c.prepare_cached(
        "SELECT id, title, status, visibility FROM actions WHERE run_id = ?1 ORDER BY id DESC LIMIT ?2",
    )?;
    let rows = st.query_map(params![run_id, LISTED_ACTIONS as i64 + 1], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A revoked Source's active runs are found by `runs_by_source_status`,
    /// not by reading the workspace's every run.
    #[test]
    fn a_sources_active_runs_are_read_by_their_status_index() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        let sql = "SELECT id FROM runs
          WHERE workspace_id = 'ws' AND environment IN ('live', 'test')
            AND status IN ('queued', 'running', 'waiting') AND source_id = 'src'";
        let plan = crate::store::query_plan(&c, sql).join("\n");
        assert!(plan.contains("USING INDEX runs_by_source_status"), "{plan}");
    }

    /// Each page of runs is read by an index that orders it, without a
    /// sort: a workspace's by `runs_by_workspace`/`runs_by_status`, a
    /// Source's by `runs_by_source`/`runs_by_source_status`.
    #[test]
    fn every_page_of_runs_is_read_in_index_order() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        for (sql, wants) in [
            (PAGE, "runs_by_workspace"),
            (STATUS_PAGE, "runs_by_status"),
            (SOURCE_PAGE, "runs_by_source "),
            (SOURCE_STATUS_PAGE, "runs_by_source_status"),
        ] {
            let plan = crate::store::query_plan(&c, sql).join("\n");
            assert!(
                plan.contains(&format!("USING INDEX {wants}"))
                    && !plan.contains("TEMP B-TREE")
                    && !plan.contains("SCAN runs"),
                "{sql}\nwanted {wants}\ngot {plan}"
            );
        }
    }

    #[test]
    fn old_progress_lines_go_lifecycle_lines_stay() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        c.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
        let at = "2026-11-23T00:00:00.000Z";
        add_event(&c, "run_1", "created", "queued", None, at).unwrap();
        add_event(&c, "run_1", "started", "running", None, at).unwrap();
        for i in 0..2_500 {
            let m = format!("step {i}");
            add_event(&c, "run_1", "progress", "running", Some(&m), at).unwrap();
            if i == 1_200 {
                add_event(&c, "run_1", "waiting", "waiting", None, at).unwrap();
            }
        }
        add_event(&c, "run_other", "created", "queued", None, at).unwrap();
        let count = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
        // 2,503 lines were written; the last 1,000 positions hold everything,
        // and before them only the three lifecycle lines remain.
        assert_eq!(
            count("SELECT max(seq) FROM run_events WHERE run_id = 'run_1'"),
            2_503
        );
        assert_eq!(
            count("SELECT count(*) FROM run_events WHERE run_id = 'run_1' AND seq > 1503"),
            1_000
        );
        let kinds: String = c
            .query_row(
                "SELECT group_concat(kind) FROM (SELECT kind FROM run_events
                  WHERE run_id = 'run_1' AND seq <= 1503 ORDER BY seq)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(kinds, "created,started,waiting");
        assert_eq!(
            count("SELECT count(*) FROM run_events WHERE run_id = 'run_other'"),
            1
        );
    }

    #[test]
    fn pages_and_lookups_use_their_indexes() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        for (sql, wants) in [
            (
                PAGE,
                "SEARCH runs USING INDEX runs_by_workspace (workspace_id=? AND environment=? AND id<?)",
            ),
            (
                STATUS_PAGE,
                "SEARCH runs USING INDEX runs_by_status (workspace_id=? AND environment=? AND status=? AND id<?)",
            ),
            (
                ACTION_IDS,
                "SEARCH actions USING COVERING INDEX actions_by_run (run_id=?)",
            ),
        ] {
            let plan = crate::store::query_plan(&c, sql);
            assert!(
                plan.iter().any(|p| p == wants),
                "{sql}\nwanted {wants}\ngot {plan:?}"
            );
            assert!(
                !plan.iter().any(|p| p.contains("TEMP B-TREE")),
                "{sql} sorts: {plan:?}"
            );
        }
    }
}
