//! Rerunnable notifications benchmark for `hds` (issue 11; figures and method
//! in docs/benchmarks.md, "Notifications"):
//!
//! ```text
//! cargo build --release --bins --example notify_bench
//! target/release/examples/notify_bench [--help]
//! ```
//!
//! Before starting the server it runs `hds init` on a fresh data dir and adds,
//! straight through the library, N reviewers to the workspace (default 200)
//! and a token for the first of them, "me". Then it starts `hds serve
//! --rate-limit 0 --durability full` and measures:
//!
//! 1. **fan-out**: creates/s with the workspace policy `new_action:
//!    all_reviewers` vs `none` (set with `PATCH
//!    /v1/workspaces/notification-policy`), closed loop at each concurrency,
//!    arms alternated none, all, all, none, … over `--rounds`; the ratio of the
//!    medians, and the server's CPU per create from /proc/<pid>/stat. Then a
//!    small phase of restricted Actions (5 listed reviewers, a personal row
//!    each) against workspace-wide ones, alternated, for their cost per create.
//! 2. **list**: "me" gets `--notifications` (default 100,000) notifications:
//!    creates at full speed (each an `action.new` broadcast) with every
//!    `--assign-every`-th Action assigned to "me" by the owner (a personal
//!    `action.assigned` row); a read-all halfway; then 1,000 reads one by one
//!    among the newest. Then, sequentially with "me"'s token, `--reads`
//!    requests each of: the first page, a deep page (`before=` ~50,000 in), the
//!    first unread_only page, and `GET /v1/notifications/summary`.
//! 3. **SQL**: after the server stopped, the data dir is opened read-only and
//!    `hds::store::notifications::unread` (the bell's count) and `list` are
//!    timed in-process; `EXPLAIN QUERY PLAN` of each of their statements for
//!    "me" is printed.
//!
//! The load generator is one thread with a raw HTTP/1.1 keep-alive client (as
//! examples/bench.rs), so server and client share the machine's cores.
// Benchmarks run against a real server in real time: waiting is measured, not tested.
#![allow(clippy::disallowed_methods)]

#[allow(dead_code)] // each example uses a part of it
mod common;

use std::cell::Cell;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::Parser;
use futures::future::join_all;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::time::timeout;

use common::{Server, clk_tck, cpu_model, hds_init_json, start_server};

#[derive(Parser, Debug)]
#[command(
    name = "notify_bench",
    about = "Notifications benchmark for hds: fan-out cost on creates, GET /v1/notifications at 100k, the bell's count."
)]
struct Args {
    /// The hds binary.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/target/release/hds"))]
    hds: PathBuf,
    #[arg(long, default_value = "full")]
    durability: String,
    /// Reviewers in the workspace ("me" is the first).
    #[arg(long, default_value_t = 200)]
    reviewers: usize,
    /// Concurrency levels of the fan-out phase.
    #[arg(long, value_delimiter = ',', default_value = "16,64")]
    concurrency: Vec<usize>,
    /// Rounds per concurrency: each runs two windows per arm (none, all, all, none).
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// Measured seconds per window.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Warm-up seconds before each window (not counted).
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Creates per arm of the restricted vs workspace-wide phase (4 arms).
    #[arg(long, default_value_t = 1500)]
    restricted: usize,
    /// Notifications "me" holds before the reads are measured.
    #[arg(long, default_value_t = 100_000)]
    notifications: usize,
    /// Every N-th Action of the fill is assigned to "me" (a personal row).
    #[arg(long, default_value_t = 30)]
    assign_every: usize,
    /// Sequential requests per measured read.
    #[arg(long, default_value_t = 1000)]
    reads: usize,
    /// In-process iterations of the unread-count query.
    #[arg(long, default_value_t = 10_000)]
    sql_iters: usize,
    /// Keep the data dir (its path is printed).
    #[arg(long)]
    keep_data: bool,
}

// ---------------------------------------------------------------------------
// Minimal HTTP/1.1 keep-alive client on a raw tokio TcpStream (no io-util).
// ---------------------------------------------------------------------------

struct Resp {
    status: u16,
    body: Vec<u8>,
    close: bool,
}

impl Resp {
    fn json(&self) -> Result<Value> {
        serde_json::from_slice(&self.body).context("response body is not JSON")
    }
    fn snippet(&self) -> String {
        let s = String::from_utf8_lossy(&self.body);
        let s: String = s.chars().take(300).collect();
        format!("HTTP {} {}", self.status, s)
    }
}

struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
    /// Bytes of `buf` that hold data.
    len: usize,
}

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

impl Conn {
    async fn connect(addr: SocketAddr) -> Result<Self> {
        let s = timeout(CONNECT_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| anyhow!("connect to {addr} timed out"))?
            .with_context(|| format!("connect to {addr}"))?;
        s.set_nodelay(true)?;
        Ok(Self {
            s,
            buf: vec![0; 16 * 1024],
            len: 0,
        })
    }

