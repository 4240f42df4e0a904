//! The job queue's worker (guide: "Webhooks", "E-mail"): reads due rows of
//! `jobs`, runs them concurrently, and records what came of them. It is woken
//! by the commit that queued a job (`Services::jobs_wake`), by the test clock,
//! or when the next retry falls due; it never polls on a fixed tick.
//!
//! One loop: a write (the turn) records every attempt that finished since
//! the last one, so under load a single transaction settles many
//! deliveries; then a read on a reader takes as many due jobs as there are
//! free slots. Which jobs run is kept here, not in their rows: one process
//! owns the data directory, and this worker is the only one to take jobs, so
//! taking one costs the single writer nothing, and a job whose process
//! stopped is simply due again at the next start. Each kind has its own
//! slots (`--webhook-concurrency` webhooks, `EMAIL_SLOTS` mails): a slow
//! mail server never holds up a webhook, nor a flood of webhooks a mail.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;
use tokio::task::JoinSet;

use crate::domain::time::{self, Timestamp};
use crate::domain::unsubscribe;
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

/// A due job taken and what it needs to run.
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

/// Jobs not taken again before a time: one whose attempt panicked, or whose
/// record or preparation failed and was undone. The time is later than any
/// attempt can last; then the job is tried again (delivery is at least
/// once; receivers drop repeats by id).
type Held = HashMap<i64, Timestamp>;

/// How often jobs of kinds this build does not know are looked for.
const SWEEP_EVERY: ::time::Duration = ::time::Duration::minutes(1);

