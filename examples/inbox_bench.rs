//! Rerunnable benchmark (not a test) of the dashboard inbox's server-side render
//! time with many open Actions (issue 3: 10,000 open Actions, p99 under 50 ms on
//! the 2-core machine).
//!
//! ```text
//! cargo build --release && cargo run --release --example inbox_bench
//! cargo run --release --example inbox_bench -- --help
//! ```
//!
//! What it does, against a real `target/release/hds` on loopback:
//! 1. `hds init --json` in a fresh temporary data dir; `hds serve` on a port
//!    picked beforehand (bind 127.0.0.1:0, release), with `--base-url` set to
//!    that address so the sign-in link and the CSRF origin check match;
//!    `RUST_LOG=hds=info`, stderr (the access log) to a file.
//! 2. N open Actions through `POST /v1/actions` with the live Source key, from
//!    `--clients` concurrent clients (mixed priorities, titles, context blocks).
//! 3. Signs in like a browser: GET the one-time link (confirmation page), POST it
//!    with `Origin` and a form content type, keep `service_session` from the 303.
//! 4. For each page (`/app`, `/app/inbox/rows`, a filtered `/app?…`): a warm-up,
//!    then R sequential requests with the cookie, each tagged with its own
//!    `X-Request-ID`; asserts 200 and that the HTML holds inbox rows.
//! 5. Server-side render time = the access log's `duration_ms` of exactly those
//!    requests (found by their request ids): p50/p90/p99/max; client-side
//!    loopback time (send → last body byte) p50/p99 for comparison; server CPU
//!    per request and the other tenants' CPU share during each window.
//!
//! Prints a human table, then one JSON line. Exit status 0 even when the target
//! is missed (the table says PASS/MISS); non-zero only when the run failed.
// Benchmarks run against a real server in real time: waiting is measured, not tested.
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use clap::Parser;
use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};

#[allow(dead_code)] // each example uses a part of it
mod common;
use common::{Server, clk_tck, cpu_model, newest_mtime, r2};

const DEFAULT_HDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/release/hds");

#[derive(Parser, Debug)]
#[command(
    name = "inbox_bench",
    about = "Server-side render time of the dashboard inbox with many open Actions.",
    after_help = "Build first (the bench starts target/release/hds):\n  \
        cargo build --release && cargo run --release --example inbox_bench -- [OPTIONS]\n\
        Server-side time is the access log's duration_ms (middleware to handler return, \
        before the body is written); client time is loopback send -> last byte."
)]
struct Args {
    /// Path of the hds binary to start.
    #[arg(long, default_value = DEFAULT_HDS)]
    hds: PathBuf,
    /// Open Actions to create before measuring.
    #[arg(long, default_value_t = 10_000)]
    actions: u64,
    /// Closed Actions to add as history (created, then cancelled) alongside the
    /// open ones: the tab counts read every Action of the workspace, not only
    /// the open ones. 0 = the issue's setting (open Actions only).
    #[arg(long, default_value_t = 0)]
    closed: u64,
    /// Concurrent clients creating the Actions.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Measured sequential requests per page.
    #[arg(long, default_value_t = 500)]
    requests: usize,
    /// Warm-up requests per page (not counted).
    #[arg(long, default_value_t = 50)]
    warmup: usize,
    /// Pages to measure, comma-separated: app, rows, filtered.
    #[arg(long, value_delimiter = ',', default_value = "app,rows,filtered")]
    pages: Vec<String>,
    /// Query string of the filtered page (`/app?<this>`).
    #[arg(long, default_value = "priority=high&q=build")]
    filter: String,
    /// Durability passed to `hds serve --durability` (full or normal).
    #[arg(long, default_value = "full")]
    durability: String,
    /// The server-side p99 target, ms.
    #[arg(long, default_value_t = 50.0)]
    target_p99_ms: f64,
    /// Per-request timeout, seconds.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// Give up creating Actions after this many seconds.
    #[arg(long, default_value_t = 600)]
    create_deadline: u64,
    /// Parent directory of the temporary data dir (default: the system temp dir).
    #[arg(long)]
    data_parent: Option<PathBuf>,
    /// Keep the temporary data dir and the server log (their path is printed).
    #[arg(long)]
    keep_data: bool,
    /// Where the server's stderr (access log) goes; default: server.log in the data dir.
    #[arg(long)]
    server_log: Option<PathBuf>,
    /// Seconds of whole-machine CPU sampling before the run.
    #[arg(long, default_value_t = 1.0)]
    busy_sample: f64,
}

