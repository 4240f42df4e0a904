//! The job queue's worker (guide: "Webhooks"): claims due rows of `jobs`,
//! runs them concurrently, and records what came of them. It is woken by the
//! commit that queued a job (`Services::jobs_wake`), by the test clock, or when
//! the next retry falls due; it never polls on a fixed tick.
//!
//! One loop, one write per turn: the turn records every attempt that finished
//! since the last one and claims as many due jobs as there are free slots, so
//! under load a single transaction settles many deliveries.

use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;
use tokio::task::JoinSet;

use crate::domain::time::{self, Timestamp};
use crate::domain::webhook;
use crate::error::Result;
use crate::service::Services;
use crate::store::deliveries::{self, Attempt, Next, Outgoing};
use crate::store::jobs::{self, Job, Kind};
use crate::workers::webhooks::{Sender, Sent};

/// Longest the worker sleeps with nothing due (a wake ends it sooner).
const IDLE: Duration = Duration::from_secs(60);

/// A claimed job and what it needs to run.
enum Work {
    Webhook { job: Job, out: Outgoing },
}

/// A finished attempt, to record.
#[derive(Clone)]
struct Done {
    job: Job,
    out: Outgoing,
    started: Timestamp,
    started_at: String,
    sent: Sent,
}

pub async fn run(s: Services) {
    let sender = match Sender::new(&s.config) {
        Ok(x) => Arc::new(x),
        Err(e) => {
            tracing::error!(error = %e, "webhook client could not be built; no webhooks will be sent");
            return;
        }
    };
    // Jobs a stopped or crashed process had claimed run again.
    match s.db.write(jobs::release_claims).await {
        Ok(n) if n > 0 => tracing::info!(count = n, "jobs of a previous run released"),
        Ok(_) => {}
        Err(e) => tracing::error!(error = %e, "releasing job claims failed"),
    }
    let slots = usize::try_from(s.config.webhook_concurrency).unwrap_or(64);
    let mut inflight: JoinSet<Done> = JoinSet::new();
    let mut finished: Vec<Done> = Vec::new();
    let mut moved = s.clock.moved();
    let mut swept_at: Option<Timestamp> = None;
    // Ids of the jobs in flight.
    // The job id of each attempt in flight, by task: a panicked task is
    // known by its id alone, and its job must stop counting as running.
    let mut busy: std::collections::HashMap<tokio::task::Id, i64> =
        std::collections::HashMap::new();
    loop {
        let free = slots.saturating_sub(inflight.len());
        let now = s.clock.now();
        let batch = Arc::new(std::mem::take(&mut finished));
        // Once a minute: claims older than any attempt can last are released
        // (an attempt that panicked; a job whose records could not be written).
        let stale_before = match swept_at {
            Some(t) if now - t < ::time::Duration::minutes(1) => None,
            _ => {
                swept_at = Some(now);
                let longest = i64::try_from(s.config.webhook_timeout).unwrap_or(60) + 60;
                Some(time::format(now - ::time::Duration::seconds(longest)))
            }
        };
        // The jobs this process is still sending are never stale.
        let running = stale_before.as_ref().map(|_| {
            let ids: Vec<i64> = busy.values().copied().collect();
            serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into())
        });
        let b = batch.clone();
        let stale = stale_before.zip(running);
        let turn =
            s.db.write(move |c| turn(c, &b, now, free, stale.as_ref()))
                .await;
        let next_due = match turn {
            Ok((work, next_due)) => {
                for w in work {
                    match w {
                        Work::Webhook { job, out } => {
                            let job_id = job.id;
                            let (svc, sender) = (s.clone(), sender.clone());
                            let task = inflight.spawn(async move {
                                let at = svc.clock.now();
                                let sent = sender.send(&out, at.unix_timestamp()).await;
                                let started_at = time::format(at);
                                Done {
                                    job,
                                    out,
                                    started: at,
                                    started_at,
                                    sent,
                                }
                            });
                            busy.insert(task.id(), job_id);
                        }
                    }
                }
                next_due
            }
            Err(e) => {
                // Rolled back: the attempts are recorded by the next turn,
                // a second from now.
                tracing::error!(error = %e, "job queue turn failed");
                finished = Arc::try_unwrap(batch).unwrap_or_else(|b| (*b).clone());
                Some(now + ::time::Duration::seconds(1))
            }
        };
        let full = inflight.len() >= slots;
        let wait = match next_due {
            Some(t) if !full => (t - s.clock.now())
                .try_into()
                .unwrap_or(Duration::ZERO)
                .min(IDLE),
            _ => IDLE,
        };
        tokio::select! {
            _ = s.jobs_wake.notified(), if !full => {}
            _ = moved.changed() => {}
            _ = tokio::time::sleep(wait), if !full || next_due.is_none() => {}
            Some(done) = inflight.join_next_with_id(), if !inflight.is_empty() => {
                collect(done, &mut finished, &mut busy);
                while let Some(more) = inflight.try_join_next_with_id() {
                    collect(more, &mut finished, &mut busy);
                }
            }
        }
    }
}

