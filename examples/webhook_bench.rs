//! Rerunnable webhook benchmark for `hds` (issue 10; figures in docs/benchmarks.md):
//!
//! ```text
//! cargo build --release --bins --example webhook_bench
//! target/release/examples/webhook_bench [--help]
//! ```
//!
//! Starts `hds serve --allow-private-callbacks --rate-limit 0` on a fresh data
//! dir and a receiver in this process on loopback that checks every
//! signature (HMAC-SHA256 of `id.timestamp.body`, Standard Webhooks) and
//! notes when each message arrived. Phases:
//! * latency at idle: create, decide, wait for `action.resolved`; decision
//!   answered → webhook received, p50/p99 (the worker is woken by the commit);
//! * backlog: N Actions of a Source, then DELETE the Source: its revocation
//!   cancels them all in one transaction, queueing N webhooks at once; the
//!   drain rate is deliveries/s;
//! * on/off: creates/s and decisions/s at C clients, with and without a
//!   callback_url (the same server; alternated off, on, on, off);
//! * kill -9: decisions with webhooks at C clients, SIGKILL mid-load, restart;
//!   every acknowledged decision's webhook must arrive: lost = 0.
//!
//! The load generator runs on one thread and the receiver on another, so the
//! server keeps the most of the machine; on 2 cores every figure is "server +
//! client + receiver on the same two cores".
#![allow(clippy::disallowed_methods)]
// a benchmark measures real time
// A poisoned lock means the benchmark itself broke: it stops there, like a test.
#![allow(clippy::unwrap_used)]

#[allow(dead_code)] // each example uses a part of it
mod common;

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use clap::Parser;
use serde_json::{Value, json};

use common::load::cpu_secs;
use common::{Server, hds_init_json, start_server};

#[derive(Parser, Debug)]
struct Args {
    /// The hds binary.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/target/release/hds"))]
    hds: PathBuf,
    #[arg(long, default_value = "full")]
    durability: String,
    /// Decide-and-wait rounds at idle.
    #[arg(long, default_value_t = 300)]
    latency_rounds: usize,
    /// Webhooks queued at once for the drain phase.
    #[arg(long, default_value_t = 20_000)]
    backlog: usize,
    /// Concurrent clients for creates and decisions.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Actions created (then decided) per on/off arm.
    #[arg(long, default_value_t = 6_000)]
    per_arm: usize,
    /// Actions in the kill -9 phase.
    #[arg(long, default_value_t = 4_000)]
    kill_actions: usize,
    /// Run only the arms with (`on`) or without (`off`) webhooks, e.g. to
    /// profile one kind: the latency, backlog and kill -9 phases are left
    /// out, the ratios are not reported, and the server stops with TERM (so
    /// that a profiler under it can write its profile).
    #[arg(long, value_parser = ["on", "off"])]
    only: Option<String>,
    /// Set the receiver thread's nice value to this (Linux): at 10 it gets
    /// little of the CPU while the server and the load want it, rather as
    /// a receiver on another machine would take none. 0 (the default) runs
    /// it like every other thread here.
    #[arg(long, default_value_t = 0)]
    receiver_nice: i32,
    /// Creates (without webhooks) made at idle and again while the backlog
    /// drains, to compare: what a drain costs the requests. 0 leaves it out.
    #[arg(long, default_value_t = 0)]
    load_during_drain: usize,
}

/// What the receiver saw.
#[derive(Default)]
struct Seen {
    /// (action id, event type) → first arrival.
    first: Mutex<HashMap<(String, String), Instant>>,
    last: Mutex<Option<Instant>>,
    total: AtomicU64,
    bad_signatures: AtomicU64,
    secrets: Mutex<Vec<String>>,
}

async fn receive(seen: Arc<Seen>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let at = Instant::now();
    let h = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).unwrap_or("");
    let (id, ts, sig) = (
        h("webhook-id"),
        h("webhook-timestamp"),
        h("webhook-signature"),
    );
    let body = String::from_utf8_lossy(&body);
    let ts: i64 = ts.parse().unwrap_or(0);
    let ok = seen.secrets.lock().unwrap().iter().any(|s| {
        hds::domain::webhook::sign(s, id, ts, &body)
            .is_some_and(|mine| sig.split(' ').any(|theirs| theirs == mine))
    });
    if !ok {
        seen.bad_signatures.fetch_add(1, Ordering::Relaxed);
        return StatusCode::BAD_REQUEST;
    }
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let key = (
        v["data"]["action"]["id"].as_str().unwrap_or("").to_owned(),
        v["type"].as_str().unwrap_or("").to_owned(),
    );
    seen.first.lock().unwrap().entry(key).or_insert(at);
    *seen.last.lock().unwrap() = Some(at);
    seen.total.fetch_add(1, Ordering::Relaxed);
    StatusCode::NO_CONTENT
}