// ---------------------------------------------------------------------------
// Server process
// ---------------------------------------------------------------------------

/// `hds init --json`: (live Source key, one-time sign-in URL).
fn hds_init(hds: &Path, dir: &Path) -> Result<(String, String)> {
    let v = common::hds_init_json(hds, dir)?;
    let field = |k: &str| {
        v[k].as_str()
            .map(str::to_owned)
            .ok_or_else(|| anyhow!("no {k} in hds init output"))
    };
    Ok((field("source_key_live")?, field("signin_url")?))
}

/// A port that was free a moment ago: the base URL must name the port before
/// the server starts, so `--listen 127.0.0.1:0` cannot be used here.
fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

fn start_server(args: &Args, dir: &Path, log: &Path, port: u16) -> Result<(Server, SocketAddr)> {
    let stderr =
        std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let listen = format!("127.0.0.1:{port}");
    let mut cmd = Command::new(&args.hds);
    cmd.args(["serve", "--data-dir"])
        .arg(dir)
        .args(["--listen", &listen, "--rate-limit", "0"])
        .args(["--base-url", &format!("http://{listen}")])
        .args(["--durability", &args.durability])
        // The access log is the measurement: make sure it is on.
        .env("RUST_LOG", "hds=info")
        .stderr(Stdio::from(stderr));
    common::start_server(cmd)
}

// ---------------------------------------------------------------------------
// /proc sampling
// ---------------------------------------------------------------------------

/// (busy, total) jiffies of the whole machine.
fn machine_jiffies() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let v: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if v.len() < 5 {
        return None;
    }
    // user nice system idle iowait irq softirq steal (guest is inside user).
    let total: u64 = v.iter().take(8).sum();
    Some((total - v[3] - v[4], total))
}

