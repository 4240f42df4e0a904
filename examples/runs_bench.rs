//! Rerunnable benchmark of run progress (issue 12; figures and method in
//! docs/benchmarks.md, "Runs: progress updates"):
//!
//! ```text
//! cargo build --release --bins --example runs_bench
//! target/release/examples/runs_bench [--help]
//! ```
//!
//! `hds init` on a fresh data dir, then `hds serve --rate-limit 0
//! --durability full` (RUST_LOG=off). The Source creates `--runs` runs
//! (`POST /v1/runs`, status `running`, total 10^12). Then, at each
//! concurrency, closed-loop windows alternate three arms over `--rounds`
//! (creates, counts, message, message, counts, creates):
//!
//! - **creates**: `POST /v1/actions`, the ~1 KB Action of the other
//!   benchmarks: the yardstick.
//! - **counts**: `PATCH /v1/source/runs/{id}/progress` with
//!   `{"completed": n}`: the common report of a loop.
//! - **message**: the same with a new `message` each time, which also
//!   appends a line to the run's timeline (`run_events`).
//!
//! Request `seq` goes to run `seq % runs`, so every connection spreads its
//! reports over all runs (as many workers of many runs would). The figure is
//! the ratio of each progress arm's median window to the creates' median;
//! the server's CPU per request comes from /proc/<pid>/stat. Afterwards one
//! client reads a run (`GET /v1/runs/{id}`) and the list (`GET
//! /v1/runs?limit=100`) sequentially, and the timeline's size is counted.
// Benchmarks run against a real server in real time: waiting is measured, not tested.
#![allow(clippy::disallowed_methods)]

#[allow(dead_code)] // each example uses a part of it
mod common;

use std::path::PathBuf;

use anyhow::{Result, anyhow, bail};
use clap::Parser;
use serde_json::json;

use common::load::{Load, action_body, closed_loop, encode, lat_json, median, once, sequential};
use common::{cpu_model, hds_init_json, r2};

#[derive(Parser, Debug)]
#[command(
    name = "runs_bench",
    about = "Run progress benchmark for hds: progress updates/s against creates/s."
)]
struct Args {
    /// The hds binary.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/target/release/hds"))]
    hds: PathBuf,
    #[arg(long, default_value = "full")]
    durability: String,
    /// Runs the progress reports are spread over.
    #[arg(long, default_value_t = 64)]
    runs: u64,
    /// Concurrency levels (keep-alive connections).
    #[arg(long, value_delimiter = ',', default_value = "16,64")]
    concurrency: Vec<usize>,
    /// Rounds per concurrency: each runs two windows per arm.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// Measured seconds per window.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Warm-up seconds before each window (not counted).
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Sequential requests per measured read.
    #[arg(long, default_value_t = 1000)]
    reads: usize,
    /// Keep the data dir (its path is printed).
    #[arg(long)]
    keep_data: bool,
}

const ARMS: [&str; 3] = ["creates", "counts", "message"];