/// The receiver runs on its own thread and runtime, as it would on its own
/// machine: its work does not slow the load generator's thread.
fn start_receiver(seen: Arc<Seen>, nice: i32) -> Result<SocketAddr> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if nice != 0 {
            #[cfg(target_os = "linux")]
            if let Err(e) =
                rustix::process::setpriority_process(Some(rustix::thread::gettid()), nice)
            {
                eprintln!("--receiver-nice {nice}: {e}");
            }
            #[cfg(not(target_os = "linux"))]
            eprintln!("--receiver-nice {nice}: only on Linux; ignored");
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        let Ok(rt) = rt else { return };
        rt.block_on(async move {
            let app = axum::Router::new().route(
                "/hook",
                axum::routing::post(move |h: HeaderMap, b: Bytes| receive(seen.clone(), h, b)),
            );
            let Ok(l) = tokio::net::TcpListener::bind("127.0.0.1:0").await else {
                return;
            };
            let _ = tx.send(l.local_addr());
            let _ = axum::serve(l, app).await;
        });
    });
    Ok(rx.recv_timeout(Duration::from_secs(5))??)
}

struct Bench {
    args: Args,
    dir: tempfile::TempDir,
    http: reqwest::Client,
    base: String,
    /// `--metrics-listen` of the server: writer jobs and commits per arm.
    metrics: std::net::SocketAddr,
    user: String,
    hook: String,
    seen: Arc<Seen>,
}

/// An Action as created: what deciding it needs.
#[derive(Clone)]
struct Made {
    id: String,
    version: i64,
    fingerprint: String,
    option: String,
}

