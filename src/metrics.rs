//! Prometheus metrics (guide: "Metrics"): the registry, what the request path
//! and the writer record, and the exposition the `--metrics-listen` address
//! serves. Not here: the listener (`app::serve_metrics`) and its router
//! (`http::metrics`).
//!
//! Recording is lock-free or per-series: a family looks its series up under a
//! shared read lock and a histogram takes its own short lock, so requests on
//! different routes never wait on each other. Gauges that mirror state held
//! elsewhere (queue depth, held polls) are read when scraped, not kept up to
//! date on every change.

use std::hash::{Hash, Hasher};
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use axum::extract::MatchedPath;
use axum::http::Method;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

use crate::service::Services;

/// What `GET /metrics` answers with: the OpenMetrics text the encoder writes
/// (it has `info` metrics and `# EOF`, which the older `text/plain;
/// version=0.0.4` format does not). Prometheus asks for it by default.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Request latency buckets, in seconds: from a cached read (~1 ms) to a long
/// poll held for its full 30 s (`wait_seconds` is capped at 30).
const LATENCY_BUCKETS: [f64; 15] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// How long a scrape waits for the job queue's read: well inside the 10 s
/// Prometheus gives a scrape by default (a read that waits for a busy
/// reader may take 30).
const JOBS_READ_LIMIT: Duration = Duration::from_secs(5);

/// The service's metrics. One per running app, in `AppState`; no globals.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: Family<RouteLabels, Histogram, fn() -> Histogram>,
    queue_depth: Gauge,
    long_polls: Gauge,
    /// The job queue (webhooks, e-mail), read from the database at scrape.
    jobs: JobGauges,
}

/// The job queue by kind (`store::jobs::depth`).
#[derive(Default)]
struct JobGauges {
    due: Family<KindLabels, Gauge>,
    scheduled: Family<KindLabels, Gauge>,
    running: Family<KindLabels, Gauge>,
    oldest_due: Family<KindLabels, Gauge<f64, AtomicU64>>,
    /// Kinds shown so far: one whose queue emptied is set back to 0.
    seen: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

impl JobGauges {
    fn register(&self, registry: &mut Registry) {
        registry.register(
            "jobs_due",
            "Queued jobs that are due and wait for the worker, by kind (webhook, email)",
            self.due.clone(),
        );
        registry.register(
            "jobs_scheduled",
            "Queued jobs due later (a retry waiting out its backoff), by kind",
            self.scheduled.clone(),
        );
        registry.register(
            "jobs_running",
            "Jobs whose attempt is in flight, by kind",
            self.running.clone(),
        );
        registry.register(
            "jobs_oldest_due_seconds",
            "How long the longest-due job of a kind has waited past its due time (0 when none is due)",
            self.oldest_due.clone(),
        );
    }

    /// Every known kind, and every kind shown before, is set once: to 0
    /// when none of it is queued.
    fn set(&self, depths: &[crate::store::jobs::Depth], now: crate::domain::time::Timestamp) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.extend(crate::store::jobs::Kind::ALL.map(|k| k.as_str().to_owned()));
        seen.extend(depths.iter().map(|d| d.kind.clone()));
        for kind in seen.iter() {
            match depths.iter().find(|d| &d.kind == kind) {
                Some(d) => {
                    let waited = d
                        .oldest_due
                        .as_deref()
                        .and_then(crate::domain::time::parse)
                        .map_or(0.0, |due| (now - due).as_seconds_f64().max(0.0));
                    self.set_one(kind, d.due, d.scheduled, d.running, waited);
                }
                None => self.set_one(kind, 0, 0, 0, 0.0),
            }
        }
    }

    fn set_one(&self, kind: &str, due: i64, scheduled: i64, running: i64, waited: f64) {
        let labels = KindLabels {
            kind: kind.to_owned(),
        };
        self.due.get_or_create(&labels).set(due);
        self.scheduled.get_or_create(&labels).set(scheduled);
        self.running.get_or_create(&labels).set(running);
        self.oldest_due.get_or_create(&labels).set(waited);
    }
}

/// What the writer and checkpointer threads record; owned by `store::Db`, which has no other
/// tie to the metrics, and registered with the rest by `Metrics::new`.
#[derive(Clone)]
pub struct WriterMetrics {
    /// Write jobs (one per request that writes) carried by one transaction.
    pub batch_size: Histogram,
    /// From BEGIN IMMEDIATE to the end of COMMIT (the fsync, under `full`).
    pub batch_seconds: Histogram,
    pub commits: Counter,
    /// Batches whose BEGIN or COMMIT failed, or that SQLite rolled back.
    pub failed_batches: Counter,
    /// One PASSIVE checkpoint of the checkpointer thread (store::db).
    pub checkpoint_seconds: Histogram,
    pub failed_checkpoints: Counter,
    /// Checkpoints that found another holding the lock (the writer's own).
    pub busy_checkpoints: Counter,
    /// Pages in the write-ahead log, and how many of them are not yet in
    /// the database file, after the last checkpoint.
    pub wal_pages: Gauge,
    pub wal_pages_behind: Gauge,
}

