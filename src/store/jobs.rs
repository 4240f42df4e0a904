//! The job queue's table (migrations 0010, 0021): rows written in the
//! transaction of the change that causes them, read by the one worker
//! (which keeps in memory which of them it is running), deleted when done.
//! What a job does lives with its kind (`store::deliveries` for `webhook`,
//! `store::mail` for `email`).

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;

/// The kinds of job hds runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Deliver one webhook message; `subject` is its `webhook_deliveries.id`.
    Webhook,
    /// Send one e-mail; `subject` is its `mail_outbox.id`.
    Email,
}

impl Kind {
    pub const ALL: [Self; 2] = [Self::Webhook, Self::Email];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Webhook => "webhook",
            Self::Email => "email",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "webhook" => Some(Self::Webhook),
            "email" => Some(Self::Email),
            _ => None,
        }
    }
}

/// The queue by kind, for the metrics (guide: "Metrics").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Depth {
    pub kind: String,
    /// Due and not running: waiting for the worker.
    pub due: i64,
    /// Due later (a retry's backoff).
    pub scheduled: i64,
    /// Being worked on (the worker's own list, `running`).
    pub running: i64,
    /// `run_at` of the longest-due job not running.
    pub oldest_due: Option<String>,
}

const DEPTH: &str = "SELECT kind,
        count(*) FILTER (WHERE run_at <= ?1 AND id NOT IN (SELECT value FROM json_each(?2))),
        count(*) FILTER (WHERE run_at > ?1 AND id NOT IN (SELECT value FROM json_each(?2))),
        count(*) FILTER (WHERE id IN (SELECT value FROM json_each(?2))),
        min(run_at) FILTER (WHERE run_at <= ?1 AND id NOT IN (SELECT value FROM json_each(?2)))
    FROM jobs GROUP BY kind ORDER BY kind";

