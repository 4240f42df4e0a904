//! Background loops beside the HTTP layer, using the same services.

pub mod expiry;
pub mod housekeeping;

use crate::service::Services;

pub fn spawn(services: Services) {
    tokio::spawn(expiry::run(services.clone()));
    tokio::spawn(housekeeping::run(services));
}
