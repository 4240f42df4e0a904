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

/// A loopback port nothing listens on (yet): bound, then closed, so a
/// connection to it is refused until a sink starts there.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
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

    /// Waits (at most 20 s) until `n` messages to `to` have arrived.
    pub async fn wait_for(&self, to: &str, n: usize) -> Vec<Value> {
        for _ in 0..1000 {
            let got = self.to(to).await;
            if got.len() >= n {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!(
            "{n} messages to {to} did not arrive in 20 s: {:?}",
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
