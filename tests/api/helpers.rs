//! TestApp: the real router on an ephemeral port, a fresh data dir, and typed
//! calls that assert the status and decode the body in one line.

use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use hds::domain::access::Role;
use reqwest::header::{LOCATION, SET_COOKIE};
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

pub struct TestApp {
    /// The running app's state, to observe what HTTP cannot (held long polls).
    pub state: hds::app::AppState,
    pub base: String,
    /// `http://…/metrics` on the app's second, metrics-only listener.
    pub metrics_url: String,
    pub http: reqwest::Client,
    pub dir: tempfile::TempDir,
    pub creds: Value,
    /// Numbers the e-mails of the people a test adds.
    people: AtomicUsize,
}

/// One HTTP answer: status, headers and JSON body (Null when empty).
pub struct Resp {
    /// The request, as `METHOD /path`, for failure messages.
    pub what: String,
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Resp {
    /// Asserts the error envelope and its code; returns the error object.
    #[track_caller]
    pub fn error(&self, status: u16, code: &str) -> &Value {
        assert_eq!(self.status.as_u16(), status, "{}: {}", self.what, self.body);
        assert_eq!(
            self.body["error"]["code"], code,
            "{}: {}",
            self.what, self.body
        );
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
        assert_eq!(self.status.as_u16(), status, "{}: {}", self.what, self.body);
        &self.body
    }
}

/// Sends one request; reads the answer as JSON (Null when empty, a string
/// when not JSON).
async fn request(
    http: &reqwest::Client,
    method: Method,
    url: &str,
    token: Option<&str>,
    body: Option<&Value>,
    headers: &[(&str, &str)],
) -> Resp {
    let what = format!("{method} {url}");
    let mut req = http.request(method, url);
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
    record(&what, status, &headers, &body);
    Resp {
        what,
        status,
        headers,
        body,
    }
}

/// With HDS_RECORD_RESPONSES set to a directory, every response a test gets
/// through these helpers is appended there as one JSON line (method, path,
/// status, body), for tests/py/openapi_conformance.py to check against the
/// OpenAPI document (.ci/test.sh does).
fn record(what: &str, status: StatusCode, headers: &reqwest::header::HeaderMap, body: &Value) {
    use std::io::Write;
    use std::sync::{Mutex, OnceLock};
    static OUT: OnceLock<Option<Mutex<std::fs::File>>> = OnceLock::new();
    let out = OUT.get_or_init(|| {
        let dir = std::env::var_os("HDS_RECORD_RESPONSES")?;
        let file = std::path::Path::new(&dir).join(format!("{}.jsonl", std::process::id()));
        Some(Mutex::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)
                .unwrap(),
        ))
    });
    let Some(out) = out else { return };
    let (method, url) = what.split_once(' ').unwrap();
    let url = reqwest::Url::parse(url).unwrap();
    let json = headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let line = json!({
        "method": method,
        "path": url.path(),
        "status": status.as_u16(),
        "json": json,
        "body": body,
    });
    writeln!(out.lock().unwrap(), "{line}").unwrap();
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
        // Tests send many refused credentials from 127.0.0.1; tests/api/abuse.rs
        // turns the per-address budget back on.
        config.anonymous_rate_limit = 0;
        // Callback URLs of tests name hooks.example.com: it resolves to
        // loopback here, so deliveries to it are refused at once (without
        // --allow-private-callbacks) and nothing leaves the machine.
        config.callback_resolve.push((
            "hooks.example.com".into(),
            std::net::Ipv4Addr::LOCALHOST.into(),
        ));
        let untuned = config.base_url.clone();
        tune(&mut config);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        // The listener's address, unless the test names a public URL (an
        // https one behind a pretend proxy).
        if config.base_url == untuned {
            config.base_url = base.clone();
        }
        let state = hds::app::start(config).await.unwrap();
        tokio::spawn(hds::app::serve(
            listener,
            state.clone(),
            std::future::pending(),
        ));
        // As `hds serve --metrics-listen`: a second port serving /metrics alone.
        let metrics = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let metrics_url = format!("http://{}/metrics", metrics.local_addr().unwrap());
        tokio::spawn(hds::app::serve_metrics(
            metrics,
            state.clone(),
            std::future::pending(),
        ));
        Self {
            state,
            base,
            metrics_url,
            http: crate::helpers::client_builder().build().unwrap(),
            dir,
            creds,
            people: AtomicUsize::new(1),
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

    /// One request with any credential (or none); prefer the actors.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> Resp {
        let url = format!("{}{path}", self.base);
        request(&self.http, method, &url, token, body, headers).await
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
    /// Scrapes the metrics listener; asserts 200 and the OpenMetrics type.
    pub async fn scrape(&self) -> Metrics {
        let r = self.http.get(&self.metrics_url).send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(
            r.headers()["content-type"],
            "application/openmetrics-text; version=1.0.0; charset=utf-8"
        );
        let text = r.text().await.unwrap();
        assert!(text.ends_with("# EOF\n"), "{text}");
        Metrics { text }
    }

    /// The server's clock, formatted as stored.
    pub fn now(&self) -> String {
        hds::domain::time::format(self.state.services.clock.now())
    }

    /// Waits (bounded) until `n` long polls are held by the server: awaits the
    /// waiters' published count, no polling.
    /// Starts a Source long poll (`wait_seconds=30`) on `id` and returns once
    /// the server holds it; the handle yields the answer's `data`.
    pub async fn held_poll(&self, id: &str) -> tokio::task::JoinHandle<Value> {
        let held = *self.state.services.waiters.held().borrow();
        let (http, url, key) = (
            self.http.clone(),
            format!("{}/v1/source/actions/{id}?wait_seconds=30", self.base),
            self.live_key(),
        );
        let poll = tokio::spawn(async move {
            let r = http.get(url).bearer_auth(key).send().await.unwrap();
            assert_eq!(r.status(), 200);
            r.json::<Value>().await.unwrap()["data"].clone()
        });
        self.until_polls_held(held + 1).await;
        assert!(
            !poll.is_finished(),
            "the poll answered before anything happened"
        );
        poll
    }

    /// The answer of a held poll, which must come well before its 30 s.
    pub async fn answer(poll: tokio::task::JoinHandle<Value>) -> Value {
        tokio::time::timeout(Duration::from_secs(10), poll)
            .await
            .expect("the held long poll was not woken")
            .unwrap()
    }

    pub async fn until_polls_held(&self, n: usize) {
        let mut held = self.state.services.waiters.held();
        let waited = tokio::time::timeout(Duration::from_secs(5), held.wait_for(|h| *h >= n)).await;
        assert!(
            matches!(waited, Ok(Ok(_))),
            "{n} long poll(s) were never held"
        );
    }
}

