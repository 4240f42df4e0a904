//! Rerunnable load benchmark for `hds`: durable creates, long-poll wake latency
//! and memory per held long poll, against a real server on loopback.
//!
//! Build and run (the server binary must be built in release mode first):
//!
//! ```text
//! cargo build --release && cargo run --release --example bench
//! cargo run --release --example bench -- --help
//! ```
//!
//! By default the bench runs `hds init` in a fresh temporary data dir, starts
//! `hds serve --listen 127.0.0.1:0 --rate-limit 0 --durability <d>` and kills it
//! at the end. With `--url` it targets an already running server instead.
//!
//! The load generator is a minimal HTTP/1.1 keep-alive client on raw tokio
//! sockets, driven by ONE thread (current-thread runtime), so that as much of
//! the machine as possible is left to the server: on a 2-core machine the two
//! share the CPU, and every figure is "server + client on the same cores".
//!
//! Figures (method and history in docs/benchmarks.md):
//! * creates: N keep-alive connections each looping `POST /v1/actions` (~1 KB
//!   body) for a fixed window after a warm-up; only 201s count; closed loop.
//! * keyed creates: the same, every request with its own `Idempotency-Key`,
//!   run right after the unkeyed window at each concurrency (same server, same
//!   client), and the keyed/unkeyed ratio. The keyed window runs second, on a
//!   database the unkeyed one has grown, which if anything flatters unkeyed.
//! * wake: create, hold `GET /v1/source/actions/{id}?wait_seconds=30`, decide
//!   with the user token; wake = decision response arrived -> long-poll response
//!   arrived (the commit has happened by then); also decision sent -> poll
//!   response.
//! * held polls: (VmRSS with K long polls held - VmRSS before) / K.
// Benchmarks run against a real server in real time: waiting is measured, not tested.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::Parser;
use futures::future::join_all;
use serde_json::{Value, json};
use tokio::time::{sleep, sleep_until, timeout};

#[allow(dead_code)] // each example uses a part of it
mod common;
use common::load::{Conn, encode, encode_with};
use common::{Server, clk_tck, cpu_model, newest_mtime, r2};

const DEFAULT_HDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/release/hds");

#[derive(Parser, Debug)]
#[command(
    name = "bench",
    about = "Load benchmark for hds: durable creates, long-poll wake latency, memory per held long poll.",
    after_help = "Build first (the bench starts target/release/hds):\n  \
        cargo build --release && cargo run --release --example bench -- [OPTIONS]\n\
        Against a running server:\n  \
        cargo run --release --example bench -- --url http://127.0.0.1:8080 \\\n    \
        --source-key svc_live_... --user-token svc_usr_... --pid <server pid>\n\
        (start it with --rate-limit 0; without --pid no CPU or RSS figures)\n\
        The started server inherits the environment: RUST_LOG=off measures it without its access log."
)]
struct Args {
    /// Path of the hds binary to start.
    #[arg(long, default_value = DEFAULT_HDS)]
    hds: PathBuf,
    /// Durability passed to `hds serve --durability` (full or normal).
    #[arg(long, default_value = "full")]
    durability: String,
    /// Parent directory of the temporary data dir (default: the system temp dir).
    #[arg(long)]
    data_parent: Option<PathBuf>,
    /// Keep the temporary data dir (its path is printed).
    #[arg(long)]
    keep_data: bool,
    /// Where the started server's stderr (access log) goes; default: discarded.
    #[arg(long)]
    server_log: Option<PathBuf>,

    /// Target an already running server instead of starting one (http://HOST:PORT).
    #[arg(long, requires_all = ["source_key", "user_token"])]
    url: Option<String>,
    /// Live Source key for --url.
    #[arg(long)]
    source_key: Option<String>,
    /// User token (workspace owner/admin/member who may decide) for --url.
    #[arg(long)]
    user_token: Option<String>,
    /// PID of the server for --url (CPU and RSS figures need it).
    #[arg(long)]
    pid: Option<u32>,

    /// Phases to run, comma-separated: creates, keyed (creates with a unique
    /// Idempotency-Key each), wake, polls; optional extras for diagnosis: health
    /// (GET /health: HTTP + middleware cost) and reads (GET
    /// /v1/source/actions/{id}: + Source-key auth and one read).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "creates,keyed,wake,polls"
    )]
    phases: Vec<String>,
    /// Concurrency levels of the create phase.
    #[arg(long, value_delimiter = ',', default_value = "16,64")]
    concurrency: Vec<usize>,
    /// Rounds per concurrency level: each runs every closed-loop phase once, so
    /// unkeyed and keyed windows alternate; ratios use the medians. Raise it on
    /// a busy machine, where other tenants' load moves within one run.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Measured seconds per concurrency level.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Warm-up seconds before each measured window (not counted).
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// Sequential create -> hold -> decide iterations of the wake phase.
    #[arg(long, default_value_t = 300)]
    wake_iters: usize,
    /// Milliseconds between writing the long poll and sending the decision.
    #[arg(long, default_value_t = 5)]
    hold_ms: u64,
    /// Long polls to hold at once in the memory phase (capped by the fd limit).
    #[arg(long, default_value_t = 2000)]
    polls: usize,
    /// Long polls opened per batch in the memory phase (bounds the burst).
    #[arg(long, default_value_t = 64)]
    poll_batch: usize,
    /// Hold every long poll on one Action instead of one Action per poll.
    #[arg(long)]
    same_action: bool,
    /// Skip the warm-up read of every Action before the RSS baseline (then the
    /// figure also includes the readers' page-cache growth and new blocking threads).
    #[arg(long)]
    no_prewarm: bool,
    /// Seconds of whole-machine CPU sampling before the run.
    #[arg(long, default_value_t = 1.0)]
    busy_sample: f64,
}

// ---------------------------------------------------------------------------
// Request bodies
// ---------------------------------------------------------------------------