/// utime + stime of a process (all threads), in jiffies.
fn proc_jiffies(pid: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = s[s.rfind(')')? + 2..].split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

#[derive(Clone, Copy)]
struct CpuSnap {
    at: Instant,
    machine: Option<(u64, u64)>,
    server: Option<u64>,
    me: Option<u64>,
}

impl CpuSnap {
    fn take(pid: Option<u32>) -> Self {
        Self {
            at: Instant::now(),
            machine: machine_jiffies(),
            server: pid.and_then(|p| proc_jiffies(&p.to_string())),
            me: proc_jiffies("self"),
        }
    }
}

/// CPU between two snapshots: (machine busy % of all cores, server CPU seconds,
/// other tenants' % of all cores).
fn cpu_between(a: &CpuSnap, b: &CpuSnap, tck: f64, ncpu: f64) -> (f64, f64, f64) {
    let wall = (b.at - a.at).as_secs_f64().max(1e-9);
    let busy = match (a.machine, b.machine) {
        (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => (b1 - b0) as f64 / (t1 - t0) as f64 * 100.0,
        _ => f64::NAN,
    };
    let secs = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (Some(x), Some(y)) => y.saturating_sub(x) as f64 / tck,
        _ => f64::NAN,
    };
    let server = secs(a.server, b.server);
    let me = secs(a.me, b.me);
    let other = (busy - (server + me) / wall / ncpu * 100.0).max(0.0);
    (busy, server, other)
}

// ---------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------

/// Nearest-rank percentile of sorted milliseconds.
fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

// ---------------------------------------------------------------------------
// Phase 2: open Actions
// ---------------------------------------------------------------------------

/// A varied Action: priorities in a fixed mix (5 % urgent, 20 % high, 55 %
/// normal, 20 % low), three title shapes (two thirds say "build"), context
/// blocks on every third.
fn action_body(seq: u64) -> Value {
    let priority = match seq % 20 {
        0 => "urgent",
        1..=4 => "high",
        5..=15 => "normal",
        _ => "low",
    };
    let title = match seq % 3 {
        0 => format!("Deploy build {seq} to production?"),
        1 => format!("Refund order #{seq} (EUR {}.00)?", 10 + seq % 490),
        _ => format!("Promote build {seq} of payments-api to staging?"),
    };
    let mut body = json!({
        "title": title,
        "description": "The release branch passed every check. Approving rolls it out to three \
                        regions over twenty minutes; the previous release stays warm for a rollback.",
        "priority": priority,
        "options": [
            {"id": "approve", "label": "Approve"},
            {"id": "reject", "label": "Reject", "style": "destructive"}
        ],
        "metadata": {"bench": "inbox", "seq": seq},
    });
    if seq.is_multiple_of(3) {
        body["context"] = json!([
            {"type": "text", "text": "14 commits, 2 additive migrations, feature flag checkout_v2 stays off."},
            {"type": "kv", "items": [
                {"key": "service", "value": "payments-api"},
                {"key": "commit", "value": format!("{seq:040x}")},
                {"key": "tests", "value": "4182 passed, 0 failed"}
            ]},
            {"type": "link", "url": format!("https://ci.example.com/builds/{seq}"), "label": "CI run"}
        ]);
    }
    body
}

/// Creates `n` Actions from `clients` concurrent clients; the first `closed`
/// of them (by sequence number) are cancelled right after their create.
async fn create_actions(
    http: &reqwest::Client,
    base: &str,
    key: &str,
    n: u64,
    closed: u64,
    clients: usize,
    deadline: Instant,
) -> Result<f64> {
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let workers = (0..clients.max(1)).map(|_| {
        let next = next.clone();
        async move {
            loop {
                let seq = next.fetch_add(1, Ordering::Relaxed);
                if seq >= n {
                    return Ok::<_, anyhow::Error>(());
                }
                ensure!(
                    Instant::now() < deadline,
                    "creating {n} Actions took longer than --create-deadline"
                );
                let r = http
                    .post(format!("{base}/v1/actions"))
                    .bearer_auth(key)
                    .json(&action_body(seq))
                    .send()
                    .await
                    .context("POST /v1/actions")?;
                let status = r.status();
                if status != StatusCode::CREATED {
                    let text = r.text().await.unwrap_or_default();
                    bail!("POST /v1/actions: HTTP {status}: {text:.300}");
                }
                let created: Value = r.json().await.context("create response")?;
                if seq < closed {
                    let id = created["data"]["id"]
                        .as_str()
                        .or(created["id"].as_str())
                        .ok_or_else(|| anyhow!("no id in the create response"))?;
                    let r = http
                        .post(format!("{base}/v1/actions/{id}/cancel"))
                        .bearer_auth(key)
                        .send()
                        .await
                        .with_context(|| format!("POST /v1/actions/{id}/cancel"))?;
                    let status = r.status();
                    let text = r.text().await.unwrap_or_default();
                    ensure!(
                        status == StatusCode::OK,
                        "POST /v1/actions/{id}/cancel: HTTP {status}: {text:.300}"
                    );
                }
            }
        }
    });
    for r in join_all(workers).await {
        r?;
    }
    Ok(start.elapsed().as_secs_f64())
}

// ---------------------------------------------------------------------------
// Phase 3: sign in like a browser
// ---------------------------------------------------------------------------

/// GET the one-time link, POST its form; returns the `service_session=…` pair.
async fn sign_in(http: &reqwest::Client, base: &str, signin_url: &str) -> Result<String> {
    let path = signin_url
        .find("/app/signin/link/")
        .map(|i| &signin_url[i..])
        .ok_or_else(|| anyhow!("unexpected sign-in URL {signin_url:?}"))?;
    let link = format!("{base}{path}");
    let page = http.get(&link).send().await.context("GET sign-in link")?;
    ensure!(
        page.status() == StatusCode::OK,
        "GET sign-in link: HTTP {}",
        page.status()
    );
    ensure!(
        page.text().await?.contains("<form"),
        "the sign-in confirmation page has no form"
    );
    let done = http
        .post(&link)
        .header("origin", base)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("")
        .send()
        .await
        .context("POST sign-in link")?;
    ensure!(
        done.status() == StatusCode::SEE_OTHER,
        "POST sign-in link: HTTP {}: {:.300}",
        done.status(),
        done.text().await.unwrap_or_default()
    );
    done.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.split(';').next())
        .find(|pair| pair.starts_with("service_session="))
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("no service_session cookie on the sign-in 303"))
}

// ---------------------------------------------------------------------------
// Phase 4: the pages
// ---------------------------------------------------------------------------

struct PageRun {
    name: String,
    path: String,
    /// Request id → client-side ms, of the measured requests.
    client_ms: HashMap<String, f64>,
    /// Inbox rows in the last response, and its size.
    rows: usize,
    bytes: usize,
    window_s: f64,
    server_cpu_s: f64,
    busy_pct: f64,
    other_pct: f64,
}