impl Default for WriterMetrics {
    fn default() -> Self {
        Self {
            // 1, 2, 4 … 512 (`MAX_BATCH`).
            batch_size: Histogram::new(exponential_buckets(1.0, 2.0, 10)),
            // 0.25 ms … ~1 s.
            batch_seconds: Histogram::new(exponential_buckets(0.00025, 2.0, 13)),
            commits: Counter::default(),
            failed_batches: Counter::default(),
            // 0.25 ms … ~1 s, as the batches.
            checkpoint_seconds: Histogram::new(exponential_buckets(0.00025, 2.0, 13)),
            failed_checkpoints: Counter::default(),
            busy_checkpoints: Counter::default(),
            wal_pages: Gauge::default(),
            wal_pages_behind: Gauge::default(),
        }
    }
}

impl WriterMetrics {
    pub fn batch_done(&self, size: usize, took: Duration, committed: bool) {
        self.batch_size.observe(size as f64);
        self.batch_seconds.observe(took.as_secs_f64());
        if committed {
            self.commits.inc();
        } else {
            self.failed_batches.inc();
        }
    }

    /// `log` and `copied` as `PRAGMA wal_checkpoint` gives them (-1 when the
    /// database is not in WAL mode).
    pub fn checkpoint_done(&self, took: Duration, log: i64, copied: i64) {
        self.checkpoint_seconds.observe(took.as_secs_f64());
        self.wal_pages.set(log.max(0));
        self.wal_pages_behind.set((log - copied).max(0));
    }

    pub fn checkpoint_failed(&self) {
        self.failed_checkpoints.inc();
    }

    pub fn checkpoint_busy(&self) {
        self.busy_checkpoints.inc();
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: Route,
    method: Verb,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: Route,
    method: Verb,
}

/// The matched route template (`/v1/actions/{action_id}`), never the raw
/// path: raw paths hold ids and secret tokens, and would make a series per
/// Action. A request that matched no route is `unmatched`.
#[derive(Clone, Debug)]
struct Route(Option<MatchedPath>);

impl Route {
    fn as_str(&self) -> &str {
        self.0.as_ref().map_or("unmatched", MatchedPath::as_str)
    }
}

impl Hash for Route {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.as_str().hash(h);
    }
}

impl PartialEq for Route {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Route {}

impl EncodeLabelValue for Route {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        EncodeLabelValue::encode(&self.as_str(), encoder)
    }
}

/// The request method; any method outside RFC 9110's is `other`, so a client
/// cannot make a series per made-up method.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
struct Verb(&'static str);

impl Verb {
    fn of(m: &Method) -> Self {
        static KNOWN: [Method; 9] = [
            Method::GET,
            Method::HEAD,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
            Method::OPTIONS,
            Method::CONNECT,
            Method::TRACE,
        ];
        match KNOWN.iter().find(|k| *k == m) {
            Some(k) => Self(k.as_str()),
            None => Self("other"),
        }
    }
}

impl EncodeLabelValue for Verb {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        EncodeLabelValue::encode(&self.0, encoder)
    }
}