/// A realistic ~1 KB Action: title, description, two options, context blocks, metadata.
fn action_body(seq: u64) -> Vec<u8> {
    json!({
        "title": format!("Deploy payments-api build #{seq} to production"),
        "description": "Build passed all checks on the release branch. Deploying rolls out to 3 regions over \
                        20 minutes; the previous release stays warm for a one-click rollback.",
        "priority": "high",
        "options": [
            {"id": "approve", "label": "Approve deploy", "style": "primary"},
            {"id": "reject", "label": "Reject", "style": "destructive"}
        ],
        "context": [
            {"type": "text", "text": "Change summary: 14 commits, 2 migrations (additive only), feature flag checkout_v2 stays off."},
            {"type": "kv", "items": [
                {"key": "service", "value": "payments-api"},
                {"key": "commit", "value": "9f3c2e1a7b5d4c3e2f1a0b9c8d7e6f5a4b3c2d1e"},
                {"key": "author", "value": "release-bot"},
                {"key": "tests", "value": "4182 passed, 0 failed"}
            ]},
            {"type": "code", "language": "diff", "code": "- timeout_ms = 3000\n+ timeout_ms = 2500\n- retries = 2\n+ retries = 3\n"},
            {"type": "link", "url": format!("https://ci.example.com/builds/{seq}"), "label": "CI run"}
        ],
        "decision_class": "deploy.production",
        "metadata": {"bench": true, "seq": seq, "team": "platform", "region": "eu-west-1", "ticket": "OPS-4711"}
    })
    .to_string()
    .into_bytes()
}

// ---------------------------------------------------------------------------
// /proc sampling
// ---------------------------------------------------------------------------

/// (busy, total) jiffies of the whole machine.
fn machine_jiffies() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if v.len() < 5 {
        return None;
    }
    // user nice system idle iowait irq softirq steal (guest is inside user).
    let total: u64 = v.iter().take(8).sum();
    let idle = v[3] + v[4];
    Some((total - idle, total))
}

/// (utime, stime) of a process, in jiffies (all threads).
fn proc_times(pid: &str) -> Option<(u64, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some((
        f.get(11)?.parse::<u64>().ok()?,
        f.get(12)?.parse::<u64>().ok()?,
    ))
}

/// utime + stime of a process, in jiffies (all threads).
fn proc_jiffies(pid: &str) -> Option<u64> {
    proc_times(pid).map(|(u, s)| u + s)
}

fn status_field_kib(pid: u32, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[derive(Clone, Copy)]
struct CpuSnap {
    at: Instant,
    machine: Option<(u64, u64)>,
    server: Option<(u64, u64)>,
    /// utime + stime of the server's `hds-writer` thread (the single SQLite writer).
    writer: Option<u64>,
    me: Option<u64>,
}

/// `/proc/<pid>/task/<tid>` of the server thread named `name`, if any.
fn thread_dir(pid: u32, name: &str) -> Option<PathBuf> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| std::fs::read_to_string(p.join("comm")).is_ok_and(|c| c.trim() == name))
}

impl CpuSnap {
    fn take(pid: Option<u32>) -> Self {
        let writer = pid.and_then(|p| thread_dir(p, "hds-writer")).and_then(|d| {
            let rel = d.strip_prefix("/proc").ok()?.to_str()?.to_owned();
            proc_jiffies(rel.trim_start_matches('/'))
        });
        Self {
            at: Instant::now(),
            machine: machine_jiffies(),
            server: pid.and_then(|p| proc_times(&p.to_string())),
            writer,
            me: proc_jiffies("self"),
        }
    }
}

/// CPU use between two snapshots, in % of ONE core (so 200 % = both cores of 2).
struct CpuUse {
    machine_busy_pct: Option<f64>,
    server_pct: Option<f64>,
    bench_pct: Option<f64>,
    other_pct: Option<f64>,
    server_secs: Option<f64>,
    /// CPU seconds of the single writer thread (fsync waits are not CPU).
    writer_secs: Option<f64>,
    /// Share of the server's CPU time spent in the kernel.
    server_sys_share: Option<f64>,
}

fn cpu_between(a: &CpuSnap, b: &CpuSnap, tck: f64, ncpu: f64) -> CpuUse {
    let wall = (b.at - a.at).as_secs_f64().max(1e-9);
    let machine_busy_pct = match (a.machine, b.machine) {
        (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => {
            Some((b1 - b0) as f64 / (t1 - t0) as f64 * 100.0 * ncpu)
        }
        _ => None,
    };
    let (server_secs, server_sys_share) = match (a.server, b.server) {
        (Some(x), Some(y)) => {
            let u = y.0.saturating_sub(x.0) as f64;
            let s = y.1.saturating_sub(x.1) as f64;
            (Some((u + s) / tck), (u + s > 0.0).then(|| s / (u + s)))
        }
        _ => (None, None),
    };
    let server_pct = server_secs.map(|s| s / wall * 100.0);
    let bench_pct = match (a.me, b.me) {
        (Some(x), Some(y)) => Some((y.saturating_sub(x)) as f64 / tck / wall * 100.0),
        _ => None,
    };
    let other_pct = match (machine_busy_pct, server_pct, bench_pct) {
        (Some(m), Some(s), Some(c)) => Some((m - s - c).max(0.0)),
        _ => None,
    };
    CpuUse {
        machine_busy_pct,
        server_pct,
        bench_pct,
        other_pct,
        server_secs,
        writer_secs: match (a.writer, b.writer) {
            (Some(x), Some(y)) => Some(y.saturating_sub(x) as f64 / tck),
            _ => None,
        },
        server_sys_share,
    }
}

// ---------------------------------------------------------------------------
// Server process
// ---------------------------------------------------------------------------

struct Target {
    addr: SocketAddr,
    host: String,
    source_key: String,
    user_token: String,
    pid: Option<u32>,
}

fn hds_init(hds: &Path, dir: &Path) -> Result<(String, String)> {
    let v = common::hds_init_json(hds, dir)?;
    let key = v["source_key_live"]
        .as_str()
        .ok_or_else(|| anyhow!("no source_key_live in hds init output"))?;
    let tok = v["user_token"]
        .as_str()
        .ok_or_else(|| anyhow!("no user_token in hds init output"))?;
    Ok((key.to_owned(), tok.to_owned()))
}

fn start_server(args: &Args, dir: &Path) -> Result<(Server, SocketAddr)> {
    let stderr = match &args.server_log {
        Some(p) => Stdio::from(
            std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
        ),
        None => Stdio::null(),
    };
    let mut cmd = Command::new(&args.hds);
    cmd.args(["serve", "--data-dir"])
        .arg(dir)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--rate-limit",
            "0",
            // The benchmark holds thousands of long polls from one address.
            "--max-connections-per-address",
            "0",
            "--durability",
            &args.durability,
        ])
        .stderr(stderr);
    common::start_server(cmd)
}

fn parse_url(url: &str) -> Result<SocketAddr> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| anyhow!("--url must start with http://"))?;
    let hostport = rest.split('/').next().unwrap_or("");
    use std::net::ToSocketAddrs;
    hostport
        .to_socket_addrs()
        .with_context(|| format!("resolving {hostport}"))?
        .next()
        .ok_or_else(|| anyhow!("{hostport} resolves to nothing"))
}

// ---------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------

