//! Rerunnable benchmark (not a test) of the inbox (issue 9 item 6) and the
//! analytics (issue 12) at scale: GET /v1/me/actions, the dashboard inbox
//! page, GET /v1/analytics/summary and /app/analytics with 1,000,000 Actions
//! in one workspace.
//!
//! ```text
//! cargo build --release && cargo run --release --example inbox_scale
//! cargo run --release --example inbox_scale -- --actions 200000 --requests 100
//! cargo run --release --example inbox_scale -- --keep-data   # prints the dir
//! cargo run --release --example inbox_scale -- --reuse DIR   # no seeding
//! ```
//!
//! 1. `hds init --json` in a fresh temporary data dir; `hds serve` once to
//!    create one real Action through the API (its row is the template), stop.
//! 2. Seeds N Actions by direct SQL inserts into that database (100,000 per
//!    transaction, each ending as hds's writer ends one: new titles indexed,
//!    new Actions counted in the analytics rollup), created over
//!    the last 90 days: 8 % open (1 in 10 of those snoozed), 80 % resolved
//!    (by a person after 10 s to a day, log-uniform; 70 % approve; 70 % of
//!    them with an outcome, 1 in 12 failed, 1 in 40 rolled back), 8 %
//!    cancelled, 4 % expired; each closed by an UPDATE of its status, as hds
//!    does, so the analytics triggers add to the daily rollup as in use;
//!    75 % live; priorities 10/50/30/10 % low/normal/high/urgent; 5 Sources;
//!    60 % unassigned, the rest spread over 25 people by user id or e-mail
//!    (the signed-in admin is one of them); titles of 4–7 words drawn from a
//!    400-word vocabulary.
//! 3. `hds serve` again; signs in like a browser for the dashboard cookie.
//! 4. For each filter: a warm-up, then R sequential requests from one client;
//!    client-side p50/p99 (loopback send → last byte) of the API and of
//!    `/app?…` (the inbox page, which also counts the tabs). Then the same
//!    for the analytics summary (7d, 30d, 90d, the test environment, one
//!    Source) and the analytics page, and the 90-day totals are printed.
// Benchmarks run against a real server in real time: waiting is measured, not tested.
#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, ensure};
use clap::Parser;
use reqwest::StatusCode;
use rusqlite::{Connection, params};
use serde_json::{Value, json};

// Shared with bench and inbox_bench; this program uses only the server helpers.
#[allow(dead_code)]
mod common;
use common::Server;

const DEFAULT_HDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/release/hds");

#[derive(Parser, Debug)]
#[command(name = "inbox_scale", about = "The inbox with a million Actions.")]
struct Args {
    #[arg(long, default_value = DEFAULT_HDS)]
    hds: PathBuf,
    /// Actions seeded by direct SQL.
    #[arg(long, default_value_t = 1_000_000)]
    actions: u64,
    /// Measured sequential requests per query.
    #[arg(long, default_value_t = 200)]
    requests: usize,
    #[arg(long, default_value_t = 20)]
    warmup: usize,
    /// Keep the data dir (its path is printed) for `--reuse`.
    #[arg(long)]
    keep_data: bool,
    /// Measure the data dir a `--keep-data` run left (the binary's
    /// migrations apply to it first) instead of seeding a new one.
    #[arg(long, conflicts_with = "keep_data")]
    reuse: Option<PathBuf>,
}

fn serve(hds: &PathBuf, dir: &std::path::Path) -> Result<(Server, String)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let listen = format!("127.0.0.1:{port}");
    let mut cmd = Command::new(hds);
    cmd.args(["serve", "--data-dir"])
        .arg(dir)
        .args(["--listen", &listen, "--rate-limit", "0"])
        .args(["--base-url", &format!("http://{listen}")])
        .stderr(Stdio::null());
    let (s, _) = common::start_server(cmd)?;
    Ok((s, format!("http://{listen}")))
}

/// A deterministic generator (xorshift), so runs seed the same data.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: &str = "deploy release rollback migrate database schema index backup restore rotate key secret token certificate renew expire grant revoke access role admin member invite approve reject refund invoice payment charge customer account order shipment delivery warehouse stock price discount coupon campaign email newsletter report export import sync webhook callback queue worker job batch cron schedule server cluster node region zone bucket storage volume snapshot image container pod service gateway proxy firewall rule policy audit compliance review budget forecast contract vendor supplier purchase request ticket incident outage alert pager oncall escalate hotfix patch upgrade downgrade feature flag experiment rollout canary staging production sandbox tenant workspace project repository branch merge commit build pipeline artifact package library dependency license security vulnerability scan password reset login session device mobile android ios browser cache cdn domain dns record mail spam abuse fraud risk score limit quota plan subscription trial cancel renewal upgrade seat billing tax vat currency exchange transfer payout bank card dispute chargeback document contract signature legal privacy gdpr delete erase retention archive log metric trace dashboard chart query slow latency error timeout retry failure success weekly monthly daily quarterly annual urgent critical minor major north south east west alpha beta gamma delta omega green blue red yellow orange purple black white silver gold café résumé naïve straße über crème brûlée élan façade";

