//! The job queue's worker (guide: "Webhooks", "E-mail"): claims due rows of
//! `jobs`, runs them concurrently, and records what came of them. It is woken
//! by the commit that queued a job (`Services::jobs_wake`), by the test clock,
//! or when the next retry falls due; it never polls on a fixed tick.
//!
//! One loop, one write per turn: the turn records every attempt that finished
//! since the last one and claims as many due jobs as there are free slots, so
//! under load a single transaction settles many deliveries. Each kind has its
//! own slots (`--webhook-concurrency` webhooks, `EMAIL_SLOTS` mails): a slow
//! mail server never holds up a webhook, nor a flood of webhooks a mail.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;
use tokio::task::JoinSet;

use crate::domain::time::{self, Timestamp};
use crate::domain::webhook;
use crate::error::Result;
use crate::service::Services;
use crate::store::deliveries::{self, Attempt, Next, Outgoing, Pending};
use crate::store::jobs::{self, Job, Kind};
use crate::store::mail::{self as mail_store, Settled};
use crate::workers::mail::{self as mailer, Mailer, Outcome};
use crate::workers::webhooks::{Sender, Sent};

/// Longest the worker sleeps with nothing due (a wake ends it sooner).
const IDLE: Duration = Duration::from_secs(60);

/// Mails in flight at once: relays limit connections per client, and mail
/// is never urgent to the second.
const EMAIL_SLOTS: usize = 8;

/// A claimed job and what it needs to run.
enum Work {
    Webhook {
        job: Job,
        out: Outgoing,
    },
    Email {
        job: Job,
        mail: mail_store::Outgoing,
    },
}

/// What an attempt came to, by kind.
#[derive(Clone)]
enum Finished {
    Webhook {
        out: Outgoing,
        sent: Sent,
    },
    /// The mail id and the attempt's outcome (never its body).
    Email {
        id: String,
        outcome: Outcome,
    },
}

/// A finished attempt, to record.
#[derive(Clone)]
struct Done {
    job: Job,
    started: Timestamp,
    started_at: String,
    finished: Finished,
}

/// The job id and kind of each attempt in flight, by task: a panicked task
/// is known by its id alone, and its job must stop counting as running.
type Busy = HashMap<tokio::task::Id, (i64, Kind)>;

