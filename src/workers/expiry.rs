//! Closes open Actions whose `expires_at` has passed, per their `on_expire`,
//! once a second and whenever the clock is moved (tests); the effects of the
//! pass wake their long polls.

use std::time::Duration;

use crate::domain::time;
use crate::service::{Services, decisions, notifications};

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
        // Warnings first: an Action that expires in this pass was warned
        // before. Their own write: a failing timer never holds up expiry.
        let nctx = notifications::Ctx::of(&s);
        let at = time::format(now);
        if let Err(e) = s
            .write(move |c, fx| notifications::run_due(c, fx, &nctx, &at))
            .await
        {
            tracing::error!(error = %e.for_log(), "notification timers failed");
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