fn seed(dir: &std::path::Path, n: u64, admin_id: &str, admin_email: &str) -> Result<f64> {
    let words: Vec<&str> = WORDS.split_whitespace().collect();
    let mut c =
        Connection::open(dir.join("hds.db")).or_else(|_| Connection::open(dir.join("data.db")))?;
    let (tpl_id, ws, src, spec): (String, String, String, String) = c.query_row(
        "SELECT id, workspace_id, source_id, spec FROM actions LIMIT 1",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )?;
    let _ = tpl_id;
    let mut sources = vec![src.clone()];
    for i in 1..5 {
        let id = format!("src_bench{i}");
        c.execute(
            "INSERT INTO sources SELECT ?1, workspace_id, name || ?2, created_at FROM sources WHERE id = ?3",
            params![id, format!(" {i}"), src],
        )
        .or_else(|_| {
            // Other column sets: copy every column but the id.
            let cols: Vec<String> = c
                .prepare("SELECT name FROM pragma_table_info('sources') WHERE name <> 'id'")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let cols = cols.join(", ");
            c.execute(
                &format!("INSERT INTO sources(id, {cols}) SELECT ?1, {cols} FROM sources WHERE id = ?2"),
                params![id, src],
            )
        })
        .context("copying the Source")?;
        sources.push(id);
    }
    let spec: Value = serde_json::from_str(&spec)?;
    let people: Vec<(String, String)> = (0..25)
        .map(|i| {
            if i == 0 {
                (admin_id.to_owned(), admin_email.to_owned())
            } else {
                (format!("usr_bench{i}"), format!("person{i}@example.com"))
            }
        })
        .collect();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let start = Instant::now();
    let mut done = 0u64;
    while done < n {
        let tx = c.transaction()?;
        // hds indexes new titles and counts new Actions in the analytics
        // rollup once per write transaction (not by a trigger); do the
        // same for this one.
        let before: i64 = tx.query_row("SELECT coalesce(max(rowid), 0) FROM actions", [], |r| {
            r.get(0)
        })?;
        {
            let mut ins = tx.prepare(
                "INSERT INTO actions(id, workspace_id, source_id, environment, status, priority, priority_rank, title,
                    action_version, fingerprint, spec, dedupe_key, assignee_user_id, assignee_email, visibility,
                    expires_at, snoozed_until, resolution, created_at, updated_at, closed_at)
                 VALUES (?1, ?2, ?3, ?4, 'open', ?5, ?6, ?7, 1, 'sha256:bench', ?8, NULL, ?9, ?12, 'workspace',
                    NULL, ?10, NULL, ?11, ?11, NULL)",
            )?;
            let mut close = tx.prepare(
                "UPDATE actions SET status = ?2, resolution = ?3, closed_at = ?4, updated_at = ?4 WHERE rowid = ?1",
            )?;
            let mut report = tx.prepare("UPDATE actions SET outcome = ?2 WHERE rowid = ?1")?;
            let end = (done + 100_000).min(n);
            for i in done..end {
                let title: Vec<&str> = (0..4 + rng.below(4))
                    .map(|_| words[rng.below(words.len() as u64) as usize])
                    .collect();
                let title = title.join(" ");
                let s = rng.below(100);
                let status = match s {
                    0..8 => "open",
                    8..88 => "resolved",
                    88..96 => "cancelled",
                    _ => "expired",
                };
                let env = if rng.below(4) == 0 { "test" } else { "live" };
                let (prio, rank) = match rng.below(10) {
                    0 => ("low", 3),
                    1..6 => ("normal", 2),
                    6..9 => ("high", 1),
                    _ => ("urgent", 0),
                };
                let mut sp = spec.clone();
                sp["title"] = json!(title);
                sp["priority"] = json!(prio);
                let (mut assignee_user, mut assignee_email) = (None, None);
                if rng.below(10) >= 6 {
                    let p = &people[rng.below(25) as usize];
                    if rng.below(2) == 0 {
                        assignee_user = Some(p.0.clone());
                        sp["assignee_user_id"] = json!(p.0);
                    } else {
                        sp["assignee_email"] = json!(p.1);
                        // The column the inbox filters read (as the server
                        // writes it: store::actions::assignee_email).
                        assignee_email = Some(p.1.to_ascii_lowercase());
                    }
                }
                // Created over the last 90 days, in order; the newest an
                // hour ago.
                let t = now - 90 * 86_400 + (i * (90 * 86_400 - 3_600) / n.max(1)) as i64;
                let ts = stamp(t)?;
                let snoozed = (status == "open" && rng.below(10) == 0)
                    .then(|| "2099-01-01T00:00:00.000Z".to_owned());
                ins.execute(params![
                    format!("act_{i:026}"),
                    ws,
                    sources[rng.below(5) as usize],
                    env,
                    prio,
                    rank,
                    title,
                    sp.to_string(),
                    assignee_user,
                    snoozed,
                    ts,
                    assignee_email,
                ])?;
                if status == "open" {
                    continue;
                }
                // Closed the way hds closes them (an UPDATE of status), so the
                // analytics triggers add to their daily rollup as in use:
                // decision times from 10 s to a day (log-uniform), 70 % of
                // the decisions approve; cancelled by the Source; expired by
                // the expiry pass.
                let rowid = tx.last_insert_rowid();
                let (closed, by, option, reason) = match status {
                    "resolved" => {
                        let secs = 10f64.powf(1.0 + 3.94 * (rng.below(10_000) as f64 / 10_000.0));
                        let option = if rng.below(10) < 7 {
                            "approve"
                        } else {
                            "reject"
                        };
                        let who = &people[rng.below(25) as usize].0;
                        (
                            t + secs as i64,
                            json!({"type": "user", "id": who}),
                            json!(option),
                            Value::Null,
                        )
                    }
                    "cancelled" => (
                        t + 600,
                        json!({"type": "source", "id": null}),
                        Value::Null,
                        Value::Null,
                    ),
                    _ => (
                        t + 86_400,
                        json!({"type": "system", "id": null}),
                        Value::Null,
                        json!("expired"),
                    ),
                };
                let closed = stamp(closed.min(now))?;
                let resolution = json!({"option_id": option, "response": null, "reason": reason,
                    "decided_by": by, "decided_at": closed});
                close.execute(params![rowid, status, resolution.to_string(), closed])?;
                // Outcomes for 70 % of the decisions: 1 in 12 failed, 1 in
                // 40 rolled back.
                if status == "resolved" && rng.below(10) < 7 {
                    let failed = rng.below(12) == 0;
                    let outcome = json!({"status": if failed { "failed" } else { "success" },
                        "duration_ms": 1_000 + rng.below(120_000), "rollback": rng.below(40) == 0,
                        "action_version": 1, "fingerprint": "sha256:bench", "message": null,
                        "reported_at": closed});
                    report.execute(params![rowid, outcome.to_string()])?;
                }
            }
            done = end;
        }
        hds::store::actions::index_new_rows(&tx, before)
            .map_err(|e| anyhow!("indexing the new Actions: {e}"))?;
        tx.commit()?;
        eprintln!(
            "seeded {done}/{n} in {:.0} s",
            start.elapsed().as_secs_f64()
        );
    }
    c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?;
    Ok(start.elapsed().as_secs_f64())
}