pub async fn run(s: Services) {
    let sender = match Sender::new(&s.config) {
        Ok(x) => Arc::new(x),
        Err(e) => {
            tracing::error!(error = %e, "webhook client could not be built; no webhooks will be sent");
            return;
        }
    };
    let mailer = match s.config.smtp.as_ref().map(|c| (c, Mailer::new(c))) {
        Some((c, Ok(m))) => {
            tracing::info!(smtp.host = %c.host, smtp.port = c.port, tls = ?c.tls, "e-mail is sent through this server");
            Some(Arc::new(m))
        }
        Some((_, Err(e))) => {
            tracing::error!(error = %e, "SMTP client could not be built; no e-mail will be sent");
            None
        }
        None => None,
    };
    // Jobs a stopped or crashed process had claimed run again.
    match s.db.write(jobs::release_claims).await {
        Ok(n) if n > 0 => tracing::info!(count = n, "jobs of a previous run released"),
        Ok(_) => {}
        Err(e) => tracing::error!(error = %e.for_log(), "releasing job claims failed"),
    }
    let webhook_slots = usize::try_from(s.config.webhook_concurrency).unwrap_or(64);
    let mut inflight: JoinSet<Done> = JoinSet::new();
    let mut finished: Vec<Done> = Vec::new();
    let mut moved = s.clock.moved();
    let mut swept_at: Option<Timestamp> = None;
    let mut busy: Busy = HashMap::new();
    // Longer than any attempt of any kind can last.
    let longest = i64::try_from(s.config.webhook_timeout.max(mailer::ATTEMPT_TIMEOUT_SECS))
        .unwrap_or(60)
        + 60;
    loop {
        let running = |k: Kind| busy.values().filter(|(_, kind)| *kind == k).count();
        let free = [
            (
                Kind::Webhook,
                webhook_slots.saturating_sub(running(Kind::Webhook)),
            ),
            (
                Kind::Email,
                EMAIL_SLOTS.saturating_sub(running(Kind::Email)),
            ),
        ];
        let now = s.clock.now();
        let batch = Arc::new(std::mem::take(&mut finished));
        // Once a minute: claims older than any attempt can last are released
        // (an attempt that panicked; a job whose records could not be
        // written), and jobs of kinds this build does not know are put off.
        let stale_before = match swept_at {
            Some(t) if now - t < ::time::Duration::minutes(1) => None,
            _ => {
                swept_at = Some(now);
                Some(time::format(now - ::time::Duration::seconds(longest)))
            }
        };
        // The jobs this process is still running are never stale.
        let running_ids = stale_before.as_ref().map(|_| {
            let ids: Vec<i64> = busy.values().map(|(id, _)| *id).collect();
            serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into())
        });
        let stale = Arc::new(stale_before.zip(running_ids));
        let run = |isolate: Isolate| {
            let (b, stale) = (batch.clone(), stale.clone());
            s.db.write(move |c| turn(c, &b, now, &free, stale.as_ref().as_ref(), isolate))
        };
        // A turn runs in one savepoint, the writer's. When it fails (a step's
        // error, or its batch not committed), the whole turn is undone and
        // taken again with each job in a savepoint of its own, so a failing
        // job alone is left behind. A savepoint per job on every turn cost
        // the writer about a sixth of the turn (docs/benchmarks.md).
        let turn = match run(Isolate::Turn).await {
            Ok(x) => Ok(x),
            Err(e) => {
                tracing::warn!(error = %e.for_log(), "a job queue turn failed; taking it again job by job");
                run(Isolate::EachJob).await
            }
        };
        let next_due = match turn {
            Ok(Turned {
                work,
                next_due,
                released,
            }) => {
                // Logged once committed: a failed first run released nothing.
                if released > 0 {
                    tracing::warn!(count = released, "stale job claims released");
                }
                for w in work {
                    start(&s, w, &sender, mailer.as_ref(), &mut inflight, &mut busy);
                }
                next_due
            }
            Err(e) => {
                // Rolled back: the attempts are recorded by the next turn,
                // a second from now.
                tracing::error!(error = %e.for_log(), "job queue turn failed");
                finished = Arc::try_unwrap(batch).unwrap_or_else(|b| (*b).clone());
                Some(now + ::time::Duration::seconds(1))
            }
        };
        let full = busy.values().filter(|(_, k)| *k == Kind::Webhook).count() >= webhook_slots
            && busy.values().filter(|(_, k)| *k == Kind::Email).count() >= EMAIL_SLOTS;
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

/// Starts one claimed job's attempt as a task. A mail with no mail server
/// to send it (the `[smtp]` table removed, or its client failed to build)
/// is an attempt that may pass once the server is back.
fn start(
    s: &Services,
    w: Work,
    sender: &Arc<Sender>,
    mailer: Option<&Arc<Mailer>>,
    inflight: &mut JoinSet<Done>,
    busy: &mut Busy,
) {
    let svc = s.clone();
    let (job_id, kind, task) = match w {
        Work::Webhook { job, out } => {
            let (id, sender) = (job.id, sender.clone());
            let task = inflight.spawn(async move {
                let at = svc.clock.now();
                let sent = sender.send(&out, at.unix_timestamp()).await;
                Done {
                    job,
                    started: at,
                    started_at: time::format(at),
                    finished: Finished::Webhook { out, sent },
                }
            });
            (id, Kind::Webhook, task)
        }
        Work::Email { job, mail } => {
            let (id, mailer) = (job.id, mailer.cloned());
            let task = inflight.spawn(async move {
                let at = svc.clock.now();
                let outcome = match mailer {
                    Some(m) => {
                        let (outcome, ms) = m.send(&mail).await;
                        if let Outcome::Retry(e) | Outcome::Failed(e) = &outcome {
                            tracing::warn!(mail.id = %mail.id, attempt = mail.attempts + 1,
                                duration_ms = ms, error = %e, "e-mail attempt failed");
                        }
                        outcome
                    }
                    None => Outcome::Retry(
                        "not sent: no mail server is configured ([smtp] in hds.toml)".into(),
                    ),
                };
                Done {
                    job,
                    started: at,
                    started_at: time::format(at),
                    finished: Finished::Email {
                        id: mail.id,
                        outcome,
                    },
                }
            });
            (id, Kind::Email, task)
        }
    };
    busy.insert(task.id(), (job_id, kind));
}

/// Takes a finished task out of `busy`; a panicked one leaves its job
/// claimed, and the stale sweep frees it once no attempt can still be
/// running (two to three minutes with the default timeout).
fn collect(
    done: std::result::Result<(tokio::task::Id, Done), tokio::task::JoinError>,
    into: &mut Vec<Done>,
    busy: &mut Busy,
) {
    match done {
        Ok((id, d)) => {
            busy.remove(&id);
            into.push(d);
        }
        Err(e) => {
            busy.remove(&e.id());
            tracing::error!(error = %e, "a job's attempt panicked");
        }
    }
}

/// How far a failing step of a turn is undone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Isolate {
    /// The whole turn (the writer's savepoint): the fast way, taken first.
    Turn,
    /// Each job's step alone (`isolated`): after a turn failed.
    EachJob,
}

