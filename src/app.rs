//! Wiring: `AppState`, `start` (open the data dir, prepare keys, start
//! workers), `build_router`, `serve` and `serve_metrics`. `hds serve` and
//! every test use these same functions.

use std::future::Future;
use std::sync::Arc;

use anyhow::Context;
use axum::Router;
use tokio::net::TcpListener;

use crate::clock::Clock;
use crate::config::Config;
use crate::http::rate_limit::{AddressLimiter, Limiter};
use crate::metrics::Metrics;
use crate::service::Services;
use crate::store::Db;

#[derive(Clone)]
pub struct AppState {
    pub services: Services,
    pub limiter: Arc<Limiter>,
    /// The per-address budget for sign-in and refused credentials.
    pub addresses: Arc<AddressLimiter>,
    /// Recorded by every request and the writer; served by `serve_metrics`.
    pub metrics: Arc<Metrics>,
    /// The background loops' thread (`workers::spawn`): it ends once this
    /// runtime has; `hds serve` waits for it before it lets the data dir go.
    pub background: Arc<std::sync::Mutex<Option<std::thread::JoinHandle<()>>>>,
}

/// Opens (or initialises) the data dir and starts the background workers.
pub async fn start(config: Config) -> anyhow::Result<AppState> {
    start_with_clock(config, Clock::system()).await
}

/// `start` with a given clock: tests pass one they can move.
pub async fn start_with_clock(config: Config, clock: Clock) -> anyhow::Result<AppState> {
    // TLS for outgoing calls (identity providers) uses ring; a second install
    // (several servers in one test process) is refused harmlessly.
    let _ = rustls::crypto::ring::default_provider().install_default();
    crate::files::create_data_dir(&config.data_dir)?;
    if let Some(other) = crate::files::restrict_data_dir(&config.data_dir)? {
        let warning = crate::files::shared_data_dir_warning(&config.data_dir, &other);
        tracing::warn!("{warning}");
    }
    let db = Db::open(&config.db_path(), config.durability)
        .with_context(|| format!("opening {}", config.db_path().display()))?;
    let plans = config.billing.clone();
    db.read(move |c| Ok(crate::service::billing::plans_defined(c, &plans)))
        .await
        .map_err(|e| e.for_operator())??;
    let limiter = Arc::new(Limiter::new(config.rate_limit));
    let addresses = Arc::new(AddressLimiter::new(
        config.anonymous_rate_limit,
        config.anonymous_burst,
    ));
    let started = clock.now().unix_timestamp_nanos() as f64 / 1e9;
    let metrics = Arc::new(Metrics::new(db.writer_metrics(), started));
    let services = Services::new(db, Arc::new(config), clock);
    let keyring = services.keyring.clone();
    let now = crate::domain::time::format(services.clock.now());
    services
        .db
        .write(move |c| Ok(keyring.ensure_active(c, &now)?))
        .await
        .map_err(|e| e.for_operator().context("preparing receipt keys"))?;
    let background =
        crate::workers::spawn(services.clone()).context("starting the background threads")?;
    tokio::spawn(prune_limiters(limiter.clone(), addresses.clone()));
    Ok(AppState {
        services,
        limiter,
        addresses,
        metrics,
        background: Arc::new(std::sync::Mutex::new(Some(background))),
    })
}

/// The whole service: the route table with its OpenAPI document, built once.
pub fn build_router(state: AppState) -> Router {
    let (router, doc) = crate::http::routes();
    crate::http::finish(router, doc, state)
}

/// Serves until `shutdown` resolves; in-flight requests finish first. Slow
/// clients are cut off by the read timeouts of `Config` (`http::server`).
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = crate::http::server::Limits::from_config(&state.services.config);
    // One router shared by all connections (each holds an `Arc` of it):
    // building it per connection cost ~15 KiB per held long poll.
    let trusted = state.services.config.trusted_proxies.clone();
    crate::http::server::serve(listener, build_router(state), limits, &trusted, shutdown).await
}

/// Serves `GET /metrics` alone (guide: "Metrics") until `shutdown` resolves:
/// the `--metrics-listen` address, kept apart from the public listener so
/// metrics never pass through the public reverse proxy.
pub async fn serve_metrics(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // The same server, so slow clients here are cut by the same deadlines.
    let limits = crate::http::server::Limits::from_config(&state.services.config);
    let trusted = state.services.config.trusted_proxies.clone();
    let router = crate::http::metrics::router(state);
    crate::http::server::serve(listener, router, limits, &trusted, shutdown).await
}

/// Drops full (idle) rate-limit buckets every minute (the limiters live in
/// the HTTP layer): an address bucket refills within seconds, so a client
/// cycling through many IPv6 /64s cannot grow the map for long.
async fn prune_limiters(limiter: Arc<Limiter>, addresses: Arc<AddressLimiter>) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
    loop {
        tick.tick().await;
        limiter.prune();
        addresses.prune();
    }
}