fn count_rows(html: &str) -> usize {
    html.matches("<li data-id=\"").count()
}

/// One GET with the cookie; returns (client ms, rows, bytes).
async fn get_page(
    http: &reqwest::Client,
    url: &str,
    cookie: &str,
    request_id: &str,
) -> Result<(f64, usize, usize)> {
    let t = Instant::now();
    let r = http
        .get(url)
        .header("cookie", cookie)
        .header("x-request-id", request_id)
        .send()
        .await
        .with_context(|| format!("GET {url}"))?;
    let status = r.status();
    let body = r.text().await.with_context(|| format!("GET {url} body"))?;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    ensure!(
        status == StatusCode::OK,
        "GET {url}: HTTP {status}: {body:.300}"
    );
    let rows = count_rows(&body);
    ensure!(
        rows > 0,
        "GET {url}: no inbox rows in the HTML: {body:.300}"
    );
    Ok((ms, rows, body.len()))
}

#[allow(clippy::too_many_arguments)]
async fn measure_page(
    http: &reqwest::Client,
    base: &str,
    cookie: &str,
    name: &str,
    path: &str,
    args: &Args,
    pid: Option<u32>,
    tck: f64,
    ncpu: f64,
) -> Result<PageRun> {
    let url = format!("{base}{path}");
    for i in 0..args.warmup {
        get_page(http, &url, cookie, &format!("ibw-{name}-{i}")).await?;
    }
    let mut client_ms = HashMap::with_capacity(args.requests);
    let (mut rows, mut bytes) = (0, 0);
    let a = CpuSnap::take(pid);
    for i in 0..args.requests {
        let id = format!("ib-{name}-{i}");
        let (ms, n, b) = get_page(http, &url, cookie, &id).await?;
        client_ms.insert(id, ms);
        (rows, bytes) = (n, b);
    }
    let b = CpuSnap::take(pid);
    let (busy_pct, server_cpu_s, other_pct) = cpu_between(&a, &b, tck, ncpu);
    Ok(PageRun {
        name: name.to_owned(),
        path: path.to_owned(),
        client_ms,
        rows,
        bytes,
        window_s: (b.at - a.at).as_secs_f64(),
        server_cpu_s,
        busy_pct,
        other_pct,
    })
}

// ---------------------------------------------------------------------------
// Phase 5: the access log
// ---------------------------------------------------------------------------

/// Value of `key=` in an access-log line (`key=value`, space-terminated).
fn log_field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let needle = format!("{key}=");
    let mut from = 0;
    while let Some(i) = line[from..].find(&needle) {
        let at = from + i;
        // Only a whole key: start of line or after a space, `{`, `,` or `:`.
        if at == 0 || matches!(line.as_bytes()[at - 1], b' ' | b'{' | b',' | b':') {
            let rest = &line[at + needle.len()..];
            let end = rest.find([' ', '}', ',']).unwrap_or(rest.len());
            return Some(&rest[..end]);
        }
        from = at + needle.len();
    }
    None
}

/// Request id → (http.status, duration_ms) of every `ib-` request in the log.
fn read_access_log(log: &Path) -> Result<HashMap<String, (u16, f64)>> {
    let text =
        std::fs::read_to_string(log).with_context(|| format!("reading {}", log.display()))?;
    let mut out = HashMap::new();
    for line in text.lines().filter(|l| l.contains("request.id=ib-")) {
        let (Some(id), Some(status), Some(ms)) = (
            log_field(line, "request.id"),
            log_field(line, "http.status"),
            log_field(line, "duration_ms"),
        ) else {
            continue;
        };
        if let (Ok(s), Ok(ms)) = (status.parse(), ms.parse()) {
            out.insert(id.to_owned(), (s, ms));
        }
    }
    Ok(out)
}