pub async fn run(s: Services) {
    let sender = Arc::new(Sender::new(&s.config));
    if let Some(why) = sender.unusable() {
        tracing::error!(error = %why, "no webhook can be sent: each attempt fails with this reason (in the delivery log) and is retried");
    }
    let mailer = match s
        .config
        .smtp
        .as_ref()
        .map(|c| (c, Mailer::new(c, &s.config.base_url)))
    {
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
    let webhook_slots = usize::try_from(s.config.webhook_concurrency).unwrap_or(64);
    let mut inflight: JoinSet<Done> = JoinSet::new();
    let mut busy: Busy = HashMap::new();
    // Attempts to record, and jobs to settle without an attempt (found with
    // nothing left to send) or to put off (kinds this build does not know):
    // the next turn writes them.
    let mut finished: Vec<Done> = Vec::new();
    let mut tidy: Vec<Job> = Vec::new();
    let mut put_off: Vec<i64> = Vec::new();
    let mut held: Held = HashMap::new();
    let mut moved = s.clock.moved();
    let mut swept_at: Option<Timestamp> = None;
    // After a write failed as a whole (the database refused it, or its
    // batch was not committed): not before this time, whatever wakes the
    // worker meanwhile.
    let mut write_after: Option<Timestamp> = None;
    // Longer than any attempt of any kind can last.
    let hold = ::time::Duration::seconds(
        i64::try_from(s.config.webhook_timeout.max(mailer::ATTEMPT_TIMEOUT_SECS)).unwrap_or(60)
            + 60,
    );
    loop {
        let now = s.clock.now();
        held.retain(|_, until| *until > now);
        let to_write = !finished.is_empty() || !tidy.is_empty() || !put_off.is_empty();
        if to_write && write_after.is_none_or(|t| now >= t) {
            let batch = Arc::new(Settle {
                finished: std::mem::take(&mut finished),
                tidy: std::mem::take(&mut tidy),
                put_off: std::mem::take(&mut put_off),
            });
            let run = |isolate: Isolate| {
                let b = batch.clone();
                s.db.write(move |c| turn(c, &b, now, isolate))
            };
            // A turn runs in one savepoint, the writer's. When it fails (a
            // step's error, or its batch not committed), the whole turn is
            // undone and taken again with each job in a savepoint of its
            // own, so a failing job alone is left behind (held). A savepoint
            // per job on every turn cost the writer about a sixth of the
            // turn (docs/benchmarks.md).
            let turned = match run(Isolate::Turn).await {
                Ok(x) => Ok(x),
                Err(e) => {
                    tracing::warn!(error = %e.for_log(), "a job queue turn failed; taking it again job by job");
                    run(Isolate::EachJob).await
                }
            };
            match turned {
                Ok(failed) => {
                    write_after = None;
                    for id in failed {
                        held.insert(id, now + hold);
                    }
                }
                Err(e) => {
                    // Kept to record a second from now: a failure of the
                    // whole write (a full disk) is not one job's to hold.
                    tracing::error!(error = %e.for_log(), "a job queue turn failed; taking it again in a second");
                    let b = Arc::try_unwrap(batch).unwrap_or_else(|b| (*b).clone());
                    (finished, tidy, put_off) = (b.finished, b.tidy, b.put_off);
                    write_after = Some(now + ::time::Duration::seconds(1));
                }
            }
        }
        // Then, on a reader, the due jobs for the free slots, but those
        // running, held back, or still to be recorded (a turn that failed).
        // Taking a job costs the single writer nothing; a reader's work
        // grows with the machine's cores, the writer's does not.
        let running = |k: Kind| busy.values().filter(|(_, kind)| *kind == k).count();
        let ask = Ask {
            now,
            free: [
                (
                    Kind::Webhook,
                    webhook_slots.saturating_sub(running(Kind::Webhook)),
                ),
                (
                    Kind::Email,
                    EMAIL_SLOTS.saturating_sub(running(Kind::Email)),
                ),
            ],
            skip: busy
                .values()
                .map(|(id, _)| *id)
                .chain(held.keys().copied())
                .chain(finished.iter().map(|d| d.job.id))
                .chain(tidy.iter().map(|j| j.id))
                .chain(put_off.iter().copied())
                .collect(),
            sweep: swept_at.is_none_or(|t| now - t >= SWEEP_EVERY),
        };
        let sweep = ask.sweep;
        let picked = s.db.read(move |c| pick(c, &ask)).await;
        let next_due = match picked {
            Ok(p) => {
                if sweep {
                    swept_at = Some(now);
                }
                for w in p.work {
                    start(&s, w, &sender, mailer.as_ref(), &mut inflight, &mut busy);
                }
                tidy.extend(p.tidy);
                put_off.extend(p.unknown);
                for id in p.failed {
                    held.insert(id, now + hold);
                }
                p.next_due
            }
            Err(e) => {
                tracing::error!(error = %e.for_log(), "reading the job queue failed; reading it again in a second");
                Some(now + ::time::Duration::seconds(1))
            }
        };
        publish(&s, &busy);
        let full = busy.values().filter(|(_, k)| *k == Kind::Webhook).count() >= webhook_slots
            && busy.values().filter(|(_, k)| *k == Kind::Email).count() >= EMAIL_SLOTS;
        // Jobs found to settle are written at once (unless the last write
        // failed); otherwise the worker waits for the first of: a wake, a
        // job due, a held job freed, a failed write to take again.
        let write_again =
            write_after.filter(|_| !finished.is_empty() || !tidy.is_empty() || !put_off.is_empty());
        let next = [next_due, held.values().min().copied(), write_again]
            .into_iter()
            .flatten()
            .min();
        let wait = if write_again.is_none() && (!tidy.is_empty() || !put_off.is_empty()) {
            Duration::ZERO
        } else {
            match next {
                Some(t) if !full => (t - s.clock.now())
                    .try_into()
                    .unwrap_or(Duration::ZERO)
                    .min(IDLE),
                _ => IDLE,
            }
        };
        tokio::select! {
            _ = s.jobs_wake.notified(), if !full => {}
            _ = moved.changed() => {}
            _ = tokio::time::sleep(wait), if !full || next.is_none() => {}
            Some(done) = inflight.join_next_with_id(), if !inflight.is_empty() => {
                collect(done, &mut finished, &mut busy, &mut held, s.clock.now() + hold);
                while let Some(more) = inflight.try_join_next_with_id() {
                    collect(more, &mut finished, &mut busy, &mut held, s.clock.now() + hold);
                }
                publish(&s, &busy);
            }
        }
    }
}

/// Tells the metrics which jobs are running.
fn publish(s: &Services, busy: &Busy) {
    let ids = busy.values().map(|(id, _)| *id).collect();
    *s.jobs_running
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = ids;
}

/// Starts one due job's attempt as a task. A mail with no mail server
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
                let delivered = sent.status_code.is_some_and(|c| (200..300).contains(&c));
                if !delivered {
                    // The URL stays out: its query may hold the Source's secret.
                    tracing::warn!(delivery.id = %out.id, attempt = out.attempts + 1,
                        duration_ms = sent.duration_ms, status = ?sent.status_code,
                        error = sent.error.as_deref().unwrap_or(""), refused = sent.refused,
                        "webhook attempt failed");
                }
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

/// Takes a finished task out of `busy`; a panicked one's job is held back
/// until `until`, when no attempt of it can still be running.
fn collect(
    done: std::result::Result<(tokio::task::Id, Done), tokio::task::JoinError>,
    into: &mut Vec<Done>,
    busy: &mut Busy,
    held: &mut Held,
    until: Timestamp,
) {
    match done {
        Ok((id, d)) => {
            busy.remove(&id);
            into.push(d);
        }
        Err(e) => {
            if let Some((job, _)) = busy.remove(&e.id()) {
                held.insert(job, until);
            }
            tracing::error!(error = %e, "a job's attempt panicked; it is tried again later");
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
/// turn), or in a savepoint of its own in `Isolate::EachJob`, where a
/// failed step's job is added to `failed`.
fn step(
    c: &Connection,
    isolate: Isolate,
    what: &str,
    id: i64,
    failed: &mut Vec<i64>,
    f: impl FnOnce() -> Result<()>,
) -> Result<()> {
    match isolate {
        Isolate::Turn => f(),
        Isolate::EachJob => {
            if isolated(c, what, id, f)? {
                failed.push(id);
            }
            Ok(())
        }
    }
}

/// Runs `f` in its own savepoint: when it fails, only its own writes are
/// undone, the error is logged, and the turn goes on, so one bad job never
/// stops the queue (the worker holds the job back for a while, then tries
/// it again). True when `f` failed.
fn isolated(c: &Connection, what: &str, id: i64, f: impl FnOnce() -> Result<()>) -> Result<bool> {
    c.prepare_cached("SAVEPOINT job_step")?.execute([])?;
    let r = f();
    if let Err(e) = &r {
        tracing::error!(error = %e.for_log(), job.id = id, "{what} failed; the job is tried again later");
        c.prepare_cached("ROLLBACK TO job_step")?.execute([])?;
    }
    c.prepare_cached("RELEASE job_step")?.execute([])?;
    Ok(r.is_err())
}

/// What a turn writes.
#[derive(Clone)]
struct Settle {
    /// Attempts to record.
    finished: Vec<Done>,
    /// Jobs the read found nothing to send for.
    tidy: Vec<Job>,
    /// Jobs of kinds this build does not know.
    put_off: Vec<i64>,
}

/// One turn in the writer: record finished attempts, settle the jobs found
/// with nothing to send, put off jobs of unknown kinds. Answers the jobs
/// whose step failed (only in `Isolate::EachJob`).
fn turn(c: &Connection, b: &Settle, now: Timestamp, isolate: Isolate) -> Result<Vec<i64>> {
    let now_s = time::format(now);
    let mut failed = Vec::new();
    for d in &b.finished {
        step(
            c,
            isolate,
            "recording an attempt",
            d.job.id,
            &mut failed,
            || match &d.finished {
                Finished::Webhook { out, sent } => settle(c, d, out, sent),
                Finished::Email { id, outcome } => settle_mail(c, d, id, outcome),
            },
        )?;
    }
    for job in &b.tidy {
        step(c, isolate, "settling a job", job.id, &mut failed, || {
            tidy_job(c, job, &now_s)
        })?;
    }
    // Written by a newer hds: left for it, looked at again in an hour.
    let later = time::format(now + ::time::Duration::hours(1));
    for &id in &b.put_off {
        step(c, isolate, "putting off a job", id, &mut failed, || {
            jobs::reschedule(c, id, &later)
        })?;
    }
    Ok(failed)
}

/// What the worker asks of the queue.
struct Ask {
    now: Timestamp,
    /// Free slots by kind.
    free: [(Kind, usize); 2],
    /// Jobs not to take: running, held back, or still to be recorded.
    skip: Vec<i64>,
    /// Whether to look for jobs of kinds this build does not know.
    sweep: bool,
}

/// What a read of the queue found.
struct Picked {
    /// The jobs to start.
    work: Vec<Work>,
    /// Jobs with nothing left to send, for the next turn to settle.
    tidy: Vec<Job>,
    /// Due jobs of kinds this build does not know (only when asked).
    unknown: Vec<i64>,
    /// Jobs that could not be read, to hold back.
    failed: Vec<i64>,
    /// When the next job of a kind with free slots falls due.
    next_due: Option<Timestamp>,
}

/// Reads up to the free slots of each kind of due jobs, but those in
/// `ask.skip`, and what each needs to run; with `ask.sweep`, also the due
/// jobs of kinds this build does not know.
fn pick(c: &Connection, ask: &Ask) -> Result<Picked> {
    let now = &time::format(ask.now);
    let mut skip = ask.skip.clone();
    let mut p = Picked {
        work: Vec::new(),
        tidy: Vec::new(),
        unknown: Vec::new(),
        failed: Vec::new(),
        next_due: None,
    };
    for &(kind, n) in &ask.free {
        if n == 0 {
            continue;
        }
        let skipped = serde_json::to_string(&skip)?;
        for job in jobs::due(c, kind, now, n, &skipped)? {
            skip.push(job.id);
            let id = job.id;
            // One job that cannot be read (a damaged row) is held back
            // alone; the others are taken.
            if let Err(e) = prepare(c, job, now, &mut p) {
                tracing::error!(error = %e.for_log(), job.id = id, "reading a job failed; it is tried again later");
                p.failed.push(id);
            }
        }
        let skipped = serde_json::to_string(&skip)?;
        if let Some(t) = jobs::next_due(c, kind, &skipped)?.and_then(|t| time::parse(&t)) {
            p.next_due = Some(p.next_due.map_or(t, |n| n.min(t)));
        }
    }
    if ask.sweep {
        let skipped = serde_json::to_string(&ask.skip)?;
        p.unknown = jobs::due_unknown(c, now, 1000, &skipped)?
            .into_iter()
            .map(|j| j.id)
            .collect();
    }
    Ok(p)
}

/// What a due job needs to run, or the job left for the next turn to
/// settle when there is nothing to send (delivered, sent or failed
/// meanwhile, or a webhook whose body is missing).
fn prepare(c: &Connection, job: Job, now: &str, p: &mut Picked) -> Result<()> {
    match job.kind {
        Some(Kind::Webhook) => match deliveries::outgoing(c, &job.subject, now)? {
            Pending::Send(out) => p.work.push(Work::Webhook { job, out }),
            Pending::Settled | Pending::NoBody => p.tidy.push(job),
        },
        Some(Kind::Email) if mail_store::signin_lapsed(c, &job.subject, &lapse_cutoff(now))? => {
            p.tidy.push(job)
        }
        Some(Kind::Email) => match mail_store::outgoing(c, &job.subject)? {
            Some(mut mail) => {
                if let Some((user, workspace)) = &mail.list {
                    let key = mail_store::unsubscribe_key(c)?;
                    mail.unsubscribe_token = Some(unsubscribe::token(&key, user, workspace));
                }
                p.work.push(Work::Email { job, mail })
            }
            None => p.tidy.push(job),
        },
        // `due` answers the kind it was asked for.
        None => {}
    }
    Ok(())
}

/// In the writer, a job a read found nothing to send for, looked at again
/// (a resend may have made it pending since): its row goes when there is
/// still nothing to send; a webhook whose body is missing is failed, with
/// a last error that says so.
fn tidy_job(c: &Connection, job: &Job, now: &str) -> Result<()> {
    match job.kind {
        Some(Kind::Webhook) => match deliveries::outgoing(c, &job.subject, now)? {
            Pending::Send(_) => Ok(()),
            Pending::Settled => jobs::delete(c, job.id),
            Pending::NoBody => {
                tracing::error!(delivery.id = %job.subject, "a webhook's body is missing from the database; the delivery is failed");
                deliveries::give_up(c, &job.subject, deliveries::NO_BODY, now)?;
                jobs::delete(c, job.id)
            }
        },
        Some(Kind::Email) if mail_store::signin_lapsed(c, &job.subject, &lapse_cutoff(now))? => {
            mail_store::give_up_lapsed(c, &job.subject, now)?;
            jobs::delete(c, job.id)
        }
        Some(Kind::Email) => match mail_store::outgoing(c, &job.subject)? {
            Some(_) => Ok(()),
            None => jobs::delete(c, job.id),
        },
        None => Ok(()),
    }
}

/// Sign-in mails queued at or before this (a link's lifetime before `at`)
/// carry a dead link by `at`.
fn lapse_cutoff(at: &str) -> String {
    time::parse(at).map_or_else(
        || at.to_owned(),
        |t| time::format(t - crate::domain::session::MAILED_LINK_LIFETIME),
    )
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
            Some(secs)
                if {
                    let due = time::format(d.started + ::time::Duration::seconds(secs));
                    mail_store::signin_lapsed(c, id, &lapse_cutoff(&due))?
                } =>
            {
                let e = format!("{}; the last attempt: {e}", mail_store::LAPSED);
                mail_store::record_attempt(c, id, attempt, at, Settled::Failed, Some(&e))?;
            }
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
/// schedule counted from the attempt's end, or failed (410 Gone, a refused
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
        // Counted from the attempt's end: after a timeout, a receiver too
        // slow to answer gets the whole first wait, not what the timeout
        // left of it.
        let ended = d.started + ::time::Duration::milliseconds(sent.duration_ms.max(0));
        match webhook::retry_after(in_round) {
            Some(secs) => (
                Next::RetryAt,
                Some(time::format(ended + ::time::Duration::seconds(secs))),
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