/// Nearest-rank percentile of sorted microseconds, in ms.
fn pct_ms(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1] as f64 / 1000.0
}

fn us(d: Duration) -> u32 {
    d.as_micros().min(u32::MAX as u128) as u32
}

fn r3(x: f64) -> Value {
    if x.is_finite() {
        json!((x * 1000.0).round() / 1000.0)
    } else {
        Value::Null
    }
}

fn r1(x: f64) -> Value {
    if x.is_finite() {
        json!((x * 10.0).round() / 10.0)
    } else {
        Value::Null
    }
}

fn opt(x: Option<f64>, f: fn(f64) -> Value) -> Value {
    x.map_or(Value::Null, f)
}

/// Error samples: message -> count.
#[derive(Default)]
struct Errors {
    by_kind: BTreeMap<String, u64>,
    total: u64,
}

impl Errors {
    fn add(&mut self, what: String) {
        self.total += 1;
        let key: String = what.chars().take(300).collect();
        if self.by_kind.len() < 20 || self.by_kind.contains_key(&key) {
            *self.by_kind.entry(key).or_default() += 1;
        }
    }
    fn merge(&mut self, o: Errors) {
        self.total += o.total;
        for (k, v) in o.by_kind {
            if self.by_kind.len() < 20 || self.by_kind.contains_key(&k) {
                *self.by_kind.entry(k).or_default() += v;
            }
        }
    }
    fn print(&self, label: &str) {
        if self.total == 0 {
            return;
        }
        eprintln!("  {label}: {} errors", self.total);
        for (k, v) in &self.by_kind {
            eprintln!("    {v} x {k}");
        }
    }
}

// ---------------------------------------------------------------------------
// Phase 1: creates
// ---------------------------------------------------------------------------

struct WorkerOut {
    lat_us: Vec<u32>,
    ok: u64,
    errors: Errors,
}

async fn load_worker(
    t: &Target,
    mut conn: Conn,
    make: &dyn Fn(u64) -> Vec<u8>,
    expect: u16,
    worker: u64,
    measure_from: Instant,
    end: Instant,
) -> WorkerOut {
    let mut out = WorkerOut {
        lat_us: Vec::with_capacity(16 * 1024),
        ok: 0,
        errors: Errors::default(),
    };
    // Sequence numbers stay far below 2^53 (the server enforces I-JSON integers).
    let mut seq = worker * 100_000_000;
    let mut reconnects = 0;
    while Instant::now() < end {
        seq += 1;
        let req = make(seq);
        let t0 = Instant::now();
        let r = timeout(Duration::from_secs(30), conn.request(&req)).await;
        let done = Instant::now();
        let counted = done >= measure_from && done < end;
        match r {
            Ok(Ok(resp)) => {
                if counted {
                    if resp.status == expect {
                        out.ok += 1;
                        out.lat_us.push(us(done - t0));
                    } else {
                        out.errors.add(resp.snippet());
                    }
                }
                if resp.close {
                    match Conn::connect(t.addr).await {
                        Ok(c) => conn = c,
                        Err(e) => {
                            out.errors.add(format!("reconnect: {e:#}"));
                            return out;
                        }
                    }
                }
            }
            other => {
                let msg = match other {
                    Ok(Err(e)) => format!("io: {e:#}"),
                    _ => "timeout after 30 s".to_owned(),
                };
                if counted {
                    out.errors.add(msg);
                }
                reconnects += 1;
                if reconnects > 20 {
                    return out;
                }
                match Conn::connect(t.addr).await {
                    Ok(c) => conn = c,
                    Err(e) => {
                        out.errors.add(format!("reconnect: {e:#}"));
                        return out;
                    }
                }
            }
        }
    }
    out
}

struct CreateResult {
    what: &'static str,
    concurrency: usize,
    window_s: f64,
    ok: u64,
    errors: u64,
    per_s: f64,
    p50: f64,
    p99: f64,
    max: f64,
    cpu: CpuUse,
}

#[allow(clippy::too_many_arguments)]
async fn phase_load(
    t: &Target,
    what: &'static str,
    make: &dyn Fn(u64) -> Vec<u8>,
    expect: u16,
    conc: usize,
    window: u64,
    warmup: f64,
    duration: f64,
    tck: f64,
    ncpu: f64,
) -> Result<CreateResult> {
    let conns = join_all((0..conc).map(|_| Conn::connect(t.addr)))
        .await
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(warmup);
    let end = measure_from + Duration::from_secs_f64(duration);
    let pid = t.pid;
    let sampler = async move {
        sleep_until(measure_from.into()).await;
        let a = CpuSnap::take(pid);
        sleep_until(end.into()).await;
        let b = CpuSnap::take(pid);
        (a, b)
    };
    let workers = join_all(conns.into_iter().enumerate().map(|(i, c)| {
        load_worker(
            t,
            c,
            make,
            expect,
            // Unique per window and connection, so sequence numbers (and with
            // them Idempotency-Keys) never repeat in a run: a repeated key
            // would be answered as a replay, not a create.
            window * 10_000 + i as u64,
            measure_from,
            end,
        )
    }));
    let ((a, b), outs) = futures::join!(sampler, workers);
    let mut lat = Vec::new();
    let mut ok = 0;
    let mut errors = Errors::default();
    for o in outs {
        lat.extend(o.lat_us);
        ok += o.ok;
        errors.merge(o.errors);
    }
    lat.sort_unstable();
    errors.print(&format!("{what} c={conc}"));
    let window_s = (b.at - a.at).as_secs_f64();
    Ok(CreateResult {
        what,
        concurrency: conc,
        window_s,
        ok,
        errors: errors.total,
        per_s: ok as f64 / window_s,
        p50: pct_ms(&lat, 50.0),
        p99: pct_ms(&lat, 99.0),
        max: lat.last().map_or(f64::NAN, |&m| m as f64 / 1000.0),
        cpu: {
            let mut c = cpu_between(&a, &b, tck, ncpu);
            if ok == 0 {
                // No successful request: per-request CPU is meaningless.
                c.server_secs = None;
                c.writer_secs = None;
            }
            c
        },
    })
}