impl Metrics {
    /// Registers every metric. `writer` is the database writer's
    /// (`Db::writer_metrics`); `started` is when the service started, in
    /// seconds since the Unix epoch.
    pub fn new(writer: &WriterMetrics, started: f64) -> Self {
        let mut registry = Registry::with_prefix("hds");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by matched route template, method and status",
            requests.clone(),
        );
        let durations: Family<RouteLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(|| Histogram::new(LATENCY_BUCKETS));
        registry.register(
            "http_request_duration_seconds",
            "Time from receiving a request to its response headers, by matched route template and method (long polls included)",
            durations.clone(),
        );
        registry.register(
            "writer_batch_size",
            "Write jobs committed together in one transaction (group commit)",
            writer.batch_size.clone(),
        );
        registry.register(
            "writer_batch_duration_seconds",
            "Time one write transaction took, from BEGIN to the end of COMMIT",
            writer.batch_seconds.clone(),
        );
        registry.register(
            "writer_commits",
            "Write transactions committed",
            writer.commits.clone(),
        );
        registry.register(
            "writer_failed_batches",
            "Write transactions that failed to begin or commit, or were rolled back whole (every job in them failed)",
            writer.failed_batches.clone(),
        );
        registry.register(
            "checkpoint_duration_seconds",
            "Time one checkpoint took: committed pages copied from the write-ahead log into the database file, off the writer thread",
            writer.checkpoint_seconds.clone(),
        );
        registry.register(
            "checkpoint_failures",
            "Checkpoints that failed (the next commit starts another)",
            writer.failed_checkpoints.clone(),
        );
        registry.register(
            "checkpoint_busy",
            "Checkpoints that found another one under way (the writer's own, once the log reaches 10,000 pages, or a CLI command's) and were taken again 50 ms later",
            writer.busy_checkpoints.clone(),
        );
        registry.register(
            "wal_pages",
            "Pages in the write-ahead log after the last checkpoint (4 KiB each; under steady writes the writer starts it over at 10,000 pages)",
            writer.wal_pages.clone(),
        );
        registry.register(
            "wal_pages_behind",
            "Pages of the write-ahead log not yet copied into the database file after the last checkpoint, because a read still needed older ones (taken again 50 ms later)",
            writer.wal_pages_behind.clone(),
        );
        let queue_depth = Gauge::default();
        registry.register(
            "writer_queue_depth",
            "Write jobs queued for the writer thread, not yet in a transaction",
            queue_depth.clone(),
        );
        let long_polls = Gauge::default();
        registry.register(
            "long_polls_held",
            "Requests waiting for an Action to close: long polls and X-Service-Blocking creates",
            long_polls.clone(),
        );
        registry.register(
            "build",
            "The running build",
            Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]),
        );
        let start = Gauge::<f64, AtomicU64>::default();
        start.set(started);
        registry.register(
            "start_time_seconds",
            "When this process started serving, in seconds since the Unix epoch",
            start,
        );
        let jobs = JobGauges::default();
        jobs.register(&mut registry);
        // Shown at 0 until a scrape reads the queue.
        jobs.set(&[], crate::domain::time::Timestamp::UNIX_EPOCH);
        Self {
            registry,
            requests,
            durations,
            queue_depth,
            long_polls,
            jobs,
        }
    }

    /// Records one answered request. `route` is the request's `MatchedPath`
    /// extension (None when no route matched).
    pub fn request_done(
        &self,
        route: Option<MatchedPath>,
        method: &Method,
        status: u16,
        took: Duration,
    ) {
        let (route, method) = (Route(route), Verb::of(method));
        self.durations
            .get_or_create(&RouteLabels {
                route: route.clone(),
                method,
            })
            .observe(took.as_secs_f64());
        self.requests
            .get_or_create(&RequestLabels {
                route,
                method,
                status,
            })
            .inc();
    }

    /// The exposition, with the gauges read from `services` now. The job
    /// queue is one read of its table, given at most `JOBS_READ_LIMIT`: when
    /// the read fails or the readers are all busy, the scrape still answers,
    /// with the job gauges as they were.
    pub async fn render(&self, services: &Services) -> String {
        self.queue_depth.set(services.db.queue_depth() as i64);
        self.long_polls.set(services.waiters.polls() as i64);
        let now = services.clock.now();
        let at = crate::domain::time::format(now);
        let running = {
            let ids = services
                .jobs_running
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            serde_json::to_string(&*ids).unwrap_or_else(|_| "[]".into())
        };
        let read = services
            .db
            .read(move |c| crate::store::jobs::depth(c, &at, &running));
        match tokio::time::timeout(JOBS_READ_LIMIT, read).await {
            Ok(Ok(depths)) => self.jobs.set(&depths, now),
            Ok(Err(e)) => {
                tracing::warn!(error = %e.for_log(), "reading the job queue for the metrics failed")
            }
            Err(_) => tracing::warn!(
                "reading the job queue for the metrics took over 5 s; the job gauges are as before"
            ),
        }
        let mut out = String::with_capacity(16 * 1024);
        // Writing to a String cannot fail; the encoder's only errors are the writer's.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_job_gauges_show_every_kind_and_how_long_the_oldest_due_has_waited() {
        let jobs = JobGauges::default();
        let mut registry = Registry::default();
        jobs.register(&mut registry);
        let now = crate::domain::time::parse("2026-11-26T08:00:00Z").unwrap();
        let webhooks = crate::store::jobs::Depth {
            kind: "webhook".into(),
            due: 3,
            scheduled: 2,
            running: 1,
            oldest_due: Some("2026-11-26T07:59:30.500Z".into()),
        };
        jobs.set(std::slice::from_ref(&webhooks), now);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
        for line in [
            r#"jobs_due{kind="webhook"} 3"#,
            r#"jobs_scheduled{kind="webhook"} 2"#,
            r#"jobs_running{kind="webhook"} 1"#,
            r#"jobs_oldest_due_seconds{kind="webhook"} 29.5"#,
            r#"jobs_due{kind="email"} 0"#,
            r#"jobs_oldest_due_seconds{kind="email"} 0.0"#,
        ] {
            assert!(out.lines().any(|l| l == line), "{line} not in\n{out}");
        }
        // A kind whose queue emptied goes back to 0.
        jobs.set(&[], now);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
        assert!(
            out.lines().any(|l| l == r#"jobs_due{kind="webhook"} 0"#),
            "{out}"
        );
    }

    #[test]
    fn made_up_methods_share_one_series() {
        let brew = Verb::of(&Method::from_bytes(b"BREW").unwrap());
        assert_eq!(brew, Verb("other"));
        assert_eq!(Verb::of(&Method::PATCH), Verb("PATCH"));
    }
}