/// Runs one job's step: as it is in `Isolate::Turn` (an error fails the
/// turn), or in a savepoint of its own in `Isolate::EachJob`.
fn step(
    c: &Connection,
    isolate: Isolate,
    what: &str,
    id: i64,
    f: impl FnOnce() -> Result<()>,
) -> Result<()> {
    match isolate {
        Isolate::Turn => f(),
        Isolate::EachJob => isolated(c, what, id, f),
    }
}

/// Runs `f` in its own savepoint: when it fails, only its own writes are
/// undone, the error is logged, and the turn goes on, so one bad job never
/// stops the queue (its claim stays; the stale sweep frees it, and the
/// job is tried again).
fn isolated(c: &Connection, what: &str, id: i64, f: impl FnOnce() -> Result<()>) -> Result<()> {
    c.prepare_cached("SAVEPOINT job_step")?.execute([])?;
    let r = f();
    if let Err(e) = &r {
        tracing::error!(error = %e.for_log(), job.id = id, "{what} failed; left for the stale sweep");
        c.prepare_cached("ROLLBACK TO job_step")?.execute([])?;
    }
    c.prepare_cached("RELEASE job_step")?.execute([])?;
    Ok(())
}

/// What a turn came to.
struct Turned {
    /// The jobs claimed, to start.
    work: Vec<Work>,
    /// When the next unclaimed job of a kind with free slots falls due.
    next_due: Option<Timestamp>,
    /// Stale claims the sweep released.
    released: usize,
}

/// One turn in the writer: record finished attempts, release stale claims
/// (when `stale` is given), claim up to the free slots of each kind.
fn turn(
    c: &Connection,
    finished: &[Done],
    now: Timestamp,
    free: &[(Kind, usize)],
    stale: Option<&(String, String)>,
    isolate: Isolate,
) -> Result<Turned> {
    let now_s = time::format(now);
    for d in finished {
        step(c, isolate, "recording an attempt", d.job.id, || {
            match &d.finished {
                Finished::Webhook { out, sent } => settle(c, d, out, sent),
                Finished::Email { id, outcome } => settle_mail(c, d, id, outcome),
            }
        })?;
    }
    let mut released = 0;
    if let Some((before, running)) = stale {
        released = jobs::release_stale(c, before, running)?;
        // Written by a newer hds: left for it, looked at again in an hour.
        let later = time::format(now + ::time::Duration::hours(1));
        for job in jobs::claim_unknown(c, &now_s, 1000)? {
            jobs::reschedule(c, job.id, &later)?;
        }
    }
    let mut work = Vec::new();
    let mut next: Option<Timestamp> = None;
    for &(kind, n) in free {
        if n == 0 {
            continue;
        }
        for job in jobs::claim(c, kind, &now_s, n)? {
            let id = job.id;
            step(c, isolate, "preparing a job", id, || {
                prepare(c, job, &now_s, &mut work)
            })?;
        }
        if let Some(t) = jobs::next_due(c, kind)?.and_then(|t| time::parse(&t)) {
            next = Some(next.map_or(t, |n| n.min(t)));
        }
    }
    Ok(Turned {
        work,
        next_due: next,
        released,
    })
}