    async fn send(&mut self, mut data: &[u8]) -> Result<()> {
        while !data.is_empty() {
            match self.s.try_write(data) {
                Ok(n) => data = &data[n..],
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    self.s.writable().await?;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Reads at least one more byte into the buffer.
    async fn fill(&mut self) -> Result<()> {
        if self.buf.len() - self.len < 4096 {
            let grow = self.buf.len().max(16 * 1024);
            self.buf.resize(self.buf.len() + grow, 0);
        }
        loop {
            match self.s.try_read(&mut self.buf[self.len..]) {
                Ok(0) => bail!("connection closed by the server"),
                Ok(n) => {
                    self.len += n;
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    self.s.readable().await?;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn consume(&mut self, n: usize) {
        self.buf.copy_within(n..self.len, 0);
        self.len -= n;
    }

    /// Reads one response: status line, headers, Content-Length or chunked body.
    async fn recv(&mut self) -> Result<Resp> {
        let head_end = loop {
            if let Some(p) = find(&self.buf[..self.len], b"\r\n\r\n") {
                break p + 4;
            }
            if self.len > 64 * 1024 {
                bail!("response head larger than 64 KiB");
            }
            self.fill().await?;
        };
        let head = std::str::from_utf8(&self.buf[..head_end]).context("non-UTF-8 response head")?;
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or("");
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| anyhow!("bad status line {status_line:?}"))?;
        let mut content_length = None;
        let mut chunked = false;
        let mut close = false;
        for l in lines {
            let Some((k, v)) = l.split_once(':') else {
                continue;
            };
            let v = v.trim();
            if k.eq_ignore_ascii_case("content-length") {
                content_length = Some(v.parse::<usize>().context("bad content-length")?);
            } else if k.eq_ignore_ascii_case("transfer-encoding") {
                chunked = v.to_ascii_lowercase().contains("chunked");
            } else if k.eq_ignore_ascii_case("connection") {
                close = v.eq_ignore_ascii_case("close");
            }
        }
        self.consume(head_end);
        let body = if chunked {
            self.read_chunked().await?
        } else {
            let n = content_length.unwrap_or(0);
            while self.len < n {
                self.fill().await?;
            }
            let b = self.buf[..n].to_vec();
            self.consume(n);
            b
        };
        Ok(Resp {
            status,
            body,
            close,
        })
    }

    async fn read_chunked(&mut self) -> Result<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(p) = find(&self.buf[..self.len], b"\r\n") {
                    break p;
                }
                self.fill().await?;
            };
            let size_text = std::str::from_utf8(&self.buf[..line_end])?;
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                .context("bad chunk size")?;
            self.consume(line_end + 2);
            if size == 0 {
                // Trailers (none expected) end with an empty line.
                loop {
                    if let Some(p) = find(&self.buf[..self.len], b"\r\n") {
                        self.consume(p + 2);
                        if p == 0 {
                            return Ok(body);
                        }
                        continue;
                    }
                    self.fill().await?;
                }
            }
            while self.len < size + 2 {
                self.fill().await?;
            }
            body.extend_from_slice(&self.buf[..size]);
            self.consume(size + 2);
        }
    }

    async fn request(&mut self, req: &[u8]) -> Result<Resp> {
        self.send(req).await?;
        self.recv().await
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// One request with `Content-Length`, ready to write.
fn encode(method: &str, path: &str, host: &str, token: &str, body: Option<&[u8]>) -> Vec<u8> {
    encode_with(method, path, host, token, "", body)
}

/// `encode` with extra header lines (`extra` is empty or ends in CRLF).
fn encode_with(
    method: &str,
    path: &str,
    host: &str,
    token: &str,
    extra: &str,
    body: Option<&[u8]>,
) -> Vec<u8> {
    let mut r = Vec::with_capacity(256 + extra.len() + body.map_or(0, <[u8]>::len));
    r.extend_from_slice(
        format!(
            "{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n{extra}"
        )
        .as_bytes(),
    );
    match body {
        Some(b) => {
            r.extend_from_slice(
                format!(
                    "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                    b.len()
                )
                .as_bytes(),
            );
            r.extend_from_slice(b);
        }
        None => r.extend_from_slice(b"\r\n"),
    }
    r
}

// ---------------------------------------------------------------------------
// Setup, server, measuring helpers
// ---------------------------------------------------------------------------

struct Setup {
    ws: String,
    owner_token: String,
    source_key: String,
    me_id: String,
    me_token: String,
    emails: Vec<String>,
}

/// `hds init`, then the reviewers (and "me"'s token) straight in the store:
/// a benchmark's setup, much faster than inviting 200 people through the API.
fn setup(args: &Args, dir: &Path) -> Result<Setup> {
    let init = hds_init_json(&args.hds, dir)?;
    let s = |k: &str| {
        init[k]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| anyhow!("no {k} in hds init output"))
    };
    let ws = s("workspace_id")?;
    let mut conn = hds::store::db::open_cli_connection(&dir.join("hds.db"))?;
    let now = hds::domain::time::format(hds::clock::Clock::system().now());
    let tx = conn.transaction()?;
    let mut emails = Vec::new();
    let mut me = None;
    // "me" (i = 0) joins only before the list phase: the fan-out phase's
    // broadcasts, made before they joined, are not theirs.
    for i in 0..=args.reviewers.max(6) {
        let email = format!("reviewer{i:03}@bench.example");
        let u = hds::store::users::create(&tx, &email, Some(&format!("Reviewer {i}")), &now)
            .map_err(|e| anyhow!("creating {email}: {e:?}"))?;
        if i > 0 {
            hds::store::workspaces::add_member(
                &tx,
                &ws,
                &u.id,
                hds::domain::access::Role::Reviewer,
                &now,
            )
            .map_err(|e| anyhow!("adding {email}: {e:?}"))?;
        }
        if i == 0 {
            let (tok, _) = hds::store::users::issue_token(&tx, &u.id, "notify_bench", None, &now)
                .map_err(|e| anyhow!("token: {e:?}"))?;
            me = Some((u.id.clone(), tok));
        }
        emails.push(email);
    }
    tx.commit()?;
    let (me_id, me_token) = me.ok_or_else(|| anyhow!("no reviewer"))?;
    Ok(Setup {
        ws,
        owner_token: s("user_token")?,
        source_key: s("source_key_live")?,
        me_id,
        me_token,
        emails,
    })
}

fn serve(args: &Args, dir: &Path) -> Result<(Server, SocketAddr)> {
    let mut cmd = Command::new(&args.hds);
    cmd.args(["serve", "--data-dir"])
        .arg(dir)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--rate-limit",
            "0",
            "--durability",
            &args.durability,
        ])
        .env("RUST_LOG", "off")
        .stderr(Stdio::null());
    start_server(cmd)
}

/// CPU seconds (user + system, all threads) a process has used.
fn cpu_secs(pid: u32) -> f64 {
    let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return f64::NAN;
    };
    let rest = s.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let jiffies = |i: usize| {
        f.get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    (jiffies(11) + jiffies(12)) / clk_tck()
}

/// Nearest-rank percentile of sorted values.
fn pct<T: Copy + Into<f64>>(sorted: &[T], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].into()
}

fn us(d: Duration) -> u32 {
    d.as_micros().min(u32::MAX as u128) as u32
}

fn r2(x: f64) -> Value {
    common::r2(x)
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One request on a fresh connection; fails unless it answers `expect`.
async fn once(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: &str,
    body: Option<Value>,
    expect: u16,
) -> Result<Value> {
    let mut c = Conn::connect(addr).await?;
    let b = body.map(|b| b.to_string().into_bytes());
    let r = c
        .request(&encode(
            method,
            path,
            &addr.to_string(),
            token,
            b.as_deref(),
        ))
        .await?;
    if r.status != expect {
        bail!("{method} {path}: expected {expect}, got {}", r.snippet());
    }
    if r.body.is_empty() {
        Ok(Value::Null)
    } else {
        r.json()
    }
}

async fn set_policy(addr: SocketAddr, owner: &str, new_action: &str) -> Result<()> {
    once(
        addr,
        "PATCH",
        "/v1/workspaces/notification-policy",
        owner,
        Some(json!({ "new_action": new_action })),
        200,
    )
    .await
    .map(|_| ())
}

/// A ~1 KB Action (as examples/bench.rs), restricted to `reviewers` when given.
fn action_body(seq: u64, reviewers: Option<&[String]>) -> Vec<u8> {
    let mut b = json!({
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
            {"type": "link", "url": format!("https://ci.example.com/builds/{seq}"), "label": "CI run"}
        ],
        "metadata": {"build": seq, "pipeline": "payments", "region_count": 3}
    });
    if let Some(r) = reviewers {
        b["visibility"] = json!("restricted");
        b["reviewer_emails"] = json!(r);
    }
    b.to_string().into_bytes()
}

/// What a load produced.
#[derive(Default)]
struct Load {
    ok: u64,
    errors: u64,
    first_error: Option<String>,
    lat_us: Vec<u32>,
    window_s: f64,
    cpu_s: f64,
}

impl Load {
    fn per_s(&self) -> f64 {
        self.ok as f64 / self.window_s
    }
    fn cpu_us(&self) -> f64 {
        self.cpu_s * 1e6 / self.ok as f64
    }
    fn p(&mut self, q: f64) -> f64 {
        self.lat_us.sort_unstable();
        pct(&self.lat_us, q) / 1000.0
    }
}

/// What one create worker does after each 201 (the fill assigns some).
type After<'a> = &'a dyn Fn(u64, &Resp) -> Option<(Vec<u8>, u16)>;

/// `c` keep-alive connections each looping requests from `make` (a closed
/// loop). Stops at `end` (a window: only answers inside [from, end) count) or
/// once `n` requests were issued in all.
#[allow(clippy::too_many_arguments)]
async fn closed_loop(
    addr: SocketAddr,
    c: usize,
    make: &dyn Fn(u64) -> Vec<u8>,
    expect: u16,
    warmup: f64,
    window: Option<f64>,
    n: Option<u64>,
    after: Option<After<'_>>,
    pid: u32,
) -> Result<Load> {
    let mut conns = Vec::new();
    for _ in 0..c {
        conns.push(Conn::connect(addr).await?);
    }
    let next = Rc::new(Cell::new(0u64));
    let start = Instant::now();
    let from = start + Duration::from_secs_f64(warmup);
    let end = window.map(|w| from + Duration::from_secs_f64(w));
    let cpu = Rc::new(Cell::new((f64::NAN, f64::NAN)));
    let sampler = {
        let cpu = cpu.clone();
        async move {
            if let Some(end) = end {
                tokio::time::sleep_until(from.into()).await;
                let a = cpu_secs(pid);
                tokio::time::sleep_until(end.into()).await;
                cpu.set((a, cpu_secs(pid)));
            }
        }
    };
    let cpu0 = cpu_secs(pid);
    let workers = conns.into_iter().map(|mut conn| {
        let next = next.clone();
        async move {
            let mut out = Load::default();
            loop {
                let now = Instant::now();
                if end.is_some_and(|e| now >= e) {
                    break;
                }
                let seq = next.get() + 1;
                if n.is_some_and(|n| seq > n) {
                    break;
                }
                next.set(seq);
                let req = make(seq);
                let t0 = Instant::now();
                let r = timeout(Duration::from_secs(30), conn.request(&req)).await;
                let done = Instant::now();
                let counted = done >= from && end.is_none_or(|e| done < e);
                let resp = match r {
                    Ok(Ok(resp)) => resp,
                    Ok(Err(e)) => return Err(anyhow!("request {seq}: {e:#}")),
                    Err(_) => return Err(anyhow!("request {seq}: no answer in 30 s")),
                };
                if resp.status != expect {
                    out.errors += 1;
                    out.first_error.get_or_insert_with(|| resp.snippet());
                } else if counted {
                    out.ok += 1;
                    out.lat_us.push(us(done - t0));
                }
                if resp.status == expect
                    && let Some((req2, expect2)) = after.and_then(|f| f(seq, &resp))
                {
                    let r2 = conn.request(&req2).await?;
                    if r2.status != expect2 {
                        out.errors += 1;
                        out.first_error.get_or_insert_with(|| r2.snippet());
                    }
                }
                if resp.close {
                    conn = Conn::connect(addr).await?;
                }
            }
            Ok::<_, anyhow::Error>(out)
        }
    });
    let (outs, ()) = futures::join!(join_all(workers), sampler);
    let mut all = Load::default();
    for o in outs {
        let o = o?;
        all.ok += o.ok;
        all.errors += o.errors;
        if all.first_error.is_none() {
            all.first_error = o.first_error;
        }
        all.lat_us.extend(o.lat_us);
    }
    match end {
        Some(_) => {
            let (a, b) = cpu.get();
            all.window_s = window.unwrap_or(f64::NAN);
            all.cpu_s = b - a;
        }
        None => {
            all.window_s = (Instant::now() - from).as_secs_f64();
            all.cpu_s = cpu_secs(pid) - cpu0;
        }
    }
    Ok(all)
}

/// `n` sequential requests on one connection; latencies in µs, sorted, and
/// the server's CPU per request.
async fn sequential(
    addr: SocketAddr,
    req: &[u8],
    n: usize,
    pid: u32,
) -> Result<(Vec<u32>, f64, Value)> {
    let mut conn = Conn::connect(addr).await?;
    // One warm-up request, not counted; its body is returned for a look.
    let first = conn.request(req).await?;
    if first.status != 200 {
        bail!("{}", first.snippet());
    }
    let cpu0 = cpu_secs(pid);
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = Instant::now();
        let r = conn.request(req).await?;
        lat.push(us(t0.elapsed()));
        if r.status != 200 {
            bail!("{}", r.snippet());
        }
    }
    let cpu = (cpu_secs(pid) - cpu0) * 1e6 / n as f64;
    lat.sort_unstable();
    Ok((lat, cpu, first.json()?))
}

