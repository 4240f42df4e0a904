//! Analytics storage (guide: "Analytics"): the daily rollup the summary
//! reads (`analytics_daily`: new Actions are counted by the writer before
//! each COMMIT, `store::actions::index_new_rows`; closes and outcomes by the
//! triggers of migration 0017 in the same statement; both add deltas) and
//! the dashboard's usage events (`analytics_events`).

use rusqlite::{Connection, params};

use crate::domain::analytics::BUCKETS;
use crate::error::Result;

/// One (day, Source) row of the rollup, with the Source's name.
#[derive(Debug, Clone)]
pub struct DailyRow {
    pub day: String,
    pub source_id: String,
    pub source_name: Option<String>,
    pub created: i64,
    pub open: i64,
    pub resolved: i64,
    pub cancelled: i64,
    pub expired: i64,
    pub decided: i64,
    pub approved: i64,
    pub timed_out: i64,
    pub outcome_success: i64,
    pub outcome_failed: i64,
    pub outcome_rollback: i64,
    pub hist: [i64; BUCKETS],
}

/// The rows of one workspace and environment from `?3` (a day) on,
/// optionally of one Source: a range of the primary key, at most
/// days × Sources rows.
const DAILY: &str = "SELECT d.day, d.source_id, s.name, d.created, d.open, d.resolved, d.cancelled, d.expired,
        d.decided, d.approved, d.timed_out, d.outcome_success, d.outcome_failed, d.outcome_rollback,
        d.h0, d.h1, d.h2, d.h3, d.h4, d.h5, d.h6, d.h7, d.h8, d.h9, d.h10, d.h11, d.h12, d.h13, d.h14
   FROM analytics_daily d LEFT JOIN sources s ON s.id = d.source_id
  WHERE d.workspace_id = ?1 AND d.environment = ?2 AND d.day >= ?3
    AND (?4 IS NULL OR d.source_id = ?4)
  ORDER BY d.day, d.source_id";

pub fn daily(
    c: &Connection,
    workspace_id: &str,
    environment: &str,
    from_day: &str,
    source_id: Option<&str>,
) -> Result<Vec<DailyRow>> {
    let mut st = c.prepare_cached(DAILY)?;
    let rows = st.query_map(
        params![workspace_id, environment, from_day, source_id],
        |r| {
            let mut hist = [0; BUCKETS];
            for (i, h) in hist.iter_mut().enumerate() {
                *h = r.get(14 + i)?;
            }
            Ok(DailyRow {
                day: r.get(0)?,
                source_id: r.get(1)?,
                source_name: r.get(2)?,
                created: r.get(3)?,
                open: r.get(4)?,
                resolved: r.get(5)?,
                cancelled: r.get(6)?,
                expired: r.get(7)?,
                decided: r.get(8)?,
                approved: r.get(9)?,
                timed_out: r.get(10)?,
                outcome_success: r.get(11)?,
                outcome_failed: r.get(12)?,
                outcome_rollback: r.get(13)?,
                hist,
            })
        },
    )?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A dashboard usage event, as validated.
pub struct NewEvent<'a> {
    pub user_id: &'a str,
    pub workspace_id: Option<&'a str>,
    pub name: &'a str,
    pub properties: &'a str,
    pub occurred_at: &'a str,
    pub created_at: &'a str,
}

