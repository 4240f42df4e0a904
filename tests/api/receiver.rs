//! A webhook receiver on loopback for tests (tests/py/webhook_receiver.py):
//! it verifies every delivery with the `standardwebhooks` package and answers
//! as a test scripts. Shared by tests/api and tests/cli.rs (`#[path]`).

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// The Python receiver, killed on drop.
pub struct Receiver {
    child: Child,
    pub base: String,
    http: reqwest::Client,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    pub fn start() -> Self {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/webhook_receiver.py");
        let mut child = Command::new("python3")
            .arg(script)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 with standardwebhooks (tests/py/requirements.txt)");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = serde_json::from_str::<Value>(&line).expect("the receiver's port")["port"]
            .as_u64()
            .unwrap();
        Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
            http: {
                let _ = rustls::crypto::ring::default_provider().install_default();
                reqwest::Client::new()
            },
        }
    }

    /// The callback URL of one test.
    pub fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base)
    }

    pub async fn secrets(&self, secrets: &[&str]) {
        self.ctl("secrets", json!({ "secrets": secrets })).await;
    }

    /// The next answers, in order (then 200); `hold_secs` delays the next one.
    pub async fn script(&self, statuses: &[u16], hold_secs: f64) {
        self.ctl(
            "script",
            json!({ "statuses": statuses, "hold_secs": hold_secs }),
        )
        .await;
    }

    async fn ctl(&self, what: &str, body: Value) {
        let r = self
            .http
            .post(format!("{}/_ctl/{what}", self.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success());
    }

    pub async fn received(&self) -> Vec<Value> {
        self.http
            .get(format!("{}/_ctl/received", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Waits (at most 20 s) until `n` deliveries have arrived at `path`.
    pub async fn wait_for(&self, path: &str, n: usize) -> Vec<Value> {
        for _ in 0..1000 {
            let got: Vec<Value> = self
                .received()
                .await
                .into_iter()
                .filter(|d| d["path"] == format!("/{path}"))
                .collect();
            if got.len() >= n {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!(
            "{n} deliveries to /{path} did not arrive in 20 s: {:?}",
            self.received().await
        );
    }
}