fn lat_json(lat: &[u32], cpu_us: f64) -> Value {
    json!({
        "n": lat.len(),
        "p50_ms": r2(pct(lat, 50.0) / 1000.0),
        "p99_ms": r2(pct(lat, 99.0) / 1000.0),
        "max_ms": r2(pct(lat, 100.0) / 1000.0),
        "server_cpu_us_per_req": r2(cpu_us),
    })
}

// ---------------------------------------------------------------------------
// SQL, in-process
// ---------------------------------------------------------------------------

fn plan(c: &rusqlite::Connection, sql: &str, params: &[&dyn rusqlite::ToSql]) -> Result<String> {
    let mut st = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
    let rows = st.query_map(params, |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, String>(3)?,
        ))
    })?;
    let mut depth: Vec<(i64, usize)> = Vec::new();
    let mut out = String::new();
    for row in rows {
        let (id, parent, detail) = row?;
        let d = depth
            .iter()
            .find(|(i, _)| *i == parent)
            .map_or(0, |(_, d)| d + 1);
        depth.push((id, d));
        out.push_str(&format!("{}{}\n", "  ".repeat(d + 1), detail));
    }
    Ok(out)
}

/// Times `f` `n` times; sorted nanoseconds.
fn time_n(n: usize, mut f: impl FnMut() -> Result<()>) -> Result<Vec<u64>> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = Instant::now();
        f()?;
        v.push(t0.elapsed().as_nanos() as u64);
    }
    v.sort_unstable();
    Ok(v)
}