pub fn insert_event(c: &Connection, e: &NewEvent) -> Result<()> {
    c.prepare_cached(
        "INSERT INTO analytics_events(user_id, workspace_id, name, properties, occurred_at, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![e.user_id, e.workspace_id, e.name, e.properties, e.occurred_at, e.created_at])?;
    Ok(())
}

/// Deletes events that occurred before `cutoff` (index `analytics_events_by_age`).
pub fn delete_events_before(c: &Connection, cutoff: &str) -> Result<usize> {
    Ok(
        c.prepare_cached("DELETE FROM analytics_events WHERE occurred_at < ?1")?
            .execute([cutoff])?,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::store::query_plan as plan;

    /// The summary reads one range of the rollup's primary key and looks up
    /// each row's Source; housekeeping finds old events by their index.
    #[test]
    fn the_summary_reads_a_key_range_and_pruning_uses_its_index() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        let daily = plan(&c, DAILY).join("\n");
        assert!(
            daily.contains(
                "SEARCH d USING PRIMARY KEY (workspace_id=? AND environment=? AND day>?)"
            ),
            "{daily}"
        );
        assert!(
            daily.contains("SEARCH s USING INDEX sqlite_autoindex_sources_1 (id=?)"),
            "{daily}"
        );
        assert!(!daily.contains("SCAN"), "{daily}");
        let prune = plan(&c, "DELETE FROM analytics_events WHERE occurred_at < ?1").join("\n");
        assert!(prune.contains("analytics_events_by_age"), "{prune}");
    }

    /// The triggers and the writer's count of new rows keep the rollup: a
    /// create, a decision with a primary option after 4 minutes, an expiry,
    /// an outcome with a rollback, a quorum's rejection after 5 seconds.
    #[test]
    fn triggers_keep_the_rollup_in_step_with_actions() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        // As the writer runs them: the rows added in one transaction, closed
        // in it too, counted as created at its end.
        let before = crate::store::actions::last_rowid(&c).unwrap();
        c.execute_batch(r#"
            INSERT INTO workspaces(id, name, kind, created_at) VALUES ('ws_1', 'W', 'team', '2026-11-01');
            INSERT INTO sources(id, workspace_id, name, webhook_secret, created_at, updated_at) VALUES ('src_1', 'ws_1', 'deploy', 'x', '2026-11-01', '2026-11-01');
            INSERT INTO actions(id, workspace_id, source_id, environment, status, priority, priority_rank, title, action_version, fingerprint, spec, visibility, created_at, updated_at)
              VALUES ('a1', 'ws_1', 'src_1', 'live', 'open', 'normal', 1, 't', 1, 'f', '{"options":[{"id":"yes","style":"primary"},{"id":"no"}]}', 'workspace', '2026-11-01T10:00:00.000Z', '2026-11-01T10:00:00.000Z'),
                     ('a2', 'ws_1', 'src_1', 'live', 'open', 'normal', 1, 't', 1, 'f', '{}', 'workspace', '2026-11-01T11:00:00.000Z', '2026-11-01T11:00:00.000Z'),
                     ('a3', 'ws_1', 'src_1', 'live', 'open', 'normal', 1, 't', 1, 'f', '{}', 'workspace', '2026-11-01T12:00:00.000Z', '2026-11-01T12:00:00.000Z'),
                     ('a4', 'ws_1', 'src_1', 'live', 'open', 'normal', 1, 't', 1, 'f', '{"options":[{"id":"go"},{"id":"stop"}],"approval_policy":{"required_approvals":1}}', 'workspace', '2026-11-01T13:00:00.000Z', '2026-11-01T13:00:00.000Z'),
                     ('a5', 'ws_1', 'src_1', 'live', 'open', 'normal', 1, 't', 1, 'f', '{"interaction":{"type":"boolean"},"approval_policy":{"required_approvals":1}}', 'workspace', '2026-11-01T13:00:00.000Z', '2026-11-01T13:00:00.000Z'),
                     ('a6', 'ws_1', 'src_1', 'live', 'open', 'normal', 1, 't', 1, 'f', '{"options":[{"id":"go"},{"id":"stop"}],"approval_policy":{"required_approvals":1}}', 'workspace', '2026-11-01T13:00:00.000Z', '2026-11-01T13:00:00.000Z'),
                     ('a7', 'ws_1', 'src_1', 'live', 'open', 'normal', 1, 't', 1, 'f', '{"interaction":{"type":"boolean"}}', 'workspace', '2026-11-01T13:00:00.000Z', '2026-11-01T13:00:00.000Z');
            UPDATE actions SET status = 'resolved', closed_at = '2026-11-01T10:04:00.000Z',
                   resolution = '{"option_id":"yes","decided_by":{"type":"user","id":"usr_1"}}' WHERE id = 'a1';
            UPDATE actions SET status = 'expired', closed_at = '2026-11-02T11:00:00.000Z',
                   resolution = '{"option_id":null,"reason":"expired","decided_by":{"type":"system","id":null}}' WHERE id = 'a2';
            UPDATE actions SET outcome = '{"status":"failed","rollback":true}' WHERE id = 'a1';
            UPDATE actions SET status = 'resolved', closed_at = '2026-11-01T12:00:05.000Z',
                   resolution = '{"option_id":"reject","decided_by":{"type":"system","id":"approval_policy"}}' WHERE id = 'a3';
            UPDATE actions SET status = 'resolved', closed_at = '2026-11-01T13:00:05.000Z',
                   resolution = '{"option_id":"go","decided_by":{"type":"system","id":"approval_policy"}}' WHERE id = 'a4';
            UPDATE actions SET status = 'resolved', closed_at = '2026-11-01T13:00:05.000Z',
                   resolution = '{"option_id":null,"response":{"value":true},"decided_by":{"type":"system","id":"approval_policy"}}' WHERE id = 'a5';
            UPDATE actions SET status = 'resolved', closed_at = '2026-11-01T13:00:05.000Z',
                   resolution = '{"option_id":"stop","decided_by":{"type":"system","id":"approval_policy"}}' WHERE id = 'a6';
            UPDATE actions SET status = 'resolved', closed_at = '2026-11-01T13:00:05.000Z',
                   resolution = '{"option_id":null,"response":{"value":true},"decided_by":{"type":"user","id":"usr_1"}}' WHERE id = 'a7';
        "#).unwrap();
        crate::store::actions::index_new_rows(&c, before).unwrap();
        let rows = daily(&c, "ws_1", "live", "2026-10-01", None).unwrap();
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(
            (r.day.as_str(), r.source_name.as_deref()),
            ("2026-11-01", Some("deploy"))
        );
        assert_eq!((r.created, r.open, r.resolved, r.expired), (7, 0, 6, 1));
        // The quorum's decision counts as decided; the expiry does not.
        // Under an approval policy the first option or `true` approves
        // (a4, a5), the second does not (a6); `true` alone does not (a7).
        assert_eq!((r.decided, r.approved, r.timed_out), (6, 3, 1));
        assert_eq!(r.hist[0], 5, "5 s falls in [0, 10]");
        assert_eq!(
            (r.outcome_success, r.outcome_failed, r.outcome_rollback),
            (0, 1, 1)
        );
        assert_eq!(r.hist[4], 1, "240 s falls in (120, 300]");
        assert!(
            daily(&c, "ws_1", "live", "2026-10-01", Some("src_2"))
                .unwrap()
                .is_empty()
        );
    }
}