/// Creates `n` Actions over `conc` connections; returns their ids.
async fn create_many(t: &Target, n: usize, conc: usize) -> Result<Vec<String>> {
    let per = n.div_ceil(conc.max(1));
    let parts = join_all((0..conc).map(|w| async move {
        let mut conn = Conn::connect(t.addr).await?;
        let mut ids = Vec::new();
        for i in 0..per.min(n.saturating_sub(w * per)) {
            let body = action_body(900_000_000_000_000 + (w * per + i) as u64);
            let req = encode("POST", "/v1/actions", &t.host, &t.source_key, Some(&body));
            let r = timeout(Duration::from_secs(30), conn.request(&req))
                .await
                .map_err(|_| anyhow!("create timed out"))??;
            if r.status != 201 {
                bail!("create: {}", r.snippet());
            }
            let id = r.json()?["data"]["id"]
                .as_str()
                .ok_or_else(|| anyhow!("no data.id in create response"))?
                .to_owned();
            ids.push(id);
        }
        Ok::<_, anyhow::Error>(ids)
    }))
    .await;
    let mut ids = Vec::with_capacity(n);
    for p in parts {
        ids.extend(p?);
    }
    Ok(ids)
}

// ---------------------------------------------------------------------------
// Phase 2: wake latency
// ---------------------------------------------------------------------------

struct WakeResult {
    iters: usize,
    ok: usize,
    errors: u64,
    poll_first: usize,
    wake_p50: f64,
    wake_p99: f64,
    wake_max: f64,
    send_p50: f64,
    send_p99: f64,
    decision_p50: f64,
    decision_p99: f64,
}

async fn phase_wake(t: &Target, iters: usize, hold_ms: u64) -> Result<WakeResult> {
    let deadline = Instant::now() + Duration::from_secs(60 + iters as u64 / 2);
    let mut src = Conn::connect(t.addr).await?;
    let mut usr = Conn::connect(t.addr).await?;
    let mut poll = Conn::connect(t.addr).await?;
    let mut wake = Vec::with_capacity(iters);
    let mut send_to_poll = Vec::with_capacity(iters);
    let mut decision = Vec::with_capacity(iters);
    let mut errors = Errors::default();
    let mut poll_first = 0;
    let step = Duration::from_secs(10);
    for i in 0..iters {
        if Instant::now() > deadline {
            errors.add("phase deadline reached".into());
            break;
        }
        let one = async {
            let body = action_body(800_000_000_000_000 + i as u64);
            let r = timeout(
                step,
                src.request(&encode(
                    "POST",
                    "/v1/actions",
                    &t.host,
                    &t.source_key,
                    Some(&body),
                )),
            )
            .await
            .map_err(|_| anyhow!("create timed out"))??;
            if r.status != 201 {
                bail!("create: {}", r.snippet());
            }
            let v = r.json()?;
            let d = &v["data"];
            let id = d["id"].as_str().ok_or_else(|| anyhow!("no id"))?.to_owned();
            let fp = d["fingerprint"]
                .as_str()
                .ok_or_else(|| anyhow!("no fingerprint"))?
                .to_owned();
            let ver = d["action_version"].as_i64().unwrap_or(1);
            let opt_id = d["options"][0]["id"]
                .as_str()
                .ok_or_else(|| anyhow!("no option id"))?
                .to_owned();

            poll.send(&encode(
                "GET",
                &format!("/v1/source/actions/{id}?wait_seconds=30"),
                &t.host,
                &t.source_key,
                None,
            ))
            .await?;
            sleep(Duration::from_millis(hold_ms)).await;

            let dbody =
                json!({"action_version": ver, "fingerprint": fp, "option_id": opt_id}).to_string();
            let dreq = encode(
                "POST",
                &format!("/v1/actions/{id}/decision"),
                &t.host,
                &t.user_token,
                Some(dbody.as_bytes()),
            );
            let sent = Instant::now();
            usr.send(&dreq).await?;
            let (dr, pr) = futures::join!(
                async {
                    let r = timeout(step, usr.recv()).await;
                    (r, Instant::now())
                },
                async {
                    let r = timeout(step, poll.recv()).await;
                    (r, Instant::now())
                }
            );
            let (dresp, t_dec) = (dr.0.map_err(|_| anyhow!("decision timed out"))??, dr.1);
            let (presp, t_poll) = (pr.0.map_err(|_| anyhow!("long poll timed out"))??, pr.1);
            if dresp.status != 200 {
                bail!("decision: {}", dresp.snippet());
            }
            if presp.status != 200 {
                bail!("long poll: {}", presp.snippet());
            }
            let st = presp.json()?;
            if st["data"]["status"] != "resolved" {
                bail!("long poll returned status {}", st["data"]["status"]);
            }
            Ok((sent, t_dec, t_poll))
        };
        match one.await {
            Ok((sent, t_dec, t_poll)) => {
                if t_poll < t_dec {
                    poll_first += 1;
                }
                wake.push(us(t_poll.saturating_duration_since(t_dec)));
                send_to_poll.push(us(t_poll - sent));
                decision.push(us(t_dec - sent));
            }
            Err(e) => {
                errors.add(format!("{e:#}"));
                // Start over with fresh connections: a response may be pending.
                src = Conn::connect(t.addr).await?;
                usr = Conn::connect(t.addr).await?;
                poll = Conn::connect(t.addr).await?;
                if errors.total > 20 {
                    break;
                }
            }
        }
    }
    errors.print("wake");
    for v in [&mut wake, &mut send_to_poll, &mut decision] {
        v.sort_unstable();
    }
    Ok(WakeResult {
        iters,
        ok: wake.len(),
        errors: errors.total,
        poll_first,
        wake_p50: pct_ms(&wake, 50.0),
        wake_p99: pct_ms(&wake, 99.0),
        wake_max: wake.last().map_or(f64::NAN, |&m| m as f64 / 1000.0),
        send_p50: pct_ms(&send_to_poll, 50.0),
        send_p99: pct_ms(&send_to_poll, 99.0),
        decision_p50: pct_ms(&decision, 50.0),
        decision_p99: pct_ms(&decision, 99.0),
    })
}

// ---------------------------------------------------------------------------
// Phase 3: memory per held long poll
// ---------------------------------------------------------------------------

struct PollResult {
    requested: usize,
    held: usize,
    released_ok: usize,
    prewarm: bool,
    rss_cold_kib: Option<u64>,
    rss_before_kib: Option<u64>,
    rss_after_kib: Option<u64>,
    rss_released_kib: Option<u64>,
    kib_per_poll: Option<f64>,
    kib_per_poll_cold: Option<f64>,
    threads_before: Option<u64>,
    threads_after: Option<u64>,
    open_s: f64,
    release_ms: f64,
    errors: u64,
}

fn fd_soft_limit() -> Option<usize> {
    let s = std::fs::read_to_string("/proc/self/limits").ok()?;
    let l = s.lines().find(|l| l.starts_with("Max open files"))?;
    l.split_whitespace().nth(3)?.parse().ok()
}

