//! Rerunnable benchmark of batch decisions (issue 13; figures and method in
//! docs/benchmarks.md, "Batch decisions"):
//!
//! ```text
//! cargo build --release --bins --example batch_bench
//! target/release/examples/batch_bench [--help]
//! ```
//!
//! `hds init` on a fresh data dir, then `hds serve --rate-limit 0
//! --durability full` (RUST_LOG=off). Each round the Source creates
//! `--size` Actions (~1 KB each, the other benchmarks' body), then the
//! reviewer decides them all with one `POST /v1/actions/decisions`, timed
//! from the first byte sent to the last byte read on a warm keep-alive
//! connection. For comparison, one more set is decided one by one with `POST
//! /v1/actions/{id}/decision` over the same kind of connection.
//!
//! Every decided item's receipt is verified against the published JWKS, and
//! the receipts of all rounds are checked to form one chain: `seq` one
//! more than the last, `prev` the SHA-256 of the previous compact JWS.
// Benchmarks run against a real server in real time: waiting is measured, not tested.
#![allow(clippy::disallowed_methods)]

#[allow(dead_code)] // each example uses a part of it
mod common;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Result, anyhow, bail};
use clap::Parser;
use serde_json::{Value, json};

use common::load::{Conn, action_body, cpu_secs, encode, lat_json, once, us};
use common::{cpu_model, hds_init_json, r2};
use hds::domain::receipt::{self, PublicKey};

#[derive(Parser, Debug)]
#[command(
    name = "batch_bench",
    about = "Batch decision benchmark for hds: one POST of 100 bound decisions."
)]
struct Args {
    /// The hds binary.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/target/release/hds"))]
    hds: PathBuf,
    #[arg(long, default_value = "full")]
    durability: String,
    /// Decisions per batch (1..=100).
    #[arg(long, default_value_t = 100)]
    size: usize,
    /// Timed batches.
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    /// Keep the data dir (its path is printed).
    #[arg(long)]
    keep_data: bool,
}

/// The chain so far: (seq, compact JWS) of the last receipt seen.
struct Chain {
    last: Option<(i64, String)>,
    keys: Vec<PublicKey>,
    checked: usize,
}

impl Chain {
    fn push(&mut self, receipt: &Value) -> Result<()> {
        let jws = receipt["jws"]
            .as_str()
            .ok_or_else(|| anyhow!("no receipt jws in {receipt}"))?;
        let claims = receipt::verify(jws, &self.keys).map_err(|e| anyhow!("receipt: {e}"))?;
        let seq = claims["seq"].as_i64().unwrap_or(0);
        if let Some((prev_seq, prev_jws)) = &self.last
            && (seq != prev_seq + 1 || claims["prev"] != receipt::chain_hash(prev_jws))
        {
            bail!("receipt {seq} does not follow {prev_seq} in the chain");
        }
        self.last = Some((seq, jws.to_owned()));
        self.checked += 1;
        Ok(())
    }
}

async fn create(addr: std::net::SocketAddr, key: &str, n: usize, seq0: u64) -> Result<Vec<Value>> {
    let mut c = Conn::connect(addr).await?;
    let host = addr.to_string();
    let mut out = Vec::with_capacity(n);
    for i in 0..n as u64 {
        let body = action_body(seq0 + i, None);
        let r = c
            .request(&encode("POST", "/v1/actions", &host, key, Some(&body)))
            .await?;
        if r.status != 201 {
            bail!("create: {}", r.snippet());
        }
        out.push(r.json()?["data"].clone());
    }
    Ok(out)
}

fn bound(a: &Value) -> Value {
    json!({
        "action_id": a["id"],
        "action_version": a["action_version"],
        "fingerprint": a["fingerprint"],
        "option_id": "approve",
        "reason": "batch bench",
    })
}

