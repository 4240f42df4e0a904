//! Closes open Actions whose `expires_at` has passed, per their `on_expire`,
//! once a second, and wakes their long polls.

use std::time::Duration;

use crate::domain::time;
use crate::service::{Services, decisions};

pub async fn run(s: Services) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let svc = s.clone();
        match s
            .db
            .write(move |c| decisions::expire_due(c, &svc, time::now()))
            .await
        {
            Ok(ids) => {
                for id in &ids {
                    s.waiters.wake(id);
                }
                if !ids.is_empty() {
                    s.changed();
                    tracing::info!(count = ids.len(), "expired Actions closed");
                }
            }
            Err(e) => tracing::error!(error = %e, "expiry pass failed"),
        }
    }
}
