//! The load generator of the benchmark programs (notify_bench, runs_bench):
//! a minimal HTTP/1.1 keep-alive client on a raw tokio `TcpStream`, closed
//! and sequential loops, percentiles, the server's CPU from /proc and
//! `EXPLAIN QUERY PLAN` printing. One thread drives it, so server and client
//! share the machine's cores as they would in production.
#![allow(dead_code)] // each example uses a part of it

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use futures::future::join_all;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::time::timeout;

use super::{clk_tck, r2};

// ---------------------------------------------------------------------------
// Minimal HTTP/1.1 keep-alive client on a raw tokio TcpStream (no io-util).
// ---------------------------------------------------------------------------

pub struct Resp {
    pub status: u16,
    pub body: Vec<u8>,
    pub close: bool,
}

impl Resp {
    pub fn json(&self) -> Result<Value> {
        serde_json::from_slice(&self.body).context("response body is not JSON")
    }
    pub fn snippet(&self) -> String {
        let s = String::from_utf8_lossy(&self.body);
        let s: String = s.chars().take(300).collect();
        format!("HTTP {} {}", self.status, s)
    }
}

pub struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
    /// Bytes of `buf` that hold data.
    len: usize,
}

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

impl Conn {
    pub async fn connect(addr: SocketAddr) -> Result<Self> {
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

    pub async fn send(&mut self, mut data: &[u8]) -> Result<()> {
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
    pub async fn recv(&mut self) -> Result<Resp> {
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

    pub async fn request(&mut self, req: &[u8]) -> Result<Resp> {
        self.send(req).await?;
        self.recv().await
    }
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// One request with `Content-Length`, ready to write.
pub fn encode(method: &str, path: &str, host: &str, token: &str, body: Option<&[u8]>) -> Vec<u8> {
    encode_with(method, path, host, token, "", body)
}

/// `encode` with extra header lines (`extra` is empty or ends in CRLF).
pub fn encode_with(
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

/// CPU seconds (user + system, all threads) a process has used.
pub fn cpu_secs(pid: u32) -> f64 {
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
pub fn pct<T: Copy + Into<f64>>(sorted: &[T], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].into()
}

pub fn us(d: Duration) -> u32 {
    d.as_micros().min(u32::MAX as u128) as u32
}

pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One request on a fresh connection; fails unless it answers `expect`.
pub async fn once(
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

/// A ~1 KB Action (like examples/bench.rs's), restricted to `reviewers` when given.
pub fn action_body(seq: u64, reviewers: Option<&[String]>) -> Vec<u8> {
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
pub struct Load {
    pub ok: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub lat_us: Vec<u32>,
    pub window_s: f64,
    pub cpu_s: f64,
}

impl Load {
    pub fn per_s(&self) -> f64 {
        self.ok as f64 / self.window_s
    }
    pub fn cpu_us(&self) -> f64 {
        self.cpu_s * 1e6 / self.ok as f64
    }
    pub fn p(&mut self, q: f64) -> f64 {
        self.lat_us.sort_unstable();
        pct(&self.lat_us, q) / 1000.0
    }
}

/// What one create worker does after each 201 (the fill assigns some).
pub type After<'a> = &'a dyn Fn(u64, &Resp) -> Option<(Vec<u8>, u16)>;

/// `c` keep-alive connections each looping requests from `make` (a closed
/// loop). Stops at `end` (a window: only answers inside [from, end) count) or
/// once `n` requests were issued in all.
#[allow(clippy::too_many_arguments)]
pub async fn closed_loop(
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
pub async fn sequential(
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

pub fn lat_json(lat: &[u32], cpu_us: f64) -> Value {
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

pub fn plan(
    c: &rusqlite::Connection,
    sql: &str,
    params: &[&dyn rusqlite::ToSql],
) -> Result<String> {
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
pub fn time_n(n: usize, mut f: impl FnMut() -> Result<()>) -> Result<Vec<u64>> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = Instant::now();
        f()?;
        v.push(t0.elapsed().as_nanos() as u64);
    }
    v.sort_unstable();
    Ok(v)
}

pub fn ns_json(v: &[u64]) -> Value {
    let f: Vec<f64> = v.iter().map(|&x| x as f64 / 1000.0).collect();
    json!({
        "n": v.len(),
        "p50_us": r2(pct(&f, 50.0)),
        "p99_us": r2(pct(&f, 99.0)),
        "max_us": r2(pct(&f, 100.0)),
        "mean_us": r2(f.iter().sum::<f64>() / f.len().max(1) as f64),
    })
}