/// One scrape of `/metrics`, as text.
pub struct Metrics {
    pub text: String,
}

impl Metrics {
    /// The value of one series, written as it appears in the exposition:
    /// `name{label="value",…}`, or the bare name; None when absent.
    pub fn get(&self, series: &str) -> Option<f64> {
        self.text.lines().find_map(|l| {
            let value = l.strip_prefix(series)?.strip_prefix(' ')?;
            Some(value.parse().unwrap())
        })
    }

    /// `get`, asserting the series is there.
    #[track_caller]
    pub fn value(&self, series: &str) -> f64 {
        self.get(series)
            .unwrap_or_else(|| panic!("no series {series} in:\n{}", self.text))
    }
}

/// Someone the tests act as.
#[derive(Clone, Debug)]
pub struct Person {
    pub id: String,
    pub email: String,
}

/// A client that holds one credential and speaks for one actor: typed calls
/// assert the status and decode the body in one line.
pub struct Actor {
    base: String,
    http: reqwest::Client,
    token: Option<String>,
    /// Cookie sessions send it, with our origin, on every unsafe method.
    csrf: Option<String>,
    /// Who this is; None for a Source key or no credential at all.
    pub person: Option<Person>,
    /// The `service_session=…` pair, for a cookie session.
    pub cookie: Option<String>,
}