/// Waits until the server's CPU time stops moving (it has processed what it was sent).
async fn wait_server_quiet(pid: Option<u32>, min: Duration, max: Duration) {
    let start = Instant::now();
    sleep(min).await;
    let Some(pid) = pid else { return };
    let p = pid.to_string();
    let mut last = proc_jiffies(&p);
    while start.elapsed() < max {
        sleep(Duration::from_millis(300)).await;
        let now = proc_jiffies(&p);
        if now.is_some() && now.unwrap_or(0).saturating_sub(last.unwrap_or(0)) <= 1 {
            return;
        }
        last = now;
    }
}

async fn phase_polls(
    t: &Target,
    want: usize,
    batch: usize,
    same: bool,
    prewarm: bool,
) -> Result<PollResult> {
    let limit = fd_soft_limit().unwrap_or(1024);
    let k = want.min(limit.saturating_sub(100)).max(1);
    if k < want {
        eprintln!("  polls: capped at {k} by the fd limit {limit} (ulimit -n)");
    }
    let ids = if same {
        create_many(t, 1, 1).await?
    } else {
        create_many(t, k, 16).await?
    };
    let mut errors = Errors::default();
    wait_server_quiet(t.pid, Duration::from_millis(1000), Duration::from_secs(10)).await;
    let rss_cold = t.pid.and_then(|p| status_field_kib(p, "VmRSS:"));
    if prewarm {
        // Read every Action once without waiting, in the same batches: warms the
        // readers' SQLite page caches and the blocking-thread pool, which are
        // bounded shared costs, so the baseline isolates what a HELD poll costs.
        for chunk in ids.chunks(batch.max(1)) {
            let got = join_all(chunk.iter().map(|id| {
                let req = encode(
                    "GET",
                    &format!("/v1/source/actions/{id}"),
                    &t.host,
                    &t.source_key,
                    None,
                );
                async move {
                    let mut c = Conn::connect(t.addr).await?;
                    let r = timeout(Duration::from_secs(30), c.request(&req))
                        .await
                        .map_err(|_| anyhow!("prewarm read timed out"))??;
                    if r.status != 200 {
                        bail!("prewarm read: {}", r.snippet());
                    }
                    Ok::<_, anyhow::Error>(())
                }
            }))
            .await;
            for g in got {
                if let Err(e) = g {
                    errors.add(format!("{e:#}"));
                }
            }
        }
        wait_server_quiet(t.pid, Duration::from_millis(1000), Duration::from_secs(10)).await;
    }
    let rss_before = t.pid.and_then(|p| status_field_kib(p, "VmRSS:"));
    let threads_before = t.pid.and_then(|p| status_field_kib(p, "Threads:"));

    let open_start = Instant::now();
    let mut conns: Vec<Conn> = Vec::with_capacity(k);
    let mut i = 0;
    while i < k {
        let n = batch.max(1).min(k - i);
        let opened = join_all((i..i + n).map(|j| {
            let id = if same { &ids[0] } else { &ids[j] };
            let req = encode(
                "GET",
                &format!("/v1/source/actions/{id}?wait_seconds=30"),
                &t.host,
                &t.source_key,
                None,
            );
            async move {
                let mut c = Conn::connect(t.addr).await?;
                c.send(&req).await?;
                Ok::<_, anyhow::Error>(c)
            }
        }))
        .await;
        for c in opened {
            match c {
                Ok(c) => conns.push(c),
                Err(e) => errors.add(format!("open: {e:#}")),
            }
        }
        i += n;
        // Pace the batches so the server's read burst stays bounded.
        sleep(Duration::from_millis(20)).await;
        if open_start.elapsed() > Duration::from_secs(15) {
            errors.add("opening took more than 15 s; stopped early".into());
            break;
        }
    }
    let open_s = open_start.elapsed().as_secs_f64();
    wait_server_quiet(t.pid, Duration::from_millis(1000), Duration::from_secs(8)).await;
    let rss_after = t.pid.and_then(|p| status_field_kib(p, "VmRSS:"));
    let threads_after = t.pid.and_then(|p| status_field_kib(p, "Threads:"));
    let held = conns.len();

    // Release: cancel the Actions; every held poll must answer "cancelled".
    let rel_start = Instant::now();
    let cancel_ids: Vec<String> = if same {
        vec![ids[0].clone()]
    } else {
        ids.clone()
    };
    let cancels = async {
        let per = cancel_ids.len().div_ceil(16);
        join_all(cancel_ids.chunks(per.max(1)).map(|chunk| async move {
            let mut c = Conn::connect(t.addr).await?;
            for id in chunk {
                let req = encode(
                    "POST",
                    &format!("/v1/actions/{id}/cancel"),
                    &t.host,
                    &t.source_key,
                    Some(b"{}"),
                );
                let r = timeout(Duration::from_secs(30), c.request(&req))
                    .await
                    .map_err(|_| anyhow!("cancel timed out"))??;
                if r.status != 200 {
                    bail!("cancel: {}", r.snippet());
                }
            }
            Ok::<_, anyhow::Error>(())
        }))
        .await
    };
    let answers = join_all(conns.iter_mut().map(|c| async move {
        let r = timeout(Duration::from_secs(40), c.recv()).await;
        (r, Instant::now())
    }));
    let (cres, answers) = futures::join!(cancels, answers);
    for r in cres {
        if let Err(e) = r {
            errors.add(format!("{e:#}"));
        }
    }
    let mut released_ok = 0;
    let mut last = rel_start;
    for (r, at) in answers {
        match r {
            Ok(Ok(resp)) if resp.status == 200 => {
                let status = resp.json().ok().map(|v| v["data"]["status"].clone());
                if status == Some(json!("cancelled")) {
                    released_ok += 1;
                    last = last.max(at);
                } else {
                    errors.add(format!("poll answered {status:?}, not cancelled"));
                }
            }
            Ok(Ok(resp)) => errors.add(format!("poll: {}", resp.snippet())),
            Ok(Err(e)) => errors.add(format!("poll: {e:#}")),
            Err(_) => errors.add("poll: no answer within 40 s of the cancels".into()),
        }
    }
    drop(conns);
    wait_server_quiet(t.pid, Duration::from_millis(500), Duration::from_secs(5)).await;
    let rss_released = t.pid.and_then(|p| status_field_kib(p, "VmRSS:"));
    errors.print("held polls");
    let kib_per_poll = match (rss_before, rss_after) {
        (Some(a), Some(b)) if held > 0 => Some((b as f64 - a as f64) / held as f64),
        _ => None,
    };
    let kib_per_poll_cold = match (rss_cold, rss_after) {
        (Some(a), Some(b)) if held > 0 && prewarm => Some((b as f64 - a as f64) / held as f64),
        _ => None,
    };
    Ok(PollResult {
        requested: want,
        held,
        released_ok,
        prewarm,
        rss_cold_kib: rss_cold,
        rss_before_kib: rss_before,
        rss_after_kib: rss_after,
        rss_released_kib: rss_released,
        kib_per_poll,
        kib_per_poll_cold,
        threads_before,
        threads_after,
        open_s,
        release_ms: (last - rel_start).as_secs_f64() * 1000.0,
        errors: errors.total,
    })
}

