//! hds — Human-Decision Service. Map of the crate:
//!
//! - `cli`      one file per subcommand (`serve`, `init`, `backup`, …)
//! - `config`   the one typed configuration
//! - `app`      `AppState`, `start`, `build_router`, `serve`
//! - `http`     route table, extractors, auth, JSON handlers (`http::api`)
//! - `service`  use cases: domain rules + store calls in one transaction
//! - `domain`   rules without I/O: validation, fingerprints, receipts
//! - `store`    SQLite: one module per aggregate, the group-commit writer
//! - `workers`  background loops (expiry, housekeeping)
//! - `error`    the error type and its HTTP mapping
//! - `files`    owner-only permissions for the data dir and secret files
//! - `metrics`  Prometheus metrics: the registry and what is recorded
//! - `outbound` the HTTP clients of outbound calls, and why one cannot be built

// The commands write through `cli::say!`: `println!` panics on a closed pipe.
#![warn(clippy::print_stdout)]

pub mod app;
pub mod cli;
pub mod clock;
pub mod config;
pub mod domain;
pub mod error;
pub mod files;
pub mod http;
pub mod metrics;
pub mod outbound;
pub mod service;
pub mod store;
pub mod workers;

/// The API version as a literal, so `VERSION` can be built with `concat!`.
macro_rules! api_version {
    () => {
        "0.1.7"
    };
}

/// Version of the interface description (served in `GET /v1/openapi.json`).
pub const API_VERSION: &str = api_version!();

/// What `hds --version` prints after the name: the binary's version and the
/// API version it serves, say `0.1.0 (API 0.1.7)`.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (API ", api_version!(), ")");