impl TestApp {
    fn actor(&self, token: Option<String>, person: Option<Person>) -> Actor {
        Actor {
            base: self.base.clone(),
            http: self.http.clone(),
            token,
            csrf: None,
            person,
            cookie: None,
        }
    }
    /// The init Source's live key.
    pub fn source(&self) -> Actor {
        self.actor(Some(self.live_key()), None)
    }
    /// The path of `user_id`'s one-click unsubscribe link for the init
    /// workspace, as a notification mail carries it (signed with this
    /// instance's key).
    pub async fn unsubscribe_path(&self, user_id: &str) -> String {
        let key = self
            .state
            .services
            .db
            .read(hds::store::mail::unsubscribe_key)
            .await
            .unwrap();
        let ws = self.creds["workspace_id"].as_str().unwrap();
        format!(
            "/app/unsubscribe/{}",
            hds::domain::unsubscribe::token(&key, user_id, ws)
        )
    }

    /// The init Source's test key.
    pub fn source_test(&self) -> Actor {
        self.actor(Some(self.test_key()), None)
    }
    /// The init owner, with the token `hds init` printed.
    pub fn admin(&self) -> Actor {
        let person = Person {
            id: self.creds["user_id"].as_str().unwrap().to_owned(),
            email: "admin@example.com".into(),
        };
        self.actor(Some(self.user_token()), Some(person))
    }
    /// No credential at all.
    pub fn anonymous(&self) -> Actor {
        self.actor(None, None)
    }
    /// Any bearer credential, forged or real.
    pub fn bearer(&self, token: &str) -> Actor {
        self.actor(Some(token.to_owned()), None)
    }

    fn next_email(&self, what: &str) -> String {
        let n = self
            .people
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{what}{n}@example.com")
    }

    /// A new person with `role` in the workspace, with their own token. They
    /// are created the product's way (`hds users link --create-as ROLE`); the
    /// token is issued in the store, as no route issues API tokens yet.
    pub fn member(&self, role: Role) -> Actor {
        let email = self.next_email(role.as_str());
        self.member_as(role, &email)
    }

    /// `member`, with this address.
    pub fn member_as(&self, role: Role, email: &str) -> Actor {
        let email = email.to_owned();
        let args = hds::cli::users::LinkArgs {
            email: email.clone(),
            create_as: Some(role.as_str().to_owned()),
            dir: hds::cli::DataDir {
                data_dir: self.data_dir(),
            },
            base_url: Some(self.base.clone()),
        };
        hds::cli::users::link(&args).unwrap();
        let conn = self.db();
        let user = hds::store::users::by_email(&conn, &email).unwrap().unwrap();
        self.with_token(&conn, Person { id: user.id, email })
    }

    /// The owner of another workspace, with a token. Straight in the store:
    /// nothing in the product creates a second workspace yet.
    pub fn outsider(&self) -> Actor {
        let conn = self.db();
        let now = self.now();
        let email = self.next_email("outsider");
        let ws = hds::store::workspaces::create(&conn, "Elsewhere", "team", &now).unwrap();
        let user = hds::store::users::create(&conn, &email, None, &now).unwrap();
        hds::store::workspaces::add_member(&conn, &ws.id, &user.id, Role::Owner, &now).unwrap();
        self.with_token(&conn, Person { id: user.id, email })
    }

