//! Background loops beside the HTTP layer, using the same services.

pub mod expiry;
pub mod housekeeping;
pub mod jobs;
pub mod mail;
pub mod webhooks;

use crate::service::Services;

pub fn spawn(services: Services) {
    tokio::spawn(expiry::run(services.clone()));
    tokio::spawn(jobs::run(services.clone()));
    tokio::spawn(housekeeping::run(services));
}
