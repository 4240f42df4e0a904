//! Background loops beside the HTTP layer, using the same services.

pub mod expiry;
pub mod housekeeping;

use std::sync::Arc;

use crate::http::rate_limit::Limiter;
use crate::service::Services;

pub fn spawn(services: Services, limiter: Arc<Limiter>) {
    tokio::spawn(expiry::run(services.clone()));
    tokio::spawn(housekeeping::run(services, limiter));
}