async fn run(args: Args) -> Result<()> {
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

    let mut runs = Vec::new();
    for i in 0..args.runs {
        let r = once(
            addr,
            "POST",
            "/v1/runs",
            &key,
            Some(json!({
                "name": format!("nightly import shard {i}"),
                "status": "running",
                "total": 1_000_000_000_000_i64,
                "metadata": {"shard": i}
            })),
            201,
        )
        .await?;
        let run = if r["data"].is_object() {
            &r["data"]
        } else {
            &r
        };
        runs.push(
            run["id"]
                .as_str()
                .ok_or_else(|| anyhow!("no run id in {r}"))?
                .to_owned(),
        );
    }
    eprintln!("{} runs created; data dir {}", runs.len(), dir.display());

    let creates = |seq: u64| {
        encode(
            "POST",
            "/v1/actions",
            &host,
            &key,
            Some(&action_body(seq, None)),
        )
    };
    let progress = |seq: u64, message: bool| {
        let run = &runs[(seq % runs.len() as u64) as usize];
        let mut b = json!({ "completed": seq / runs.len() as u64 });
        if message {
            b["message"] = json!(format!("imported batch {seq}: 500 rows, 0 rejected"));
        }
        encode(
            "PATCH",
            &format!("/v1/source/runs/{run}/progress"),
            &host,
            &key,
            Some(b.to_string().as_bytes()),
        )
    };
    let counts = |seq: u64| progress(seq, false);
    let message = |seq: u64| progress(seq, true);

    let mut levels = Vec::new();
    let mut table = Vec::new();
    for &c in &args.concurrency {
        let mut windows: Vec<(&str, Load)> = Vec::new();
        for round in 0..args.rounds {
            for arm in [0usize, 1, 2, 2, 1, 0] {
                let (make, expect): (&dyn Fn(u64) -> Vec<u8>, u16) = match arm {
                    0 => (&creates, 201),
                    1 => (&counts, 200),
                    _ => (&message, 200),
                };
                let load = closed_loop(
                    addr,
                    c,
                    make,
                    expect,
                    args.warmup,
                    Some(args.duration),
                    None,
                    None,
                    pid,
                )
                .await?;
                if load.errors > 0 {
                    bail!(
                        "{} at c={c}: {} errors, first: {}",
                        ARMS[arm],
                        load.errors,
                        load.first_error.unwrap_or_default()
                    );
                }
                eprintln!(
                    "c={c} round {round} {:>8}: {:>7.0}/s, server CPU {:>4.0} µs/req",
                    ARMS[arm],
                    load.per_s(),
                    load.cpu_us()
                );
                windows.push((ARMS[arm], load));
            }
        }
        let arm = |a: &str, f: &dyn Fn(&Load) -> f64| {
            median(
                windows
                    .iter()
                    .filter(|(n, _)| *n == a)
                    .map(|(_, l)| f(l))
                    .collect(),
            )
        };
        let mut per = serde_json::Map::new();
        for a in ARMS {
            let mut lat: Vec<u32> = windows
                .iter()
                .filter(|(n, _)| *n == a)
                .flat_map(|(_, l)| l.lat_us.iter().copied())
                .collect();
            lat.sort_unstable();
            per.insert(
                a.into(),
                json!({
                    "per_s_median": r2(arm(a, &Load::per_s)),
                    "per_s_windows": windows.iter().filter(|(n, _)| *n == a)
                        .map(|(_, l)| r2(l.per_s())).collect::<Vec<_>>(),
                    "server_cpu_us_per_req": r2(arm(a, &Load::cpu_us)),
                    "latency": lat_json(&lat, arm(a, &Load::cpu_us)),
                }),
            );
        }
        let base = arm("creates", &Load::per_s);
        let counts_ratio = arm("counts", &Load::per_s) / base;
        let message_ratio = arm("message", &Load::per_s) / base;
        table.push(format!(
            "| c={c} | {:.0}/s | {:.0}/s (**{:.2}**) | {:.0}/s (**{:.2}**) | {:.0} / {:.0} / {:.0} µs |",
            base,
            arm("counts", &Load::per_s),
            counts_ratio,
            arm("message", &Load::per_s),
            message_ratio,
            arm("creates", &Load::cpu_us),
            arm("counts", &Load::cpu_us),
            arm("message", &Load::cpu_us),
        ));
        levels.push(json!({
            "concurrency": c,
            "arms": per,
            "counts_vs_creates": r2(counts_ratio),
            "message_vs_creates": r2(message_ratio),
        }));
    }

    // Reads: one run, and the list.
    let get_run = encode("GET", &format!("/v1/runs/{}", runs[0]), &host, &user, None);
    let (lat, cpu, one) = sequential(addr, &get_run, args.reads, pid).await?;
    let read_run = lat_json(&lat, cpu);
    let list = encode("GET", "/v1/runs?limit=100", &host, &user, None);
    let (lat, cpu, page) = sequential(addr, &list, args.reads, pid).await?;
    let listed = page["data"].as_array().map_or(0, Vec::len);
    let read_list = lat_json(&lat, cpu);

    // The timeline the message arms wrote: lines per run.
    server.stop();
    let db = rusqlite::Connection::open_with_flags(
        dir.join("hds.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )?;
    let (lines, runs_with): (i64, i64) = db.query_row(
        "SELECT count(*), count(DISTINCT run_id) FROM run_events",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let report = json!({
        "bench": "runs",
        "machine": {"nproc": std::thread::available_parallelism().map_or(0, |n| n.get()), "cpu": cpu_model()},
        "durability": args.durability,
        "runs": args.runs,
        "window_s": args.duration,
        "levels": levels,
        "timeline": {"lines": lines, "runs": runs_with},
        "read_run": {"progress": one["data"]["progress"], "latency": read_run},
        "read_list": {"listed": listed, "latency": read_list},
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    eprintln!(
        "\n| concurrency | creates | counts (ratio) | message (ratio) | server CPU per request (creates / counts / message) |"
    );
    eprintln!("|---|---|---|---|---|");
    for row in table {
        eprintln!("{row}");
    }
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