impl Bench {
    fn serve(&self) -> Result<(Server, String)> {
        let mut cmd = Command::new(&self.args.hds);
        cmd.args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--rate-limit",
            "0",
            "--allow-private-callbacks",
        ])
        .args(["--durability", &self.args.durability])
        .args(["--metrics-listen", &self.metrics.to_string()])
        .arg("--data-dir")
        .arg(self.dir.path())
        .env("RUST_LOG", "off")
        .stderr(Stdio::null());
        let (server, addr) = start_server(cmd)?;
        Ok((server, format!("http://{addr}")))
    }

    /// The writer's counters so far: (write jobs, transactions committed);
    /// the jobs include those of failed batches, rare enough not to matter here.
    async fn writer_counts(&self) -> Result<(f64, f64)> {
        let text = self
            .http
            .get(format!("http://{}/metrics", self.metrics))
            .send()
            .await?
            .text()
            .await?;
        let value = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok())
                .with_context(|| format!("{name} in /metrics"))
        };
        Ok((
            value("hds_writer_batch_size_sum ")?,
            value("hds_writer_commits_total ")?,
        ))
    }

    /// A new Source: (id, live key, webhook secret); its secret is told to the receiver.
    async fn source(&self, name: &str) -> Result<(String, String)> {
        let r: Value = self
            .http
            .post(format!("{}/v1/sources", self.base))
            .bearer_auth(&self.user)
            .json(&json!({ "name": name }))
            .send()
            .await?
            .json()
            .await?;
        let secret = r["secrets"]["webhook_secret"]
            .as_str()
            .context("secret")?
            .to_owned();
        self.seen.secrets.lock().unwrap().push(secret);
        Ok((
            r["data"]["id"].as_str().context("id")?.to_owned(),
            r["secrets"]["live_key"].as_str().context("key")?.to_owned(),
        ))
    }

    fn body(&self, i: usize, callback: bool) -> Value {
        let mut b = json!({
            "title": format!("Deploy build {i} to production"),
            "description": "Rolls the web tier; rollback is automatic on a failed health check.",
            "options": [{"id": "approve", "label": "Approve", "style": "primary"}, {"id": "reject", "label": "Reject", "style": "destructive"}],
            "metadata": {"build": i, "pipeline": "web"}
        });
        if callback {
            b["callback_url"] = json!(self.hook);
        }
        b
    }

    async fn create(&self, key: &str, i: usize, callback: bool) -> Result<Made> {
        let r = self
            .http
            .post(format!("{}/v1/actions", self.base))
            .bearer_auth(key)
            .json(&self.body(i, callback))
            .send()
            .await?;
        if r.status().as_u16() != 201 {
            bail!("create answered {}", r.status());
        }
        let v: Value = r.json().await?;
        let d = &v["data"];
        Ok(Made {
            id: d["id"].as_str().context("id")?.to_owned(),
            version: d["action_version"].as_i64().context("version")?,
            fingerprint: d["fingerprint"].as_str().context("fp")?.to_owned(),
            option: "approve".into(),
        })
    }

    async fn decide(&self, m: &Made) -> Result<()> {
        let r = self
            .http
            .post(format!("{}/v1/actions/{}/decision", self.base, m.id))
            .bearer_auth(&self.user)
            .json(&json!({"action_version": m.version, "fingerprint": m.fingerprint, "option_id": m.option}))
            .send()
            .await?;
        if r.status().as_u16() != 200 {
            bail!("decision answered {}", r.status());
        }
        let _ = r.bytes().await?;
        Ok(())
    }

    /// `n` creates by C clients; (made, creates/s).
    async fn create_many(
        self: &Arc<Self>,
        key: &str,
        n: usize,
        callback: bool,
    ) -> Result<(Vec<Made>, f64)> {
        let next = Arc::new(AtomicUsize::new(0));
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..self.args.clients {
            let (b, next, key) = (self.clone(), next.clone(), key.to_owned());
            tasks.push(tokio::spawn(async move {
                let mut out = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return Ok::<_, anyhow::Error>(out);
                    }
                    out.push(b.create(&key, i, callback).await?);
                }
            }));
        }
        let mut made = Vec::new();
        for t in tasks {
            made.extend(t.await??);
        }
        Ok((made, n as f64 / started.elapsed().as_secs_f64()))
    }

    /// Decides all of `made` with C clients; (decided ids, decisions/s). Stops
    /// quietly at the first failure (the kill -9 phase).
    async fn decide_many(self: &Arc<Self>, made: Arc<Vec<Made>>) -> (Vec<String>, f64) {
        let next = Arc::new(AtomicUsize::new(0));
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..self.args.clients {
            let (b, next, made) = (self.clone(), next.clone(), made.clone());
            tasks.push(tokio::spawn(async move {
                let mut ok = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(m) = made.get(i) else { return ok };
                    match b.decide(m).await {
                        Ok(()) => ok.push(m.id.clone()),
                        Err(_) => return ok,
                    }
                }
            }));
        }
        let mut ids = Vec::new();
        for t in tasks {
            ids.extend(t.await.unwrap_or_default());
        }
        let rate = ids.len() as f64 / started.elapsed().as_secs_f64();
        (ids, rate)
    }

    /// Waits (at most `max`) until every id has its `event` webhook; looks
    /// every 50 ms (not at each arrival: counting holds the receiver's lock).
    async fn arrived(&self, ids: &[String], event: &str, max: Duration) -> usize {
        let deadline = Instant::now() + max;
        loop {
            let n = {
                let first = self.seen.first.lock().unwrap();
                ids.iter()
                    .filter(|id| first.contains_key(&((*id).clone(), event.to_owned())))
                    .count()
            };
            if n == ids.len() || Instant::now() >= deadline {
                return n;
            }
            tokio::time::sleep(Duration::from_millis(if ids.len() == 1 { 1 } else { 50 })).await;
        }
    }
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    (sorted[i] * 100.0).round() / 100.0
}