/// What a claimed job needs to run, or its row gone when there is nothing
/// left to do (delivered, sent or failed meanwhile, or a webhook whose body
/// is missing: failed, with a last error that says so).
fn prepare(c: &Connection, job: Job, now: &str, work: &mut Vec<Work>) -> Result<()> {
    match job.kind {
        Some(Kind::Webhook) => match deliveries::outgoing(c, &job.subject, now)? {
            Pending::Send(out) => work.push(Work::Webhook { job, out }),
            Pending::Settled => jobs::delete(c, job.id)?,
            Pending::NoBody => {
                tracing::error!(delivery.id = %job.subject, "a webhook's body is missing from the database; the delivery is failed");
                deliveries::give_up(c, &job.subject, deliveries::NO_BODY, now)?;
                jobs::delete(c, job.id)?;
            }
        },
        Some(Kind::Email) => match mail_store::outgoing(c, &job.subject)? {
            Some(mail) => work.push(Work::Email { job, mail }),
            None => jobs::delete(c, job.id)?,
        },
        // `claim` answers the kind it was asked for.
        None => {}
    }
    Ok(())
}

/// Records a mail attempt: sent, failed (a 5xx, an unusable message, the
/// schedule exhausted), or retried on the schedule counted from the
/// attempt's start. A secret mail loses its bodies once sent or failed.
fn settle_mail(c: &Connection, d: &Done, id: &str, outcome: &Outcome) -> Result<()> {
    let Some(attempts) = mail_store::pending_attempts(c, id)? else {
        return jobs::delete(c, d.job.id);
    };
    let attempt = attempts + 1;
    let at = &d.started_at;
    match outcome {
        Outcome::Sent => mail_store::record_attempt(c, id, attempt, at, Settled::Sent, None)?,
        Outcome::Failed(e) => {
            mail_store::record_attempt(c, id, attempt, at, Settled::Failed, Some(e))?
        }
        Outcome::Retry(e) => match mailer::retry_after(attempt) {
            Some(secs) => {
                mail_store::record_attempt(c, id, attempt, at, Settled::Retry, Some(e))?;
                let due = time::format(d.started + ::time::Duration::seconds(secs));
                return jobs::reschedule(c, d.job.id, &due);
            }
            None => {
                let e = format!("gave up after {attempt} attempts; the last: {e}");
                mail_store::record_attempt(c, id, attempt, at, Settled::Failed, Some(&e))?;
            }
        },
    }
    jobs::delete(c, d.job.id)
}

/// Records an attempt; the delivery is delivered (2xx), retried on the
/// schedule counted from the attempt's start, or failed (410 Gone, a refused
/// address, the round exhausted). The counts are read afresh: a resend
/// during the attempt started a new round.
fn settle(c: &Connection, d: &Done, out: &Outgoing, sent: &Sent) -> Result<()> {
    let Some((attempts, round_start)) = deliveries::counts(c, &out.id)? else {
        return jobs::delete(c, d.job.id);
    };
    let attempt = attempts + 1;
    let in_round = attempt - round_start;
    let code = sent.status_code;
    let mut error = sent.error.clone();
    let (next, at) = if code.is_some_and(|c| (200..300).contains(&c)) {
        (Next::Delivered, None)
    } else if sent.refused {
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
        duration_ms: sent.duration_ms,
        error,
    };
    deliveries::record_attempt(c, &out.id, &a, next, at.as_deref())?;
    match (&next, at) {
        (Next::RetryAt, Some(at)) => jobs::reschedule(c, d.job.id, &at),
        _ => jobs::delete(c, d.job.id),
    }
}
