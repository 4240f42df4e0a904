//! Shared by the benchmark programs (`bench`, `inbox_bench`, …): starting and
//! stopping the server process they run, and machine facts for their reports;
//! `load` is the raw HTTP load generator.

pub mod load;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};

/// A started `hds serve`; stopped (TERM, then KILL after 5 s) when dropped.
pub struct Server {
    pub child: Child,
}

impl Server {
    pub fn stop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Spawns `cmd` (an `hds serve …` with its arguments, environment and stderr
/// already set) with stdout piped, and waits up to 30 s for its first line,
/// `hds listening on http://ADDR`. A thread keeps draining stdout afterwards
/// so the server never blocks writing to it.
pub fn start_server(mut cmd: Command) -> Result<(Server, SocketAddr)> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {program} serve"))?;
    let mut server = Server { child };
    let stdout = server
        .child
        .stdout
        .take()
        .ok_or_else(|| anyhow!("no stdout pipe"))?;
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut line = String::new();
        let mut first = true;
        loop {
            line.clear();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) if first => {
                    let _ = tx.send(line.trim().to_owned());
                    first = false;
                }
                Ok(_) => {}
            }
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .map_err(|_| anyhow!("hds serve printed no listening line within 30 s"))?;
    let addr = line
        .strip_prefix("hds listening on http://")
        .ok_or_else(|| anyhow!("unexpected first line from hds serve: {line:?}"))?
        .parse::<SocketAddr>()
        .with_context(|| format!("address in {line:?}"))?;
    Ok((server, addr))
}

/// `hds serve` for a load benchmark: loopback on an ephemeral port, rate
/// limiting and logging off, the given `--durability`.
pub fn serve_for_load(hds: &Path, dir: &Path, durability: &str) -> Result<(Server, SocketAddr)> {
    let mut cmd = Command::new(hds);
    cmd.args(["serve", "--data-dir"])
        .arg(dir)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--rate-limit",
            "0",
            "--durability",
            durability,
        ])
        .env("RUST_LOG", "off")
        .stderr(Stdio::null());
    start_server(cmd)
}

/// `hds init --data-dir DIR --json`: the credentials of a fresh data dir.
pub fn hds_init_json(hds: &Path, dir: &Path) -> Result<Value> {
    let out = Command::new(hds)
        .args(["init", "--data-dir"])
        .arg(dir)
        .arg("--json")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {} init", hds.display()))?;
    if !out.status.success() {
        bail!(
            "hds init failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    serde_json::from_slice(&out.stdout).context("hds init --json output")
}

pub fn clk_tck() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
        .unwrap_or(100.0)
}

pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Newest modification time of any file under `dir`.
pub fn newest_mtime(dir: &Path) -> Option<std::time::SystemTime> {
    let mut newest = None;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).ok()?.flatten() {
            let Ok(md) = e.metadata() else { continue };
            if md.is_dir() {
                stack.push(e.path());
            } else if let Ok(m) = md.modified() {
                newest = newest.max(Some(m));
            }
        }
    }
    newest
}

pub fn r2(x: f64) -> Value {
    if x.is_finite() {
        json!((x * 100.0).round() / 100.0)
    } else {
        Value::Null
    }
}
