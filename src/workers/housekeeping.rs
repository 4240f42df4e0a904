//! Hourly upkeep: forget idempotency keys older than 48 h (the promise is at
//! least 24 h), expired browser sessions, sign-in links and nonces, the
//! sign-in page's requests for a mailed link older than a day, and
//! webhook deliveries settled more than 30 days ago (guide: "Webhooks"),
//! e-mails sent or failed more than 30 days ago (guide: "E-mail"), and
//! notifications older than 90 days once read (guide: "Notifications"), and
//! dashboard usage events older than 90 days (guide: "Analytics").

use std::time::Duration;

use crate::domain::time;
use crate::service::Services;
use crate::store::{deliveries, idempotency, mail, notifications, sessions, signin};

pub async fn run(s: Services) {
    let mut tick = tokio::time::interval(Duration::from_secs(3600));
    loop {
        tick.tick().await;
        let now = s.clock.now();
        let before = time::format(now - ::time::Duration::hours(48));
        let at = time::format(now);
        match s
            .db
            .write(move |c| idempotency::prune(c, &before, &at))
            .await
        {
            Ok(n) if n > 0 => tracing::info!(count = n, "expired idempotency keys removed"),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e.for_log(), "idempotency pruning failed"),
        }
        let pruned =
            s.db.write(move |c| {
                Ok(sessions::delete_expired(c, now.unix_timestamp())?
                    + signin::prune(c, &time::format(now))?
                    + signin::prune_requests(c, &time::format(now - ::time::Duration::DAY))?)
            })
            .await;
        match pruned {
            Ok(n) if n > 0 => {
                tracing::info!(
                    count = n,
                    "expired sessions, links, nonces and link requests removed"
                )
            }
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e.for_log(), "session pruning failed"),
        }
        let settled_before = time::format(now - ::time::Duration::days(deliveries::KEEP_DAYS));
        match s
            .db
            .write(move |c| deliveries::prune(c, &settled_before))
            .await
        {
            Ok(n) if n > 0 => tracing::info!(count = n, "old webhook deliveries removed"),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e.for_log(), "delivery pruning failed"),
        }
        let old = time::format(now - ::time::Duration::days(notifications::KEEP_DAYS));
        match s.db.write(move |c| notifications::prune(c, &old)).await {
            Ok(n) if n > 0 => tracing::info!(count = n, "old notifications removed"),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e.for_log(), "notification pruning failed"),
        }
        let mail_before = time::format(now - ::time::Duration::days(mail::KEEP_DAYS));
        match s.db.write(move |c| mail::prune(c, &mail_before)).await {
            Ok(n) if n > 0 => tracing::info!(count = n, "old e-mails removed from the outbox"),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e.for_log(), "e-mail pruning failed"),
        }
        match crate::service::analytics::prune_events(&s).await {
            Ok(n) if n > 0 => tracing::info!(count = n, "old analytics events removed"),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e.for_log(), "analytics event pruning failed"),
        }
    }
}
