//! `--metrics-listen` (guide: "Metrics"): requests counted by route template
//! and status, latency histograms, the writer's batches, held long polls — on
//! a second listener only, never the public one.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Metrics, TestApp, two_options};

const CREATES: &str = r#"hds_http_requests_total{route="/v1/actions",method="POST",status="201"}"#;

#[tokio::test]
async fn requests_are_counted_by_route_template_method_and_status() {
    let app = TestApp::spawn().await;
    let mut ids = Vec::new();
    for i in 0..3 {
        let a = app
            .create_action(two_options(&format!("Count me {i}")))
            .await;
        ids.push(a["id"].as_str().unwrap().to_owned());
    }
    let source = app.source();
    let _: Value = source
        .get(&format!("/v1/source/actions/{}", ids[0]), 200)
        .await;
    // A raw path may carry a secret: it must never become a label.
    let secret = "tok_ZmFrZS1zZWNyZXQtdG9rZW4";
    let _ = source
        .get_err(&format!("/v1/nothing/{secret}"), 404, "NOT_FOUND")
        .await;
    // A known route with a wrong method keeps its template.
    let r = source.call(Method::DELETE, "/v1/actions", None, &[]).await;
    r.error(405, "METHOD_NOT_ALLOWED");

    let m = app.scrape().await;
    assert_eq!(m.value(CREATES), 3.0);
    assert_eq!(
        m.value(r#"hds_http_request_duration_seconds_count{route="/v1/actions",method="POST"}"#),
        3.0
    );
    assert_eq!(
        m.value(r#"hds_http_request_duration_seconds_bucket{le="+Inf",route="/v1/actions",method="POST"}"#),
        3.0,
    );
    assert_eq!(
        m.value(r#"hds_http_requests_total{route="/v1/source/actions/{action_id}",method="GET",status="200"}"#),
        1.0
    );
    assert_eq!(
        m.value(r#"hds_http_requests_total{route="unmatched",method="GET",status="404"}"#),
        1.0
    );
    assert_eq!(
        m.value(r#"hds_http_requests_total{route="/v1/actions",method="DELETE",status="405"}"#),
        1.0
    );
    assert!(!m.text.contains(secret), "{}", m.text);
    assert!(!m.text.contains("/v1/nothing"), "{}", m.text);
    for id in &ids {
        assert!(!m.text.contains(id.as_str()), "{}", m.text);
    }
    // Each create is one write job: at least one committed batch carried them.
    assert!(m.value("hds_writer_batch_size_count") >= 1.0);
    assert!(m.value("hds_writer_batch_size_sum") >= 3.0);
    assert!(m.value("hds_writer_commits_total") >= 1.0);
    assert_eq!(m.value("hds_writer_failed_batches_total"), 0.0);
    assert_eq!(m.value("hds_writer_queue_depth"), 0.0);
    assert_eq!(
        m.value(&format!(
            r#"hds_build_info{{version="{}"}}"#,
            env!("CARGO_PKG_VERSION")
        )),
        1.0
    );
    assert!(m.value("hds_start_time_seconds") > 1.7e9);

    // Scrapes are not requests of the service and count nowhere.
    let again = app.scrape().await;
    assert_eq!(again.value(CREATES), 3.0);
    assert!(!again.text.contains("/metrics"), "{}", again.text);
}

#[tokio::test]
async fn held_long_polls_are_a_gauge() {
    let app = TestApp::spawn().await;
    let a = app.create_action(two_options("Wait for me")).await;
    let id = a["id"].as_str().unwrap();
    assert_eq!(app.scrape().await.value("hds_long_polls_held"), 0.0);

    let poll = app.held_poll(id).await;
    assert_eq!(app.scrape().await.value("hds_long_polls_held"), 1.0);

    let _: Value = app
        .source()
        .post(
            &format!("/v1/actions/{id}/cancel"),
            json!({"reason": "done"}),
            200,
        )
        .await;
    assert_eq!(TestApp::answer(poll).await["status"], "cancelled");
    let m = app.scrape().await;
    assert_eq!(m.value("hds_long_polls_held"), 0.0);
    // The poll's latency is in the histogram of its route.
    assert_eq!(
        m.value(r#"hds_http_request_duration_seconds_count{route="/v1/source/actions/{action_id}",method="GET"}"#),
        1.0
    );
}

#[tokio::test]
async fn metrics_are_served_only_on_the_metrics_listener() {
    let app = TestApp::spawn().await;
    app.anonymous().get_err("/metrics", 404, "NOT_FOUND").await;
    // The metrics listener serves nothing else.
    let other = app.metrics_url.replace("/metrics", "/v1/actions");
    let r = app.http.get(other).send().await.unwrap();
    assert_eq!(r.status(), 404);
    let r = app.http.post(&app.metrics_url).send().await.unwrap();
    assert_eq!(r.status(), 405);
    // The public 404 is counted as unmatched, by status.
    let m = app.scrape().await;
    assert_eq!(
        m.value(r#"hds_http_requests_total{route="unmatched",method="GET",status="404"}"#),
        1.0
    );
}

/// Scrapes (bounded) until `done` holds; the last scrape either way.
async fn scrape_until(app: &TestApp, done: impl Fn(&Metrics) -> bool) -> Metrics {
    let mut m = app.scrape().await;
    for _ in 0..200 {
        if done(&m) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        m = app.scrape().await;
    }
    m
}

/// Committed pages are copied from the write-ahead log into the database
/// file by the checkpointer thread; its work shows in the metrics. A read
/// that began before a commit holds that commit's pages back until it ends.
#[tokio::test]
async fn the_checkpointer_copies_what_was_committed_once_no_read_holds_it_back() {
    let app = TestApp::spawn().await;
    for i in 0..3 {
        app.create_action(two_options(&format!("Checkpoint me {i}")))
            .await;
    }
    let m = scrape_until(&app, |m| {
        m.value("hds_checkpoint_duration_seconds_count") >= 1.0
            && m.value("hds_wal_pages_behind") == 0.0
    })
    .await;
    assert!(
        m.value("hds_checkpoint_duration_seconds_count") >= 1.0,
        "{}",
        m.text
    );
    assert_eq!(m.value("hds_wal_pages_behind"), 0.0, "{}", m.text);

    // A read transaction that outlives the next commit.
    let reader = rusqlite::Connection::open_with_flags(
        app.data_dir().join("hds.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let before: i64 = reader
        .query_row("SELECT count(*) FROM actions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(before, 3);
    app.create_action(two_options("Held back")).await;
    let m = scrape_until(&app, |m| m.value("hds_wal_pages_behind") > 0.0).await;
    assert!(m.value("hds_wal_pages_behind") > 0.0, "{}", m.text);
    assert!(m.value("hds_wal_pages") > 0.0, "{}", m.text);

    // The read ends: the rest is copied, taken again 50 ms later with no
    // commit to wake the checkpointer (store::db's own test shows it alone).
    reader.execute_batch("COMMIT").unwrap();
    drop(reader);
    let m = scrape_until(&app, |m| m.value("hds_wal_pages_behind") == 0.0).await;
    assert_eq!(m.value("hds_wal_pages_behind"), 0.0, "{}", m.text);
    assert_eq!(
        m.value("hds_checkpoint_failures_total"),
        0.0,
        "no checkpoint failed"
    );
}

/// An idle server writes nothing: the pass over deadlines and notification
/// timers, once a second, reads first and writes only when something is
/// due (it used to commit two empty transactions a second).
#[tokio::test]
async fn an_idle_server_commits_nothing() {
    let app = TestApp::spawn().await;
    let clock = &app.state.services.clock;
    let mut body = two_options("Due in an hour");
    body["expires_at"] = json!(hds::domain::time::format(
        clock.now() + time::Duration::hours(1)
    ));
    let id = app.create_action(body).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let poll = app.held_poll(&id).await;
    // Housekeeping writes once at start; the pass runs each second and
    // whenever the clock moves. A window with both and no commit must come
    // (before this, each pass committed twice).
    let mut quiet = None;
    for _ in 0..10 {
        let before = app.scrape().await.value("hds_writer_commits_total");
        tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
        clock.advance(time::Duration::seconds(1));
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        if app.scrape().await.value("hds_writer_commits_total") == before {
            quiet = Some(before);
            break;
        }
    }
    let before = quiet.expect("every window of a second had a commit");
    // What is due is still written: an hour on, the Action expires.
    clock.advance(time::Duration::hours(1));
    assert_eq!(TestApp::answer(poll).await["status"], "expired");
    assert!(app.scrape().await.value("hds_writer_commits_total") > before);
}