/// Takes a finished task out of `busy`; a panicked one leaves its job
/// claimed, and the stale sweep frees it a minute or so later.
fn collect(
    done: std::result::Result<(tokio::task::Id, Done), tokio::task::JoinError>,
    into: &mut Vec<Done>,
    busy: &mut std::collections::HashMap<tokio::task::Id, i64>,
) {
    match done {
        Ok((id, d)) => {
            busy.remove(&id);
            into.push(d);
        }
        Err(e) => {
            busy.remove(&e.id());
            tracing::error!(error = %e, "a webhook attempt panicked");
        }
    }
}

/// Runs `f` in its own savepoint: when it fails, only its own writes are
/// undone, the error is logged, and the turn goes on, so one bad job never
/// stops the queue (its claim stays; the stale sweep frees it).
fn isolated(c: &Connection, what: &str, id: i64, f: impl FnOnce() -> Result<()>) -> Result<()> {
    c.prepare_cached("SAVEPOINT job_step")?.execute([])?;
    let r = f();
    if let Err(e) = &r {
        tracing::error!(error = %e, job.id = id, "{what} failed; left for the stale sweep");
        c.prepare_cached("ROLLBACK TO job_step")?.execute([])?;
    }
    c.prepare_cached("RELEASE job_step")?.execute([])?;
    Ok(())
}

/// One turn in the writer: record finished attempts, claim up to `free` due
/// jobs; returns them and when the next unclaimed job falls due.
fn turn(
    c: &Connection,
    finished: &[Done],
    now: Timestamp,
    free: usize,
    stale: Option<&(String, String)>,
) -> Result<(Vec<Work>, Option<Timestamp>)> {
    let now_s = time::format(now);
    for d in finished {
        isolated(c, "recording a webhook attempt", d.job.id, || settle(c, d))?;
    }
    if let Some((before, running)) = stale {
        let n = jobs::release_stale(c, before, running)?;
        if n > 0 {
            tracing::warn!(count = n, "stale job claims released");
        }
    }
    let mut work = Vec::new();
    if free > 0 {
        for job in jobs::claim(c, &now_s, free)? {
            let id = job.id;
            isolated(c, "preparing a job", id, || {
                match job.kind {
                    Some(Kind::Webhook) => match deliveries::outgoing(c, &job.subject, &now_s)? {
                        Some(out) => work.push(Work::Webhook { job, out }),
                        // No longer pending (delivered or failed meanwhile).
                        None => jobs::delete(c, job.id)?,
                    },
                    None => {
                        // Written by a newer hds: left for it, looked at again in an hour.
                        let later = time::format(now + ::time::Duration::hours(1));
                        jobs::reschedule(c, job.id, &later)?;
                    }
                }
                Ok(())
            })?;
        }
    }
    let next = jobs::next_due(c)?.and_then(|t| time::parse(&t));
    Ok((work, next))
}

/// Records an attempt; the delivery is delivered (2xx), retried on the
/// schedule counted from the attempt's start, or failed (410 Gone, a refused
/// address, the round exhausted). The counts are read afresh: a resend
/// during the attempt started a new round.
fn settle(c: &Connection, d: &Done) -> Result<()> {
    let Some((attempts, round_start)) = deliveries::counts(c, &d.out.id)? else {
        return jobs::delete(c, d.job.id);
    };
    let attempt = attempts + 1;
    let in_round = attempt - round_start;
    let code = d.sent.status_code;
    let mut error = d.sent.error.clone();
    let (next, at) = if code.is_some_and(|c| (200..300).contains(&c)) {
        (Next::Delivered, None)
    } else if d.sent.refused {
        (Next::Failed, None)
    } else if code == Some(410) {
        error =
            Some("HTTP 410 Gone: the receiver asked for no more deliveries; not retried".into());
        (Next::Failed, None)
    } else {
        match webhook::retry_after(in_round) {
            Some(secs) => (
                Next::RetryAt,
                Some(time::format(d.started + ::time::Duration::seconds(secs))),
            ),
            None => (Next::Failed, None),
        }
    };
    let a = Attempt {
        attempt,
        started_at: d.started_at.clone(),
        status_code: code.map(i64::from),
        duration_ms: d.sent.duration_ms,
        error,
    };
    deliveries::record_attempt(c, &d.out.id, &a, next, at.as_deref())?;
    match (&next, at) {
        (Next::RetryAt, Some(at)) => jobs::reschedule(c, d.job.id, &at),
        _ => jobs::delete(c, d.job.id),
    }
}
