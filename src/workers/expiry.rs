//! Closes open Actions whose `expires_at` has passed, per their `on_expire`,
//! and runs the notification timers that are due, once a second and
//! whenever the clock is moved (tests); the effects of the pass wake their
//! long polls. Each pass reads first whether anything is due, and writes
//! only then.

use std::time::Duration;

use crate::domain::time;
use crate::service::{Services, decisions, notifications};
use crate::store;

pub async fn run(s: Services) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut moved = s.clock.moved();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = moved.changed() => {}
        }
        let svc = s.clone();
        let now = s.clock.now();
        let at = time::format(now);
        // A read first: a pass with nothing due writes nothing (an idle
        // server commits no empty transactions). When the read fails, the
        // writes are tried anyway.
        let due = {
            let at = at.clone();
            s.db.read(move |c| {
                Ok((
                    store::notifications::any_timer_due(c, &at)?,
                    store::actions::any_due_for_expiry(c, &at)?,
                ))
            })
            .await
        };
        let (timers, expiring) = due.unwrap_or_else(|e| {
            tracing::warn!(error = %e.for_log(), "reading what is due failed; running the pass anyway");
            (true, true)
        });
        // Warnings first: an Action that expires in this pass was warned
        // before. Their own write: a failing timer never holds up expiry.
        if timers {
            let nctx = notifications::Ctx::of(&s);
            if let Err(e) = s
                .write(move |c, fx| notifications::run_due(c, fx, &nctx, &at))
                .await
            {
                tracing::error!(error = %e.for_log(), "notification timers failed");
            }
        }
        if !expiring {
            continue;
        }
        match s
            .write(move |c, fx| decisions::expire_due(c, fx, &svc, now))
            .await
        {
            Ok(ids) if !ids.is_empty() => {
                tracing::info!(count = ids.len(), "expired Actions closed")
            }
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e.for_log(), "expiry pass failed"),
        }
    }
}
