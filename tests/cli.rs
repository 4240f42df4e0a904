#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Tests of the real `hds` binary as an operator runs it: crash durability
//! (kill -9), online backup and restore, and the README quickstart verbatim.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

#[path = "api/receiver.rs"]
mod receiver;
#[path = "api/smtp.rs"]
mod smtp;

const HDS: &str = env!("CARGO_BIN_EXE_hds");

fn init(data: &Path) -> Value {
    let out = Command::new(HDS)
        .args(["init", "--json", "--data-dir"])
        .arg(data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Starts `hds serve` on an ephemeral port; returns the child and its base URL.
fn serve(data: &Path) -> (Child, String) {
    serve_logging_to(data, Stdio::null())
}

/// `serve` with the server's log (stderr) sent to `log`.
fn serve_logging_to(data: &Path, log: Stdio) -> (Child, String) {
    serve_with(data, log, &[])
}

/// A data dir made by `init` at `<dir>/live` and served: what a test of
/// the running server needs from it.
struct Live {
    data: std::path::PathBuf,
    key: String,
    token: String,
    child: Child,
    base: String,
    http: reqwest::Client,
}

fn live(dir: &Path) -> Live {
    let data = dir.join("live");
    let creds = init(&data);
    let (child, base) = serve(&data);
    Live {
        key: creds["source_key_live"].as_str().unwrap().to_owned(),
        token: creds["user_token"].as_str().unwrap().to_owned(),
        data,
        child,
        base,
        http: client_builder().build().unwrap(),
    }
}

/// A command's standard output, once it has succeeded (its standard error
/// shown when it did not).
fn stdout_of(out: std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `serve` with more flags.
fn serve_with(data: &Path, log: Stdio, flags: &[&str]) -> (Child, String) {
    let mut child = Command::new(HDS)
        .args(["serve", "--listen", "127.0.0.1:0", "--rate-limit", "0"])
        .args(flags)
        .arg("--data-dir")
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(log)
        .env("RUST_LOG", "info")
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("hds listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line}"));
    (child, addr.to_owned())
}

fn body(i: usize) -> Value {
    json!({"title": format!("crash test {i}"), "options": [{"label": "Yes"}, {"label": "No"}], "metadata": {"i": i}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_create_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let creds = init(dir.path());
    let key = creds["source_key_live"].as_str().unwrap().to_owned();
    let (mut child, base) = serve(dir.path());
    let acked = Arc::new(Mutex::new(Vec::<String>::new()));
    let http = client_builder().build().unwrap();
    let mut load = Vec::new();
    for w in 0..8 {
        let (http, base, key, acked) = (http.clone(), base.clone(), key.clone(), acked.clone());
        load.push(tokio::spawn(async move {
            for i in 0..10_000 {
                let Ok(r) = http
                    .post(format!("{base}/v1/actions"))
                    .bearer_auth(&key)
                    .body(body(w * 10_000 + i).to_string())
                    .send()
                    .await
                else {
                    return;
                };
                if r.status().as_u16() != 201 {
                    return;
                }
                let Ok(v) = r.json::<Value>().await else {
                    return;
                };
                acked
                    .lock()
                    .unwrap()
                    .push(v["data"]["id"].as_str().unwrap().to_owned());
            }
        }));
    }
    // Kill mid-load, once a few hundred creates were acknowledged.
    for _ in 0..2_000 {
        if acked.lock().unwrap().len() >= 300 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    for t in load {
        t.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() >= 300,
        "only {} creates were acknowledged before the kill",
        acked.len()
    );

    let (mut child, base) = serve(dir.path());
    let mut missing = Vec::new();
    for id in &acked {
        let r = http
            .get(format!("{base}/v1/source/actions/{id}"))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        if r.status().as_u16() != 200 {
            missing.push(id.clone());
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged Actions were lost: {:?}",
        missing.len(),
        acked.len(),
        &missing[..missing.len().min(5)]
    );
}

/// A webhook being sent when hds is killed is sent again after the restart,
/// with the same `webhook-id` (the job's claim dies with the process).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_in_flight_at_kill_9_is_delivered_after_the_restart() {
    let dir = tempfile::tempdir().unwrap();
    let creds = init(dir.path());
    let rx = receiver::Receiver::start();
    rx.secrets(&[creds["webhook_secret"].as_str().unwrap()])
        .await;
    // The receiver holds the first delivery 30 s: it is in flight at the kill.
    rx.script(&[200], 30.0).await;
    let flags = ["--allow-private-callbacks"];
    let (mut child, base) = serve_with(dir.path(), Stdio::null(), &flags);
    let http = client_builder().build().unwrap();
    let key = creds["source_key_live"].as_str().unwrap();
    let mut action = body(1);
    action["callback_url"] = json!(rx.url("crash"));
    let a: Value = http
        .post(format!("{base}/v1/actions"))
        .bearer_auth(key)
        .json(&action)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let a = &a["data"];
    let r = http
        .post(format!("{base}/v1/actions/{}/decision", a["id"].as_str().unwrap()))
        .bearer_auth(creds["user_token"].as_str().unwrap())
        .json(&json!({"action_version": a["action_version"], "fingerprint": a["fingerprint"], "option_id": a["options"][0]["id"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let first = rx.wait_for("crash", 1).await;
    child.kill().unwrap(); // SIGKILL while the receiver holds the request
    child.wait().unwrap();
    let (mut child, _) = serve_with(dir.path(), Stdio::null(), &flags);
    let both = rx.wait_for("crash", 2).await;
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        both[1]["id"], first[0]["id"],
        "the same message, sent again"
    );
    assert_eq!(both[1]["body"]["type"], "action.resolved");
    let secret = creds["webhook_secret"].as_str().unwrap();
    assert_eq!(both[1]["verified"][secret], true);
}

/// `[smtp]` in the data dir's hds.toml: a server on loopback, no TLS.
fn smtp_on(data: &Path, port: u16) {
    std::fs::write(
        data.join("hds.toml"),
        format!("[smtp]\nhost = \"127.0.0.1\"\nport = {port}\ntls = \"none\"\nfrom = \"hds <hds@example.com>\"\n"),
    )
    .unwrap();
}

/// Mails queued while the mail server does not answer (a port that takes
/// connections and never greets: some attempts are in flight, the rest wait
/// in the queue) survive a kill -9: after the restart, with the server up,
/// every one arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mails_queued_while_smtp_is_down_all_arrive_after_kill_9_and_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let creds = init(dir.path());
    // Listening, never accepting: the kernel completes each connection and
    // the client waits for a greeting that never comes.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    smtp_on(dir.path(), silent.local_addr().unwrap().port());
    let (mut child, base) = serve(dir.path());
    let http = client_builder().build().unwrap();
    let token = creds["user_token"].as_str().unwrap();
    let people: Vec<String> = (0..20).map(|i| format!("p{i}@example.com")).collect();
    for email in &people {
        let r: Value = http
            .post(format!("{base}/v1/workspaces/invitations"))
            .bearer_auth(token)
            .json(&json!({ "email": email, "role": "viewer" }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(r["data"]["email_delivery"], "queued", "{r}");
    }
    child.kill().unwrap(); // SIGKILL with attempts in flight and mail queued
    child.wait().unwrap();
    drop(silent);

    let sink = smtp::SmtpSink::start();
    smtp_on(dir.path(), sink.port);
    let (mut child, base) = serve(dir.path());
    for email in &people {
        let got = sink.wait_for(email, 1).await;
        assert!(
            got[0]["text"]
                .as_str()
                .unwrap()
                .contains("/app/invitations/")
        );
    }
    let log: Value = http
        .get(format!("{base}/v1/workspaces/emails?status=sent"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(log["data"].as_array().unwrap().len(), people.len(), "{log}");
}

/// Whoever reads the access log must not be able to sign in as someone: a
/// one-time link's secret never reaches the log, though the request does.
#[tokio::test]
async fn the_access_log_never_holds_a_signin_link_secret() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let creds = init(&data);
    let link = creds["signin_url"].as_str().unwrap();
    let path = &link[link.find("/app/signin/link/").unwrap()..];
    let secret = path.trim_start_matches("/app/signin/link/");
    assert!(secret.len() > 20);
    let log_path = dir.path().join("server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let (mut child, base) = serve_logging_to(&data, Stdio::from(log));
    let http = client_builder().build().unwrap();
    let page = http.get(format!("{base}{path}")).send().await.unwrap();
    assert_eq!(page.status(), 200, "the link's confirmation page");
    // The link as a mail client, a proxy or a person may mangle it (sent
    // as written: an HTTP client would tidy some of these).
    let addr = base.trim_start_matches("http://");
    for mangled in [
        format!("//app/signin/link/{secret}"),
        format!("/app//signin/link/{secret}"),
        format!("/app/signin/link//{secret}"),
        format!("/app/./signin/link/{secret}"),
        format!("/app/signin/%6Cink/{secret}"),
        format!("/app/signin?next=/app/signin/link/{secret}"),
        format!("/app/signin/link/{secret}/.."),
        format!("/app/signin/link/..%2f{secret}"),
    ] {
        use std::io::{Read, Write};
        let mut tcp = std::net::TcpStream::connect(addr).unwrap();
        write!(
            tcp,
            "GET {mangled} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        tcp.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 "), "{mangled}: {answer}");
    }
    // A later request: its access-log line follows the link's.
    let r = http.get(format!("{base}/health")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    child.kill().unwrap();
    child.wait().unwrap();
    let text = std::fs::read_to_string(&log_path).unwrap();
    assert!(text.contains("/health"), "no access log at all:\n{text}");
    assert!(
        text.contains("/app/signin/link/…"),
        "the link request is logged, redacted:\n{text}"
    );
    assert!(
        !text.contains(secret),
        "the link's secret is in the log:\n{text}"
    );
}

/// A first start on an empty data dir whose port is taken stops before it
/// creates anything, so no secret is made and lost; the next start on a free
/// port makes and prints them. Without --base-url, the printed link and the
/// origin forms must come from follow the address hds listens on.
#[tokio::test]
async fn a_first_start_binds_first_and_its_links_follow_the_listen_address() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = taken.local_addr().unwrap().to_string();
    let out = Command::new(HDS)
        .args(["serve", "--listen", &busy, "--data-dir"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("listening on {busy}")), "{err}");
    assert!(out.stdout.is_empty(), "nothing printed, nothing made");
    assert!(!data.join("hds.db").exists(), "no database was created");
    drop(taken);

    let mut child = Command::new(HDS)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let base = first.strip_prefix("hds listening on ").unwrap().to_owned();
    // The banner, up to its last line.
    let banner: Vec<String> = lines
        .by_ref()
        .map(|l| l.unwrap())
        .take_while(|l| !l.contains("prints a new sign-in link"))
        .collect();
    // Keep reading, as a terminal would: the server's stdout stays open.
    std::thread::spawn(move || lines.for_each(drop));
    // No secret is printed to an output that is not a terminal (a log): the
    // link and the Source's secrets are in a file only this user may read,
    // which the banner names.
    let text = banner.join("\n");
    assert!(
        !text.contains("svc_live_")
            && !text.contains("svc_test_")
            && !text.contains("whsec_")
            && !text.contains("/app/signin/link/"),
        "{text}"
    );
    let file = data.join("initial-credentials.json");
    assert!(text.contains(&file.display().to_string()), "{text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    let creds: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let live = creds["source_key_live"].as_str().unwrap().to_owned();
    assert!(live.starts_with("svc_live_"), "{creds}");
    assert!(
        creds["source_key_test"]
            .as_str()
            .unwrap()
            .starts_with("svc_test_")
    );
    assert!(
        creds["webhook_secret"]
            .as_str()
            .unwrap()
            .starts_with("whsec_")
    );
    let link = creds["signin_url"].as_str().unwrap().to_owned();
    assert!(creds.get("user_token").is_none(), "{creds}");
    assert!(
        link.starts_with(&format!("{base}/app/signin/link/")),
        "{link} vs {base}"
    );

    let http = client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    // A form from an origin this server does not serve is refused, and the
    // page says which origin it expected.
    let refused = http
        .post(&link)
        .header("origin", "http://127.0.0.1:9")
        .form(&[("next", "/app")])
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    let page = refused.text().await.unwrap();
    assert!(page.contains(&format!("expects {base}")), "{page}");
    // From its own origin, the link signs in.
    let ok = http
        .post(&link)
        .header("origin", &base)
        .form(&[("next", "/app")])
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 303);
    assert_eq!(ok.headers()["location"], "/app");
    // The live key from the file works.
    let sources = http
        .get(format!("{base}/v1/source/actions"))
        .bearer_auth(&live)
        .send()
        .await
        .unwrap();
    assert_eq!(sources.status(), 200);
    child.kill().unwrap();
    child.wait().unwrap();
    // No API token was made that nobody holds: the one credential is the
    // session the link opened.
    let kinds: Vec<String> = rusqlite::Connection::open(data.join("hds.db"))
        .unwrap()
        .prepare("SELECT kind FROM user_tokens")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(kinds, ["session"]);
}

/// `--metrics-listen` binds before anything is made, like `--listen`, and
/// serves `/metrics` on its own address only.
#[tokio::test]
async fn metrics_listen_serves_metrics_on_a_second_address_only() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = taken.local_addr().unwrap().to_string();
    let out = Command::new(HDS)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .env("HDS_METRICS_LISTEN", &busy)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "listening on {busy} (--metrics-listen, HDS_METRICS_LISTEN)"
        )),
        "{err}"
    );
    assert!(!data.join("hds.db").exists(), "no database was created");
    drop(taken);

    let (mut child, base, metrics) = serve_with_metrics(&data);
    let http = client_builder().build().unwrap();
    assert_eq!(
        http.get(format!("{base}/health"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    let scrape = http.get(&metrics).send().await.unwrap();
    assert_eq!(scrape.status(), 200);
    let text = scrape.text().await.unwrap();
    assert!(
        text.contains(r#"hds_http_requests_total{route="/health",method="GET",status="200"} 1"#),
        "{text}"
    );
    let public = http.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(public.status(), 404);
    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test]
async fn online_backup_restores_into_a_new_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("live");
    let creds = init(&data);
    let key = creds["source_key_live"].as_str().unwrap().to_owned();
    let (mut child, base) = serve(&data);
    let http = client_builder().build().unwrap();
    let created = create(&http, &base, &key).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let backup = dir.path().join("backup.db");
    let out = Command::new(HDS)
        .arg("backup")
        .arg(&backup)
        .arg("--data-dir")
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 Actions"));
    // One self-contained file, out of WAL mode: it can be read from
    // read-only media, and opening it makes nothing beside it.
    let mode: String = rusqlite::Connection::open(&backup)
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "delete");
    // Restore refuses a data dir in use.
    let busy = Command::new(HDS)
        .arg("restore")
        .arg(&backup)
        .arg("--force")
        .arg("--data-dir")
        .arg(&data)
        .output()
        .unwrap();
    assert!(!busy.status.success());
    child.kill().unwrap();
    child.wait().unwrap();

    let restored = dir.path().join("restored");
    let out = Command::new(HDS)
        .arg("restore")
        .arg(&backup)
        .arg("--data-dir")
        .arg(&restored)
        .output()
        .unwrap();
    let warned = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{warned}");
    // A new data dir holds no keys yet: the restore says to copy them back.
    assert!(
        warned.contains("has no file of the backup's signing key")
            && warned.contains("copy back the keys directory"),
        "{warned}"
    );
    let beside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("backup.db"))
        .collect();
    assert_eq!(beside, ["backup.db"], "the restore left the backup alone");
    let (mut child, base) = serve(&restored);
    let r = http
        .get(format!("{base}/v1/source/actions/{id}"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["data"]["title"], "crash test 1");
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A restore keeps what was revoked after the backup revoked: a user token
/// signed out and a Source key rotated away do not work again. What the
/// backup cannot hold (the key made since, the new webhook secret) is named.
#[tokio::test]
async fn a_restore_keeps_credentials_revoked_since_the_backup_revoked() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("live");
    let creds = init(&data);
    let (key, token) = (
        creds["source_key_live"].as_str().unwrap().to_owned(),
        creds["user_token"].as_str().unwrap().to_owned(),
    );
    let sid = creds["source_id"].as_str().unwrap().to_owned();
    let (mut child, base) = serve(&data);
    let http = client_builder().build().unwrap();
    let other: Value = http
        .post(format!("{base}/v1/sources"))
        .bearer_auth(&token)
        .json(&json!({"name": "Leaky bot"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let other_id = other["data"]["id"].as_str().unwrap().to_owned();
    let other_key = other["secrets"]["live_key"].as_str().unwrap().to_owned();
    let backup = dir.path().join("backup.db");
    stdout_of(hds(&["backup", backup.to_str().unwrap()], &data));
    // After the backup: the other Source revoked, the live key rotated with
    // no overlap (a leak), the webhook secret too, and the token signed out.
    let r = http
        .delete(format!("{base}/v1/sources/{other_id}"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let rotated: Value = http
        .post(format!("{base}/v1/sources/{sid}/keys/rotate"))
        .bearer_auth(&token)
        .json(&json!({"environment": "live", "key_overlap_seconds": 0,
                      "webhook_secret": true, "webhook_secret_overlap_seconds": 0}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let new_key = rotated["secrets"]["live_key"].as_str().unwrap().to_owned();
    let out = http
        .post(format!("{base}/v1/auth/logout"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert!(out.status().is_success(), "{}", out.status());
    child.kill().unwrap();
    child.wait().unwrap();

    let out = Command::new(HDS)
        .args(["restore", backup.to_str().unwrap(), "--force", "--data-dir"])
        .arg(&data)
        .output()
        .unwrap();
    let (said, warned) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{said}{warned}");
    assert!(
        said.contains("kept revoked (revoked after this backup was taken): 1 user token(s) and sign-in session(s), 1 Source key(s)"),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "kept revoked (revoked after this backup was taken): Sources {other_id};"
        )),
        "{said}"
    );
    assert!(
        warned.contains(&format!("keys made after this backup was taken, which it does not hold, so those keys stop working: {sid}")),
        "{warned}"
    );
    assert!(
        warned.contains(&format!("webhook secrets changed after this backup was taken, so their deliveries are signed with the backup's secret again: {sid}")),
        "{warned}"
    );
    let (mut child, base) = serve(&data);
    for (credential, path) in [
        (&token, "/v1/auth/session".to_owned()),
        (&key, "/v1/source/actions".to_owned()),
        (&new_key, "/v1/source/actions".to_owned()),
    ] {
        let r = http
            .get(format!("{base}{path}"))
            .bearer_auth(credential)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 401, "{path}");
    }
    let r = http
        .get(format!("{base}/v1/source/actions"))
        .bearer_auth(&other_key)
        .send()
        .await
        .unwrap();
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "SOURCE_REVOKED", "{body}");
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A backup at a path holding a space, `%`, `?` and `#` restores, and
/// nothing is made beside it; a copy of a live database with its
/// write-ahead log beside it restores with the commits still in that log.
#[test]
fn restore_reads_odd_paths_and_a_live_copy_with_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("live");
    init(&data);
    let odd = dir.path().join("a b%20?#c");
    std::fs::create_dir(&odd).unwrap();
    let backup = odd.join("b ?#%.db");
    stdout_of(hds(&["backup", backup.to_str().unwrap()], &data));
    stdout_of(hds(
        &["restore", backup.to_str().unwrap()],
        &dir.path().join("r1"),
    ));
    let beside: Vec<_> = std::fs::read_dir(&odd)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(beside, ["b ?#%.db"]);

    // A copy of a live database: WAL mode, one commit still in its log.
    let live = dir.path().join("copy.db");
    std::fs::copy(&backup, &live).unwrap();
    let c = rusqlite::Connection::open(&live).unwrap();
    let mode: String = c
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    c.execute_batch(
        "PRAGMA wal_autocheckpoint = 0; UPDATE workspaces SET name = 'Renamed in the log'",
    )
    .unwrap();
    let snap = dir.path().join("snap");
    std::fs::create_dir(&snap).unwrap();
    std::fs::copy(&live, snap.join("hds.db")).unwrap();
    std::fs::copy(dir.path().join("copy.db-wal"), snap.join("hds.db-wal")).unwrap();
    drop(c);
    let r2 = dir.path().join("r2");
    stdout_of(hds(
        &["restore", snap.join("hds.db").to_str().unwrap()],
        &r2,
    ));
    let listed = stdout_of(hds(&["workspaces", "list"], &r2));
    assert!(listed.contains("Renamed in the log"), "{listed}");
}

/// A backup taken before `hds keys rotate`, restored beside the keys
/// directory as it is now: the newer key is published again (retired), so
/// a receipt it signed still verifies; the restored dir gets init's modes.
#[tokio::test]
async fn a_restore_from_before_a_rotation_keeps_the_newer_key_published() {
    let dir = tempfile::tempdir().unwrap();
    let Live {
        data,
        key,
        token,
        mut child,
        base,
        http,
    } = live(dir.path());
    let backup = dir.path().join("backup.db");
    let out = hds(&["backup", backup.to_str().unwrap()], &data);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = hds(&["keys", "rotate"], &data);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a = &create(&http, &base, &key).await;
    let decided = decide_yes(&http, &base, &token, a).await;
    let receipt = dir.path().join("receipt.jws");
    std::fs::write(
        &receipt,
        decided["data"]["receipt"]["jws"].as_str().unwrap(),
    )
    .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();

    let restored = dir.path().join("restored");
    std::fs::create_dir(&restored).unwrap();
    let copied = Command::new("cp")
        .arg("-a")
        .arg(data.join("keys"))
        .arg(restored.join("keys"))
        .status()
        .unwrap();
    assert!(copied.success());
    let out = hds(&["restore", backup.to_str().unwrap()], &restored);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("1 receipt key file(s) in")
            && said.contains("that the backup did not list are published again, as retired"),
        "{said}"
    );
    let out = hds(&["verify-receipt", receipt.to_str().unwrap()], &restored);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(&restored), 0o700);
        assert_eq!(mode(&restored.join("hds.db")), 0o600);
    }
    // Restored over the database that issued a receipt since the backup:
    // the operator is told that its seq number will be issued again, first
    // while nothing is replaced yet (without --force), then as it is.
    let out = hds(&["restore", backup.to_str().unwrap()], &data);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("already holds a database; pass --force to replace it (the database being replaced issued receipts up to seq 1"),
        "{err}"
    );
    let out = hds(&["restore", backup.to_str().unwrap(), "--force"], &data);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: the database being replaced issued receipts up to seq 1, the backup only up to seq 0. Receipts 1 to 1 stay valid signatures"),
        "{err}"
    );
}

/// A restore that cannot finish leaves the data dir as it was: a backup
/// from a newer hds is refused before the database is touched, and a file
/// that is no database before the data dir is even made.
#[test]
fn a_failed_restore_leaves_the_database_that_was_there() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("live");
    init(&data);
    let backup = dir.path().join("backup.db");
    let out = hds(&["backup", backup.to_str().unwrap()], &data);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let newer = dir.path().join("newer.db");
    std::fs::copy(&backup, &newer).unwrap();
    rusqlite::Connection::open(&newer)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    let before = std::fs::read(data.join("hds.db")).unwrap();
    let out = hds(&["restore", newer.to_str().unwrap(), "--force"], &data);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("written by a newer hds (schema 99"), "{err}");
    assert_eq!(std::fs::read(data.join("hds.db")).unwrap(), before);
    assert!(!data.join("hds.db.restoring").exists());
    // The database still serves.
    let out = hds(&["keys", "list"], &data);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let junk = dir.path().join("junk.db");
    std::fs::write(
        &junk,
        "not a database at all, but long enough to be read as one?",
    )
    .unwrap();
    let fresh = dir.path().join("fresh");
    let out = hds(&["restore", junk.to_str().unwrap()], &fresh);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("junk.db"), "names the file: {err}");
    assert!(!fresh.exists(), "no data dir made for a refused restore");
}

/// A deleted account cannot be brought back from the command line: its
/// placeholder address names no one for a sign-in link, an ownership or a
/// new person.
#[tokio::test]
async fn a_deleted_account_is_named_by_no_command() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("live");
    let creds = init(&data);
    let token = creds["user_token"].as_str().unwrap().to_owned();
    let user_id = creds["user_id"].as_str().unwrap().to_owned();
    let ws = creds["workspace_id"].as_str().unwrap().to_owned();
    let (mut child, base) = serve(&data);
    let http = client_builder().build().unwrap();
    let r = http
        .delete(format!("{base}/v1/account"))
        .bearer_auth(&token)
        .json(&json!({"confirm": "admin@localhost.localdomain"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 204, "{}", r.text().await.unwrap());
    child.kill().unwrap();
    child.wait().unwrap();
    let gone = format!("deleted-{user_id}@invalid");
    for args in [
        vec!["users", "link", gone.as_str()],
        vec!["users", "link", gone.as_str(), "--create-as", "admin"],
        vec!["workspaces", "set-owner", ws.as_str(), gone.as_str()],
        vec!["workspaces", "create", "Revived", "--owner", gone.as_str()],
    ] {
        let out = hds(&args, &data);
        let said = String::from_utf8_lossy(&out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {said}");
        assert!(!said.contains("/app/signin/"), "{args:?}: no link: {said}");
        assert!(err.contains(gone.as_str()), "{args:?}: {err}");
    }
    let c = rusqlite::Connection::open(data.join("hds.db")).unwrap();
    let owners: i64 = c
        .query_row(
            "SELECT count(*) FROM memberships WHERE user_id = ?1",
            [&user_id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(owners, 0);
}

/// `hds keys rotate` run beside a server whose new key it cannot use (here
/// a damaged file; in the field, a file only another user may read): the
/// server says so on `/ready`, and a decision is 503 with nothing applied,
/// not a 500. The CLI gives a new key file the keys directory's owner.
#[tokio::test]
async fn a_signing_key_the_server_cannot_read_is_reported_not_a_500() {
    let dir = tempfile::tempdir().unwrap();
    let Live {
        data,
        key,
        token,
        mut child,
        base,
        http,
    } = live(dir.path());
    let ready: Value = http
        .get(format!("{base}/ready"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ready["checks"]["receipt_signing"], "ok", "{ready}");
    let said = stdout_of(hds(&["keys", "rotate"], &data));
    let kid = said.trim().rsplit(' ').next().unwrap().to_owned();
    let pem = data.join("keys").join(format!("{kid}.pem"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let owner = std::fs::metadata(data.join("keys")).unwrap().uid();
        assert_eq!(std::fs::metadata(&pem).unwrap().uid(), owner);
    }
    std::fs::write(&pem, "damaged\n").unwrap();
    let r = http.get(format!("{base}/ready")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 503);
    let ready: Value = r.json().await.unwrap();
    assert_eq!(ready["status"], "unavailable", "{ready}");
    assert_eq!(ready["checks"]["receipt_signing"], "failing", "{ready}");
    assert_eq!(ready["checks"]["database_write"], "ok", "{ready}");
    let a = create(&http, &base, &key).await;
    let r = http
        .post(format!("{base}/v1/actions/{}/decision", a["id"].as_str().unwrap()))
        .bearer_auth(&token)
        .json(&json!({"action_version": a["action_version"], "fingerprint": a["fingerprint"], "option_id": "yes"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 503);
    assert!(r.headers().get("retry-after").is_some());
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["error"]["code"], "SERVICE_UNAVAILABLE", "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("receipt signing key"),
        "{e}"
    );
    // Nothing applied: the Action is still open, at its version.
    let now: Value = http
        .get(format!(
            "{base}/v1/source/actions/{}",
            a["id"].as_str().unwrap()
        ))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(now["data"]["status"], "open", "{now}");
    child.kill().unwrap();
    child.wait().unwrap();
}

/// `hds keys revoke` after a leak: rotate, then revoke the old key while
/// the server runs. The JWKS publishes it as revoked, the receipts it signed
/// fail verification; the active key and unknown kids are refused.
#[tokio::test]
async fn a_revoked_key_stays_published_and_its_receipts_fail() {
    let dir = tempfile::tempdir().unwrap();
    let Live {
        data,
        key,
        token,
        mut child,
        base,
        http,
    } = live(dir.path());
    let a = create(&http, &base, &key).await;
    let decided = decide_yes(&http, &base, &token, &a).await;
    let old_kid = decided["data"]["receipt"]["kid"]
        .as_str()
        .unwrap()
        .to_owned();
    let receipt = dir.path().join("receipt.jws");
    std::fs::write(
        &receipt,
        decided["data"]["receipt"]["jws"].as_str().unwrap(),
    )
    .unwrap();
    let out = hds(&["verify-receipt", receipt.to_str().unwrap()], &data);
    assert_eq!(out.status.code(), Some(0));
    // A webhook's body, `{type, timestamp, data: {action}}`, as a Source
    // keeps it: verified, and the Action around the receipt checked too.
    let hook = dir.path().join("webhook.json");
    let mut body = serde_json::json!({"type": "action.resolved",
        "timestamp": "2026-11-23T10:00:00.000Z", "data": {"action": decided["data"]}});
    std::fs::write(&hook, body.to_string()).unwrap();
    let out = hds(&["verify-receipt", hook.to_str().unwrap()], &data);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    body["data"]["action"]["resolution_option_id"] = "no".into();
    std::fs::write(&hook, body.to_string()).unwrap();
    let out = hds(&["verify-receipt", hook.to_str().unwrap()], &data);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("resolution_option_id"), "{said}");
    // A genuine Action on top whose receipt lost its JWS, and a changed
    // decision below carrying the genuine JWS: the JWS is checked against
    // the Action that holds it, and a file with two is refused outright.
    let mut genuine = decided["data"].clone();
    genuine["receipt"] = serde_json::json!({});
    let mut both = genuine.clone();
    both["data"] = serde_json::json!({"action": body["data"]["action"]});
    std::fs::write(&hook, both.to_string()).unwrap();
    let out = hds(&["verify-receipt", hook.to_str().unwrap()], &data);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("more than one receipt"), "{said}");
    // A backup from before the revocation, while the key was still active.
    let backup = dir.path().join("before.db");
    let out = hds(&["backup", backup.to_str().unwrap()], &data);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The active key is refused: rotate first.
    let out = hds(&["keys", "revoke", &old_kid], &data);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("hds keys rotate"));
    let out = hds(&["keys", "rotate"], &data);
    assert!(out.status.success());
    let out = hds(&["keys", "revoke", &old_kid], &data);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("revoked {old_kid}")));
    let out = hds(&["keys", "revoke", &old_kid], &data);
    assert!(String::from_utf8_lossy(&out.stdout).contains("already revoked"));
    let out = hds(&["keys", "revoke", "k_nope"], &data);
    assert_eq!(out.status.code(), Some(1));

    // Published as revoked by the running server; its receipt now fails,
    // by the data dir and by the JWKS.
    let jwks: Value = http
        .get(format!("{base}/v1/receipts/keys"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let listed = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kid"] == old_kid.as_str())
        .cloned()
        .unwrap();
    assert_eq!(listed["status"], "revoked", "{jwks}");
    let keys = dir.path().join("keys.json");
    std::fs::write(&keys, jwks.to_string()).unwrap();
    for extra in [vec![], vec!["--keys", keys.to_str().unwrap()]] {
        let mut args = vec!["verify-receipt", receipt.to_str().unwrap()];
        args.extend(extra);
        let out = hds(&args, &data);
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert!(said.contains("is revoked"), "{said}");
    }
    // Keys from a URL on a system without CA certificates (a slim container
    // image): the error says what to install, not "builder error".
    let no_certs = dir.path().join("no-certs");
    std::fs::create_dir(&no_certs).unwrap();
    let out = Command::new(HDS)
        .args(["verify-receipt", receipt.to_str().unwrap()])
        .args(["--keys", "https://127.0.0.1:9/keys.json"])
        .env("SSL_CERT_FILE", no_certs.join("none.pem"))
        .env("SSL_CERT_DIR", &no_certs)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the HTTPS client could not be built")
            && err.contains("ca-certificates package"),
        "{err}"
    );
    // New decisions sign with the new key and verify.
    let b = create(&http, &base, &key).await;
    let decided = decide_yes(&http, &base, &token, &b).await;
    assert_eq!(decided["data"]["status"], "resolved", "{decided}");
    child.kill().unwrap();
    child.wait().unwrap();

    // Restored into a new data dir and only then given the keys directory:
    // the commands that read keys without a server honour its marker.
    let elsewhere = dir.path().join("elsewhere");
    let out = hds(&["restore", backup.to_str().unwrap()], &elsewhere);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let copied = Command::new("cp")
        .arg("-a")
        .arg(data.join("keys"))
        .arg(elsewhere.join("keys"))
        .status()
        .unwrap();
    assert!(copied.success());
    let out = hds(&["verify-receipt", receipt.to_str().unwrap()], &elsewhere);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("is revoked"), "{said}");
    let out = hds(&["keys", "list"], &elsewhere);
    let listed = String::from_utf8_lossy(&out.stdout);
    let line = listed
        .lines()
        .find(|l| l.starts_with(old_kid.as_str()))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(line.contains("revoked"), "{listed}");

    // Restoring the backup from before the revocation does not bring the
    // key back: it is revoked again, and as it was that backup's active
    // key, the server makes a new one.
    let out = hds(&["restore", backup.to_str().unwrap(), "--force"], &data);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains(&format!(
            "revoked again (revoked after this backup was taken): {old_kid}"
        )),
        "{said}"
    );
    assert!(
        said.contains("the backup's active key is among them"),
        "{said}"
    );
    let out = hds(&["verify-receipt", receipt.to_str().unwrap()], &data);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("is revoked"));
    let (mut child, base) = serve(&data);
    let jwks: Value = http
        .get(format!("{base}/v1/receipts/keys"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let statuses: Vec<(String, String)> = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["kid"].as_str().unwrap().to_owned(),
                k["status"].as_str().unwrap_or("active").to_owned(),
            )
        })
        .collect();
    assert!(
        statuses.contains(&(old_kid.clone(), "revoked".to_owned())),
        "{jwks}"
    );
    assert!(
        statuses.iter().any(|(k, s)| *k != old_kid && s == "active"),
        "a new active key: {jwks}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A command read by something that stops reading (`| head -1`) ends
/// quietly: no panic, no stack trace; what it did is done. Init says its
/// secrets were not shown.
#[test]
fn a_command_into_a_closed_pipe_does_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("live");
    init(&data);
    let cases: [(&[&str], &Path); 4] = [
        (&["keys", "list"], &data),
        (&["workspaces", "list"], &data),
        (&["keys", "rotate"], &data),
        (&["users", "link", "admin@localhost.localdomain"], &data),
    ];
    // Runs `args` with its stdout closed before the command has opened its
    // database (what `| head -0` does).
    let closed = |args: &[&str], data: &Path| {
        let mut child = Command::new(HDS)
            .args(args)
            .arg("--data-dir")
            .arg(data)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        child.wait_with_output().unwrap()
    };
    for (args, data) in cases {
        let out = closed(args, data);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // Init's secrets are shown once: a reader that left is told so.
    let fresh = dir.path().join("fresh");
    let out = closed(&["init"], &fresh);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("its secrets could not be written")
            && err.contains("`hds users link admin@localhost.localdomain` signs in"),
        "{err}"
    );
    assert!(fresh.join("hds.db").exists(), "init did its work");
    let keys = hds(&["keys", "list"], &data);
    let listed = String::from_utf8_lossy(&keys.stdout);
    assert_eq!(listed.matches(" active ").count(), 1, "{listed}");
    assert_eq!(listed.matches(" retired ").count(), 1, "rotated: {listed}");
}

/// Operator mistakes are refused before anything is made, with a message
/// that names the fix: a data dir without a database, an address or a base
/// URL that could not work, and a config file whose bad line may hold a
/// secret (not echoed).
#[test]
fn operator_mistakes_are_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let fails = |args: &[&str], data: &Path, says: &str| {
        let out = hds(args, data);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(err.contains(says), "{args:?}: {err}");
        err
    };
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    fails(&["keys", "list"], &empty, "has no database; run `hds init");
    assert!(!empty.join("hds.db").exists(), "nothing was created");
    let fresh = dir.path().join("fresh");
    fails(
        &["init", "--admin-email", "not an email"],
        &fresh,
        "is not an e-mail address",
    );
    fails(&["init", "--workspace", ""], &fresh, "the workspace name");
    // A first start with a bad admin e-mail from the environment: refused
    // as the argument is read, naming the variable; nothing is created.
    let out = Command::new(HDS)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&fresh)
        .env("HDS_ADMIN_EMAIL", "bogus value!")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is not an e-mail address")
            && err.contains("environment variable HDS_ADMIN_EMAIL"),
        "{err}"
    );
    assert!(!fresh.exists(), "nothing was created");
    fails(
        &["init", "--base-url", "http://127.0.0.1:8080/hds"],
        &fresh,
        "has a path (/hds)",
    );
    assert!(!fresh.join("hds.db").exists(), "nothing was created");
    let data = dir.path().join("data");
    init(&data);
    fails(
        &["users", "link", "a b@example.com", "--create-as", "viewer"],
        &data,
        "is not an e-mail address",
    );
    // Without --create-as, the address itself is what is wrong.
    let err = fails(
        &["users", "link", "not an email"],
        &data,
        "is not an e-mail address",
    );
    assert!(!err.contains("--create-as"), "{err}");
    // A kid starting with `-` (base64url) is a kid, not a flag.
    fails(
        &["keys", "revoke", "-oR7FpZt2XWgRY5J1s2MEJSx"],
        &data,
        "no receipt key has the kid -oR7FpZt2XWgRY5J1s2MEJSx",
    );
    // A file where the data dir should be is named as such.
    let afile = dir.path().join("afile");
    std::fs::write(&afile, "x").unwrap();
    fails(
        &["serve", "--listen", "127.0.0.1:0"],
        &afile,
        "is a file, not a directory",
    );
    fails(&["init"], &afile, "is a file, not a directory");
    // Restore takes a file, and says so of a directory or a missing path.
    let into = dir.path().join("into");
    fails(
        &["restore", data.to_str().unwrap()],
        &into,
        "is a directory; give the file `hds backup` wrote",
    );
    fails(
        &["restore", dir.path().join("nope.db").to_str().unwrap()],
        &into,
        "No such file",
    );
    // A database from a newer hds: every command refuses it in words, and
    // leaves it as it was.
    let newer = dir.path().join("newer");
    std::fs::create_dir(&newer).unwrap();
    std::fs::copy(data.join("hds.db"), newer.join("hds.db")).unwrap();
    rusqlite::Connection::open(newer.join("hds.db"))
        .unwrap()
        .execute_batch("PRAGMA user_version = 99")
        .unwrap();
    let before = std::fs::read(newer.join("hds.db")).unwrap();
    for args in [&["serve", "--listen", "127.0.0.1:0"][..], &["keys", "list"]] {
        let err = fails(
            args,
            &newer,
            "written by a newer hds (schema 99; this hds knows up to",
        );
        assert!(!err.contains("rusqlite"), "{err}");
    }
    assert_eq!(std::fs::read(newer.join("hds.db")).unwrap(), before);
    // An active key file that is not a key stops the start, naming it.
    let damaged = dir.path().join("damaged");
    init(&damaged);
    let pem = std::fs::read_dir(damaged.join("keys"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "pem"))
        .unwrap();
    std::fs::write(&pem, "not a key\n").unwrap();
    let err = fails(
        &["serve", "--listen", "127.0.0.1:0"],
        &damaged,
        "the active receipt signing key cannot be used",
    );
    assert!(
        err.contains(pem.file_name().unwrap().to_str().unwrap()),
        "{err}"
    );
    assert!(!err.contains("INTERNAL_ERROR"), "{err}");
    std::fs::write(
        data.join("hds.toml"),
        "[smtp]\nhost = \"mail\"\npassword=s3cretpw\n",
    )
    .unwrap();
    let err = fails(&["serve", "--listen", "127.0.0.1:0"], &data, "line 3");
    assert!(!err.contains("s3cretpw"), "{err}");
    std::fs::remove_file(data.join("hds.toml")).unwrap();
    // A backup that fails leaves nothing behind, so that a retry can write
    // to the same path (here the data dir's database is not one).
    let broken = dir.path().join("broken");
    std::fs::create_dir(&broken).unwrap();
    std::fs::write(broken.join("hds.db"), vec![b'x'; 8192]).unwrap();
    let to = dir.path().join("broken-backup.db");
    fails(
        &["backup", to.to_str().unwrap()],
        &broken,
        "nothing was left at",
    );
    assert!(!to.exists(), "the failed backup's file was removed");
    // A timeout past a day is refused at the start, not a panic per connection.
    for flag in [
        "--header-read-timeout",
        "--body-read-timeout",
        "--keep-alive-timeout",
        "--write-timeout",
    ] {
        let out = hds(
            &[
                "serve",
                "--listen",
                "127.0.0.1:0",
                flag,
                "18446744073709551614",
            ],
            &data,
        );
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert!(err.contains("1..=86400"), "{flag}: {err}");
    }
}

/// SIGTERM answers a held long poll at once with the Action as it is,
/// instead of waiting out its 30 s hold, and the server then stops.
#[tokio::test]
async fn a_stop_answers_held_long_polls_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let creds = init(&data);
    let key = creds["source_key_live"].as_str().unwrap().to_owned();
    let (mut child, base, metrics) = serve_with_metrics(&data);
    let http = client_builder().build().unwrap();
    let id = create(&http, &base, &key).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let poll = tokio::spawn({
        let (http, base, key) = (http.clone(), base.clone(), key.clone());
        async move {
            let started = std::time::Instant::now();
            let r = http
                .get(format!("{base}/v1/source/actions/{id}?wait_seconds=30"))
                .bearer_auth(&key)
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let v: Value = r.json().await.unwrap();
            (status, v, started.elapsed())
        }
    });
    // Signalled once the server holds the poll (its gauge says so).
    let mut held = false;
    for _ in 0..200 {
        let text = http
            .get(&metrics)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if text.lines().any(|l| l == "hds_long_polls_held 1") {
            held = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(held, "the poll was never held");
    assert!(!poll.is_finished());
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let (status, v, took) = poll.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(v["data"]["status"], "open");
    assert!(
        took < Duration::from_secs(15),
        "the poll waited out its hold: {took:?}"
    );
    let code = child.wait().unwrap();
    assert!(code.success(), "{code:?}");
}

#[test]
fn readme_quickstart_runs_verbatim() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let start = readme
        .find("<!-- quickstart -->")
        .expect("README has a <!-- quickstart --> marker");
    let rest = &readme[start..];
    let open = rest
        .find("```sh\n")
        .expect("a ```sh block follows the marker")
        + 6;
    let close = rest[open..].find("\n```").unwrap();
    let script = &rest[open..open + close];
    // The text uses port 8080; run it on a port that is free here.
    let port = smtp::free_port();
    let script = script.replace("127.0.0.1:8080", &format!("127.0.0.1:{port}"));
    let work = tempfile::tempdir().unwrap();
    let bin_dir = Path::new(HDS).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("timeout")
        .args(["120", "bash", "-euo", "pipefail", "-c", &script])
        .current_dir(work.path())
        .env("PATH", path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "quickstart failed ({:?})\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("valid: receipt"),
        "the quickstart did not verify a receipt:\n{stdout}"
    );
}

/// reqwest is built without a default TLS provider (hds installs ring when a
/// server starts); these tests run the server in another process.
/// `serve` with `--metrics-listen` on an ephemeral port too; returns the
/// child, its base URL and its metrics URL.
fn serve_with_metrics(data: &Path) -> (Child, String, String) {
    let mut child = Command::new(HDS)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
        ])
        .arg("--data-dir")
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let base = first.strip_prefix("hds listening on ").unwrap().to_owned();
    let second = lines.next().unwrap().unwrap();
    let metrics = second.strip_prefix("metrics on ").unwrap().to_owned();
    std::thread::spawn(move || lines.for_each(drop));
    (child, base, metrics)
}

