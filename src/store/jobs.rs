//! The job queue's table (migration 0010): rows written in the transaction of
//! the change that causes them, claimed by the one worker, deleted when done.
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
    /// Unclaimed and due: waiting for the worker.
    pub due: i64,
    /// Unclaimed and due later (a retry's backoff).
    pub scheduled: i64,
    /// Claimed: being worked on.
    pub running: i64,
    /// `run_at` of the longest-due unclaimed job.
    pub oldest_due: Option<String>,
}

const DEPTH: &str = "SELECT kind,
        count(*) FILTER (WHERE claimed_at IS NULL AND run_at <= ?1),
        count(*) FILTER (WHERE claimed_at IS NULL AND run_at > ?1),
        count(*) FILTER (WHERE claimed_at IS NOT NULL),
        min(run_at) FILTER (WHERE claimed_at IS NULL AND run_at <= ?1)
    FROM jobs GROUP BY kind ORDER BY kind";

/// Every kind with a job queued, and what of it is due at `now`. One pass
/// over the table, which holds only work not done yet.
pub fn depth(c: &Connection, now: &str) -> Result<Vec<Depth>> {
    let mut st = c.prepare_cached(DEPTH)?;
    let rows = st.query_map(params![now], |r| {
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

/// A claimed job.
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

/// Claims up to `limit` due jobs of `kind`, oldest due first (`jobs_due_by_kind`).
pub fn claim(c: &Connection, kind: Kind, now: &str, limit: usize) -> Result<Vec<Job>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut st = c.prepare_cached(
        "UPDATE jobs SET claimed_at = ?1 WHERE id IN (
             SELECT id FROM jobs WHERE kind = ?3 AND claimed_at IS NULL AND run_at <= ?1
             ORDER BY run_at, id LIMIT ?2)
         RETURNING id, kind, subject",
    )?;
    let rows = st.query_map(params![now, limit, kind.as_str()], |r| {
        Ok(Job {
            id: r.get(0)?,
            kind: Kind::parse(&r.get::<_, String>(1)?),
            subject: r.get(2)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Claims up to `limit` due jobs of kinds this build does not know (a newer
/// hds wrote them), by the index's ranges around the known kinds.
pub fn claim_unknown(c: &Connection, now: &str, limit: usize) -> Result<Vec<Job>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut st = c.prepare_cached(
        "UPDATE jobs SET claimed_at = ?1 WHERE id IN (
             SELECT id FROM jobs WHERE claimed_at IS NULL AND run_at <= ?1
               AND (kind < 'email' OR (kind > 'email' AND kind < 'webhook') OR kind > 'webhook')
             LIMIT ?2)
         RETURNING id, subject",
    )?;
    let rows = st.query_map(params![now, limit], |r| {
        Ok(Job {
            id: r.get(0)?,
            kind: None,
            subject: r.get(1)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// When the next unclaimed job of `kind` is due, if any.
pub fn next_due(c: &Connection, kind: Kind) -> Result<Option<String>> {
    Ok(c.prepare_cached(
        "SELECT run_at FROM jobs WHERE kind = ?1 AND claimed_at IS NULL ORDER BY run_at, id LIMIT 1",
    )?
    .query_row([kind.as_str()], |r| r.get(0))
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
    c.prepare_cached("UPDATE jobs SET run_at = ?2, claimed_at = NULL WHERE id = ?1")?
        .execute(params![id, run_at])?;
    Ok(())
}

/// The pending job of a subject is due now (a resend of a waiting delivery);
/// false when there is none to hurry.
pub fn hurry(c: &Connection, kind: Kind, subject: &str, now: &str) -> Result<bool> {
    let n = c
        .prepare_cached(
            "UPDATE jobs SET run_at = ?3 WHERE kind = ?1 AND subject = ?2 AND claimed_at IS NULL",
        )?
        .execute(params![kind.as_str(), subject, now])?;
    Ok(n > 0)
}

/// Whether a job for this subject is queued or running.
pub fn exists(c: &Connection, kind: Kind, subject: &str) -> Result<bool> {
    Ok(
        c.prepare_cached("SELECT 1 FROM jobs WHERE kind = ?1 AND subject = ?2")?
            .exists(params![kind.as_str(), subject])?,
    )
}

/// Frees every claim: at start, the jobs a crashed or stopped process held
/// run again (delivery is at least once; receivers drop repeats by id).
pub fn release_claims(c: &Connection) -> Result<usize> {
    Ok(c.execute(
        "UPDATE jobs SET claimed_at = NULL WHERE claimed_at IS NOT NULL",
        [],
    )?)
}

/// Frees claims taken before `before` (longer ago than any attempt can
/// last) except those of `running`, a JSON array of the job ids in flight:
/// whatever held them is gone (an attempt that panicked).
pub fn release_stale(c: &Connection, before: &str, running: &str) -> Result<usize> {
    Ok(c.prepare_cached(
        "UPDATE jobs SET claimed_at = NULL WHERE claimed_at < ?1
             AND id NOT IN (SELECT value FROM json_each(?2))",
    )?
    .execute(params![before, running])?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Claims, then the stale sweep: it frees old claims but never one in flight,
    /// and the worker's queries read their indexes.
    #[test]
    fn the_stale_sweep_spares_running_jobs_and_the_queries_use_their_indexes() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        let t0 = "2026-11-23T10:00:00.000Z";
        for s in ["msg_a", "msg_b", "msg_c"] {
            insert(&c, Kind::Webhook, s, t0, t0).unwrap();
        }
        insert(&c, Kind::Email, "mail_a", t0, t0).unwrap();
        c.execute(
            "INSERT INTO jobs(kind, subject, run_at, created_at) VALUES ('fax', 'x', ?1, ?1)",
            [t0],
        )
        .unwrap();
        let claimed = claim(&c, Kind::Webhook, "2026-11-23T10:00:01.000Z", 2).unwrap();
        assert_eq!(claimed.len(), 2);
        assert_eq!(claimed[0].subject, "msg_a");
        assert_eq!(
            next_due(&c, Kind::Webhook).unwrap().as_deref(),
            Some(t0),
            "msg_c is still due"
        );
        // msg_a is still being sent; msg_b's attempt is gone.
        let running = format!("[{}]", claimed[0].id);
        let freed = release_stale(&c, "2026-11-23T10:05:00.000Z", &running).unwrap();
        assert_eq!(freed, 1);
        let again = claim(&c, Kind::Webhook, "2026-11-23T10:05:00.000Z", 10).unwrap();
        let subjects: Vec<_> = again.iter().map(|j| j.subject.as_str()).collect();
        assert_eq!(subjects, ["msg_b", "msg_c"]);
        // Each kind within its own budget; a kind from a newer hds alone.
        let mail = claim(&c, Kind::Email, "2026-11-23T10:05:00.000Z", 10).unwrap();
        assert_eq!(mail.len(), 1);
        assert_eq!(mail[0].kind, Some(Kind::Email));
        let unknown = claim_unknown(&c, "2026-11-23T10:05:00.000Z", 10).unwrap();
        assert_eq!(unknown.len(), 1);
        assert_eq!(unknown[0].subject, "x");
        // Only what `release_claims` frees at start is left claimed.
        assert_eq!(release_claims(&c).unwrap(), 5);
        for sql in [
            "SELECT id FROM jobs WHERE kind = 'email' AND claimed_at IS NULL AND run_at <= '2026' ORDER BY run_at, id LIMIT 5",
            "SELECT run_at FROM jobs WHERE kind = 'webhook' AND claimed_at IS NULL ORDER BY run_at, id LIMIT 1",
            "SELECT id FROM jobs WHERE claimed_at IS NULL AND run_at <= '2026' AND (kind < 'email' OR (kind > 'email' AND kind < 'webhook') OR kind > 'webhook') LIMIT 5",
        ] {
            let plan = crate::store::query_plan(&c, sql);
            let text = plan.join("\n");
            assert!(text.contains("jobs_due_by_kind"), "{sql}:\n{text}");
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
        assert_eq!(depth(&c, now).unwrap(), []);
        insert(&c, Kind::Webhook, "msg_a", t0, t0).unwrap();
        insert(&c, Kind::Webhook, "msg_b", t1, t0).unwrap();
        insert(&c, Kind::Webhook, "msg_c", later, t0).unwrap();
        insert(&c, Kind::Email, "mail_a", t1, t0).unwrap();
        // msg_a is claimed: running, no longer due; msg_b is the oldest due.
        assert_eq!(
            claim(&c, Kind::Webhook, now, 1).unwrap()[0].subject,
            "msg_a"
        );
        let got = depth(&c, now).unwrap();
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
        // Due exactly now counts as due, as `claim` takes it.
        let at_t1 = depth(&c, t1).unwrap();
        assert_eq!((at_t1[1].due, at_t1[1].scheduled), (1, 1));
        // One pass: the whole table (only work not done yet), no index.
        let plan = crate::store::query_plan(&c, DEPTH).join("\n");
        assert!(plan.starts_with("SCAN jobs"), "{plan}");
    }
}
