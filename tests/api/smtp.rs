//! An SMTP server on loopback for tests (tests/py/smtp_sink.py, aiosmtpd): it
//! records every message parsed and answers as a test scripts. Shared by
//! tests/api and tests/cli.rs (`#[path]`), which uses only part of it.
#![allow(dead_code)]

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// The Python SMTP server, killed on drop.
pub struct SmtpSink {
    child: Child,
    /// The SMTP port.
    pub port: u16,
    ctl: String,
    http: reqwest::Client,
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port nothing listens on (yet), so a connection to it is refused
/// until a sink starts there. It is taken from below the kernel's ephemeral
/// range: a port from `bind(0)` is free only until the next test's server or
/// outgoing connection is given it, and the sink then cannot bind (seen in CI).
pub fn free_port() -> u16 {
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    // Up to 10,000 ports just below the range, none under 1024; bounded tries.
    let from = low.saturating_sub(10_000).max(1024);
    let span = u64::from(low.saturating_sub(from));
    if span < 1000 {
        // No room below the range on this machine: any free port, as before.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        return l.local_addr().unwrap().port();
    }
    let mut seed = {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        h.finish()
    };
    for _ in 0..200 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let port = from + u16::try_from((seed >> 33) % span).unwrap();
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port below {low}");
}

impl SmtpSink {
    pub fn start() -> Self {
        Self::start_on(0)
    }

    /// Listens on `port` (0: any free port).
    pub fn start_on(port: u16) -> Self {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/smtp_sink.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg("--port")
            .arg(port.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 with aiosmtpd (tests/py/requirements.txt)");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let ports: Value = serde_json::from_str(&line).expect("the sink's ports");
        Self {
            child,
            port: u16::try_from(ports["port"].as_u64().unwrap()).unwrap(),
            ctl: format!("http://127.0.0.1:{}", ports["ctl"]),
            http: {
                let _ = rustls::crypto::ring::default_provider().install_default();
                reqwest::Client::new()
            },
        }
    }

    /// `[smtp]` for a TestApp: this sink, no TLS, no AUTH.
    pub fn config(port: u16) -> hds::config::SmtpConfig {
        hds::config::SmtpConfig {
            host: "127.0.0.1".into(),
            port,
            credentials: None,
            from: "hds <hds@example.com>".parse().unwrap(),
            tls: hds::config::SmtpTls::None,
        }
    }

    /// The next messages are answered with these codes (then 250).
    pub async fn script(&self, codes: &[u16]) {
        let r = self
            .http
            .post(format!("{}/script", self.ctl))
            .json(&json!({ "codes": codes }))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success());
    }

    pub async fn received(&self) -> Vec<Value> {
        self.http
            .get(format!("{}/received", self.ctl))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Waits (at most 60 s) until `n` messages to `to` have arrived: long
    /// enough for the outbox's first retry (30 s), should an attempt time
    /// out on a machine loaded by the whole suite (seen once locally).
    pub async fn wait_for(&self, to: &str, n: usize) -> Vec<Value> {
        for _ in 0..3000 {
            let got = self.to(to).await;
            if got.len() >= n {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!(
            "{n} messages to {to} did not arrive in 60 s: {:?}",
            self.received().await
        );
    }

    /// The messages to `to` so far.
    pub async fn to(&self, to: &str) -> Vec<Value> {
        self.received()
            .await
            .into_iter()
            .filter(|m| {
                m["rcpt_tos"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|a| a == to))
            })
            .collect()
    }
}