/// Creates the Action `body(1)` as the Source; its data.
/// Decides `a` (made by `create`) with its `yes` option as the user of
/// `token`; the decision's answer.
async fn decide_yes(http: &reqwest::Client, base: &str, token: &str, a: &Value) -> Value {
    let r = http
        .post(format!("{base}/v1/actions/{}/decision", a["id"].as_str().unwrap()))
        .bearer_auth(token)
        .json(&json!({"action_version": a["action_version"], "fingerprint": a["fingerprint"], "option_id": "yes"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    r.json().await.unwrap()
}

async fn create(http: &reqwest::Client, base: &str, key: &str) -> Value {
    let r: Value = http
        .post(format!("{base}/v1/actions"))
        .bearer_auth(key)
        .body(body(1).to_string())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    r["data"].clone()
}

fn client_builder() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

fn hds(args: &[&str], data: &Path) -> std::process::Output {
    Command::new(HDS)
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .output()
        .unwrap()
}

/// Starts `cmd` (an `hds serve` on port 0), waits for its first line, which
/// must be the listening banner, stops it and answers what it logged.
fn started_and_stopped(mut cmd: Command) -> (String, String) {
    use std::io::Read;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(line.starts_with("hds listening on "), "{line}{err}");
    (line, err)
}

fn role_in_oldest(data: &Path, email: &str) -> String {
    let c = rusqlite::Connection::open(data.join("hds.db")).unwrap();
    c.query_row(
        "SELECT m.role FROM memberships m JOIN users u ON u.id = m.user_id
         WHERE u.email = ?1 ORDER BY m.created_at LIMIT 1",
        [email],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn users_link_create_as_on_an_existing_person_says_the_role_was_not_changed() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    init(&data);
    let first = hds(
        &[
            "users",
            "link",
            "bob@example.com",
            "--create-as",
            "reviewer",
        ],
        &data,
    );
    assert!(first.status.success(), "{first:?}");
    assert!(String::from_utf8_lossy(&first.stderr).contains("signs bob@example.com in once"));
    let again = hds(
        &["users", "link", "bob@example.com", "--create-as", "admin"],
        &data,
    );
    assert!(again.status.success(), "{again:?}");
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        stderr.contains("bob@example.com is already a reviewer of")
            && stderr.contains("the role was not changed")
            && stderr.contains("PATCH /v1/workspaces/members/usr_"),
        "{stderr}"
    );
    // Still a link on stdout, and the role is what it was.
    assert!(String::from_utf8_lossy(&again.stdout).contains("/app/signin/link/"));
    assert_eq!(role_in_oldest(&data, "bob@example.com"), "reviewer");
    // A role that does not exist, or owner, is a usage error (exit 2, as
    // for any bad argument), even for a known person.
    for role in ["root", "owner"] {
        let bad = hds(
            &["users", "link", "bob@example.com", "--create-as", role],
            &data,
        );
        let err = String::from_utf8_lossy(&bad.stderr);
        assert_eq!(bad.status.code(), Some(2), "{role}: {err}");
        assert!(
            err.contains("[possible values: admin, reviewer, viewer]"),
            "{role}: {err}"
        );
        assert!(bad.stdout.is_empty(), "no link for {role}");
    }
}

#[test]
fn workspaces_create_and_list_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    init(&data);
    let made = hds(
        &[
            "workspaces",
            "create",
            "Payments team",
            "--owner",
            "carol@example.com",
        ],
        &data,
    );
    assert!(made.status.success(), "{made:?}");
    let id = String::from_utf8_lossy(&made.stdout).trim().to_owned();
    assert!(id.starts_with("ws_"), "{id}");
    assert!(String::from_utf8_lossy(&made.stderr).contains("hds users link carol@example.com"));
    assert_eq!(role_in_oldest(&data, "carol@example.com"), "owner");
    let list = hds(&["workspaces", "list"], &data);
    assert!(list.status.success(), "{list:?}");
    let out = String::from_utf8_lossy(&list.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[1].starts_with(&id)
            && lines[1].contains("team\t1 member\towners: carol@example.com\tPayments team"),
        "{out}"
    );
    // Bad names and owners change nothing.
    for (name, owner, says) in [
        ("", "carol@example.com", "name must be 1-100 characters"),
        ("two\nlines", "carol@example.com", "one line"),
        ("Ops", "not-an-email", "is not an e-mail address"),
        // What the terminal would act on is shown escaped, on one line.
        (
            "Ops",
            "a\u{1b}[2Jb@example.com",
            "`a\\u{1b}[2Jb@example.com` is not an e-mail address",
        ),
    ] {
        let bad = hds(&["workspaces", "create", name, "--owner", owner], &data);
        assert!(!bad.status.success());
        assert!(
            String::from_utf8_lossy(&bad.stderr).contains(says),
            "{bad:?}"
        );
    }
    let list = hds(&["workspaces", "list"], &data);
    assert_eq!(String::from_utf8_lossy(&list.stdout).lines().count(), 2);
    // A pasted address with spaces around it is taken and echoed trimmed.
    let padded = hds(
        &[
            "workspaces",
            "create",
            "Ops",
            "--owner",
            "  dan@example.com ",
        ],
        &data,
    );
    assert!(padded.status.success(), "{padded:?}");
    assert_eq!(
        String::from_utf8_lossy(&padded.stderr).trim(),
        "Created dan@example.com as its owner; `hds users link dan@example.com` prints a sign-in link."
    );
    let link = hds(&["users", "link", " dan@example.com"], &data);
    assert!(link.status.success(), "{link:?}");
}

#[test]
fn workspaces_set_plan_takes_a_configured_plan_and_refuses_unknown_ones() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    init(&data);
    std::fs::write(
        data.join("hds.toml"),
        "[billing.plans.starter]\nname = \"Starter\"\nactions_per_month = 3\n",
    )
    .unwrap();
    let plan_of = || -> String {
        let c = rusqlite::Connection::open(data.join("hds.db")).unwrap();
        c.query_row("SELECT plan_id FROM workspaces", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(plan_of(), "self_hosted");
    let list = hds(&["workspaces", "list"], &data);
    let ws = String::from_utf8_lossy(&list.stdout)
        .split('\t')
        .next()
        .unwrap()
        .to_owned();
    // Pasted with spaces around: taken as typed without them.
    let ok = hds(
        &["workspaces", "set-plan", &format!(" {ws} "), "starter "],
        &data,
    );
    assert!(ok.status.success(), "{ok:?}");
    assert_eq!(
        String::from_utf8_lossy(&ok.stdout).trim(),
        format!("{ws} is on plan starter")
    );
    assert_eq!(plan_of(), "starter");
    for (args, says) in [
        (
            vec![ws.as_str(), "gold"],
            "no plan `gold`: define [billing.plans.gold]",
        ),
        (vec!["ws_nope", "starter"], "no workspace `ws_nope`"),
        // Both wrong: both named, in one run.
        (
            vec!["ws_nope", "gold"],
            "no workspace `ws_nope`; `hds workspaces list` shows their ids\nno plan `gold`",
        ),
    ] {
        let mut all = vec!["workspaces", "set-plan"];
        all.extend(args);
        let bad = hds(&all, &data);
        assert!(!bad.status.success());
        assert!(
            String::from_utf8_lossy(&bad.stderr).contains(says),
            "{bad:?}"
        );
    }
    assert_eq!(plan_of(), "starter");
    // The plan renamed in hds.toml: the workspace's limits would silently
    // stop applying, so the server does not start, and says what to do.
    std::fs::write(
        data.join("hds.toml"),
        "[billing.plans.basic]\nname = \"Basic\"\nactions_per_month = 3\n",
    )
    .unwrap();
    let refused = hds(&["serve", "--listen", "127.0.0.1:0"], &data);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(
        err.contains(&format!(
            "workspace {ws} (Default) is on plan `starter`, which the configuration does not define: define [billing.plans.starter] again, or move it with `hds workspaces set-plan {ws} PLAN_ID`"
        )),
        "{err}"
    );
    let back = hds(&["workspaces", "set-plan", &ws, "self_hosted"], &data);
    assert!(back.status.success(), "{back:?}");
    assert_eq!(plan_of(), "self_hosted");
}

/// `hds --version` names the binary's version and the API version that the
/// same binary's server reports at `GET /`.
#[tokio::test]
async fn version_names_the_binary_and_the_api_version_the_server_reports() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    init(&data);
    let (mut child, base) = serve(&data);
    let index: Value = client_builder()
        .build()
        .unwrap()
        .get(format!("{base}/"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let api = index["api_version"].as_str().unwrap();

    let out = Command::new(HDS).arg("--version").output().unwrap();

    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("hds {} (API {api})", env!("CARGO_PKG_VERSION"))
    );
}

/// A webhook attempt that fails is in the operator's log, like a failed
/// e-mail: the delivery's id, the attempt and the error, never the URL
/// (whose query may hold the Source's secret).
#[tokio::test]
async fn a_failed_webhook_attempt_is_logged_without_its_url() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let creds = init(&data);
    let key = creds["source_key_live"].as_str().unwrap();
    let log_path = dir.path().join("server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let (mut child, base) = serve_with(&data, Stdio::from(log), &["--allow-private-callbacks"]);
    let http = client_builder().build().unwrap();
    // Nothing listens there: the connection is refused.
    let port = smtp::free_port();
    let callback = format!("http://127.0.0.1:{port}/hooks?token=sekrit-in-query");
    let a: Value = http
        .post(format!("{base}/v1/actions"))
        .bearer_auth(key)
        .json(&json!({"title": "Hooked", "interaction": {"type": "boolean"}, "callback_url": callback}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = a["data"]["id"].as_str().unwrap();
    let r = http
        .post(format!("{base}/v1/actions/{id}/cancel"))
        .bearer_auth(key)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let mut text = String::new();
    for _ in 0..250 {
        text = std::fs::read_to_string(&log_path).unwrap();
        if text.contains("webhook attempt failed") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("webhook attempt failed"))
        .unwrap_or_else(|| panic!("no failed attempt in the log:\n{text}"));
    assert!(line.contains("delivery.id=msg_"), "{line}");
    assert!(line.contains("attempt=1"), "{line}");
    assert!(
        !text.contains("sekrit-in-query"),
        "the URL is in the log:\n{text}"
    );
}

/// `hds users link` on a data dir a server runs from starts its links with
/// that server's base URL, so the link works without repeating --base-url;
/// --base-url still wins.
#[tokio::test]
async fn users_link_follows_the_base_url_the_server_runs_with() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    init(&data);
    let (mut child, base) = serve(&data);
    let made = hds(
        &[
            "users",
            "link",
            "bob@example.com",
            "--create-as",
            "reviewer",
        ],
        &data,
    );
    assert!(made.status.success(), "{made:?}");
    let link = String::from_utf8_lossy(&made.stdout).trim().to_owned();
    assert!(
        link.starts_with(&format!("{base}/app/signin/link/")),
        "{link} for {base}"
    );
    let page = client_builder()
        .build()
        .unwrap()
        .get(&link)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200, "the link opens on the running server");
    let told = hds(
        &[
            "users",
            "link",
            "bob@example.com",
            "--base-url",
            "https://hds.example.com",
        ],
        &data,
    );
    assert!(
        String::from_utf8_lossy(&told.stdout)
            .starts_with("https://hds.example.com/app/signin/link/")
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A new owner named on the command line needs an address hds can use, as
/// everywhere else; nothing is created for one it cannot.
#[test]
fn workspaces_create_refuses_an_owner_address_hds_cannot_use() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    init(&data);
    for bad in [
        "a@[127.0.0.1]",
        "a@127.0.0.1",
        "a\u{00ad}@example.com",
        "a\u{200b}@example.com",
    ] {
        let out = hds(&["workspaces", "create", "Team", "--owner", bad], &data);
        assert!(!out.status.success(), "{bad}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("is not an e-mail address"),
            "{bad}: {out:?}"
        );
    }
    let c = rusqlite::Connection::open(data.join("hds.db")).unwrap();
    let n: i64 = c
        .query_row(
            "SELECT count(*) FROM workspaces WHERE name = 'Team'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 0);
}

/// A data dir of its own is made owner-only; a directory that also holds
/// someone else's files (`--data-dir .`, `/tmp`) keeps its mode, with a
/// warning that names such a file, while the database stays 0600.
#[test]
fn a_shared_directory_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    let own = dir.path().join("own");
    let out = Command::new(HDS)
        .args(["init", "--data-dir"])
        .arg(&own)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
    assert_eq!(mode(&own), 0o700);

    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::write(shared.join("notes.txt"), "theirs").unwrap();
    let out = Command::new(HDS)
        .args(["init", "--data-dir"])
        .arg(&shared)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("also holds notes.txt, which hds did not make, so its mode was left as it is"),
        "{err}"
    );
    assert_eq!(mode(&shared), 0o1777, "the directory keeps its mode");
    assert_eq!(mode(&shared.join("hds.db")), 0o600);
    assert_eq!(mode(&shared.join("keys")), 0o700);

    // A first `hds serve` into such a directory says so once, in its log.
    let served = dir.path().join("served");
    std::fs::create_dir(&served).unwrap();
    std::fs::set_permissions(&served, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::write(served.join("notes.txt"), "theirs").unwrap();
    let mut serve = Command::new(HDS);
    serve
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&served);
    let (_, err) = started_and_stopped(serve);
    assert_eq!(err.matches("also holds notes.txt").count(), 1, "{err}");
}

/// A disk that fills while hds runs (a 2 MiB tmpfs): the COMMIT that finds
/// it full answers 503 SERVICE_UNAVAILABLE with Retry-After, never 500,
/// keeps nothing of the refused creates, and /ready says the disk is the
/// problem. Mounting needs root; elsewhere the test says so and passes.
#[tokio::test]
async fn a_disk_that_fills_answers_503_and_keeps_only_what_was_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("full");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
        .arg(&mnt)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    }
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(mnt.clone());
    let data = mnt.join("d");
    let creds = init(&data);
    let key = creds["source_key_live"].as_str().unwrap().to_owned();
    let (mut child, base) = serve(&data);
    let http = client_builder().build().unwrap();
    let long = "x".repeat(20_000);
    let (mut created, mut refused) = (0, 0);
    for i in 0..150 {
        let r = http
            .post(format!("{base}/v1/actions"))
            .bearer_auth(&key)
            .json(&json!({"title": format!("fill {i}"), "description": long,
                "options": [{"label": "Yes"}, {"label": "No"}]}))
            .send()
            .await
            .unwrap();
        match r.status().as_u16() {
            201 => created += 1,
            503 => {
                assert_eq!(r.headers()["retry-after"], "1");
                let e: Value = r.json().await.unwrap();
                assert_eq!(e["error"]["code"], "SERVICE_UNAVAILABLE", "{e}");
                assert!(
                    e["error"]["message"].as_str().unwrap().contains("disk"),
                    "{e}"
                );
                refused += 1;
            }
            other => panic!("create {i}: {other} {}", r.text().await.unwrap()),
        }
    }
    assert!(
        created > 0 && refused > 0,
        "{created} created, {refused} refused"
    );
    let ready = http.get(format!("{base}/ready")).send().await.unwrap();
    assert_eq!(ready.status().as_u16(), 503);
    let ready: Value = ready.json().await.unwrap();
    assert_eq!(ready["checks"]["disk_space"], "failing", "{ready}");
    // The writes the disk refused: the writer is not committing them.
    assert_eq!(ready["checks"]["database_write"], "failing", "{ready}");
    child.kill().unwrap();
    child.wait().unwrap();
    // Without the free-space check, a write refused for space is still
    // what /ready reports, though the check's own small change fits.
    let (mut child, base) = serve_with(&data, Stdio::null(), &["--ready-min-free-mb", "0"]);
    let ready: Value = http
        .get(format!("{base}/ready"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ready["checks"]["disk_space"], "ok", "{ready}");
    let r = http
        .post(format!("{base}/v1/actions"))
        .bearer_auth(&key)
        .json(&json!({"title": "one more", "description": long,
            "options": [{"label": "Yes"}, {"label": "No"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 503);
    let ready = http.get(format!("{base}/ready")).send().await.unwrap();
    assert_eq!(ready.status().as_u16(), 503);
    let ready: Value = ready.json().await.unwrap();
    assert_eq!(ready["checks"]["database_write"], "failing", "{ready}");
    child.kill().unwrap();
    child.wait().unwrap();
    // What was acknowledged is there, and nothing else.
    let conn = rusqlite::Connection::open(data.join("hds.db")).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM actions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, created);
}

/// The data dir is held by the directory itself as well as by `hds.lock`:
/// deleting the lock file by hand (a "stale lock") lets no second server
/// and no restore in while a server runs. A busy port stops a start before
/// anything is created, naming the flag.
#[test]
fn a_deleted_lock_file_lets_no_second_server_or_restore_in() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    init(&data);
    let (mut child, base) = serve(&data);
    // Started again with the same settings: the data dir is what is in
    // use, and that is what it is told (not that the port is busy).
    let again = hds(
        &["serve", "--listen", base.strip_prefix("http://").unwrap()],
        &data,
    );
    let err = String::from_utf8_lossy(&again.stderr).into_owned();
    assert!(
        err.contains("is in use by a running hds; stop it first"),
        "{err}"
    );
    std::fs::remove_file(data.join("hds.lock")).unwrap();
    let second = hds(&["serve", "--listen", "127.0.0.1:0"], &data);
    assert!(!second.status.success());
    let err = String::from_utf8_lossy(&second.stderr).into_owned();
    assert!(
        err.contains("is in use by a running hds; stop it first"),
        "{err}"
    );
    let backup = dir.path().join("b.db");
    let b = hds(&["backup", backup.to_str().unwrap()], &data);
    assert!(b.status.success(), "{b:?}");
    let restore = hds(&["restore", backup.to_str().unwrap(), "--force"], &data);
    assert!(!restore.status.success());
    let err = String::from_utf8_lossy(&restore.stderr).into_owned();
    assert!(err.contains("is in use by a running hds"), "{err}");
    child.kill().unwrap();
    child.wait().unwrap();

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let at = taken.local_addr().unwrap().to_string();
    let fresh = dir.path().join("fresh");
    let busy = hds(&["serve", "--listen", &at], &fresh);
    assert!(!busy.status.success());
    let err = String::from_utf8_lossy(&busy.stderr).into_owned();
    assert!(
        err.contains(&format!("listening on {at} (--listen, HDS_LISTEN)")),
        "{err}"
    );
    assert!(!fresh.exists(), "nothing was created");
}

/// Settings from the environment: a variable set to the empty string is
/// unset (`VAR: ${VAR:-}` in a compose file), a flag's variable takes
/// 1/0, yes/no and on/off, and a refused value names the variable it came
/// from (the operator may never have typed the flag).
#[test]
fn environment_variables_set_empty_are_unset_and_refusals_name_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    init(&data);
    let mut serve = Command::new(HDS);
    serve
        .args(["serve", "--data-dir"])
        .arg(&data)
        .env("HDS_LISTEN", "127.0.0.1:0")
        .env("HDS_METRICS_LISTEN", "")
        .env("HDS_BASE_URL", "")
        .env("HDS_TRUSTED_PROXY", "")
        .env("HDS_ALLOW_PRIVATE_CALLBACKS", "1");
    let (line, _) = started_and_stopped(serve);
    assert!(
        line.starts_with("hds listening on http://127.0.0.1:"),
        "{line}"
    );

    let out = Command::new(HDS)
        .args(["serve", "--data-dir"])
        .arg(&data)
        .env("HDS_LISTEN", "localhost:9000")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(err.contains("write one such as 127.0.0.1:9000"), "{err}");
    assert!(
        err.contains("(that value came from the environment variable HDS_LISTEN)"),
        "{err}"
    );
    // An empty HDS_DATA_DIR is refused, not taken as ./hds-data.
    let out = Command::new(HDS)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .current_dir(dir.path())
        .env("HDS_DATA_DIR", "")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        err.contains("(that value came from the environment variable HDS_DATA_DIR)"),
        "{err}"
    );
    assert!(
        !dir.path().join("hds-data").exists(),
        "no data dir was made"
    );
    // Typed as a flag, the flag is what is named, and nothing else.
    let out = Command::new(HDS)
        .args(["serve", "--listen", "localhost:9000", "--data-dir"])
        .arg(&data)
        .env("HDS_LISTEN", "localhost:9000")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(err.contains("for '--listen <LISTEN>'"), "{err}");
    assert!(!err.contains("environment variable"), "{err}");
}

/// A stop lets requests under way finish for at most `--drain-timeout`: a
/// client that sent half a request line (allowed a long
/// `--header-read-timeout`) does not hold the process past it, and the
/// stop is still a clean one.
#[tokio::test]
async fn a_client_still_sending_holds_a_stop_no_longer_than_the_drain_timeout() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    init(&data);
    let (mut child, base) = serve_with(
        &data,
        Stdio::null(),
        &["--header-read-timeout", "600", "--drain-timeout", "1"],
    );
    let mut half = std::net::TcpStream::connect(base.strip_prefix("http://").unwrap()).unwrap();
    half.write_all(b"GET /health HTTP/1.1\r\n").unwrap();
    // Accepted in turn: once a later connection is answered, the half
    // request's connection is being served.
    let health = client_builder()
        .build()
        .unwrap()
        .get(format!("{base}/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    // Bounded: well past the drain timeout, far short of the header timeout.
    let pid = child.id();
    let waited = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::task::spawn_blocking(move || child.wait().unwrap()),
    )
    .await;
    let Ok(status) = waited else {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
        panic!("still running 30 s after SIGTERM");
    };
    let status = status.unwrap();
    assert!(status.success(), "{status:?}");
    drop(half);
}

/// A `--max-connections` the process's open-file limit cannot hold is said
/// at start, with what to do.
#[test]
fn a_connection_cap_above_the_open_file_limit_is_warned_of() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    init(&data);
    let mut serve = Command::new("sh");
    serve.arg("-c").arg(format!(
        "ulimit -n 1024 && exec {HDS} serve --listen 127.0.0.1:0 --data-dir {}",
        data.display()
    ));
    let (_, err) = started_and_stopped(serve);
    assert!(
        err.contains(
            "--max-connections 4096 is above what this process may open (1024 files, `ulimit -n`)"
        ),
        "{err}"
    );
}

/// A database another user owns (copied in as root, say) cannot be made
/// private: the error names its owner and says to chown it, not only
/// "Operation not permitted". Needs root, to hand the file to another user
/// and run hds as `nobody`; elsewhere it says so and checks nothing.
#[test]
fn a_database_of_another_user_is_named_with_its_owner() {
    if rustix::process::geteuid().as_raw() != 0
        || !Command::new("runuser")
            .arg("--help")
            .output()
            .is_ok_and(|o| o.status.success())
    {
        eprintln!("skipped: needs root and runuser");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = dir.path().join("data");
    init(&data);
    let bin = dir.path().join("hds");
    std::fs::copy(HDS, &bin).unwrap();
    let chown = |who: &str, path: &Path, recursive: bool| {
        let mut c = Command::new("chown");
        if recursive {
            c.arg("-R");
        }
        assert!(c.arg(who).arg(path).status().unwrap().success());
    };
    chown("nobody", &data, true);
    chown("root", &data.join("hds.db"), false);
    std::fs::set_permissions(data.join("hds.db"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = Command::new("runuser")
        .args(["-u", "nobody", "--"])
        .arg(&bin)
        .args(["keys", "list", "--data-dir"])
        .arg(&data)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("belongs to another user (uid 0)") && err.contains("(chown)"),
        "{err}"
    );
}
