//! The loopback identity providers (tests/node/idp-*.mjs) as Rust values,
//! and the plain-HTTP "browser" the sign-in tests drive.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use hds::config::{ProviderConfig, ProviderKind};
use serde_json::{Value, json};

/// A node issuer, killed when dropped (also when a test fails).
pub struct Idp {
    child: Child,
    /// Held open: the script stops by itself when its stdin closes.
    _stdin: Option<ChildStdin>,
    pub info: Value,
    http: reqwest::Client,
}

impl Idp {
    pub async fn spawn(script: &str, args: &[&str]) -> Self {
        tls();
        let root = env!("CARGO_MANIFEST_DIR");
        assert!(
            std::path::Path::new(root)
                .join("tests/node/node_modules/oidc-provider")
                .exists(),
            "run `npm ci` in tests/node first (see .ci/run)"
        );
        let mut child = Command::new("node")
            .arg(format!("tests/node/{script}"))
            .args(args)
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node is needed for the identity-provider tests");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let first_line = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            BufReader::new(stdout).read_line(&mut line).map(|_| line)
        });
        let mut idp = Self {
            child,
            _stdin: stdin,
            info: Value::Null,
            http: crate::helpers::client_builder().build().unwrap(),
        };
        // Bounded: a script that never listens fails the test, and dropping
        // `idp` kills it, which also ends the blocked read.
        let line = tokio::time::timeout(Duration::from_secs(30), first_line)
            .await
            .unwrap_or_else(|_| panic!("{script} did not start within 30 s"))
            .unwrap()
            .unwrap();
        idp.info = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("{script} printed {line:?}: {e}"));
        idp
    }

    pub fn issuer(&self) -> String {
        self.info["issuer"].as_str().unwrap().to_owned()
    }

    /// idp-mint: a signed ID token with these claims (iss/iat/exp default).
    pub async fn mint(&self, claims: Value) -> String {
        self.mint_with(json!({ "claims": claims })).await
    }

    pub async fn mint_with(&self, request: Value) -> String {
        let r: Value = self
            .http
            .post(format!("{}/mint", self.issuer()))
            .json(&request)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        r["id_token"].as_str().unwrap().to_owned()
    }

    pub async fn call(&self, path: &str, body: Value) -> Value {
        self.http
            .post(format!("{}{path}", self.issuer()))
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    pub async fn stats(&self) -> Value {
        self.http
            .get(format!("{}/stats", self.issuer()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

impl Drop for Idp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn provider(kind: ProviderKind, issuer: &str, client_id: &str) -> ProviderConfig {
    ProviderConfig {
        kind,
        issuer: Some(issuer.to_owned()),
        client_id: Some(client_id.to_owned()),
        client_ids: Vec::new(),
        client_secret: None,
        display_name: None,
    }
}

/// Real time: tokens are minted for the server's system clock.
#[allow(clippy::disallowed_methods)]
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// reqwest is built without a TLS provider; the server installs ring when it
/// starts, but these clients may be built first.
pub fn tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

pub fn location(r: &reqwest::Response, base: &str) -> String {
    let loc = r
        .headers()
        .get("location")
        .unwrap_or_else(|| panic!("no Location on {} {}", r.status(), r.url()))
        .to_str()
        .unwrap();
    reqwest::Url::parse(base)
        .unwrap()
        .join(loc)
        .unwrap()
        .to_string()
}