    /// How many rows `table` holds, read from the SQLite file read-only.
    pub fn count_rows(&self, table: &str) -> i64 {
        let conn = rusqlite::Connection::open_with_flags(
            self.data_dir().join("hds.db"),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap()
    }

    pub fn db(&self) -> rusqlite::Connection {
        hds::store::db::open_cli_connection(&self.data_dir().join("hds.db")).unwrap()
    }

    fn with_token(&self, conn: &rusqlite::Connection, person: Person) -> Actor {
        let (token, _) =
            hds::store::users::issue_token(conn, &person.id, "test", None, &self.now()).unwrap();
        self.actor(Some(token), Some(person))
    }

    /// A one-time sign-in link for `email`, as the server makes them.
    pub async fn signin_link(&self, email: &str) -> String {
        hds::service::signin::create_link(&self.state.services, email)
            .await
            .unwrap()
    }

    /// `who` in a browser: a cookie session opened through a one-time link.
    pub async fn browser(&self, who: &Person) -> Actor {
        let link = self.signin_link(&who.email).await;
        self.sign_in_with_link(&link).await
    }

    /// Signs in through a one-time link the way a browser does (confirmation
    /// page, then its form POST); returns the cookie session, holding its
    /// jar and CSRF token.
    pub async fn sign_in_with_link(&self, link: &str) -> Actor {
        let http = browser_client();
        let page = http.get(link).send().await.unwrap();
        assert_eq!(page.status(), 200, "{link}");
        let html = page.text().await.unwrap();
        assert!(
            html.contains("<form"),
            "confirmation page has a form: {html}"
        );
        let done = http
            .post(link)
            .header("origin", &self.base)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("")
            .send()
            .await
            .unwrap();
        assert_eq!(done.status(), 303, "{:?}", done.text().await);
        assert_eq!(done.headers()[LOCATION], "/app");
        let cookie = done
            .headers()
            .get_all(SET_COOKIE)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .find(|c| c.starts_with("service_session="))
            .expect("a service_session cookie");
        assert!(cookie.contains("HttpOnly"), "{cookie}");
        assert!(cookie.contains("SameSite=Lax"), "{cookie}");
        // http base URL: Secure would stop the browser from sending it back.
        assert!(!cookie.contains("Secure"), "{cookie}");
        let mut actor = Actor {
            base: self.base.clone(),
            http,
            token: None,
            csrf: None,
            person: None,
            cookie: Some(cookie.split(';').next().unwrap().to_owned()),
        };
        let s: Value = actor.get("/v1/auth/session", 200).await;
        assert_eq!(s["data"]["auth"], "cookie", "{s}");
        let user = &s["data"]["user"];
        actor.person = Some(Person {
            id: user["id"].as_str().unwrap().to_owned(),
            email: user["email"].as_str().unwrap().to_owned(),
        });
        actor.csrf = Some(s["data"]["csrf_token"].as_str().unwrap().to_owned());
        actor
    }
}

impl Actor {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
    /// What `/app/events` says this browser's view is now (asked without a
    /// `since`, so it answers at once): it moves when something they may
    /// see changes.
    pub async fn change_view(&self) -> String {
        let text = self
            .http()
            .get(self.url("/app/events"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("id: "))
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no id in {text}"))
    }
    /// The bearer credential (panics for a cookie session).
    pub fn token(&self) -> &str {
        self.token.as_deref().expect("a bearer credential")
    }
    /// The session's CSRF token (panics for a bearer client).
    pub fn csrf(&self) -> &str {
        self.csrf.as_deref().expect("a cookie session")
    }
    /// The underlying client (a cookie session's jar included), for requests
    /// the typed calls do not make: forms, forged headers, raw bodies.
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }
    pub fn person(&self) -> &Person {
        self.person.as_ref().expect("a person")
    }

    /// One request with this actor's credential; a cookie session adds its
    /// origin and CSRF token to unsafe methods.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> Resp {
        let mut extra: Vec<(&str, &str)> = Vec::new();
        if let Some(csrf) = &self.csrf
            && method != Method::GET
        {
            extra.push(("origin", &self.base));
            extra.push(("x-csrf-token", csrf));
        }
        extra.extend_from_slice(headers);
        request(
            &self.http,
            method,
            &self.url(path),
            self.token.as_deref(),
            body,
            &extra,
        )
        .await
    }

    pub async fn get<T: DeserializeOwned>(&self, path: &str, status: u16) -> T {
        decode(&self.call(Method::GET, path, None, &[]).await, status)
    }
    pub async fn post<T: DeserializeOwned>(&self, path: &str, body: Value, status: u16) -> T {
        decode(
            &self.call(Method::POST, path, Some(&body), &[]).await,
            status,
        )
    }
    pub async fn patch<T: DeserializeOwned>(&self, path: &str, body: Value, status: u16) -> T {
        decode(
            &self.call(Method::PATCH, path, Some(&body), &[]).await,
            status,
        )
    }
    pub async fn delete<T: DeserializeOwned>(&self, path: &str, status: u16) -> T {
        decode(&self.call(Method::DELETE, path, None, &[]).await, status)
    }

    /// Sends `body` exactly as written (duplicate keys, arrays, odd numbers) as
    /// JSON, with this actor's bearer token; the answer as it came.
    pub async fn raw(&self, method: Method, path: &str, body: &str) -> Resp {
        let url = self.url(path);
        let mut req = self
            .http
            .request(method.clone(), &url)
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let r = req.send().await.unwrap();
        let (status, headers) = (r.status(), r.headers().clone());
        let body = serde_json::from_str(&r.text().await.unwrap()).unwrap_or(Value::Null);
        Resp {
            what: format!("{method} {url}"),
            status,
            headers,
            body,
        }
    }

