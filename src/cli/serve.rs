//! `hds serve`: run the service until SIGINT/SIGTERM.

use anyhow::Context;

use crate::cli::DataDir;
use crate::config::Config;

pub fn run(mut config: Config) -> anyhow::Result<()> {
    config.load_file()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        // Blocking work is SQLite reads on a pool of 4 connections: more threads
        // than that only queue, and each costs memory (its allocator heap, stack).
        .max_blocking_threads(8)
        .enable_all()
        .build()?;
    // A data dir that exists is locked first: a second server started with
    // the same settings is told the data dir is in use, not that the port
    // is. A new one is made only after the port is bound: a busy port stops
    // a first start before anything is created, so its secrets are never
    // made and then lost.
    let data_dir = DataDir {
        data_dir: config.data_dir.clone(),
    };
    let early_lock = if config.data_dir.is_dir() {
        Some(data_dir.lock()?)
    } else {
        None
    };
    let (listener, metrics_listener) = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("listening on {} (--listen, HDS_LISTEN)", config.listen))?;
        let metrics_listener = match config.metrics_listen {
            Some(at) => Some(tokio::net::TcpListener::bind(at).await.with_context(|| {
                format!("listening on {at} (--metrics-listen, HDS_METRICS_LISTEN)")
            })?),
            None => None,
        };
        Ok::<_, anyhow::Error>((listener, metrics_listener))
    })?;
    let _lock = match early_lock {
        Some(held) => held,
        None => data_dir.lock()?,
    };
    let stopped = rt.block_on(async move {
        let addr = listener.local_addr()?;
        config.follow_listener(addr);
        if config.secure_cookies()
            && config.trusted_proxies.is_empty()
            && config.anonymous_rate_limit > 0
        {
            // An https base URL usually means a TLS proxy in front.
            tracing::warn!(
                "the base URL is https but no --trusted-proxy is set: behind a reverse proxy, \
                 every client shares one per-address sign-in budget (guide: \"Rate limiting\")"
            );
        }
        if let Some(limit) = open_files_limit()
            && u64::from(config.max_connections) + FILES_BESIDE_CONNECTIONS > limit
        {
            tracing::warn!(
                "--max-connections {} is above what this process may open ({limit} files, `ulimit -n`) less about {FILES_BESIDE_CONNECTIONS} for the database and the rest: \
                 connections past that are refused by the system. Raise the limit (the systemd unit in packaging/ sets 65536) or lower --max-connections",
                config.max_connections
            );
        }
        let first_start = first_start(&config)?;
        // `hds users link` run later on this data dir starts its links with
        // this base URL unless told another (best effort: a read-only data
        // dir only loses that default).
        if let Err(e) = crate::cli::DataDir::write_base_url(&config.data_dir, &config.base_url) {
            tracing::warn!(error = %e, "could not record the base URL for `hds users link`");
        }
        let data_dir = config.data_dir.clone();
        let base_url = config.base_url.clone();
        let state = crate::app::start(config).await?;
        // Tests and scripts read the first line to learn the port when
        // listening on :0. The banner is written in one piece, and a stdout
        // that was closed (a reader that stopped at the link) is not a reason
        // to stop serving: write errors are ignored, where `println!` panics.
        let mut banner = format!("hds listening on http://{addr}\n");
        // Listening on every interface (0.0.0.0) or behind a proxy, the
        // address bound is not where people open the dashboard: forms are
        // only taken from the base URL's origin.
        if base_url.trim_end_matches('/') != format!("http://{addr}") {
            banner.push_str(&format!(
                "dashboard and sign-in links at {base_url} (the base URL; forms from any other origin are refused)\n"
            ));
        }
        if let Some(m) = &metrics_listener {
            let at = m.local_addr()?;
            banner.push_str(&format!("metrics on http://{at}/metrics\n"));
        }
        if let Some(created) = first_start {
            banner.push_str(&first_start_banner(&data_dir, &created));
        }
        {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(banner.as_bytes()).and_then(|()| out.flush());
        }
        tracing::info!(%addr, "hds started");
        if let Some(m) = metrics_listener {
            // Stops with the runtime, once the main listener has drained.
            let state = state.clone();
            tokio::spawn(async move {
                if let Err(e) = crate::app::serve_metrics(m, state, std::future::pending()).await {
                    tracing::error!(error = %e, "the metrics listener stopped");
                }
            });
        }
        let stop = state.services.stop.clone();
        let stopping = async move {
            shutdown_signal().await;
            tracing::info!("stopping: held requests answer now, requests under way finish (at most --drain-timeout); a second signal stops at once");
            stop.send_replace(true);
            // Committed writes are durable whatever happens next: a second
            // signal need not wait for the drain (as after kill -9, a job
            // being run is run again at the next start). Watched from a
            // thread with a runtime of its own, which outlives the server's
            // runtime and the wait for the background loops.
            let watcher = std::thread::Builder::new()
                .name("hds-second-signal".into())
                .spawn(|| {
                    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    else {
                        return;
                    };
                    rt.block_on(shutdown_signal());
                    tracing::warn!("second signal: stopping now");
                    std::process::exit(130);
                });
            if let Err(e) = watcher {
                tracing::warn!(error = %e, "no watcher for a second signal; the stop runs to its end");
            }
        };
        crate::app::serve(listener, state.clone(), stopping).await?;
        let background = state
            .background
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        Ok::<_, anyhow::Error>(background)
    });
    // The background loops stop with this runtime. Only then is the data
    // dir let go (`_lock`), so that no other server takes a job this one
    // may still be recording; an attempt in flight is cut short and sent
    // again at the next start (delivery is at least once).
    drop(rt);
    if let Some(thread) = stopped? {
        let (ended, joined) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = thread.join();
            let _ = ended.send(());
        });
        if joined.recv_timeout(BACKGROUND_STOP).is_err() {
            tracing::warn!(
                "the background loops did not stop within {} s (a name lookup of a webhook host?); stopping anyway",
                BACKGROUND_STOP.as_secs()
            );
        }
    }
    tracing::info!("hds stopped");
    Ok(())
}