/// RFC 3339 with milliseconds, as hds stores times.
fn stamp(unix: i64) -> Result<String> {
    Ok(time::OffsetDateTime::from_unix_timestamp(unix)?
        .format(&time::format_description::well_known::Rfc3339)?
        .replace('Z', ".000Z"))
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[i.clamp(1, sorted.len()) - 1]
}

async fn measure(
    http: &reqwest::Client,
    url: &str,
    auth: (&str, &str),
    warmup: usize,
    n: usize,
) -> Result<(f64, f64, usize)> {
    let mut ms = Vec::with_capacity(n);
    let mut size = 0;
    for i in 0..warmup + n {
        let t = Instant::now();
        let r = http.get(url).header(auth.0, auth.1).send().await?;
        let status = r.status();
        let body = r.text().await?;
        ensure!(status == StatusCode::OK, "GET {url}: {status}: {body:.300}");
        if i >= warmup {
            ms.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        size = body.len();
    }
    ms.sort_by(f64::total_cmp);
    Ok((pct(&ms, 50.0), pct(&ms, 99.0), size))
}

async fn sign_in(http: &reqwest::Client, base: &str, signin_url: &str) -> Result<String> {
    let path = signin_url
        .find("/app/signin/link/")
        .map(|i| &signin_url[i..])
        .ok_or_else(|| anyhow!("unexpected sign-in URL {signin_url:?}"))?;
    let link = format!("{base}{path}");
    http.get(&link).send().await?;
    let done = http
        .post(&link)
        .header("origin", base)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("")
        .send()
        .await?;
    ensure!(
        done.status() == StatusCode::SEE_OTHER,
        "sign-in: {}",
        done.status()
    );
    done.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.split(';').next())
        .find(|p| p.starts_with("service_session="))
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("no session cookie"))
}