async fn run(args: Args) -> Result<()> {
    if !(1..=100).contains(&args.size) {
        bail!("--size must be 1 to 100");
    }
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().to_owned();
    let init = hds_init_json(&args.hds, &dir)?;
    let s = |k: &str| {
        init[k]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| anyhow!("no {k} in hds init output"))
    };
    let (key, user) = (s("source_key_live")?, s("user_token")?);
    let (mut server, addr) = common::serve_for_load(&args.hds, &dir, &args.durability)?;
    let pid = server.child.id();
    let host = addr.to_string();
    let jwks = once(addr, "GET", "/v1/receipts/keys", "unused", None, 200).await?;
    let keys = jwks["keys"]
        .as_array()
        .ok_or_else(|| anyhow!("no keys in {jwks}"))?
        .iter()
        .map(|k| PublicKey {
            kid: k["kid"].as_str().unwrap_or_default().to_owned(),
            x: k["x"].as_str().unwrap_or_default().to_owned(),
            status: k["status"].as_str().unwrap_or_default().to_owned(),
            created_at: k["created_at"].as_str().unwrap_or_default().to_owned(),
            retired_at: k["retired_at"].as_str().map(str::to_owned),
        })
        .collect();
    let mut chain = Chain {
        last: None,
        keys,
        checked: 0,
    };

    let mut decider = Conn::connect(addr).await?;
    let mut lat = Vec::new();
    let mut cpu = 0.0;
    for round in 0..=args.rounds {
        let shown = create(addr, &key, args.size, (round * args.size) as u64).await?;
        let body = json!({ "decisions": shown.iter().map(bound).collect::<Vec<_>>() }).to_string();
        let req = encode(
            "POST",
            "/v1/actions/decisions",
            &host,
            &user,
            Some(body.as_bytes()),
        );
        let cpu0 = cpu_secs(pid);
        let t = Instant::now();
        let r = decider.request(&req).await?;
        let took = t.elapsed();
        let spent = cpu_secs(pid) - cpu0;
        if r.status != 200 {
            bail!("batch: {}", r.snippet());
        }
        let out = r.json()?;
        if out["summary"]["decided"] != json!(args.size) {
            bail!("batch decided {} of {}", out["summary"], args.size);
        }
        for item in out["data"].as_array().into_iter().flatten() {
            chain.push(&item["action"]["receipt"])?;
        }
        // Round 0 warms the connection and the caches; it is not counted.
        if round > 0 {
            lat.push(us(took));
            cpu += spent;
            eprintln!(
                "round {round}: {} decisions in {:.1} ms",
                args.size,
                took.as_secs_f64() * 1e3
            );
        }
    }
    let batches = lat.len();
    lat.sort_unstable();
    let batch = lat_json(&lat, cpu * 1e6 / batches.max(1) as f64);

    // The same number of decisions one by one, for comparison.
    let shown = create(addr, &key, args.size, 10_000_000).await?;
    let t = Instant::now();
    for a in &shown {
        let id = a["id"].as_str().unwrap_or_default();
        let mut b = bound(a);
        if let Some(o) = b.as_object_mut() {
            o.remove("action_id");
        }
        let body = b.to_string();
        let r = decider
            .request(&encode(
                "POST",
                &format!("/v1/actions/{id}/decision"),
                &host,
                &user,
                Some(body.as_bytes()),
            ))
            .await?;
        if r.status != 200 {
            bail!("single decision: {}", r.snippet());
        }
        chain.push(&r.json()?["data"]["receipt"])?;
    }
    let singles_ms = t.elapsed().as_secs_f64() * 1e3;
    server.stop();

    let p99 = batch["p99_ms"].as_f64().unwrap_or(f64::MAX);
    let report = json!({
        "bench": "batch_decisions",
        "machine": {"nproc": std::thread::available_parallelism().map_or(0, |n| n.get()), "cpu": cpu_model()},
        "durability": args.durability,
        "size": args.size,
        "batch": batch,
        "one_by_one_total_ms": r2(singles_ms),
        "receipts_chained": chain.checked,
        "goal_under_1s": p99 < 1000.0,
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    eprintln!(
        "\n{} batches of {}: p50 {} ms, p99 {} ms, max {} ms; {} receipts verified, one chain; {} one by one: {:.0} ms",
        batches,
        args.size,
        batch["p50_ms"],
        batch["p99_ms"],
        batch["max_ms"],
        chain.checked,
        args.size,
        singles_ms
    );
    if args.keep_data {
        eprintln!("data kept in {}", tmp.keep().display());
    }
    Ok(())
}

fn main() -> Result<()> {
    let args = Args::parse();
    if !args.hds.exists() {
        bail!(
            "{} not found: build it first (cargo build --release --bins)",
            args.hds.display()
        );
    }
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(run(args))
}