// ---------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------

fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

fn main() -> Result<()> {
    let args = Args::parse();
    for p in &args.phases {
        if !matches!(
            p.as_str(),
            "creates" | "keyed" | "health" | "reads" | "wake" | "polls"
        ) {
            bail!("unknown phase {p:?}; use creates, keyed, health, reads, wake, polls");
        }
    }
    if !matches!(args.durability.as_str(), "full" | "normal") {
        bail!("--durability must be full or normal");
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(run(args))
}

/// Keyed against unkeyed creates at one concurrency (medians over the rounds).
struct KeyedRatio {
    c: usize,
    unkeyed: f64,
    keyed: f64,
    /// keyed ÷ unkeyed creates/s.
    ratio: f64,
    /// Server CPU µs per create.
    unkeyed_us: Option<f64>,
    keyed_us: Option<f64>,
}

/// (phase name, label, request maker, expected status) of a closed-loop phase.
type Load<'a> = (&'static str, &'static str, &'a dyn Fn(u64) -> Vec<u8>, u16);

async fn run(args: Args) -> Result<()> {
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    let tck = clk_tck();
    let model = cpu_model();

    // Whole-machine busy % before anything of ours runs.
    let a = CpuSnap::take(None);
    sleep(Duration::from_secs_f64(args.busy_sample)).await;
    let b = CpuSnap::take(None);
    let busy_before = cpu_between(&a, &b, tck, ncpu as f64)
        .machine_busy_pct
        .map(|p| p / ncpu as f64);

    // The server: started here, or given.
    let mut _server = None;
    let mut _tmp = None;
    let target = if let Some(url) = &args.url {
        let addr = parse_url(url)?;
        Target {
            addr,
            host: addr.to_string(),
            source_key: args.source_key.clone().unwrap_or_default(),
            user_token: args.user_token.clone().unwrap_or_default(),
            pid: args.pid,
        }
    } else {
        if !args.hds.exists() {
            bail!(
                "{} not found: run `cargo build --release` first, or pass --hds PATH",
                args.hds.display()
            );
        }
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let bin_time = std::fs::metadata(&args.hds).and_then(|m| m.modified()).ok();
        if let (Some(b), Some(s)) = (bin_time, newest_mtime(&src))
            && s > b
        {
            eprintln!(
                "warning: {} is older than {}; run `cargo build --release` to bench the current code",
                args.hds.display(),
                src.display()
            );
        }
        let tmp = match &args.data_parent {
            Some(p) => tempfile::Builder::new()
                .prefix("hds-bench-")
                .tempdir_in(p)?,
            None => tempfile::Builder::new().prefix("hds-bench-").tempdir()?,
        };
        let dir = tmp.path().to_owned();
        let (source_key, user_token) = hds_init(&args.hds, &dir)?;
        let (server, addr) = start_server(&args, &dir)?;
        let pid = server.child.id();
        eprintln!(
            "started {} (pid {pid}) on {addr}, data dir {}",
            args.hds.display(),
            dir.display()
        );
        _server = Some(server);
        if args.keep_data {
            let _ = tmp.keep();
        } else {
            _tmp = Some(tmp);
        }
        Target {
            addr,
            host: addr.to_string(),
            source_key,
            user_token,
            pid: Some(pid),
        }
    };
    let idle_rss = target.pid.and_then(|p| status_field_kib(p, "VmRSS:"));
    let body_bytes = action_body(1).len();
    eprintln!(
        "machine: {ncpu} cpu, {model}, busy {:.0}% before; durability {}; create body {body_bytes} B",
        busy_before.unwrap_or(f64::NAN),
        args.durability
    );

    let phase = |name: &str| args.phases.iter().any(|p| p == name);
    let mut creates = Vec::new();
    let make_create = |seq: u64| {
        encode(
            "POST",
            "/v1/actions",
            &target.host,
            &target.source_key,
            Some(&action_body(seq)),
        )
    };
    // Unique per run too, so reruns against one --url server never replay.
    let run_tag = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    let make_keyed = |seq: u64| {
        encode_with(
            "POST",
            "/v1/actions",
            &target.host,
            &target.source_key,
            &format!("Idempotency-Key: bench-{run_tag}-{seq}\r\n"),
            Some(&action_body(seq)),
        )
    };
    let make_health = |_| encode("GET", "/health", &target.host, "-", None);
    let read_path = if phase("reads") {
        let id = create_many(&target, 1, 1).await?.remove(0);
        format!("/v1/source/actions/{id}")
    } else {
        String::new()
    };
    let make_read = |_| encode("GET", &read_path, &target.host, &target.source_key, None);
    let loads: [Load; 4] = [
        ("creates", "creates", &make_create, 201),
        ("keyed", "keyed", &make_keyed, 201),
        ("health", "GET /health", &make_health, 200),
        ("reads", "GET action", &make_read, 200),
    ];
    // Concurrency-major, so the unkeyed and keyed creates of one level run back
    // to back under the same conditions.
    let mut window = 0;
    for &c in &args.concurrency {
        for &(ph, what, make, expect) in loads.iter().cycle().take(loads.len() * args.rounds.max(1))
        {
            if !phase(ph) {
                continue;
            }
            eprintln!(
                "{what}: c={c}, {} s warm-up + {} s ...",
                args.warmup, args.duration
            );
            window += 1;
            let r = phase_load(
                &target,
                what,
                make,
                expect,
                c,
                window,
                args.warmup,
                args.duration,
                tck,
                ncpu as f64,
            )
            .await?;
            eprintln!(
                "  {:.0}/s  p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms  ({} ok, {} errors)",
                r.per_s, r.p50, r.p99, r.max, r.ok, r.errors
            );
            creates.push(r);
            sleep(Duration::from_millis(500)).await;
        }
    }
    let mut wake = None;
    if phase("wake") {
        eprintln!("wake: {} iterations ...", args.wake_iters);
        let r = phase_wake(&target, args.wake_iters, args.hold_ms).await?;
        eprintln!(
            "  wake p50 {:.3} ms  p99 {:.3} ms; send->poll p50 {:.3} ms  p99 {:.3} ms",
            r.wake_p50, r.wake_p99, r.send_p50, r.send_p99
        );
        wake = Some(r);
    }
    let mut polls = None;
    if phase("polls") {
        eprintln!("held polls: {} ...", args.polls);
        let r = phase_polls(
            &target,
            args.polls,
            args.poll_batch,
            args.same_action,
            !args.no_prewarm,
        )
        .await?;
        polls = Some(r);
    }
    let peak_rss = target.pid.and_then(|p| status_field_kib(p, "VmHWM:"));

    // ---- summary ----
    let mut targets = Vec::new();
    let mut check = |name: String, value: f64, ok: bool| {
        targets.push((name, value, ok));
    };
    for r in creates.iter().filter(|r| r.what == "creates") {
        match r.concurrency {
            16 => check(
                "creates/s at c16 >= 3500".into(),
                r.per_s,
                r.per_s >= 3500.0,
            ),
            64 => check(
                "creates/s at c64 >= 8000".into(),
                r.per_s,
                r.per_s >= 8000.0,
            ),
            _ => {}
        }
        check(
            format!("create p99 at c{} < 25 ms", r.concurrency),
            r.p99,
            r.p99 < 25.0,
        );
    }
    // Median over the rounds of one load at one concurrency.
    let median = |what: &str, c: usize, f: &dyn Fn(&CreateResult) -> Option<f64>| {
        let mut v: Vec<f64> = creates
            .iter()
            .filter(|r| r.what == what && r.concurrency == c)
            .filter_map(f)
            .collect();
        v.sort_by(f64::total_cmp);
        (!v.is_empty()).then(|| v[v.len() / 2])
    };
    let cpu_us = |r: &CreateResult| r.cpu.server_secs.map(|s| s * 1e6 / r.ok as f64);
    // Where both ran; medians over the rounds.
    let keyed_ratios: Vec<KeyedRatio> = args
        .concurrency
        .iter()
        .filter_map(|&c| {
            let unkeyed = median("creates", c, &|r| Some(r.per_s))?;
            let keyed = median("keyed", c, &|r| Some(r.per_s))?;
            Some(KeyedRatio {
                c,
                unkeyed,
                keyed,
                ratio: keyed / unkeyed,
                unkeyed_us: median("creates", c, &cpu_us),
                keyed_us: median("keyed", c, &cpu_us),
            })
        })
        .collect();
    for &KeyedRatio { c, ratio, .. } in &keyed_ratios {
        check(
            format!("keyed/unkeyed creates at c{c} >= 0.85"),
            ratio,
            ratio >= 0.85,
        );
    }
    if let Some(w) = &wake {
        check("wake p99 < 5 ms".into(), w.wake_p99, w.wake_p99 < 5.0);
    }
    if let Some(k) = polls.as_ref().and_then(|p| p.kib_per_poll) {
        check("KiB per held poll < 40".into(), k, k < 40.0);
    }

    let mut out = String::new();
    use std::fmt::Write as _;
    let _ = writeln!(
        out,
        "==================== hds bench summary ===================="
    );
    let _ = writeln!(
        out,
        "machine     {ncpu} cpu ({model}), kernel {}, busy {:.0}% (1 s before the run)",
        kernel(),
        busy_before.unwrap_or(f64::NAN)
    );
    let _ = writeln!(
        out,
        "server      {} durability={} rate-limit=0{}; idle RSS {} KiB, peak RSS {} KiB",
        args.url.as_deref().unwrap_or("started by bench"),
        args.durability,
        target.pid.map(|p| format!(" pid {p}")).unwrap_or_default(),
        idle_rss.map_or("?".into(), |v| v.to_string()),
        peak_rss.map_or("?".into(), |v| v.to_string()),
    );
    let _ = writeln!(
        out,
        "client      1 thread, raw HTTP/1.1 keep-alive, create body {body_bytes} B, warm-up {} s, window {} s",
        args.warmup, args.duration
    );
    for r in &creates {
        let f = |x: Option<f64>| x.map_or("?".into(), |v| format!("{v:.0}%"));
        let _ = writeln!(
            out,
            "{:<11} c={:<3} {:>7.0}/s  p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms  ok {} err {}\n{:<17}cpu: server {} = {} µs/req ({} in kernel; writer thread {} = {} µs/req), bench {}, other tenants {}",
            r.what,
            r.concurrency,
            r.per_s,
            r.p50,
            r.p99,
            r.max,
            r.ok,
            r.errors,
            "",
            f(r.cpu.server_pct),
            r.cpu
                .server_secs
                .map_or("?".into(), |s| format!("{:.0}", s * 1e6 / r.ok as f64)),
            r.cpu
                .server_sys_share
                .map_or("?".into(), |s| format!("{:.0}%", s * 100.0)),
            f(r.cpu.writer_secs.map(|s| s / r.window_s * 100.0)),
            r.cpu
                .writer_secs
                .map_or("?".into(), |s| format!("{:.0}", s * 1e6 / r.ok as f64)),
            f(r.cpu.bench_pct),
            f(r.cpu.other_pct),
        );
    }
    for &KeyedRatio {
        c,
        unkeyed: u,
        keyed: k,
        ratio,
        unkeyed_us: cu,
        keyed_us: ck,
    } in &keyed_ratios
    {
        let us = |x: Option<f64>| x.map_or("?".into(), |v| format!("{v:.0}"));
        let _ = writeln!(
            out,
            "keyed/unk.  c={c:<3} keyed {k:.0}/s vs unkeyed {u:.0}/s = {ratio:.3} ({:+.1}%); server CPU {} vs {} µs/req{}",
            (ratio - 1.0) * 100.0,
            us(ck),
            us(cu),
            if args.rounds > 1 {
                format!(" (medians of {} rounds)", args.rounds)
            } else {
                String::new()
            }
        );
    }
    if let Some(w) = &wake {
        let _ = writeln!(
            out,
            "wake        decision response -> poll response p50 {:.3} ms  p99 {:.3} ms  max {:.3} ms",
            w.wake_p50, w.wake_p99, w.wake_max
        );
        let _ = writeln!(
            out,
            "            decision sent -> poll response    p50 {:.3} ms  p99 {:.3} ms; decision round trip p50 {:.3} ms p99 {:.3} ms",
            w.send_p50, w.send_p99, w.decision_p50, w.decision_p99
        );
        let _ = writeln!(
            out,
            "            {} of {} ok, {} errors, poll answered before the decision response {} times",
            w.ok, w.iters, w.errors, w.poll_first
        );
    }
    if let Some(p) = &polls {
        let _ = writeln!(
            out,
            "held polls  {} held (of {}): RSS {} -> {} KiB = {} KiB per held poll; threads {} -> {}",
            p.held,
            p.requested,
            p.rss_before_kib.map_or("?".into(), |v| v.to_string()),
            p.rss_after_kib.map_or("?".into(), |v| v.to_string()),
            p.kib_per_poll.map_or("?".into(), |v| format!("{v:.1}")),
            p.threads_before.map_or("?".into(), |v| v.to_string()),
            p.threads_after.map_or("?".into(), |v| v.to_string()),
        );
        let kib = |v: Option<u64>| v.map_or("?".into(), |v| v.to_string());
        if p.prewarm {
            let _ = writeln!(
                out,
                "            baseline after a warm-up read of each Action; from before the warm-up: {} -> {} KiB = {} KiB per poll",
                kib(p.rss_cold_kib),
                kib(p.rss_after_kib),
                p.kib_per_poll_cold
                    .map_or("?".into(), |v| format!("{v:.1}")),
            );
        }
        let _ = writeln!(
            out,
            "            opened in {:.2} s; cancel-all released {} of {} in {:.0} ms; RSS after release {} KiB; {} errors",
            p.open_s,
            p.released_ok,
            p.held,
            p.release_ms,
            kib(p.rss_released_kib),
            p.errors
        );
    }
    let _ = writeln!(out, "targets");
    for (name, v, ok) in &targets {
        let _ = writeln!(
            out,
            "  [{}] {name}: {v:.2}",
            if *ok { "PASS" } else { "MISS" }
        );
    }
    let _ = writeln!(
        out,
        "==========================================================="
    );
    print!("{out}");

    let summary = json!({
        "bench": "hds",
        "machine": {
            "nproc": ncpu,
            "cpu": model,
            "kernel": kernel(),
            "busy_pct_before": opt(busy_before, r1),
        },
        "durability": args.durability,
        "client": {"threads": 1, "body_bytes": body_bytes, "warmup_s": args.warmup, "window_s": args.duration},
        "server_rss_kib": {"idle": idle_rss, "peak": peak_rss},
        "creates": creates.iter().filter(|r| r.what == "creates").map(|r| json!({
            "concurrency": r.concurrency,
            "per_s": r1(r.per_s),
            "p50_ms": r2(r.p50),
            "p99_ms": r2(r.p99),
            "max_ms": r2(r.max),
            "ok": r.ok,
            "errors": r.errors,
            "window_s": r2(r.window_s),
            "server_cpu_pct": opt(r.cpu.server_pct, r1),
            "server_cpu_us_per_create": opt(r.cpu.server_secs.map(|s| s * 1e6 / r.ok as f64), r1),
            "server_cpu_kernel_share": opt(r.cpu.server_sys_share, r2),
            "writer_thread_cpu_pct": opt(r.cpu.writer_secs.map(|s| s / r.window_s * 100.0), r1),
            "writer_thread_cpu_us_per_create": opt(r.cpu.writer_secs.map(|s| s * 1e6 / r.ok as f64), r1),
            "bench_cpu_pct": opt(r.cpu.bench_pct, r1),
            "other_cpu_pct": opt(r.cpu.other_pct, r1),
        })).collect::<Vec<_>>(),
        "keyed_creates": creates.iter().filter(|r| r.what == "keyed").map(|r| json!({
            "concurrency": r.concurrency,
            "per_s": r1(r.per_s),
            "p50_ms": r2(r.p50),
            "p99_ms": r2(r.p99),
            "max_ms": r2(r.max),
            "ok": r.ok,
            "errors": r.errors,
            "server_cpu_us_per_create": opt(r.cpu.server_secs.map(|s| s * 1e6 / r.ok as f64), r1),
            "writer_thread_cpu_us_per_create": opt(r.cpu.writer_secs.map(|s| s * 1e6 / r.ok as f64), r1),
            "other_cpu_pct": opt(r.cpu.other_pct, r1),
        })).collect::<Vec<_>>(),
        "keyed_vs_unkeyed": keyed_ratios.iter().map(|k| json!({
            "concurrency": k.c,
            "rounds": args.rounds,
            "unkeyed_per_s": r1(k.unkeyed),
            "keyed_per_s": r1(k.keyed),
            "ratio": r3(k.ratio),
            "unkeyed_server_cpu_us_per_create": opt(k.unkeyed_us, r1),
            "keyed_server_cpu_us_per_create": opt(k.keyed_us, r1),
        })).collect::<Vec<_>>(),
        "other_loads": creates.iter().filter(|r| r.what != "creates" && r.what != "keyed").map(|r| json!({
            "what": r.what,
            "concurrency": r.concurrency,
            "per_s": r1(r.per_s),
            "p50_ms": r2(r.p50),
            "p99_ms": r2(r.p99),
            "errors": r.errors,
            "server_cpu_us_per_req": opt(r.cpu.server_secs.map(|s| s * 1e6 / r.ok as f64), r1),
        })).collect::<Vec<_>>(),
        "wake": wake.as_ref().map(|w| json!({
            "iterations": w.iters,
            "ok": w.ok,
            "errors": w.errors,
            "p50_ms": r3(w.wake_p50),
            "p99_ms": r3(w.wake_p99),
            "max_ms": r3(w.wake_max),
            "send_to_poll_p50_ms": r3(w.send_p50),
            "send_to_poll_p99_ms": r3(w.send_p99),
            "decision_p50_ms": r2(w.decision_p50),
            "decision_p99_ms": r2(w.decision_p99),
        })),
        "held_polls": polls.as_ref().map(|p| json!({
            "requested": p.requested,
            "held": p.held,
            "released_ok": p.released_ok,
            "prewarm": p.prewarm,
            "rss_cold_kib": p.rss_cold_kib,
            "rss_before_kib": p.rss_before_kib,
            "rss_after_kib": p.rss_after_kib,
            "rss_released_kib": p.rss_released_kib,
            "kib_per_poll": opt(p.kib_per_poll, r1),
            "kib_per_poll_incl_warmup": opt(p.kib_per_poll_cold, r1),
            "threads_before": p.threads_before,
            "threads_after": p.threads_after,
            "release_all_ms": r1(p.release_ms),
            "errors": p.errors,
        })),
        "targets": targets.iter().map(|(n, v, ok)| json!({"target": n, "value": r2(*v), "pass": ok})).collect::<Vec<_>>(),
    });
    println!("{summary}");

    if let Some(mut s) = _server.take() {
        s.stop();
    }
    Ok(())
}
