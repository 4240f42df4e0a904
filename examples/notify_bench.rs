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
//! The load generator is one thread with the raw HTTP/1.1 keep-alive client of
//! examples/common/load.rs, so server and client share the machine's cores.
// Benchmarks run against a real server in real time: waiting is measured, not tested.
#![allow(clippy::disallowed_methods)]

#[allow(dead_code)] // each example uses a part of it
mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use clap::Parser;
use serde_json::{Value, json};

use common::load::{
    Conn, Load, Resp, action_body, closed_loop, encode, lat_json, median, ns_json, once, pct, plan,
    sequential, time_n, us,
};
use common::{cpu_model, hds_init_json, r2};

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
    let (mut server, addr) = common::serve_for_load(&args.hds, &dir, &args.durability)?;
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
