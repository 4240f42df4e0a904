//! TestApp: the real router on an ephemeral port, a fresh data dir, and typed
//! calls that assert the status and decode the body in one line.

use std::path::PathBuf;

use hds::domain::access::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

pub struct TestApp {
    /// The running app's state, to observe what HTTP cannot (held long polls).
    pub state: hds::app::AppState,
    pub base: String,
    pub http: reqwest::Client,
    pub dir: tempfile::TempDir,
    pub creds: Value,
}

/// One HTTP answer: status, headers and JSON body (Null when empty).
pub struct Resp {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Resp {
    /// Asserts the error envelope and its code; returns the error object.
    #[track_caller]
    pub fn error(&self, status: u16, code: &str) -> &Value {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.body);
        assert_eq!(self.body["error"]["code"], code, "body: {}", self.body);
        assert!(
            self.body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
        assert!(self.body["error"]["details"].is_object());
        assert!(self.headers.contains_key("x-request-id"));
        &self.body["error"]
    }
    #[track_caller]
    pub fn ok(&self, status: u16) -> &Value {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.body);
        &self.body
    }
}

/// reqwest is built without a default TLS provider (hds installs ring when a
/// server starts); a test may build a client before any server runs.
pub fn client_builder() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

impl TestApp {
    pub async fn spawn() -> Self {
        Self::spawn_with(|_| {}).await
    }

    pub async fn spawn_with(tune: impl FnOnce(&mut hds::config::Config)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let creds = hds::cli::init::initialise(&data, "admin@example.com", "Test").unwrap();
        let mut config = hds::config::Config::for_data_dir(data);
        config.rate_limit = 0;
        tune(&mut config);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        config.base_url = base.clone();
        let state = hds::app::start(config).await.unwrap();
        tokio::spawn(hds::app::serve(
            listener,
            state.clone(),
            std::future::pending(),
        ));
        Self {
            state,
            base,
            http: crate::helpers::client_builder().build().unwrap(),
            dir,
            creds,
        }
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }
    pub fn live_key(&self) -> String {
        self.creds["source_key_live"].as_str().unwrap().to_owned()
    }
    pub fn test_key(&self) -> String {
        self.creds["source_key_test"].as_str().unwrap().to_owned()
    }
    pub fn user_token(&self) -> String {
        self.creds["user_token"].as_str().unwrap().to_owned()
    }

    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> Resp {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let r = req.send().await.unwrap();
        let status = r.status();
        let headers = r.headers().clone();
        let text = r.text().await.unwrap();
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Resp {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, path: &str, token: &str) -> Resp {
        self.call(Method::GET, path, Some(token), None, &[]).await
    }
    pub async fn post(&self, path: &str, token: &str, body: Value) -> Resp {
        self.call(Method::POST, path, Some(token), Some(&body), &[])
            .await
    }
    pub async fn patch(&self, path: &str, token: &str, body: Value) -> Resp {
        self.call(Method::PATCH, path, Some(token), Some(&body), &[])
            .await
    }

    /// Creates an Action with the live key; asserts 201 and returns `data`.
    pub async fn create_action(&self, body: Value) -> Value {
        self.create_action_with(&self.live_key(), body).await
    }
    pub async fn create_action_with(&self, key: &str, body: Value) -> Value {
        let r = self.post("/v1/actions", key, body).await;
        r.ok(201);
        assert_eq!(r.body["idempotent_replay"], false);
        r.body["data"].clone()
    }

    /// Decides with the admin's token; returns the raw response.
    pub async fn decide(&self, action: &Value, choice: Value) -> Resp {
        let mut body = json!({ "action_version": action["action_version"], "fingerprint": action["fingerprint"] });
        body.as_object_mut()
            .unwrap()
            .extend(choice.as_object().unwrap().clone());
        self.post(
            &format!("/v1/actions/{}/decision", action["id"].as_str().unwrap()),
            &self.user_token(),
            body,
        )
        .await
    }

    /// Creates a second Source in the admin's workspace; returns (id, live key).
    pub async fn second_source(&self) -> (String, String) {
        let r = self
            .post(
                "/v1/sources",
                &self.user_token(),
                json!({ "name": "Other" }),
            )
            .await;
        r.ok(201);
        (
            r.body["data"]["id"].as_str().unwrap().to_owned(),
            r.body["secrets"]["live_key"].as_str().unwrap().to_owned(),
        )
    }
}

impl TestApp {
    /// The server's clock, formatted as stored.
    pub fn now(&self) -> String {
        hds::domain::time::format(self.state.services.clock.now())
    }

    /// Waits (bounded) until `n` long polls are held by the server.
    pub async fn until_polls_held(&self, n: usize) {
        for _ in 0..2_000 {
            if self.state.services.waiters.len() >= n {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        panic!("the long poll was never held");
    }

    /// A user of another workspace, with a token.
    pub fn outsider(&self) -> String {
        let conn = hds::store::db::open_cli_connection(&self.data_dir().join("hds.db")).unwrap();
        let now = self.now();
        let ws = hds::store::workspaces::create(&conn, "Elsewhere", "team", &now).unwrap();
        let user = hds::store::users::create(&conn, "mallory@example.com", None, &now).unwrap();
        hds::store::workspaces::add_member(&conn, &ws.id, &user.id, Role::Owner, &now).unwrap();
        hds::store::users::issue_token(&conn, &user.id, "test", None, &now)
            .unwrap()
            .0
    }

    /// Adds a workspace member straight in the database (invitations arrive
    /// with the teams work); returns (user id, user token).
    pub fn add_member(&self, email: &str, role: &str) -> (String, String) {
        let now = self.now();
        let role = Role::parse(role).unwrap();
        let conn = hds::store::db::open_cli_connection(&self.data_dir().join("hds.db")).unwrap();
        let ws = self.creds["workspace_id"].as_str().unwrap();
        let user = hds::store::users::create(&conn, email, None, &now).unwrap();
        hds::store::workspaces::add_member(&conn, ws, &user.id, role, &now).unwrap();
        let (token, _) =
            hds::store::users::issue_token(&conn, &user.id, "test", None, &now).unwrap();
        (user.id, token)
    }
}

/// A two-option Action body.
pub fn two_options(title: &str) -> Value {
    json!({ "title": title, "options": [{ "id": "approve", "label": "Approve", "style": "primary" }, { "id": "reject", "label": "Reject", "style": "destructive" }] })
}

/// Runs a Python helper from tests/py with JSON on stdin; returns its stdout.
pub fn python(script: &str, input: &Value) -> String {
    use std::io::Write;
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/");
    let mut child = std::process::Command::new("python3")
        .arg(format!("{path}{script}"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 is needed for the independent verifiers (see .ci/run)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}