#[tokio::main]
async fn main() -> Result<()> {
    // reqwest is built without a TLS provider of its own (loopback http only).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    let tmp = tempfile::tempdir()?;
    let dir = match &args.reuse {
        Some(d) => d.join("data"),
        None => tmp.path().join("data"),
    };
    let saved = dir.join("inbox_scale.json");
    let init = match &args.reuse {
        Some(_) => serde_json::from_slice(
            &std::fs::read(&saved).with_context(|| format!("reading {}", saved.display()))?,
        )?,
        None => {
            let init = common::hds_init_json(&args.hds, &dir)?;
            std::fs::write(&saved, serde_json::to_vec(&init)?)?;
            init
        }
    };
    let field = |k: &str| {
        init[k]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| anyhow!("no {k}"))
    };
    let (key, token, signin, user_id) = (
        field("source_key_live")?,
        field("user_token")?,
        field("signin_url")?,
        field("user_id")?,
    );
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(60))
        .build()?;
    if args.reuse.is_none() {
        let (_s, base) = serve(&args.hds, &dir)?;
        let r = http
            .post(format!("{base}/v1/actions"))
            .bearer_auth(&key)
            .json(&json!({"title": "Template", "options": [{"id": "approve", "label": "Approve"}, {"id": "reject", "label": "Reject"}]}))
            .send()
            .await?;
        ensure!(
            r.status() == StatusCode::CREATED,
            "template: {}",
            r.text().await?
        );
    }
    let db = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "db"))
        .ok_or_else(|| anyhow!("no .db in the data dir"))?;
    let seed_s = match args.reuse {
        Some(_) => 0.0,
        None => seed(
            db.parent().unwrap_or(&dir),
            args.actions,
            &user_id,
            "admin@example.com",
        )
        .with_context(|| format!("seeding {}", db.display()))?,
    };
    let (_s, base) = serve(&args.hds, &dir)?;
    // The first start's link is used once; a reused dir gets a new one.
    let signin = match args.reuse {
        Some(_) => {
            let email: String = Connection::open(&db)?.query_row(
                "SELECT email FROM users WHERE id = ?1",
                [&user_id],
                |r| r.get(0),
            )?;
            let out = Command::new(&args.hds)
                .args(["users", "link", &email, "--data-dir"])
                .arg(&dir)
                .output()?;
            ensure!(out.status.success(), "hds users link: {out:?}");
            String::from_utf8(out.stdout)?
                .lines()
                .find(|l| l.contains("/app/signin/link/"))
                .ok_or_else(|| anyhow!("no link printed"))?
                .trim()
                .to_owned()
        }
        None => signin,
    };
    let cookie = sign_in(&http, &base, &signin).await?;
    let bearer = format!("Bearer {token}");
    let word = "deploy";
    let rare = "façade";
    // Deep pages (`starting_after`): the page after the Action halfway down
    // the open list and down the resolved one, read from the seeded rows in
    // each list's order (one workspace holds them all).
    let halfway = |sql: &str| -> Result<String> {
        let c = Connection::open(&db)?;
        let n: i64 = c.query_row(&format!("SELECT count(*) FROM ({sql})"), [], |r| r.get(0))?;
        Ok(c.query_row(
            &format!("SELECT id FROM ({sql}) LIMIT 1 OFFSET ?1"),
            [n / 2],
            |r| r.get(0),
        )?)
    };
    let open_mid = halfway(
        "SELECT id FROM actions WHERE environment = 'live' AND status = 'open'
           AND (snoozed_until IS NULL OR snoozed_until <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
         ORDER BY priority_rank, created_at, rowid",
    )?;
    let resolved_mid = halfway(
        "SELECT id FROM actions WHERE environment = 'live' AND status = 'resolved'
         ORDER BY created_at DESC, rowid DESC",
    )?;
    let deep_open = format!("starting_after={open_mid}");
    let deep_resolved = format!("status=resolved&starting_after={resolved_mid}");
    let filters: [(&str, &str, &str); 13] = [
        ("default", "", ""),
        ("search (common word)", "search=deploy", "q=deploy"),
        ("search (two words)", "search=deploy+prod", "q=deploy+prod"),
        (
            "search (rare word)",
            "search=fa%C3%A7ade+rollback",
            "q=fa%C3%A7ade+rollback",
        ),
        // A prefix that begins a tenth of the vocabulary: the costly case.
        ("search (prefix `re`)", "search=re", "q=re"),
        ("environment=all", "environment=all", "environment=all"),
        ("scope=mine", "scope=mine", "scope=mine"),
        ("scope=unassigned", "scope=unassigned", "scope=unassigned"),
        ("status=snoozed", "status=snoozed", "status=snoozed"),
        ("priority=high", "priority=high", "priority=high"),
        ("status=resolved", "status=resolved", "status=resolved"),
        ("open, halfway down", &deep_open, &deep_open),
        ("resolved, halfway down", &deep_resolved, &deep_resolved),
    ];
    let _ = (word, rare);
    println!(
        "seeded {} Actions in {seed_s:.0} s; {} requests per query after {} warm-up",
        args.actions, args.requests, args.warmup
    );
    println!(
        "{:<26} {:>10} {:>10} {:>10} {:>10}",
        "query", "API p50", "API p99", "/app p50", "/app p99"
    );
    let mut out = Vec::new();
    for (name, api, app) in filters {
        let (a50, a99, _) = measure(
            &http,
            &format!("{base}/v1/me/actions?{api}"),
            ("authorization", &bearer),
            args.warmup,
            args.requests,
        )
        .await?;
        let (p50, p99, _) = measure(
            &http,
            &format!("{base}/app?{app}"),
            ("cookie", &cookie),
            args.warmup,
            args.requests,
        )
        .await?;
        println!("{name:<26} {a50:>8.2}ms {a99:>8.2}ms {p50:>8.2}ms {p99:>8.2}ms");
        out.push(json!({"query": name, "api_p50_ms": a50, "api_p99_ms": a99, "app_p50_ms": p50, "app_p99_ms": p99}));
    }
    // Analytics (issue 12): the summary and the page read the daily rollup
    // the triggers kept while seeding; every window covers the seeded days.
    let src: String = Connection::open(&db)?.query_row(
        "SELECT source_id FROM actions GROUP BY source_id ORDER BY count(*) DESC LIMIT 1",
        [],
        |r| r.get(0),
    )?;
    let queries = [
        ("summary window=7d", "window=7d".to_owned()),
        ("summary window=30d", "window=30d".to_owned()),
        ("summary window=90d", "window=90d".to_owned()),
        (
            "summary 90d, test env",
            "window=90d&environment=test".to_owned(),
        ),
        (
            "summary 90d, one Source",
            format!("window=90d&source_id={src}"),
        ),
    ];
    println!(
        "{:<26} {:>10} {:>10} {:>10} {:>10}",
        "analytics", "API p50", "API p99", "page p50", "page p99"
    );
    let mut analytics = Vec::new();
    for (name, q) in queries {
        let (a50, a99, _) = measure(
            &http,
            &format!("{base}/v1/analytics/summary?{q}"),
            ("authorization", &bearer),
            args.warmup,
            args.requests,
        )
        .await?;
        let (p50, p99, _) = measure(
            &http,
            &format!("{base}/app/analytics?{q}"),
            ("cookie", &cookie),
            args.warmup,
            args.requests,
        )
        .await?;
        println!("{name:<26} {a50:>8.2}ms {a99:>8.2}ms {p50:>8.2}ms {p99:>8.2}ms");
        analytics.push(json!({"query": name, "api_p50_ms": a50, "api_p99_ms": a99, "page_p50_ms": p50, "page_p99_ms": p99}));
    }
    // What the 90-day summary says, to check against the seeding's shares.
    let summary: Value = http
        .get(format!("{base}/v1/analytics/summary?window=90d"))
        .header("authorization", &bearer)
        .send()
        .await?
        .json()
        .await?;
    println!("90-day live totals: {}", summary["totals"]);
    println!(
        "{}",
        json!({"actions": args.actions, "seed_s": seed_s, "results": out, "analytics": analytics, "totals_90d": summary["totals"]})
    );
    if args.keep_data {
        println!("data dir kept: {}", tmp.keep().display());
    }
    Ok(())
}