/// Every kind with a job queued, and what of it is due at `now`; `running`
/// is a JSON array of the ids the worker is running. One pass over the
/// table, which holds only work not done yet.
pub fn depth(c: &Connection, now: &str, running: &str) -> Result<Vec<Depth>> {
    let mut st = c.prepare_cached(DEPTH)?;
    let rows = st.query_map(params![now, running], |r| {
        Ok(Depth {
            kind: r.get(0)?,
            due: r.get(1)?,
            scheduled: r.get(2)?,
            running: r.get(3)?,
            oldest_due: r.get(4)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A due job, as the worker takes it.
#[derive(Clone, Debug)]
pub struct Job {
    pub id: i64,
    /// None for a kind this build does not know (a newer hds wrote it).
    pub kind: Option<Kind>,
    pub subject: String,
}

/// Queues a job, due at `run_at`.
pub fn insert(c: &Connection, kind: Kind, subject: &str, run_at: &str, now: &str) -> Result<()> {
    c.prepare_cached(
        "INSERT INTO jobs(kind, subject, run_at, created_at) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![kind.as_str(), subject, run_at, now])?;
    Ok(())
}

/// Up to `limit` jobs of `kind` due at `now`, oldest due first
/// (`jobs_due_by_kind`), but those in `skip`, a JSON array of job ids (the
/// ones the worker is running or holding back). A read: the worker is the
/// only one to take jobs, and it knows what it runs.
pub fn due(c: &Connection, kind: Kind, now: &str, limit: usize, skip: &str) -> Result<Vec<Job>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut st = c.prepare_cached(
        "SELECT id, subject FROM jobs
         WHERE kind = ?1 AND run_at <= ?2 AND id NOT IN (SELECT value FROM json_each(?4))
         ORDER BY run_at, id LIMIT ?3",
    )?;
    let rows = st.query_map(params![kind.as_str(), now, limit, skip], |r| {
        Ok(Job {
            id: r.get(0)?,
            kind: Some(kind),
            subject: r.get(1)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Up to `limit` due jobs of kinds this build does not know (a newer hds
/// wrote them), by the index's ranges around the known kinds, but those in
/// `skip` (as for `due`).
pub fn due_unknown(c: &Connection, now: &str, limit: usize, skip: &str) -> Result<Vec<Job>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut st = c.prepare_cached(
        "SELECT id, subject FROM jobs WHERE kind < 'email' AND run_at <= ?1
           AND id NOT IN (SELECT value FROM json_each(?3))
         UNION ALL SELECT id, subject FROM jobs WHERE kind > 'email' AND kind < 'webhook' AND run_at <= ?1
           AND id NOT IN (SELECT value FROM json_each(?3))
         UNION ALL SELECT id, subject FROM jobs WHERE kind > 'webhook' AND run_at <= ?1
           AND id NOT IN (SELECT value FROM json_each(?3))
         LIMIT ?2",
    )?;
    let rows = st.query_map(params![now, limit, skip], |r| {
        Ok(Job {
            id: r.get(0)?,
            kind: None,
            subject: r.get(1)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// When the next job of `kind` not in `skip` (as for `due`) is due, if any.
pub fn next_due(c: &Connection, kind: Kind, skip: &str) -> Result<Option<String>> {
    Ok(c.prepare_cached(
        "SELECT run_at FROM jobs WHERE kind = ?1 AND id NOT IN (SELECT value FROM json_each(?2))
             ORDER BY run_at, id LIMIT 1",
    )?
    .query_row(params![kind.as_str(), skip], |r| r.get(0))
    .optional()?)
}

/// Done for good: the row goes.
pub fn delete(c: &Connection, id: i64) -> Result<()> {
    c.prepare_cached("DELETE FROM jobs WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// Runs again at `run_at`.
pub fn reschedule(c: &Connection, id: i64, run_at: &str) -> Result<()> {
    c.prepare_cached("UPDATE jobs SET run_at = ?2 WHERE id = ?1")?
        .execute(params![id, run_at])?;
    Ok(())
}

/// The pending job of a subject is due now (a resend of a waiting
/// delivery); false when there is none. A job being run keeps running: what
/// its attempt comes to sets when it runs next.
pub fn hurry(c: &Connection, kind: Kind, subject: &str, now: &str) -> Result<bool> {
    let n = c
        .prepare_cached(HURRY)?
        .execute(params![kind.as_str(), subject, now])?;
    Ok(n > 0)
}

/// By subject (`jobs_by_subject`, one row or none), named: without
/// statistics the planner takes `jobs_due_by_kind` and walks every job of
/// the kind, thousands after an outage.
const HURRY: &str =
    "UPDATE jobs INDEXED BY jobs_by_subject SET run_at = ?3 WHERE kind = ?1 AND subject = ?2";
const EXISTS: &str =
    "SELECT 1 FROM jobs INDEXED BY jobs_by_subject WHERE kind = ?1 AND subject = ?2";

/// Whether a job for this subject is queued or running.
pub fn exists(c: &Connection, kind: Kind, subject: &str) -> Result<bool> {
    Ok(c.prepare_cached(EXISTS)?
        .exists(params![kind.as_str(), subject])?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job is found by its subject, never by walking its kind.
    #[test]
    fn a_job_is_found_by_its_subject() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        for sql in [HURRY, EXISTS] {
            let plan = crate::store::query_plan(&c, sql).join("\n");
            assert!(
                plan.contains("INDEX jobs_by_subject (subject=?)"),
                "{sql}\n{plan}"
            );
        }
    }

    /// Due jobs by kind, oldest due first, skipping the ones given (those
    /// the worker runs); the worker's queries read their indexes.
    #[test]
    fn due_jobs_skip_those_the_worker_runs_and_the_queries_use_their_indexes() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        let (t0, t1) = ("2026-11-23T10:00:00.000Z", "2026-11-23T10:00:01.000Z");
        for s in ["msg_a", "msg_b", "msg_c"] {
            insert(&c, Kind::Webhook, s, t0, t0).unwrap();
        }
        insert(
            &c,
            Kind::Webhook,
            "msg_later",
            "2026-11-23T11:00:00.000Z",
            t0,
        )
        .unwrap();
        insert(&c, Kind::Email, "mail_a", t0, t0).unwrap();
        c.execute(
            "INSERT INTO jobs(kind, subject, run_at, created_at) VALUES ('fax', 'x', ?1, ?1)",
            [t0],
        )
        .unwrap();
        let subjects = |jobs: &[Job]| jobs.iter().map(|j| j.subject.clone()).collect::<Vec<_>>();
        let first = due(&c, Kind::Webhook, t1, 2, "[]").unwrap();
        assert_eq!(subjects(&first), ["msg_a", "msg_b"]);
        // msg_a is running: skipped by the next read and by the next due time.
        let running = format!("[{}]", first[0].id);
        let again = due(&c, Kind::Webhook, t1, 10, &running).unwrap();
        assert_eq!(subjects(&again), ["msg_b", "msg_c"]);
        assert_eq!(
            next_due(&c, Kind::Webhook, "[]").unwrap().as_deref(),
            Some(t0)
        );
        let all_due = format!("[{},{},{}]", first[0].id, again[0].id, again[1].id);
        assert_eq!(
            next_due(&c, Kind::Webhook, &all_due).unwrap().as_deref(),
            Some("2026-11-23T11:00:00.000Z"),
            "only msg_later is left"
        );
        // Reading takes nothing: the same jobs are due until done.
        assert_eq!(due(&c, Kind::Webhook, t1, 10, "[]").unwrap().len(), 3);
        // Each kind within its own budget; a kind from a newer hds alone.
        let mail = due(&c, Kind::Email, t1, 10, "[]").unwrap();
        assert_eq!(subjects(&mail), ["mail_a"]);
        assert_eq!(mail[0].kind, Some(Kind::Email));
        let unknown = due_unknown(&c, t1, 10, "[]").unwrap();
        assert_eq!(subjects(&unknown), ["x"]);
        assert_eq!(unknown[0].kind, None);
        let skipped = format!("[{}]", unknown[0].id);
        assert!(due_unknown(&c, t1, 10, &skipped).unwrap().is_empty());
        // Rescheduled, a job is not due until then; hurried, it is due now.
        reschedule(&c, again[1].id, "2026-11-23T12:00:00.000Z").unwrap();
        assert_eq!(
            subjects(&due(&c, Kind::Webhook, t1, 10, "[]").unwrap()),
            ["msg_a", "msg_b"]
        );
        assert!(hurry(&c, Kind::Webhook, "msg_c", t1).unwrap());
        assert!(!hurry(&c, Kind::Webhook, "msg_none", t1).unwrap());
        assert_eq!(due(&c, Kind::Webhook, t1, 10, "[]").unwrap().len(), 3);
        delete(&c, first[0].id).unwrap();
        assert!(!exists(&c, Kind::Webhook, "msg_a").unwrap());
        assert!(exists(&c, Kind::Webhook, "msg_b").unwrap());
        for sql in [
            "SELECT id, subject FROM jobs WHERE kind = 'email' AND run_at <= '2026' AND id NOT IN (SELECT value FROM json_each('[1,2]')) ORDER BY run_at, id LIMIT 5",
            "SELECT run_at FROM jobs WHERE kind = 'webhook' AND id NOT IN (SELECT value FROM json_each('[1]')) ORDER BY run_at, id LIMIT 1",
            "SELECT id, subject FROM jobs WHERE kind < 'email' AND run_at <= '2026'
               AND id NOT IN (SELECT value FROM json_each('[1]'))
             UNION ALL SELECT id, subject FROM jobs WHERE kind > 'email' AND kind < 'webhook' AND run_at <= '2026'
               AND id NOT IN (SELECT value FROM json_each('[1]'))
             UNION ALL SELECT id, subject FROM jobs WHERE kind > 'webhook' AND run_at <= '2026'
               AND id NOT IN (SELECT value FROM json_each('[1]')) LIMIT 5",
        ] {
            let plan = crate::store::query_plan(&c, sql);
            let text = plan.join("\n");
            assert!(text.contains("jobs_due_by_kind"), "{sql}:\n{text}");
            assert!(!text.contains("SCAN jobs"), "{sql} scans:\n{text}");
            assert!(!text.contains("TEMP B-TREE"), "{sql} sorts:\n{text}");
        }
    }

    /// The metrics' view of the queue: due, scheduled and running by kind,
    /// and the longest-due run_at; one pass over the table.
    #[test]
    fn depth_counts_each_kind_by_state() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        let (t0, t1, now, later) = (
            "2026-11-23T10:00:00.000Z",
            "2026-11-23T10:00:30.000Z",
            "2026-11-23T10:01:00.000Z",
            "2026-11-23T11:00:00.000Z",
        );
        assert_eq!(depth(&c, now, "[]").unwrap(), []);
        insert(&c, Kind::Webhook, "msg_a", t0, t0).unwrap();
        insert(&c, Kind::Webhook, "msg_b", t1, t0).unwrap();
        insert(&c, Kind::Webhook, "msg_c", later, t0).unwrap();
        insert(&c, Kind::Email, "mail_a", t1, t0).unwrap();
        // msg_a is running: no longer due; msg_b is the oldest due.
        let a = due(&c, Kind::Webhook, now, 1, "[]").unwrap();
        assert_eq!(a[0].subject, "msg_a");
        let running = format!("[{}]", a[0].id);
        let got = depth(&c, now, &running).unwrap();
        let want = [
            Depth {
                kind: "email".into(),
                due: 1,
                scheduled: 0,
                running: 0,
                oldest_due: Some(t1.into()),
            },
            Depth {
                kind: "webhook".into(),
                due: 1,
                scheduled: 1,
                running: 1,
                oldest_due: Some(t1.into()),
            },
        ];
        assert_eq!(got, want);
        // Due exactly now counts as due, as `due` takes it.
        let at_t1 = depth(&c, t1, &running).unwrap();
        assert_eq!((at_t1[1].due, at_t1[1].scheduled), (1, 1));
        // Nothing running: msg_a is due again, and the oldest.
        let idle = depth(&c, now, "[]").unwrap();
        assert_eq!((idle[1].due, idle[1].running), (2, 0));
        assert_eq!(idle[1].oldest_due.as_deref(), Some(t0));
        // One pass over the table (only work not done yet), by its covering
        // index; the running ids are read once per count.
        let plan = crate::store::query_plan(&c, DEPTH).join("\n");
        assert!(plan.starts_with("SCAN jobs"), "{plan}");
    }
}