/// How long a stop waits for the background loops: a read or a name
/// lookup in progress finishes first.
const BACKGROUND_STOP: std::time::Duration = std::time::Duration::from_secs(5);

/// Files the process keeps open besides its connections: the database and
/// its log, the pool's readers, keys, the listeners.
const FILES_BESIDE_CONNECTIONS: u64 = 100;

/// The soft limit on open files (`ulimit -n`), where the system says it
/// (Linux: /proc/self/limits); None when unlimited or unknown.
fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// An empty data dir (no users) is initialised like `hds init`, so the first
/// `hds serve` leads straight to the dashboard.
fn first_start(config: &Config) -> anyhow::Result<Option<serde_json::Value>> {
    let db = config.db_path();
    if db.exists() {
        let conn = crate::store::db::open_cli_connection(&db)?;
        let has_users: bool = conn
            .query_row(
                "SELECT EXISTS (SELECT name FROM sqlite_master WHERE name = 'users') AND EXISTS (SELECT 1 FROM users)",
                [],
                |r| r.get(0),
            )
            .unwrap_or(false);
        if has_users {
            return Ok(None);
        }
    }
    let created = crate::cli::init::initialise_at(
        &config.data_dir,
        &config.admin_email,
        "Default",
        &config.base_url,
        false,
    )?;
    Ok(Some(created))
}

/// The file the first start writes the Source's secrets to, in the data dir.
pub use crate::files::INITIAL_CREDENTIALS;

/// What the first start prints. Its secrets (the admin's one-time sign-in
/// link, the Source's keys and webhook secret) go to a file only its owner
/// may read: the server's output is kept and shipped by a container runtime
/// or journald (GitLab writes its first root password to a file for the same
/// reason; `docker run -t` keeps even a terminal's output). If the file
/// cannot be written, the secrets are printed rather than lost.
fn first_start_banner(data_dir: &std::path::Path, c: &serde_json::Value) -> String {
    let f = |k: &str| c[k].as_str().unwrap_or("").to_owned();
    let mut lines = vec![format!(
        "first start: created workspace {}, its admin and a Source.",
        f("workspace_id")
    )];
    let path = data_dir.join(INITIAL_CREDENTIALS);
    // No API token is made on a first start: the admin makes their own on
    // the account page.
    let kept: serde_json::Map<String, serde_json::Value> = [
        "workspace_id",
        "user_id",
        "signin_url",
        "source_id",
        "source_key_live",
        "source_key_test",
        "webhook_secret",
    ]
    .into_iter()
    .map(|k| (k.to_owned(), c[k].clone()))
    .collect();
    match write_private(&path, &serde_json::Value::Object(kept)) {
        Ok(()) => {
            lines.push(format!(
                "  the admin's sign-in link (once, within 24 h) and Source {}'s live and test keys and webhook secret are in {} (readable by this user only; not printed, so that they stay out of logs). Show the link with: grep signin_url {}. Move the keys to your secret store, then delete the file.",
                f("source_id"),
                path.display(),
                path.display()
            ));
            lines.push("`hds users link EMAIL` prints a new sign-in link.".to_owned());
        }
        Err(e) => {
            tracing::warn!(error = %e, path = %path.display(), "could not write the first start's secrets to a file; printing them");
            lines.extend([
                format!("  sign in (once, within 24 h): {}", f("signin_url")),
                format!(
                    "  Source {}: live key {}",
                    f("source_id"),
                    f("source_key_live")
                ),
                format!("                 test key {}", f("source_key_test")),
                format!("  webhook secret {}", f("webhook_secret")),
                "These secrets are shown once. `hds users link EMAIL` prints a new sign-in link."
                    .to_owned(),
            ]);
        }
    }
    lines.push(String::new());
    lines.join("\n")
}

/// Writes `value` as JSON to a new file at `path` that only its owner may
/// read (mode 0600 on Unix), replacing one left by an earlier first start.
fn write_private(path: &std::path::Path, value: &serde_json::Value) -> std::io::Result<()> {
    use std::io::Write;
    let _ = std::fs::remove_file(path);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}