/// Waits (bounded) until the log holds every measured request id.
fn server_times(log: &Path, runs: &[PageRun]) -> Result<HashMap<String, (u16, f64)>> {
    let want: usize = runs.iter().map(|r| r.client_ms.len()).sum();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found = read_access_log(log)?;
        let have = runs
            .iter()
            .flat_map(|r| r.client_ms.keys())
            .filter(|id| found.contains_key(*id))
            .count();
        if have == want {
            return Ok(found);
        }
        if Instant::now() >= deadline {
            bail!(
                "the access log {} holds {have} of {want} measured requests; is RUST_LOG honoured?",
                log.display()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

struct Stats {
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
    mean: f64,
}

fn stats(mut v: Vec<f64>) -> Stats {
    v.sort_by(f64::total_cmp);
    Stats {
        p50: pct(&v, 50.0),
        p90: pct(&v, 90.0),
        p99: pct(&v, 99.0),
        max: v.last().copied().unwrap_or(f64::NAN),
        mean: v.iter().sum::<f64>() / v.len().max(1) as f64,
    }
}

// ---------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------

fn main() -> Result<()> {
    let args = Args::parse();
    for p in &args.pages {
        ensure!(
            matches!(p.as_str(), "app" | "rows" | "filtered"),
            "unknown page {p:?}; use app, rows, filtered"
        );
    }
    ensure!(
        matches!(args.durability.as_str(), "full" | "normal"),
        "--durability must be full or normal"
    );
    ensure!(args.requests > 0, "--requests must be at least 1");
    ensure!(
        args.hds.exists(),
        "{} not found: run `cargo build --release` first, or pass --hds PATH",
        args.hds.display()
    );
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
    // reqwest is built without a TLS provider; plain http needs none, but the
    // client builder asks for one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // One client thread: the server keeps as much of the 2 cores as possible.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(run(args))
}

async fn run(args: Args) -> Result<()> {
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    let tck = clk_tck();
    let model = cpu_model();
    let a = CpuSnap::take(None);
    tokio::time::sleep(Duration::from_secs_f64(args.busy_sample)).await;
    let (busy_before, _, _) = cpu_between(&a, &CpuSnap::take(None), tck, ncpu as f64);

    let tmp = match &args.data_parent {
        Some(p) => tempfile::Builder::new()
            .prefix("hds-inbox-bench-")
            .tempdir_in(p)?,
        None => tempfile::Builder::new()
            .prefix("hds-inbox-bench-")
            .tempdir()?,
    };
    let dir = tmp.path().to_owned();
    let log = args
        .server_log
        .clone()
        .unwrap_or_else(|| dir.join("server.log"));
    let (source_key, signin_url) = hds_init(&args.hds, &dir)?;
    // The port is released before the server binds it; retry if someone took it.
    let mut started = None;
    for attempt in 1..=3 {
        match start_server(&args, &dir, &log, free_port()?) {
            Ok(s) => {
                started = Some(s);
                break;
            }
            Err(e) if attempt < 3 => eprintln!("server start failed ({e:#}); retrying"),
            Err(e) => return Err(e),
        }
    }
    let (mut server, addr) = started.ok_or_else(|| anyhow!("server did not start"))?;
    let pid = Some(server.child.id());
    let base = format!("http://{addr}");
    eprintln!(
        "started {} (pid {}) on {addr}; data dir {}; access log {}",
        args.hds.display(),
        server.child.id(),
        dir.display(),
        log.display()
    );
    eprintln!(
        "machine: {ncpu} cpu, {model}, busy {busy_before:.0}% before; durability {}",
        args.durability
    );

    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(args.timeout))
        .pool_max_idle_per_host(args.clients.max(1))
        .build()?;

    eprintln!(
        "creating {} open (+ {} closed) Actions with {} clients ...",
        args.actions, args.closed, args.clients
    );
    let deadline = Instant::now() + Duration::from_secs(args.create_deadline);
    let total = args.actions + args.closed;
    let create_s = create_actions(
        &http,
        &base,
        &source_key,
        total,
        args.closed,
        args.clients,
        deadline,
    )
    .await?;
    let create_rate = total as f64 / create_s.max(1e-9);
    eprintln!("  {create_s:.1} s, {create_rate:.0}/s");

    let cookie = sign_in(&http, &base, &signin_url).await?;
    eprintln!("signed in as the admin");

    let mut runs = Vec::new();
    for name in &args.pages {
        let path = match name.as_str() {
            "app" => "/app".to_owned(),
            "rows" => "/app/inbox/rows".to_owned(),
            _ => format!("/app?{}", args.filter),
        };
        eprintln!(
            "GET {path}: {} warm-up + {} measured ...",
            args.warmup, args.requests
        );
        let r = measure_page(
            &http,
            &base,
            &cookie,
            name,
            &path,
            &args,
            pid,
            tck,
            ncpu as f64,
        )
        .await?;
        runs.push(r);
    }
    let server_log = server_times(&log, &runs)?;
    let peak_rss_kib = pid.and_then(|p| {
        std::fs::read_to_string(format!("/proc/{p}/status"))
            .ok()?
            .lines()
            .find(|l| l.starts_with("VmHWM:"))?
            .split_whitespace()
            .nth(1)?
            .parse::<u64>()
            .ok()
    });
    server.stop();

    // ---- report ----
    let mut pages_json = Vec::new();
    let mut table = String::new();
    use std::fmt::Write as _;
    let mut all_pass = true;
    for r in &runs {
        let mut srv = Vec::with_capacity(r.client_ms.len());
        for id in r.client_ms.keys() {
            let (status, ms) = server_log[id];
            ensure!(status == 200, "{id}: the access log says HTTP {status}");
            srv.push(ms);
        }
        let s = stats(srv);
        let c = stats(r.client_ms.values().copied().collect());
        let cpu_us = r.server_cpu_s * 1e6 / r.client_ms.len() as f64;
        let pass = s.p99 < args.target_p99_ms;
        all_pass &= pass;
        let _ = writeln!(
            table,
            "{:<34} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>7.2} | {:>7.2} {:>7.2} | {:>6.0} {:>4} {:>7} {:>5.0}% [{}]",
            format!("GET {}", r.path),
            s.p50,
            s.p90,
            s.p99,
            s.max,
            s.mean,
            c.p50,
            c.p99,
            cpu_us,
            r.rows,
            r.bytes,
            r.other_pct,
            if pass { "PASS" } else { "MISS" },
        );
        pages_json.push(json!({
            "page": r.name,
            "path": r.path,
            "requests": r.client_ms.len(),
            "rows": r.rows,
            "body_bytes": r.bytes,
            "server_ms": {"p50": r2(s.p50), "p90": r2(s.p90), "p99": r2(s.p99), "max": r2(s.max), "mean": r2(s.mean)},
            "client_ms": {"p50": r2(c.p50), "p90": r2(c.p90), "p99": r2(c.p99), "max": r2(c.max)},
            "server_cpu_us_per_req": r2(cpu_us),
            "window_s": r2(r.window_s),
            "machine_busy_pct": r2(r.busy_pct),
            "other_tenants_pct": r2(r.other_pct),
            "p99_target_ms": args.target_p99_ms,
            "pass": pass,
        }));
    }
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!("==================== hds inbox bench ====================");
    println!("machine   {ncpu} cpu ({model}), busy {busy_before:.0}% of all cores before the run");
    println!(
        "server    {} (bench built {profile}), durability {}, rate-limit 0, peak RSS {} KiB",
        args.hds.display(),
        args.durability,
        peak_rss_kib.map_or("?".into(), |v| v.to_string())
    );
    println!(
        "data      {} open + {} closed Actions created in {create_s:.1} s ({create_rate:.0}/s, {} clients)",
        args.actions, args.closed, args.clients
    );
    println!(
        "method    {} sequential requests per page after {} warm-up, 1 client thread, keep-alive; \
         server = access-log duration_ms",
        args.requests, args.warmup
    );
    println!(
        "{:<34} {:>7} {:>7} {:>7} {:>7} {:>7} | {:>7} {:>7} | {:>6} {:>4} {:>7} {:>6}",
        "page (server-side ms)",
        "p50",
        "p90",
        "p99",
        "max",
        "mean",
        "cli p50",
        "cli p99",
        "cpu µs",
        "rows",
        "bytes",
        "others"
    );
    print!("{table}");
    println!(
        "target    server-side p99 < {} ms on every page: {}",
        args.target_p99_ms,
        if all_pass { "PASS" } else { "MISS" }
    );
    println!("==========================================================");
    let summary = json!({
        "bench": "hds-inbox",
        "machine": {"nproc": ncpu, "cpu": model, "busy_pct_before": r2(busy_before)},
        "build_profile": profile,
        "hds": args.hds.display().to_string(),
        "durability": args.durability,
        "open_actions": args.actions,
        "closed_actions": args.closed,
        "create": {"clients": args.clients, "seconds": r2(create_s), "per_s": r2(create_rate)},
        "requests_per_page": args.requests,
        "warmup_per_page": args.warmup,
        "server_peak_rss_kib": peak_rss_kib,
        "pages": pages_json,
        "pass": all_pass,
    });
    println!("{summary}");

    if args.keep_data {
        let kept = tmp.keep();
        eprintln!("kept data dir {}", kept.display());
    }
    Ok(())
}