fn ns_json(v: &[u64]) -> Value {
    let f: Vec<f64> = v.iter().map(|&x| x as f64 / 1000.0).collect();
    json!({
        "n": v.len(),
        "p50_us": r2(pct(&f, 50.0)),
        "p99_us": r2(pct(&f, 99.0)),
        "max_us": r2(pct(&f, 100.0)),
        "mean_us": r2(f.iter().sum::<f64>() / f.len().max(1) as f64),
    })
}

// ---------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------

async fn run(args: Args) -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().to_owned();
    let t_setup = Instant::now();
    let su = setup(&args, &dir)?;
    let setup_s = t_setup.elapsed().as_secs_f64();
    eprintln!(
        "setup: {} reviewers in {:.2} s; data dir {}",
        su.emails.len(),
        setup_s,
        dir.display()
    );
    let (mut server, addr) = serve(&args, &dir)?;
    let pid = server.child.id();
    let host = addr.to_string();
    let mut report = json!({
        "bench": "notify",
        "machine": {"nproc": std::thread::available_parallelism().map_or(0, |n| n.get()), "cpu": cpu_model()},
        "durability": args.durability,
        "reviewers": su.emails.len(),
    });

    // ---- 1. fan-out: all_reviewers vs none ----
    let make_ws = |seq: u64| {
        encode(
            "POST",
            "/v1/actions",
            &host,
            &su.source_key,
            Some(&action_body(seq, None)),
        )
    };
    let mut windows: Vec<(usize, &str, Load)> = Vec::new();
    for &c in &args.concurrency {
        for round in 0..args.rounds.max(1) {
            // none, all, all, none: each arm sees both ends of the round.
            for arm in ["none", "all_reviewers", "all_reviewers", "none"] {
                set_policy(addr, &su.owner_token, arm).await?;
                let mut l = closed_loop(
                    addr,
                    c,
                    &make_ws,
                    201,
                    args.warmup,
                    Some(args.duration),
                    None,
                    None,
                    pid,
                )
                .await?;
                eprintln!(
                    "fan-out c={c} round {round} {arm:<13} {:>6.0}/s  p50 {:.2} ms  p99 {:.2} ms  server {:.0} µs/create  errors {}{}",
                    l.per_s(),
                    l.p(50.0),
                    l.p(99.0),
                    l.cpu_us(),
                    l.errors,
                    l.first_error
                        .as_deref()
                        .map(|e| format!(" ({e})"))
                        .unwrap_or_default()
                );
                windows.push((c, arm, l));
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        }
    }
    let mut fanout = Vec::new();
    for &c in &args.concurrency {
        let arm = |a: &str, f: &dyn Fn(&Load) -> f64| {
            median(
                windows
                    .iter()
                    .filter(|(wc, wa, _)| *wc == c && *wa == a)
                    .map(|(_, _, l)| f(l))
                    .collect(),
            )
        };
        let none = arm("none", &|l| l.per_s());
        let all = arm("all_reviewers", &|l| l.per_s());
        fanout.push(json!({
            "concurrency": c,
            "windows_per_arm": args.rounds.max(1) * 2,
            "none_per_s": r2(none),
            "all_reviewers_per_s": r2(all),
            "ratio": r2(all / none),
            "none_server_cpu_us_per_create": r2(arm("none", &|l| l.cpu_us())),
            "all_server_cpu_us_per_create": r2(arm("all_reviewers", &|l| l.cpu_us())),
            "none_p99_ms": r2(arm("none", &|l| { let mut v = l.lat_us.clone(); v.sort_unstable(); pct(&v, 99.0) / 1000.0 })),
            "all_p99_ms": r2(arm("all_reviewers", &|l| { let mut v = l.lat_us.clone(); v.sort_unstable(); pct(&v, 99.0) / 1000.0 })),
            "errors": windows.iter().filter(|(wc, _, _)| *wc == c).map(|(_, _, l)| l.errors).sum::<u64>(),
        }));
    }
    report["fanout"] = json!(fanout);
    eprintln!("fan-out: {}", report["fanout"]);

    // ---- 1b. restricted Actions (5 listed reviewers, not "me") vs workspace-wide ----
    set_policy(addr, &su.owner_token, "all_reviewers").await?;
    let listed: Vec<String> = su.emails[1..6].to_vec(); // not "me"
    let make_restricted = |seq: u64| {
        encode(
            "POST",
            "/v1/actions",
            &host,
            &su.source_key,
            Some(&action_body(seq, Some(&listed))),
        )
    };
    let c16 = args.concurrency.first().copied().unwrap_or(16);
    let mut restricted_arms: Vec<(&str, Load)> = Vec::new();
    for (kind, make) in [
        ("workspace", &make_ws as &dyn Fn(u64) -> Vec<u8>),
        ("restricted", &make_restricted),
        ("restricted", &make_restricted),
        ("workspace", &make_ws),
    ] {
        let l = closed_loop(
            addr,
            c16,
            make,
            201,
            0.0,
            None,
            Some(args.restricted as u64),
            None,
            pid,
        )
        .await?;
        eprintln!(
            "restricted phase c={c16} {kind:<10} {:>6.0}/s  server {:.0} µs/create  errors {}{}",
            l.per_s(),
            l.cpu_us(),
            l.errors,
            l.first_error
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        );
        restricted_arms.push((kind, l));
    }
    let mean = |k: &str, f: &dyn Fn(&Load) -> f64| {
        let v: Vec<f64> = restricted_arms
            .iter()
            .filter(|(a, _)| *a == k)
            .map(|(_, l)| f(l))
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    report["restricted"] = json!({
        "concurrency": c16,
        "creates_per_arm": args.restricted,
        "listed_reviewers": listed.len(),
        "workspace_per_s": r2(mean("workspace", &|l| l.per_s())),
        "restricted_per_s": r2(mean("restricted", &|l| l.per_s())),
        "workspace_server_cpu_us_per_create": r2(mean("workspace", &|l| l.cpu_us())),
        "restricted_server_cpu_us_per_create": r2(mean("restricted", &|l| l.cpu_us())),
        "errors": restricted_arms.iter().map(|(_, l)| l.errors).sum::<u64>(),
    });
    eprintln!("restricted: {}", report["restricted"]);

    // ---- 2. fill "me" to --notifications, then read ----
    {
        // "me" joins now (a second writer on the WAL file, once).
        let c = hds::store::db::open_cli_connection(&dir.join("hds.db"))?;
        let now = hds::domain::time::format(hds::clock::Clock::system().now());
        hds::store::workspaces::add_member(
            &c,
            &su.ws,
            &su.me_id,
            hds::domain::access::Role::Reviewer,
            &now,
        )
        .map_err(|e| anyhow!("adding \"me\": {e:?}"))?;
    }
    let summary_req = encode(
        "GET",
        "/v1/notifications/summary",
        &host,
        &su.me_token,
        None,
    );
    let unread_now = |v: &Value| v["unread"].as_i64().unwrap_or(0);
    let s0 = once(
        addr,
        "GET",
        "/v1/notifications/summary",
        &su.me_token,
        None,
        200,
    )
    .await?;
    let have = unread_now(&s0) as usize;
    let k = args.assign_every.max(1) as u64;
    let rest = args.notifications.saturating_sub(have) as u64;
    // Each create is one broadcast; every k-th also an assignment: n + n/k = rest.
    let creates = rest * k / (k + 1);
    eprintln!(
        "fill: \"me\" has {have}; {creates} creates, every {k}th assigned to \"me\", read-all halfway ..."
    );
    let assign_body = json!({ "assignee_user_id": su.me_id })
        .to_string()
        .into_bytes();
    let assign_after = |seq: u64, r: &Resp| {
        if !seq.is_multiple_of(k) {
            return None;
        }
        let id = r.json().ok()?["data"]["id"].as_str()?.to_owned();
        Some((
            encode(
                "PATCH",
                &format!("/v1/actions/{id}/assignment"),
                &host,
                &su.owner_token,
                Some(&assign_body),
            ),
            200,
        ))
    };
    let t_fill = Instant::now();
    let c_fill = args.concurrency.last().copied().unwrap_or(64);
    let half = creates / 2;
    let mut fill_errors = 0;
    let mut fill_ok = 0;
    for (i, n) in [half, creates - half].into_iter().enumerate() {
        // Offsets keep the build numbers of the halves apart.
        let make = |seq: u64| make_ws(seq + 1_000_000_000 * (i as u64 + 1));
        let l = closed_loop(
            addr,
            c_fill,
            &make,
            201,
            0.0,
            None,
            Some(n),
            Some(&assign_after),
            pid,
        )
        .await?;
        eprintln!(
            "  fill half {}: {} creates at {:.0}/s, errors {}{}",
            i + 1,
            l.ok,
            l.per_s(),
            l.errors,
            l.first_error
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        );
        fill_errors += l.errors;
        fill_ok += l.ok;
        if i == 0 {
            let r = once(
                addr,
                "POST",
                "/v1/notifications/read-all",
                &su.me_token,
                None,
                200,
            )
            .await?;
            eprintln!("  read-all: {r}");
        }
    }
    let fill_s = t_fill.elapsed().as_secs_f64();
    // Reads one by one: every other of the newest 2,000 unread.
    let mut ids = Vec::new();
    let mut before: Option<String> = None;
    while ids.len() < 2000 {
        let path = match &before {
            None => "/v1/notifications?unread_only=true&limit=200".to_owned(),
            Some(b) => format!("/v1/notifications?unread_only=true&limit=200&before={b}"),
        };
        let v = once(addr, "GET", &path, &su.me_token, None, 200).await?;
        let page: Vec<String> = v["data"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|n| n["id"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let Some(last) = page.last().cloned() else {
            break;
        };
        ids.extend(page);
        before = Some(last);
    }
    let mut read_conn = Conn::connect(addr).await?;
    let mut read_one = Vec::new();
    for id in ids.iter().step_by(2) {
        let t0 = Instant::now();
        let r = read_conn
            .request(&encode(
                "POST",
                &format!("/v1/notifications/{id}/read"),
                &host,
                &su.me_token,
                None,
            ))
            .await?;
        read_one.push(us(t0.elapsed()));
        if r.status != 200 {
            bail!("read one: {}", r.snippet());
        }
    }
    read_one.sort_unstable();
    let s1 = once(
        addr,
        "GET",
        "/v1/notifications/summary",
        &su.me_token,
        None,
        200,
    )
    .await?;
    eprintln!("  summary after the reads: {s1}");

    // The deep cursor: walk pages of 200 to ~half of "me"'s notifications.
    let t_walk = Instant::now();
    let mut seen = 0usize;
    let mut cursor: Option<String> = None;
    let mut walk_pages = 0;
    let mut walk_conn = Conn::connect(addr).await?;
    while seen < args.notifications / 2 {
        let path = match &cursor {
            None => "/v1/notifications?limit=200".to_owned(),
            Some(b) => format!("/v1/notifications?limit=200&before={b}"),
        };
        let r = walk_conn
            .request(&encode("GET", &path, &host, &su.me_token, None))
            .await?;
        if r.status != 200 {
            bail!("walk: {}", r.snippet());
        }
        let v = r.json()?;
        let page = v["data"].as_array().cloned().unwrap_or_default();
        let Some(last) = page
            .last()
            .and_then(|n| n["id"].as_str())
            .map(str::to_owned)
        else {
            break;
        };
        seen += page.len();
        walk_pages += 1;
        cursor = Some(last);
    }
    let walk_s = t_walk.elapsed().as_secs_f64();
    let cursor = cursor.ok_or_else(|| anyhow!("no notifications to walk"))?;
    eprintln!(
        "  deep cursor {cursor} after {seen} notifications ({walk_pages} pages in {walk_s:.2} s)"
    );

    let reads: [(&str, String); 5] = [
        ("first_page", "/v1/notifications".to_owned()),
        (
            "first_page_limit_200",
            "/v1/notifications?limit=200".to_owned(),
        ),
        ("deep_page", format!("/v1/notifications?before={cursor}")),
        (
            "unread_only_first_page",
            "/v1/notifications?unread_only=true".to_owned(),
        ),
        ("summary", "/v1/notifications/summary".to_owned()),
    ];
    let mut read_figs = serde_json::Map::new();
    let mut p99s = Vec::new();
    for (name, path) in &reads {
        let req = if *name == "summary" {
            summary_req.clone()
        } else {
            encode("GET", path, &host, &su.me_token, None)
        };
        let (lat, cpu, body) = sequential(addr, &req, args.reads, pid).await?;
        let mut fig = lat_json(&lat, cpu);
        if let Some(a) = body["data"].as_array() {
            fig["items"] = json!(a.len());
        } else {
            fig["answer"] = body.clone();
        }
        eprintln!("GET {path}: {fig}");
        p99s.push((*name, pct(&lat, 99.0) / 1000.0));
        read_figs.insert((*name).to_owned(), fig);
    }
    report["fill"] = json!({
        "creates": fill_ok,
        "assign_every": k,
        "errors": fill_errors,
        "seconds": r2(fill_s),
        "individual_reads": read_one.len(),
        "read_one_p50_ms": r2(pct(&read_one, 50.0) / 1000.0),
        "read_one_p99_ms": r2(pct(&read_one, 99.0) / 1000.0),
        "summary_after": s1,
        "deep_cursor_after": seen,
        "walk_pages_of_200": walk_pages,
        "walk_s": r2(walk_s),
    });
    report["reads"] = Value::Object(read_figs);

    // ---- 3. the SQL, in-process, read-only on the stopped server's file ----
    server.stop();
    let conn = rusqlite::Connection::open_with_flags(
        dir.join("hds.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    use hds::store::notifications as ntf;
    let marks = ntf::watermarks(&conn, &su.me_id, std::slice::from_ref(&su.ws))
        .map_err(|e| anyhow!("watermarks: {e:?}"))?;
    let w = marks
        .first()
        .ok_or_else(|| anyhow!("\"me\" has no watermark"))?
        .clone();
    let personal: i64 = conn.query_row(
        "SELECT count(*) FROM notifications WHERE user_id = ?1",
        [&su.me_id],
        |r| r.get(0),
    )?;
    let bcast: i64 = conn.query_row(
        "SELECT count(*) FROM notification_broadcasts WHERE workspace_id = ?1 AND n > ?2",
        rusqlite::params![su.ws, w.from],
        |r| r.get(0),
    )?;
    let marked: i64 = conn.query_row(
        "SELECT count(*) FROM notification_broadcast_reads WHERE user_id = ?1",
        [&su.me_id],
        |r| r.get(0),
    )?;
    let unread = ntf::unread(&conn, &su.me_id, &marks).map_err(|e| anyhow!("unread: {e:?}"))?;
    eprintln!(
        "\"me\": {personal} personal + {bcast} broadcasts = {} notifications; read_through {}; {marked} read one by one; unread {unread:?}",
        personal + bcast,
        w.read_through
    );
    let t_unread = time_n(args.sql_iters, || {
        ntf::unread(&conn, &su.me_id, &marks)
            .map(|_| ())
            .map_err(|e| anyhow!("{e:?}"))
    })?;
    let t_marks = time_n(args.sql_iters, || {
        ntf::watermarks(&conn, &su.me_id, std::slice::from_ref(&su.ws))
            .map(|_| ())
            .map_err(|e| anyhow!("{e:?}"))
    })?;
    let list = |unread_only: bool, before: Option<&str>| {
        ntf::list(&conn, &su.me_id, &marks, unread_only, before, 51)
            .map(|_| ())
            .map_err(|e| anyhow!("{e:?}"))
    };
    let n_list = args.sql_iters / 10;
    let t_first = time_n(n_list, || list(false, None))?;
    let t_deep = time_n(n_list, || list(false, Some(&cursor)))?;
    let t_unread_page = time_n(n_list, || list(true, None))?;
    report["sql"] = json!({
        "me": {"personal": personal, "broadcasts": bcast, "total": personal + bcast,
               "read_through": w.read_through, "read_one_by_one": marked,
               "unread": unread.iter().map(|(k, n)| json!({k: n})).collect::<Vec<_>>()},
        "unread_count": ns_json(&t_unread),
        "watermarks": ns_json(&t_marks),
        "list_first_page_51": ns_json(&t_first),
        "list_deep_page_51": ns_json(&t_deep),
        "list_unread_only_51": ns_json(&t_unread_page),
    });
    eprintln!("sql: {}", report["sql"]);

    // EXPLAIN QUERY PLAN of every statement list and unread run for "me".
    let upper: i64 = conn.query_row(
        "SELECT n FROM notification_broadcasts WHERE workspace_id = ?1 AND id < ?2 ORDER BY id DESC LIMIT 1",
        rusqlite::params![su.ws, cursor],
        |r| r.get(0),
    )?;
    let none: Option<String> = None;
    let lim = 51i64;
    let bpage = ntf::BROADCAST_PAGE;
    let above = w.from.max(w.read_through);
    let plans: Vec<(&str, String)> = vec![
        (
            "watermarks (every request)",
            plan(
                &conn,
                "SELECT ntf_from, ntf_read_through, ntf_read_at FROM memberships WHERE workspace_id = ?1 AND user_id = ?2",
                &[&su.ws, &su.me_id],
            )?,
        ),
        (
            "list: personal rows, first page",
            plan(&conn, ntf::PERSONAL_PAGE, &[&su.me_id, &none, &lim])?,
        ),
        (
            "list: personal rows, before= (deep page)",
            plan(&conn, ntf::PERSONAL_PAGE, &[&su.me_id, &cursor, &lim])?,
        ),
        (
            "list: personal rows, unread_only",
            plan(&conn, ntf::PERSONAL_UNREAD_PAGE, &[&su.me_id, &none, &lim])?,
        ),
        (
            "list: broadcast ordinal below the cursor (deep page)",
            plan(&conn, ntf::BROADCAST_CURSOR, &[&su.ws, &cursor])?,
        ),
        (
            "list: broadcasts page",
            plan(
                &conn,
                bpage,
                &[
                    &su.ws,
                    &w.from,
                    &upper,
                    &w.read_through,
                    &w.read_at,
                    &su.me_id,
                    &0i64,
                    &lim,
                ],
            )?,
        ),
        (
            "list: broadcasts page, unread_only",
            plan(
                &conn,
                bpage,
                &[
                    &su.ws,
                    &above,
                    &i64::MAX,
                    &w.read_through,
                    &w.read_at,
                    &su.me_id,
                    &1i64,
                    &lim,
                ],
            )?,
        ),
        (
            "unread: personal counters",
            plan(&conn, ntf::UNREAD_COUNTS, &[&su.me_id])?,
        ),
        (
            "unread: last broadcast",
            plan(&conn, ntf::LAST_BROADCAST, &[&su.ws])?,
        ),
        (
            "unread: broadcasts read one by one above the watermark",
            plan(&conn, ntf::BROADCAST_MARKED, &[&su.me_id, &su.ws, &above])?,
        ),
    ];
    let mut plan_text = String::new();
    for (name, p) in &plans {
        plan_text.push_str(&format!("{name}\n{p}"));
    }
    report["query_plans"] = json!(
        plans
            .iter()
            .map(|(n, p)| json!({n.to_string(): p.lines().map(str::trim).collect::<Vec<_>>()}))
            .collect::<Vec<_>>()
    );

    // ---- summary ----
    let f = &report["fanout"];
    let mut targets: Vec<(String, f64, bool)> = Vec::new();
    for x in f.as_array().into_iter().flatten() {
        let r = x["ratio"].as_f64().unwrap_or(f64::NAN);
        targets.push((
            format!(
                "creates/s all_reviewers / none at c{} >= 0.5",
                x["concurrency"]
            ),
            r,
            r >= 0.5,
        ));
    }
    for (name, p99) in &p99s {
        if *name != "summary" && *name != "first_page_limit_200" {
            targets.push((
                format!("GET /v1/notifications {name} p99 < 10 ms"),
                *p99,
                *p99 < 10.0,
            ));
        }
    }
    let unread_p99 = t_unread
        .get((t_unread.len() * 99).div_ceil(100).max(1) - 1)
        .map_or(f64::NAN, |&ns| ns as f64 / 1e6);
    targets.push((
        "bell count SQL (store::unread) p99 < 1 ms".into(),
        unread_p99,
        unread_p99 < 1.0,
    ));
    println!("==================== hds notify bench summary ====================");
    println!(
        "machine   {} cpu ({}), server durability={} rate-limit=0, {} reviewers (setup {:.2} s)",
        report["machine"]["nproc"],
        cpu_model(),
        args.durability,
        su.emails.len(),
        setup_s
    );
    for x in f.as_array().into_iter().flatten() {
        println!(
            "fan-out   c={:<3} none {}/s  all_reviewers {}/s  ratio {}  (medians of {} windows each; server CPU {} vs {} µs/create; p99 {} vs {} ms)",
            x["concurrency"],
            x["none_per_s"],
            x["all_reviewers_per_s"],
            x["ratio"],
            x["windows_per_arm"],
            x["none_server_cpu_us_per_create"],
            x["all_server_cpu_us_per_create"],
            x["none_p99_ms"],
            x["all_p99_ms"]
        );
    }
    let r = &report["restricted"];
    println!(
        "restricted c={} workspace-wide {}/s ({} µs/create) vs restricted to 5 {}/s ({} µs/create)",
        r["concurrency"],
        r["workspace_per_s"],
        r["workspace_server_cpu_us_per_create"],
        r["restricted_per_s"],
        r["restricted_server_cpu_us_per_create"]
    );
    let s = &report["sql"]["me"];
    println!(
        "\"me\"      {} notifications ({} personal, {} broadcasts); read-all at {}, {} read one by one; fill {:.0} s",
        s["total"], s["personal"], s["broadcasts"], s["read_through"], s["read_one_by_one"], fill_s
    );
    for (name, _) in &reads {
        let x = &report["reads"][*name];
        println!(
            "GET       {:<24} p50 {} ms  p99 {} ms  max {} ms  server {} µs/req  ({})",
            name,
            x["p50_ms"],
            x["p99_ms"],
            x["max_ms"],
            x["server_cpu_us_per_req"],
            x.get("items")
                .map_or_else(|| x["answer"].to_string(), |i| format!("{i} items"))
        );
    }
    for name in [
        "unread_count",
        "watermarks",
        "list_first_page_51",
        "list_deep_page_51",
        "list_unread_only_51",
    ] {
        let x = &report["sql"][name];
        println!(
            "SQL       {:<24} p50 {} µs  p99 {} µs  max {} µs  mean {} µs  (n={})",
            name, x["p50_us"], x["p99_us"], x["max_us"], x["mean_us"], x["n"]
        );
    }
    println!("query plans (for \"me\")\n{plan_text}");
    println!("targets");
    for (name, v, ok) in &targets {
        println!("  [{}] {name}: {v:.3}", if *ok { "PASS" } else { "MISS" });
    }
    println!("==================================================================");
    report["targets"] = json!(
        targets
            .iter()
            .map(|(n, v, ok)| json!({"target": n, "value": r2(*v), "pass": ok}))
            .collect::<Vec<_>>()
    );
    println!("{report}");
    if args.keep_data {
        let kept = tmp.keep();
        eprintln!("data kept in {}", kept.display());
    }
    Ok(())
}

fn main() -> Result<()> {
    let args = Args::parse();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(run(args))
}