    /// Asserts the error envelope with `code`; returns the error object.
    pub async fn get_err(&self, path: &str, status: u16, code: &str) -> Value {
        let r = self.call(Method::GET, path, None, &[]).await;
        r.error(status, code).clone()
    }
    pub async fn post_err(&self, path: &str, body: Value, status: u16, code: &str) -> Value {
        let r = self.call(Method::POST, path, Some(&body), &[]).await;
        r.error(status, code).clone()
    }
    pub async fn patch_err(&self, path: &str, body: Value, status: u16, code: &str) -> Value {
        let r = self.call(Method::PATCH, path, Some(&body), &[]).await;
        r.error(status, code).clone()
    }

    /// A dashboard page's HTML, answered with `status` (an error page).
    pub async fn page_with_status(&self, path: &str, status: u16) -> String {
        let r = self.http.get(self.url(path)).send().await.unwrap();
        assert_eq!(r.status().as_u16(), status, "{path}");
        r.text().await.unwrap()
    }

    /// A dashboard page's HTML; asserts 200.
    pub async fn page(&self, path: &str) -> String {
        let r = self.http.get(self.url(path)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        r.text().await.unwrap()
    }

    /// A form post as a browser sends it, from `origin` when given.
    pub async fn post_form(
        &self,
        path: &str,
        origin: Option<&str>,
        form: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut req = self.http.post(self.url(path)).form(form);
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        req.send().await.unwrap()
    }
}

/// Asserts `status` and decodes the whole body as `T`.
fn decode<T: DeserializeOwned>(r: &Resp, status: u16) -> T {
    serde_json::from_value(r.ok(status).clone())
        .unwrap_or_else(|e| panic!("{}: undecodable body {}: {e}", r.what, r.body))
}

/// POSTs an invitation link's button as a signed-out browser on hds's own
/// origin, expecting a refusal: asserts `status` and that no session cookie
/// came back; answers the page.
pub async fn refused_signed_out(app: &TestApp, link: &str, status: u16) -> String {
    let refused = browser_client()
        .post(link)
        .header("origin", &app.base)
        .form(&[("x", "y")])
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), status, "{link}");
    assert!(
        refused
            .headers()
            .get_all(SET_COOKIE)
            .iter()
            .all(|c| !c.to_str().unwrap().starts_with("service_session=")),
        "a session was opened"
    );
    refused.text().await.unwrap()
}

/// A browser-like client: keeps cookies, does not follow redirects.
pub fn browser_client() -> reqwest::Client {
    client_builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Runs `tests/node/<script>` with `env` to completion within `limit`; answers
/// its `{"ask": {"polls_held": n}}` lines once `app` holds that many long
/// polls; returns the JSON of its last other stdout line. Its stderr is shown
/// when it fails.
pub async fn run_node(
    script: &str,
    env: &[(&str, &str)],
    limit: Duration,
    app: Option<&TestApp>,
) -> Value {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/node");
    let mut child = Command::new("node")
        .arg(format!("{dir}/{script}"))
        .current_dir(dir)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node is needed for the browser tests (see .ci/run)");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let errors = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let deadline = tokio::time::Instant::now() + limit;
    let mut last = String::new();
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(line)) => {
                let parsed: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                if let Some(n) = parsed["ask"]["polls_held"].as_u64() {
                    app.expect("a script that asks needs the app")
                        .until_polls_held(n as usize)
                        .await;
                    writeln!(stdin, "ok").unwrap();
                } else {
                    last = line;
                }
            }
            Ok(None) => break,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{script} ran longer than {limit:?}; stderr:\n{}",
                    errors.join().unwrap_or_default()
                );
            }
        }
    }
    drop(stdin);
    let status = child.wait().unwrap();
    let stderr = errors.join().unwrap_or_default();
    assert!(status.success(), "{script} failed:\n{stderr}\n{last}");
    serde_json::from_str(&last)
        .unwrap_or_else(|e| panic!("{script} printed {last:?}: {e}\n{stderr}"))
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