async fn run(args: Args) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let creds = hds_init_json(&args.hds, dir.path())?;
    let seen = Arc::new(Seen::default());
    seen.secrets.lock().unwrap().push(
        creds["webhook_secret"]
            .as_str()
            .context("secret")?
            .to_owned(),
    );
    let hook = format!(
        "http://{}/hook",
        start_receiver(seen.clone(), args.receiver_nice)?
    );
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()?;
    let mut bench = Bench {
        args,
        dir,
        http,
        base: String::new(),
        metrics: {
            // A free port now; the server binds it a moment later.
            let l = std::net::TcpListener::bind("127.0.0.1:0")?;
            l.local_addr()?
        },
        user: creds["user_token"].as_str().context("token")?.to_owned(),
        hook,
        seen: seen.clone(),
    };
    let (mut server, base) = bench.serve()?;
    bench.base = base;
    let b = Arc::new(bench);
    let key = creds["source_key_live"].as_str().context("key")?.to_owned();
    let mut report = json!({ "cpu": common::cpu_model(), "durability": b.args.durability, "clients": b.args.clients });

    // Phases 1 and 2 are left out with --only: its profile is of the arms.
    if b.args.only.is_none() {
        // 1. Latency at idle.
        let (mut answered_to_hook, mut sent_to_hook) = (Vec::new(), Vec::new());
        for i in 0..b.args.latency_rounds {
            let m = b.create(&key, i, true).await?;
            let t0 = Instant::now();
            b.decide(&m).await?;
            let t1 = Instant::now();
            if b.arrived(
                std::slice::from_ref(&m.id),
                "action.resolved",
                Duration::from_secs(10),
            )
            .await
                != 1
            {
                bail!("webhook of {} did not arrive in 10 s", m.id);
            }
            let t2 = seen.first.lock().unwrap()[&(m.id.clone(), "action.resolved".to_owned())];
            answered_to_hook.push(t2.saturating_duration_since(t1).as_secs_f64() * 1e3);
            sent_to_hook.push(t2.saturating_duration_since(t0).as_secs_f64() * 1e3);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        answered_to_hook.sort_by(f64::total_cmp);
        sent_to_hook.sort_by(f64::total_cmp);
        report["latency_ms"] = json!({
            "rounds": b.args.latency_rounds,
            "decision_answered_to_webhook": {"p50": pct(&answered_to_hook, 0.5), "p99": pct(&answered_to_hook, 0.99), "max": pct(&answered_to_hook, 1.0)},
            "decision_sent_to_webhook": {"p50": pct(&sent_to_hook, 0.5), "p99": pct(&sent_to_hook, 0.99)},
        });
        eprintln!("latency: {}", report["latency_ms"]);

        // 2. Backlog drain.
        let (src, src_key) = b.source("backlog").await?;
        let (made, _) = b.create_many(&src_key, b.args.backlog, true).await?;
        let ids: Vec<String> = made.iter().map(|m| m.id.clone()).collect();
        let load = b.args.load_during_drain;
        let load_key = match load {
            0 => None,
            _ => Some(b.source("drainload").await?.1),
        };
        let idle_creates = match &load_key {
            Some(k) => Some(b.create_many(k, load, false).await?.1),
            None => None,
        };
        let before = seen.total.load(Ordering::Relaxed);
        let t0 = Instant::now();
        let r = b
            .http
            .delete(format!("{}/v1/sources/{src}", b.base))
            .bearer_auth(&b.user)
            .send()
            .await?;
        if r.status().as_u16() != 204 {
            bail!("revoking the backlog Source answered {}", r.status());
        }
        let queued_in = t0.elapsed().as_secs_f64();
        let during = load_key.map(|k| {
            let b = b.clone();
            tokio::spawn(async move {
                let r = b.create_many(&k, load, false).await;
                (r, Instant::now())
            })
        });
        let got = b
            .arrived(&ids, "action.cancelled", Duration::from_secs(300))
            .await;
        let during_creates = match during {
            Some(t) => {
                let (r, ended) = t.await?;
                Some((r?.1, ended))
            }
            None => None,
        };
        let first = ids
            .iter()
            .filter_map(|id| {
                seen.first
                    .lock()
                    .unwrap()
                    .get(&(id.clone(), "action.cancelled".to_owned()))
                    .copied()
            })
            .min();
        let last = *seen.last.lock().unwrap();
        let drain = match (first, last) {
            (Some(f), Some(l)) => l.duration_since(f).as_secs_f64(),
            _ => f64::NAN,
        };
        report["backlog"] = json!({
            "webhooks": ids.len(), "arrived": got, "queued_by_one_revoke_in_s": (queued_in * 1e3).round() / 1e3,
            "drain_s": (drain * 1e3).round() / 1e3, "deliveries_per_s": (got as f64 / drain).round(),
            "total_seen": seen.total.load(Ordering::Relaxed) - before,
        });
        if let (Some(idle), Some((during, ended))) = (idle_creates, during_creates) {
            report["backlog"]["creates_per_s_idle"] = json!(idle.round());
            report["backlog"]["creates_per_s_during_drain"] = json!(during.round());
            // Whether the drain lasted as long as the load: if not, part of
            // the load ran after it, and the rate "during" flatters.
            report["backlog"]["load_ended_before_the_drain"] =
                json!(last.is_some_and(|l| ended <= l));
        }
        eprintln!("backlog: {}", report["backlog"]);
    }

    // 3. Creates/s and decisions/s with and without webhooks.
    let mut arms = Vec::new();
    let pid = server.child.id();
    let order = [
        (0, false),
        (1, true),
        (2, true),
        (3, false),
        (4, false),
        (5, true),
    ];
    for (n, callback) in order {
        if b.args
            .only
            .as_deref()
            .is_some_and(|o| (o == "on") != callback)
        {
            continue;
        }
        let (_, k) = b.source(&format!("arm{n}")).await?;
        let (made, creates) = b.create_many(&k, b.args.per_arm, callback).await?;
        let ids: Vec<String> = made.iter().map(|m| m.id.clone()).collect();
        let cpu0 = cpu_secs(pid);
        let writer0 = b.writer_counts().await?;
        let (decided, decisions) = b.decide_many(Arc::new(made)).await;
        let mut arm = json!({"webhooks": callback, "creates_per_s": creates.round(), "decisions_per_s": decisions.round(), "decided": decided.len()});
        if callback {
            let t = Instant::now();
            let got = b
                .arrived(&ids, "action.resolved", Duration::from_secs(120))
                .await;
            arm["webhooks_arrived"] = json!(got);
            arm["drained_after_last_decision_s"] =
                json!((t.elapsed().as_secs_f64() * 1e3).round() / 1e3);
        }
        // The server's CPU per decision, its webhook (sent and recorded) included.
        let cpu = cpu_secs(pid) - cpu0;
        arm["server_cpu_us_per_decision"] = json!((cpu / decided.len() as f64 * 1e6).round());
        // Write jobs and transactions per decision, its webhook's included.
        let writer1 = b.writer_counts().await?;
        let per = |x: f64| (x / decided.len() as f64 * 100.0).round() / 100.0;
        arm["writer_jobs_per_decision"] = json!(per(writer1.0 - writer0.0));
        arm["commits_per_decision"] = json!(per(writer1.1 - writer0.1));
        eprintln!("arm: {arm}");
        arms.push(arm);
    }
    let mean = |cb: bool, k: &str| {
        let v: Vec<f64> = arms
            .iter()
            .filter(|a| a["webhooks"] == cb)
            .filter_map(|a| a[k].as_f64())
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    report["on_off"] = json!({
        "arms": arms,
        "creates_ratio_on_off": (mean(true, "creates_per_s") / mean(false, "creates_per_s") * 1e3).round() / 1e3,
        "decisions_ratio_on_off": (mean(true, "decisions_per_s") / mean(false, "decisions_per_s") * 1e3).round() / 1e3,
        "server_cpu_us_per_decision": {"off": mean(false, "server_cpu_us_per_decision").round(), "on": mean(true, "server_cpu_us_per_decision").round()},
    });

    if b.args.only.is_some() {
        server.stop();
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }

    // 4. kill -9 under load.
    let (_, k) = b.source("crash").await?;
    let (made, _) = b.create_many(&k, b.args.kill_actions, true).await?;
    let load = {
        let b = b.clone();
        tokio::spawn(async move { b.decide_many(Arc::new(made)).await })
    };
    tokio::time::sleep(Duration::from_millis(800)).await;
    server.child.kill()?; // SIGKILL
    server.child.wait()?;
    let (acked, _) = load.await?;
    let (server2, base2) = b.serve()?;
    // The restarted server listens elsewhere; nothing more is sent to it.
    let _ = base2;
    let got = b
        .arrived(&acked, "action.resolved", Duration::from_secs(120))
        .await;
    let unique: HashSet<&String> = acked.iter().collect();
    report["kill_9"] = json!({
        "acknowledged_decisions": acked.len(), "unique": unique.len(),
        "webhooks_arrived_after_restart": got, "lost": acked.len() - got,
    });
    report["bad_signatures"] = json!(seen.bad_signatures.load(Ordering::Relaxed));
    drop(server2);
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}

fn main() -> Result<()> {
    let args = Args::parse();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?
        .block_on(run(args))
}
