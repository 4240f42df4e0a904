//! Webhooks end to end: a real receiver on loopback (tests/py/webhook_receiver.py)
//! verifies every delivery with the `standardwebhooks` package; the server's
//! clock is moved for retries instead of waiting.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::{TestApp, two_options};
use crate::receiver::Receiver;

/// An app that may call loopback, with a receiver that knows its secret.
pub async fn setup() -> (TestApp, Receiver) {
    let app = TestApp::spawn_with(|c| c.allow_private_callbacks = true).await;
    let rx = Receiver::start();
    rx.secrets(&[app.creds["webhook_secret"].as_str().unwrap()])
        .await;
    (app, rx)
}

fn with_callback(title: &str, url: &str) -> Value {
    let mut body = two_options(title);
    body["callback_url"] = json!(url);
    body
}

/// An Action with a callback_url, created and then approved: its
/// `action.resolved` webhook is queued.
async fn decided(app: &TestApp, title: &str, url: &str) -> Value {
    let a = app.create_action(with_callback(title, url)).await;
    app.decide(&a, json!({"option_id": "approve"}))
        .await
        .ok(200);
    a
}

/// Waits (bounded) until the delivery log of the init Source, read over the
/// API by its owner, shows `pred`.
pub async fn delivery_where(app: &TestApp, pred: impl Fn(&Value) -> bool) -> Value {
    let src = app.creds["source_id"].as_str().unwrap();
    for _ in 0..1000 {
        let list: Value = app
            .admin()
            .get(&format!("/v1/sources/{src}/deliveries?limit=100"), 200)
            .await;
        if let Some(d) = list["data"].as_array().unwrap().iter().find(|d| pred(d)) {
            return d.clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no such delivery in the log");
}

#[tokio::test]
async fn each_closing_event_arrives_signed_with_the_action_as_the_source_reads_it() {
    let (app, rx) = setup().await;
    let resolved = app
        .create_action(with_callback("Resolve me", &rx.url("resolved")))
        .await;
    let cancelled = app
        .create_action(with_callback("Cancel me", &rx.url("cancelled")))
        .await;
    let mut body = with_callback("Let me expire", &rx.url("expired"));
    let clock = &app.state.services.clock;
    body["expires_at"] = json!(hds::domain::time::format(
        clock.now() + time::Duration::seconds(2)
    ));
    let expiring = app.create_action(body).await;

    app.decide(&resolved, json!({"option_id": "approve", "reason": "fine"}))
        .await
        .ok(200);
    let id = resolved["id"].as_str().unwrap();
    let got = rx.wait_for("resolved", 1).await;
    let d = &got[0];
    let secret = app.creds["webhook_secret"].as_str().unwrap();
    assert_eq!(
        d["verified"][secret], true,
        "standardwebhooks verifies it: {d}"
    );
    assert!(d["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(d["content_type"], "application/json");
    assert_eq!(d["body"]["type"], "action.resolved");
    assert!(d["body"]["timestamp"].as_str().is_some());
    // data.action is the Action as GET /v1/source/actions/{id} returns it.
    let read: Value = app
        .source()
        .get(&format!("/v1/source/actions/{id}"), 200)
        .await;
    assert_eq!(d["body"]["data"]["action"], read["data"]);
    assert_eq!(d["body"]["data"]["action"]["status"], "resolved");
    assert!(d["body"]["data"]["action"]["receipt"]["jws"].is_string());

    let cid = cancelled["id"].as_str().unwrap();
    app.source()
        .post::<Value>(
            &format!("/v1/actions/{cid}/cancel"),
            json!({"reason": "not needed"}),
            200,
        )
        .await;
    let got = rx.wait_for("cancelled", 1).await;
    assert_eq!(got[0]["body"]["type"], "action.cancelled");
    assert_eq!(
        got[0]["body"]["data"]["action"]["resolution_reason"],
        "not needed"
    );
    assert_eq!(got[0]["verified"][secret], true);

    clock.advance(time::Duration::seconds(3));
    let got = rx.wait_for("expired", 1).await;
    assert_eq!(got[0]["body"]["type"], "action.expired");
    assert_eq!(got[0]["body"]["data"]["action"]["id"], expiring["id"]);
    assert_eq!(got[0]["verified"][secret], true);

    // The log shows each as delivered after one attempt, answered 200.
    let d = delivery_where(&app, |d| d["action_id"] == id && d["status"] == "delivered").await;
    assert_eq!(d["event_type"], "action.resolved");
    assert_eq!(d["attempts"], 1);
    assert_eq!(d["last_status_code"], 200);
    assert!(d["next_attempt_at"].is_null());
    assert_eq!(app.count_rows("jobs"), 0, "delivered jobs leave the queue");
}

/// While an attempt is in flight its job counts as running, not due (the
/// worker keeps which jobs run; their rows do not say), and once it is
/// recorded, as neither.
#[tokio::test]
async fn a_delivery_in_flight_counts_as_running_and_not_due() {
    let (app, rx) = setup().await;
    rx.script(&[200], 1.5).await;
    decided(&app, "Slow receiver", &rx.url("slow")).await;
    rx.wait_for("slow", 1).await;
    let m = app.scrape().await;
    assert_eq!(m.value(r#"hds_jobs_running{kind="webhook"}"#), 1.0);
    assert_eq!(m.value(r#"hds_jobs_due{kind="webhook"}"#), 0.0);
    assert_eq!(m.value(r#"hds_jobs_scheduled{kind="webhook"}"#), 0.0);
    delivery_where(&app, |d| d["status"] == "delivered").await;
    let m = app.scrape().await;
    assert_eq!(m.value(r#"hds_jobs_running{kind="webhook"}"#), 0.0);
    assert_eq!(m.value(r#"hds_jobs_due{kind="webhook"}"#), 0.0);
    assert_eq!(app.count_rows("jobs"), 0);
}

#[tokio::test]
async fn a_500_is_retried_on_schedule_with_the_same_webhook_id() {
    let (app, rx) = setup().await;
    rx.script(&[500], 0.0).await;
    decided(&app, "Retry me", &rx.url("retry")).await;
    let first = rx.wait_for("retry", 1).await;
    assert_eq!(first[0]["answered"], 500);
    let d = delivery_where(&app, |d| d["attempts"] == 1).await;
    assert_eq!(d["status"], "pending");
    assert_eq!(d["last_status_code"], 500);
    assert_eq!(d["last_error"], "HTTP 500 Internal Server Error");
    // About 5 s later (DESIGN §6), not before.
    let next = hds::domain::time::parse(d["next_attempt_at"].as_str().unwrap()).unwrap();
    let last = hds::domain::time::parse(d["last_attempt_at"].as_str().unwrap()).unwrap();
    assert_eq!((next - last).whole_seconds(), 5);
    // The retry waits in the queue, shown by the metrics (guide: "Metrics").
    let m = app.scrape().await;
    assert_eq!(m.value(r#"hds_jobs_scheduled{kind="webhook"}"#), 1.0);
    assert_eq!(m.value(r#"hds_jobs_due{kind="webhook"}"#), 0.0);
    assert_eq!(m.value(r#"hds_jobs_running{kind="webhook"}"#), 0.0);
    assert_eq!(
        m.value(r#"hds_jobs_oldest_due_seconds{kind="webhook"}"#),
        0.0
    );
    assert_eq!(m.value(r#"hds_jobs_scheduled{kind="email"}"#), 0.0);
    app.state.services.clock.advance(time::Duration::seconds(6));
    let both = rx.wait_for("retry", 2).await;
    assert_eq!(both[1]["id"], both[0]["id"], "a retry is the same message");
    assert_eq!(both[1]["body"], both[0]["body"]);
    assert_eq!(both[1]["answered"], 200);
    let secret = app.creds["webhook_secret"].as_str().unwrap();
    assert_eq!(both[1]["verified"][secret], true);
    let d = delivery_where(&app, |d| d["status"] == "delivered").await;
    assert_eq!(d["attempts"], 2);
    let m = app.scrape().await;
    assert_eq!(m.value(r#"hds_jobs_scheduled{kind="webhook"}"#), 0.0);
    assert_eq!(m.value(r#"hds_jobs_due{kind="webhook"}"#), 0.0);
    // Every attempt is in the log, with its status and duration.
    let src = app.creds["source_id"].as_str().unwrap();
    let one: Value = app
        .admin()
        .get(
            &format!("/v1/sources/{src}/deliveries/{}", d["id"].as_str().unwrap()),
            200,
        )
        .await;
    let attempts = one["data"]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2);
    // One member of each name: the list of attempts, not also their count.
    let admin = app.admin();
    let text = admin
        .http()
        .get(admin.url(&format!(
            "/v1/sources/{src}/deliveries/{}",
            d["id"].as_str().unwrap()
        )))
        .bearer_auth(admin.token())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(text.matches("\"attempts\":").count(), 1, "{text}");
    // An empty cursor is the first page.
    let first: Value = admin
        .get(&format!("/v1/sources/{src}/deliveries?before="), 200)
        .await;
    assert_eq!(first["data"][0]["id"], d["id"]);
    assert_eq!(attempts[0]["status_code"], 500);
    assert_eq!(attempts[1]["status_code"], 200);
    assert!(attempts[1]["error"].is_null());
    assert!(
        attempts
            .iter()
            .all(|a| a["duration_ms"].as_i64().unwrap() >= 0)
    );
}

#[tokio::test]
async fn a_410_stops_retries_and_a_resend_sends_the_same_message_again() {
    let (app, rx) = setup().await;
    rx.script(&[410], 0.0).await;
    let a = app
        .create_action(with_callback("Gone", &rx.url("gone")))
        .await;
    app.decide(&a, json!({"option_id": "reject"})).await.ok(200);
    rx.wait_for("gone", 1).await;
    let d = delivery_where(&app, |d| d["status"] == "failed").await;
    assert_eq!(d["last_status_code"], 410);
    assert!(d["last_error"].as_str().unwrap().contains("not retried"));
    assert!(d["next_attempt_at"].is_null());
    assert_eq!(app.count_rows("jobs"), 0);
    // Hours later nothing more was sent.
    app.state.services.clock.advance(time::Duration::hours(11));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.received().await.len(), 1);

    // A viewer may neither read the log (it names restricted Actions) nor resend.
    let src = app.creds["source_id"].as_str().unwrap();
    let did = d["id"].as_str().unwrap();
    let viewer = app.member(hds::domain::access::Role::Viewer);
    let e = viewer
        .get_err(&format!("/v1/sources/{src}/deliveries"), 403, "FORBIDDEN")
        .await;
    assert_eq!(e["details"]["required_role"], "admin");
    let e = viewer
        .post_err(
            &format!("/v1/sources/{src}/deliveries/{did}/resend"),
            json!({}),
            403,
            "FORBIDDEN",
        )
        .await;
    assert_eq!(e["details"]["required_role"], "admin");
    // An admin resends: the same webhook-id, answered 200 this time.
    let r: Value = app
        .admin()
        .post(
            &format!("/v1/sources/{src}/deliveries/{did}/resend"),
            json!({}),
            202,
        )
        .await;
    assert_eq!(r["data"]["status"], "pending");
    let got = rx.wait_for("gone", 2).await;
    assert_eq!(got[1]["id"], did);
    let d = delivery_where(&app, |d| d["id"] == did && d["status"] == "delivered").await;
    assert_eq!(d["attempts"], 2);
}

#[tokio::test]
async fn during_a_secret_rotation_both_secrets_verify_and_after_it_only_the_new_one() {
    let (app, rx) = setup().await;
    let old = app.creds["webhook_secret"].as_str().unwrap().to_owned();
    let src = app.creds["source_id"].as_str().unwrap();
    let r: Value = app
        .admin()
        .post(
            &format!("/v1/sources/{src}/keys/rotate"),
            json!({"environment": "none", "webhook_secret": true, "webhook_secret_overlap_seconds": 30}),
            200,
        )
        .await;
    let new = r["secrets"]["webhook_secret"].as_str().unwrap().to_owned();
    assert_ne!(new, old);
    // The Source says until when the old secret signs, and so does its page.
    let until = r["data"]["previous_webhook_secret_expires_at"]
        .as_str()
        .expect("the old secret's end")
        .to_owned();
    let got: Value = app.admin().get(&format!("/v1/sources/{src}"), 200).await;
    assert_eq!(got["data"]["previous_webhook_secret_expires_at"], until);
    let page = app
        .browser(app.admin().person())
        .await
        .page(&format!("/app/sources/{src}"))
        .await;
    assert!(
        page.contains("old webhook secret signs beside the new one until"),
        "{page}"
    );
    rx.secrets(&[&old, &new]).await;
    decided(&app, "During", &rx.url("during")).await;
    let d = &rx.wait_for("during", 1).await[0];
    assert_eq!(d["signature"].as_str().unwrap().split(' ').count(), 2);
    assert_eq!(
        d["verified"][&old], true,
        "a receiver still on the old secret: {d}"
    );
    assert_eq!(
        d["verified"][&new], true,
        "a receiver already on the new one: {d}"
    );

    // After the overlap only the new secret signs.
    app.state
        .services
        .clock
        .advance(time::Duration::seconds(31));
    decided(&app, "After", &rx.url("after")).await;
    let d = &rx.wait_for("after", 1).await[0];
    assert_eq!(d["signature"].as_str().unwrap().split(' ').count(), 1);
    assert_eq!(d["verified"][&old], false);
    assert_eq!(d["verified"][&new], true);
    let got: Value = app.admin().get(&format!("/v1/sources/{src}"), 200).await;
    assert_eq!(
        got["data"]["previous_webhook_secret_expires_at"],
        Value::Null
    );

    // At most two sign: a second replacement within an overlap ends the
    // oldest at once, and the one it replaces signs beside the newest.
    let rotate = |overlap: i64| json!({"environment": "none", "webhook_secret": true, "webhook_secret_overlap_seconds": overlap});
    let path = format!("/v1/sources/{src}/keys/rotate");
    let r: Value = app.admin().post(&path, rotate(600), 200).await;
    let third = r["secrets"]["webhook_secret"].as_str().unwrap().to_owned();
    let r: Value = app.admin().post(&path, rotate(600), 200).await;
    let fourth = r["secrets"]["webhook_secret"].as_str().unwrap().to_owned();
    rx.secrets(&[&new, &third, &fourth]).await;
    decided(&app, "Twice", &rx.url("twice")).await;
    let d = &rx.wait_for("twice", 1).await[0];
    assert_eq!(
        d["signature"].as_str().unwrap().split(' ').count(),
        2,
        "{d}"
    );
    assert_eq!(d["verified"][&new], false, "{d}");
    assert_eq!(d["verified"][&third], true, "{d}");
    assert_eq!(d["verified"][&fourth], true, "{d}");

    // An overlap for what is not replaced is refused, not ignored.
    for (body, field) in [
        (
            json!({"environment": "live", "webhook_secret_overlap_seconds": 10}),
            "webhook_secret_overlap_seconds",
        ),
        (
            json!({"environment": "none", "webhook_secret": true, "key_overlap_seconds": 0}),
            "key_overlap_seconds",
        ),
    ] {
        let e = app
            .admin()
            .post_err(&path, body, 422, "VALIDATION_ERROR")
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], field, "{e}");
    }

    // Bad input: the overlap's bounds.
    let e = app
        .admin()
        .post_err(
            &format!("/v1/sources/{src}/keys/rotate"),
            json!({"environment": "none", "webhook_secret": true, "webhook_secret_overlap_seconds": 604801}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(
        e["details"]["errors"][0]["field"],
        "webhook_secret_overlap_seconds"
    );
}

#[tokio::test]
async fn the_delivery_log_refuses_bad_input_and_other_workspaces() {
    let (app, rx) = setup().await;
    decided(&app, "Log", &rx.url("log")).await;
    let src = app.creds["source_id"].as_str().unwrap();
    let d = delivery_where(&app, |d| d["status"] == "delivered").await;
    let did = d["id"].as_str().unwrap();
    let admin = app.admin();
    for bad in ["limit=0", "limit=101", "limit=x", "colour=blue"] {
        admin
            .get_err(
                &format!("/v1/sources/{src}/deliveries?{bad}"),
                422,
                "VALIDATION_ERROR",
            )
            .await;
    }
    admin
        .get_err("/v1/sources/src_nope/deliveries", 404, "SOURCE_NOT_FOUND")
        .await;
    admin
        .get_err(
            &format!("/v1/sources/{src}/deliveries/msg_nope"),
            404,
            "DELIVERY_NOT_FOUND",
        )
        .await;
    admin
        .post_err(
            &format!("/v1/sources/{src}/deliveries/msg_nope/resend"),
            json!({}),
            404,
            "DELIVERY_NOT_FOUND",
        )
        .await;
    // Another workspace's owner sees neither the Source nor the delivery.
    let other = app.outsider();
    other
        .get_err(
            &format!("/v1/sources/{src}/deliveries"),
            404,
            "SOURCE_NOT_FOUND",
        )
        .await;
    other
        .post_err(
            &format!("/v1/sources/{src}/deliveries/{did}/resend"),
            json!({}),
            404,
            "SOURCE_NOT_FOUND",
        )
        .await;
    // A second Source's delivery is not found under the first.
    let (other_src, _) = app.second_source().await;
    admin
        .get_err(
            &format!("/v1/sources/{other_src}/deliveries/{did}"),
            404,
            "DELIVERY_NOT_FOUND",
        )
        .await;
    // Paging: `starting_after` (or its older name `before`) lists older ones only.
    for name in ["starting_after", "before"] {
        let page: Value = admin
            .get(
                &format!("/v1/sources/{src}/deliveries?limit=1&{name}={did}"),
                200,
            )
            .await;
        assert_eq!(page["data"].as_array().unwrap().len(), 0);
        assert_eq!(page["has_more"], false);
    }
    // Another Source's delivery, or an id of the right shape that is no
    // delivery, is no place to start: 422, not an empty page, naming the
    // parameter that carried it (`before` is the older name).
    for (path, field) in [
        (
            format!("/v1/sources/{other_src}/deliveries?starting_after={did}"),
            "starting_after",
        ),
        (
            format!("/v1/sources/{other_src}/deliveries?before={did}"),
            "before",
        ),
        (
            format!(
                "/v1/sources/{src}/deliveries?starting_after={}",
                hds::domain::ids::new_id("msg")
            ),
            "starting_after",
        ),
    ] {
        let e = admin.get_err(&path, 422, "VALIDATION_ERROR").await;
        assert_eq!(e["details"]["errors"][0]["field"], field, "{e}");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("is not a delivery of this Source"),
            "{e}"
        );
    }
    let both = admin
        .get_err(
            &format!("/v1/sources/{src}/deliveries?starting_after={did}&before={did}"),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(both["details"]["errors"][0]["field"], "before");
    let bad = admin
        .get_err(
            &format!("/v1/sources/{src}/deliveries?before=act_01JD8XQ0000000000000000000"),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(bad["details"]["errors"][0]["field"], "before");
    assert!(
        bad["message"]
            .as_str()
            .unwrap()
            .contains("a delivery id (msg_"),
        "{bad}"
    );
    // Source keys cannot read it.
    app.source()
        .get_err(
            &format!("/v1/sources/{src}/deliveries"),
            401,
            "INVALID_API_KEY",
        )
        .await;
}

#[tokio::test]
async fn deliveries_to_names_that_resolve_to_private_addresses_are_refused_and_logged() {
    // Without --allow-private-callbacks; the names resolve through
    // --callback-resolve (as curl --resolve), checked like any DNS answer.
    let names: &[(&str, &str, &str)] = &[
        ("loopback.test", "127.0.0.1", "loopback"),
        ("metadata.test", "169.254.169.254", "link-local"),
        ("private.test", "10.1.2.3", "private"),
        ("cgnat.test", "100.64.0.1", "carrier-grade NAT"),
        ("mapped.test", "::ffff:127.0.0.1", "IPv4-mapped 127.0.0.1"),
        ("translated.test", "::ffff:0:7f00:1", "IPv4-translated"),
        ("nat64.test", "64:ff9b:1::a9fe:a9fe", "local-use NAT64"),
        ("discard.test", "100::1", "discard-only"),
        ("v6loopback.test", "::1", "loopback"),
        ("mixed.test", "127.0.0.1", "loopback"),
    ];
    let app = TestApp::spawn_with(|c| {
        for (name, ip, _) in names {
            c.callback_resolve
                .push((name.to_string(), ip.parse().unwrap()));
        }
        // One public and one private answer: the private one refuses the name.
        c.callback_resolve
            .push(("mixed.test".into(), "93.184.215.14".parse().unwrap()));
    })
    .await;
    for (name, _, _) in names {
        let a = app
            .create_action(with_callback(name, &format!("https://{name}/hook")))
            .await;
        app.decide(&a, json!({"option_id": "approve"}))
            .await
            .ok(200);
    }
    for (name, ip, why) in names {
        let d = delivery_where(&app, |d| {
            d["url"] == format!("https://{name}/hook") && d["status"] == "failed"
        })
        .await;
        let err = d["last_error"].as_str().unwrap();
        assert!(err.starts_with("refused: "), "{name}: {err}");
        assert!(err.contains(name) && err.contains(ip), "{name}: {err}");
        assert!(err.contains(why), "{name}: {err} should name {why}");
        assert!(d["last_status_code"].is_null());
        assert_eq!(d["attempts"], 1, "a refused address is not retried");
    }
    assert_eq!(app.count_rows("jobs"), 0);
}

#[tokio::test]
async fn after_eight_failed_attempts_the_delivery_fails_and_leaves_the_queue() {
    let (app, rx) = setup().await;
    rx.script(&[500; 8], 0.0).await;
    decided(&app, "Never", &rx.url("never")).await;
    rx.wait_for("never", 1).await;
    let clock = &app.state.services.clock;
    for (n, wait) in hds::domain::webhook::RETRY_SCHEDULE_SECS.iter().enumerate() {
        // Each retry waits for its turn (a second early: nothing is sent).
        delivery_where(&app, |d| d["attempts"] == n + 1).await;
        clock.advance(time::Duration::seconds(wait - 1));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(
            rx.received().await.len(),
            n + 1,
            "retry {} came early",
            n + 1
        );
        clock.advance(time::Duration::seconds(2));
        rx.wait_for("never", n + 2).await;
    }
    let d = delivery_where(&app, |d| d["status"] == "failed").await;
    assert_eq!(d["attempts"], 8);
    assert!(d["next_attempt_at"].is_null());
    assert_eq!(app.count_rows("jobs"), 0);
    let got = rx.received().await;
    assert!(
        got.iter().all(|g| g["id"] == got[0]["id"]),
        "one message, eight attempts"
    );
}

#[tokio::test]
async fn control_and_context_requests_arrive_signed_with_what_was_asked() {
    let (app, rx) = setup().await;
    let mut body = with_callback("Deploy", &rx.url("asks"));
    body["controls"] =
        json!([{"key": "restart", "label": "Restart", "kind": "callback", "mutating": true}]);
    body["context_request_mode"] = json!("callback");
    let a = app.create_action(body).await;
    let id = a["id"].as_str().unwrap();
    let admin = app.admin();
    let cr: Value = admin
        .post(
            &format!("/v1/actions/{id}/controls/restart/invoke"),
            json!({"action_version": a["action_version"], "fingerprint": a["fingerprint"]}),
            202,
        )
        .await;
    let q: Value = admin
        .post(
            &format!("/v1/actions/{id}/context-requests"),
            json!({"question": "Which region?"}),
            201,
        )
        .await;
    let got = rx.wait_for("asks", 2).await;
    let secret = app.creds["webhook_secret"].as_str().unwrap();
    let by_type = |t: &str| got.iter().find(|g| g["body"]["type"] == t).unwrap().clone();
    let ctl = by_type("action.control_requested");
    assert_eq!(ctl["verified"][secret], true, "{ctl}");
    assert_eq!(ctl["body"]["data"]["control"]["key"], "restart");
    assert_eq!(
        ctl["body"]["data"]["control_request"]["id"],
        cr["data"]["id"]
    );
    assert_eq!(ctl["body"]["data"]["control_request"]["status"], "pending");
    assert_eq!(ctl["body"]["data"]["action"]["id"], id);
    assert_eq!(
        ctl["body"]["data"]["action"]["status"], "open",
        "a control never resolves"
    );
    let ctx = by_type("action.context_requested");
    assert_eq!(ctx["verified"][secret], true, "{ctx}");
    assert_eq!(
        ctx["body"]["data"]["context_request"]["id"],
        q["data"]["id"]
    );
    assert_eq!(
        ctx["body"]["data"]["context_request"]["question"],
        "Which region?"
    );
    assert_eq!(
        ctx["body"]["data"]["action"]["context_requests"][0]["id"],
        q["data"]["id"]
    );
}

/// A turn of the queue runs in one savepoint; when recording one attempt
/// fails, the turn is taken again job by job: the other deliveries are
/// recorded (in that turn or the next), the failing one is held back and
/// counts as due, not running, and the queue goes on. Once no attempt of it
/// can still be running (two minutes here), it is sent again.
#[tokio::test]
async fn an_attempt_that_cannot_be_recorded_holds_up_no_other() {
    let (app, rx) = setup().await;
    let bad = app
        .create_action(with_callback("Cannot be recorded", &rx.url("bad")))
        .await;
    let good = app
        .create_action(with_callback("Recorded", &rx.url("good")))
        .await;
    let bad_id = bad["id"].as_str().unwrap().to_owned();
    // On the writer's own connection only: recording an attempt of `bad`
    // fails as a full disk or a broken row would.
    app.state
        .services
        .db
        .write(move |c| {
            c.execute_batch(&format!(
                "CREATE TEMP TRIGGER refuse_attempt BEFORE INSERT ON main.webhook_attempts
                 WHEN (SELECT action_id FROM main.webhook_deliveries WHERE id = NEW.delivery_id) = '{bad_id}'
                 BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;"
            ))?;
            Ok(())
        })
        .await
        .unwrap();
    // Decided together, so that both attempts are likely settled in one turn.
    let (b, g) = tokio::join!(
        app.decide(&bad, json!({"option_id": "approve"})),
        app.decide(&good, json!({"option_id": "approve"}))
    );
    b.ok(200);
    g.ok(200);
    rx.wait_for("bad", 1).await;
    rx.wait_for("good", 1).await;
    let gid = good["id"].as_str().unwrap();
    let d = delivery_where(&app, |d| {
        d["action_id"] == gid && d["status"] == "delivered"
    })
    .await;
    assert_eq!(d["attempts"], 1);
    // The queue goes on after it.
    let later = decided(&app, "After", &rx.url("after")).await;
    rx.wait_for("after", 1).await;
    let lid = later["id"].as_str().unwrap();
    delivery_where(&app, |d| {
        d["action_id"] == lid && d["status"] == "delivered"
    })
    .await;
    // The failing attempt was sent but not recorded: still pending, with no
    // attempt, its job still queued, due and not running.
    let bid = bad["id"].as_str().unwrap();
    let d = delivery_where(&app, |d| d["action_id"] == bid).await;
    assert_eq!(d["status"], "pending");
    assert_eq!(d["attempts"], 0);
    assert_eq!(app.count_rows("jobs"), 1);
    let m = app.scrape().await;
    assert_eq!(m.value(r#"hds_jobs_running{kind="webhook"}"#), 0.0);
    assert_eq!(m.value(r#"hds_jobs_due{kind="webhook"}"#), 1.0);
    // Held back, not sent again at once; two minutes on, it is.
    let clock = &app.state.services.clock;
    clock.advance(time::Duration::seconds(60));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(rx.wait_for("bad", 1).await.len(), 1, "held back");
    clock.advance(time::Duration::seconds(61));
    assert_eq!(rx.wait_for("bad", 2).await.len(), 2, "tried again");
}

/// Two retries made due at once, each of the two Actions on its own path.
/// Answers the bad and the good Action.
async fn two_pending_retries(app: &TestApp, rx: &Receiver) -> (String, String) {
    rx.script(&[500, 500], 0.0).await;
    let bad = app
        .create_action(with_callback("The bad one", &rx.url("bad")))
        .await;
    let good = app
        .create_action(with_callback("The good one", &rx.url("good")))
        .await;
    for a in [&bad, &good] {
        app.decide(a, json!({"option_id": "approve"})).await.ok(200);
    }
    let (bid, gid) = (bad["id"].as_str().unwrap(), good["id"].as_str().unwrap());
    for id in [bid, gid] {
        let d = delivery_where(app, |d| d["action_id"] == id && d["attempts"] == 1).await;
        assert_eq!(d["status"], "pending", "{d}");
    }
    (bid.to_owned(), gid.to_owned())
}

/// Waits (bounded) until the queue holds `n` jobs.
async fn until_jobs(app: &TestApp, n: i64) {
    for _ in 0..500 {
        if app.count_rows("jobs") == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the queue never held {n} jobs");
}

/// Two retries fall due together and one read takes both; settling one of
/// them fails (its delivery was settled meanwhile, so its job is to be
/// deleted, and a trigger refuses that): the turn is taken again job by
/// job, the other is sent and recorded, and the failing one is not sent
/// and is held back, counted as due. Once the cause is gone it is not
/// taken again before the hold ends (two minutes here), and then it is.
#[tokio::test]
async fn a_job_that_cannot_be_settled_is_held_back_alone_then_settled() {
    let (app, rx) = setup().await;
    let (bid, gid) = two_pending_retries(&app, &rx).await;
    // Both retries an hour away (so no timer brings one alone), the bad one
    // settled meanwhile, and its job undeletable on the writer's connection.
    let clock = &app.state.services.clock;
    let later = hds::domain::time::format(clock.now() + time::Duration::hours(1));
    let bad_id = bid.clone();
    let (moved, settled) = app
        .state
        .services
        .db
        .write(move |c| {
            let moved = c.execute("UPDATE jobs SET run_at = ?1", [&later])?;
            let settled = c.execute(
                "UPDATE webhook_deliveries SET status = 'failed' WHERE action_id = ?1",
                [&bad_id],
            )?;
            c.execute_batch(&format!(
                "CREATE TEMP TRIGGER keep_job BEFORE DELETE ON main.jobs
                 WHEN OLD.subject = (SELECT id FROM main.webhook_deliveries WHERE action_id = '{bad_id}')
                 BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;"
            ))?;
            Ok((moved, settled))
        })
        .await
        .unwrap();
    assert_eq!((moved, settled), (2, 1));
    // One move of the clock: both are due at the same read.
    clock.advance(time::Duration::hours(1) + time::Duration::seconds(1));
    rx.wait_for("good", 2).await;
    let d = delivery_where(&app, |d| {
        d["action_id"] == gid && d["status"] == "delivered"
    })
    .await;
    assert_eq!(d["attempts"], 2);
    assert_eq!(rx.wait_for("bad", 1).await.len(), 1, "not sent again");
    until_jobs(&app, 1).await;
    let m = app.scrape().await;
    assert_eq!(m.value(r#"hds_jobs_running{kind="webhook"}"#), 0.0);
    assert_eq!(m.value(r#"hds_jobs_due{kind="webhook"}"#), 1.0);
    // The cause gone, the job waits out its hold, then leaves the queue.
    app.state
        .services
        .db
        .write(|c| Ok(c.execute_batch("DROP TRIGGER temp.keep_job")?))
        .await
        .unwrap();
    clock.advance(time::Duration::seconds(60));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(app.count_rows("jobs"), 1, "held back");
    clock.advance(time::Duration::seconds(61));
    until_jobs(&app, 0).await;
    assert_eq!(
        rx.wait_for("bad", 1).await.len(),
        1,
        "a failed delivery is never sent"
    );
}

/// When the whole write of a turn fails (a trigger rolls the transaction
/// back, as a full disk would), the finished attempt is kept in memory and
/// recorded a second later; wakes in between (here twenty moves of the
/// clock) do not make the worker try again at once. Once the write can
/// pass, the attempt is recorded, and the message is not sent again.
#[tokio::test]
async fn a_turn_whose_whole_write_fails_is_taken_again_a_second_later() {
    let (app, rx) = setup().await;
    let db = &app.state.services.db;
    db.write(|c| {
        Ok(c.execute_batch(
            "CREATE TEMP TRIGGER refuse_all BEFORE DELETE ON main.jobs
             BEGIN SELECT RAISE(ROLLBACK, 'refused by the test'); END;",
        )?)
    })
    .await
    .unwrap();
    let a = decided(&app, "Recorded late", &rx.url("late")).await;
    rx.wait_for("late", 1).await;
    // The first record fails whole: as one turn, then job by job.
    let failed = |m: &crate::helpers::Metrics| m.value("hds_writer_failed_batches_total");
    let mut first = 0.0;
    for _ in 0..500 {
        first = failed(&app.scrape().await);
        if first >= 2.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(first >= 2.0, "the record never failed");
    let clock = &app.state.services.clock;
    let started = std::time::Instant::now();
    for _ in 0..20 {
        clock.advance(time::Duration::milliseconds(1));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let more = failed(&app.scrape().await) - first;
    // At most one more try (two writes) for each real second that passed.
    let seconds = started.elapsed().as_secs_f64().ceil();
    assert!(
        more <= 2.0 * seconds,
        "{more} failed writes in {seconds} s of wakes"
    );
    db.write(|c| Ok(c.execute_batch("DROP TRIGGER temp.refuse_all")?))
        .await
        .unwrap();
    clock.advance(time::Duration::seconds(2));
    let id = a["id"].as_str().unwrap();
    let d = delivery_where(&app, |d| d["action_id"] == id && d["status"] == "delivered").await;
    assert_eq!(d["attempts"], 1);
    assert_eq!(rx.wait_for("late", 1).await.len(), 1, "not sent again");
    until_jobs(&app, 0).await;
}

/// One of two due retries cannot be read (its body's bytes are not UTF-8,
/// as a damaged row would be): the other is sent, the damaged one is held
/// back alone, counted as due; repaired, it is sent once the hold ends.
#[tokio::test]
async fn a_job_that_cannot_be_read_is_held_back_alone_then_sent() {
    let (app, rx) = setup().await;
    let (bid, gid) = two_pending_retries(&app, &rx).await;
    let clock = &app.state.services.clock;
    let later = hds::domain::time::format(clock.now() + time::Duration::hours(1));
    let bad_id = bid.clone();
    let body: String = app
        .state
        .services
        .db
        .write(move |c| {
            c.execute("UPDATE jobs SET run_at = ?1", [&later])?;
            let pick = "(SELECT body_id FROM webhook_deliveries WHERE action_id = ?1)";
            let body: String = c.query_row(
                &format!("SELECT body FROM webhook_bodies WHERE id = {pick}"),
                [&bad_id],
                |r| r.get(0),
            )?;
            let n = c.execute(
                &format!(
                    "UPDATE webhook_bodies SET body = CAST(X'7BFF7D' AS TEXT) WHERE id = {pick}"
                ),
                [&bad_id],
            )?;
            assert_eq!(n, 1);
            Ok(body)
        })
        .await
        .unwrap();
    clock.advance(time::Duration::hours(1) + time::Duration::seconds(1));
    rx.wait_for("good", 2).await;
    delivery_where(&app, |d| {
        d["action_id"] == gid && d["status"] == "delivered"
    })
    .await;
    assert_eq!(rx.wait_for("bad", 1).await.len(), 1, "not sent");
    let d = delivery_where(&app, |d| d["action_id"] == bid).await;
    assert_eq!(
        (&d["status"], &d["attempts"]),
        (&json!("pending"), &json!(1))
    );
    let m = app.scrape().await;
    assert_eq!(m.value(r#"hds_jobs_running{kind="webhook"}"#), 0.0);
    assert_eq!(m.value(r#"hds_jobs_due{kind="webhook"}"#), 1.0);
    // Repaired, it waits out its hold, then goes.
    let bad_id = bid.clone();
    app.state
        .services
        .db
        .write(move |c| {
            Ok(c.execute(
                "UPDATE webhook_bodies SET body = ?2 WHERE id =
                    (SELECT body_id FROM webhook_deliveries WHERE action_id = ?1)",
                [&bad_id, &body],
            )?)
        })
        .await
        .unwrap();
    clock.advance(time::Duration::seconds(60));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.wait_for("bad", 1).await.len(), 1, "held back");
    clock.advance(time::Duration::seconds(61));
    let both = rx.wait_for("bad", 2).await;
    assert_eq!(both[1]["id"], both[0]["id"]);
    assert_eq!(both[1]["answered"], 200);
    delivery_where(&app, |d| {
        d["action_id"] == bid && d["status"] == "delivered"
    })
    .await;
}

/// A pending delivery whose body is gone (the database edited or damaged)
/// is never sent without it: it fails, says why, and leaves the queue, and
/// a resend ends the same way.
#[tokio::test]
async fn a_delivery_whose_body_is_gone_fails_and_says_why() {
    let (app, rx) = setup().await;
    rx.script(&[500], 0.0).await;
    let a = decided(&app, "Loses its body", &rx.url("nobody")).await;
    let id = a["id"].as_str().unwrap().to_owned();
    let d = delivery_where(&app, |d| d["action_id"] == id && d["attempts"] == 1).await;
    let did = d["id"].as_str().unwrap().to_owned();
    let gone = did.clone();
    let n = app
        .state
        .services
        .db
        .write(move |c| {
            Ok(c.execute(
                "DELETE FROM webhook_bodies WHERE id =
                    (SELECT body_id FROM webhook_deliveries WHERE id = ?1)",
                [&gone],
            )?)
        })
        .await
        .unwrap();
    assert_eq!(n, 1);
    let clock = &app.state.services.clock;
    clock.advance(time::Duration::seconds(6));
    let d = delivery_where(&app, |d| d["id"] == did && d["status"] == "failed").await;
    assert_eq!(d["last_error"], hds::store::deliveries::NO_BODY);
    assert_eq!(d["attempts"], 1, "no attempt was made");
    assert!(d["next_attempt_at"].is_null());
    assert_eq!(app.count_rows("jobs"), 0);
    // A resend is accepted and ends the same way; nothing is sent.
    let src = app.creds["source_id"].as_str().unwrap();
    let r: Value = app
        .admin()
        .post(
            &format!("/v1/sources/{src}/deliveries/{did}/resend"),
            json!({}),
            202,
        )
        .await;
    assert_eq!(r["data"]["status"], "pending");
    let d = delivery_where(&app, |d| d["id"] == did && d["status"] == "failed").await;
    assert_eq!(d["last_error"], hds::store::deliveries::NO_BODY);
    assert_eq!(app.count_rows("jobs"), 0);
    assert_eq!(rx.received().await.len(), 1);
}

/// The wait before a retry counts from the attempt's end: after a timeout
/// the receiver gets the whole first wait (5 s), not what the timeout left
/// of it.
#[tokio::test]
async fn a_retry_after_a_timeout_waits_from_the_attempts_end() {
    let app = TestApp::spawn_with(|c| {
        c.allow_private_callbacks = true;
        c.webhook_timeout = 1;
    })
    .await;
    let rx = Receiver::start();
    rx.secrets(&[app.creds["webhook_secret"].as_str().unwrap()])
        .await;
    // The receiver holds its answer past the 1 s timeout.
    rx.script(&[200], 2.5).await;
    decided(&app, "Slow receiver", &rx.url("slow")).await;
    let d = delivery_where(&app, |d| d["attempts"] == 1).await;
    assert_eq!(d["status"], "pending");
    assert!(
        d["last_error"].as_str().unwrap().contains("timed out"),
        "{d}"
    );
    let next = hds::domain::time::parse(d["next_attempt_at"].as_str().unwrap()).unwrap();
    let started = hds::domain::time::parse(d["last_attempt_at"].as_str().unwrap()).unwrap();
    let wait = (next - started).whole_milliseconds();
    assert!(
        (6_000..7_000).contains(&wait),
        "the timeout (1 s) and then 5 s: {wait} ms"
    );
}

/// A Source whose endpoint was down reads its own delivery log with its
/// key (never another Source's or environment's), and after the outage
/// resends what was given up: all of it since a time, or one delivery.
#[tokio::test]
async fn a_source_reads_its_own_deliveries_and_recovers_the_failed_ones() {
    let (app, rx) = setup().await;
    let (source, source_test) = (app.source(), app.source_test());
    // Two given up (410 stops retries at once), one delivered; one more in test.
    rx.script(&[410, 410], 0.0).await;
    let mut live = Vec::new();
    for (i, title) in ["First", "Second", "Third"].into_iter().enumerate() {
        live.push(decided(&app, title, &rx.url("out")).await);
        rx.wait_for("out", i + 1).await;
    }
    let t = with_callback("In test", &rx.url("test"));
    let t = app.create_action_with(&app.test_key(), t).await;
    app.decide(&t, json!({"option_id": "approve"}))
        .await
        .ok(200);
    rx.wait_for("test", 1).await;
    let of = |a: &Value| a["id"].as_str().unwrap().to_owned();
    for (a, status) in [
        (&live[0], "failed"),
        (&live[1], "failed"),
        (&live[2], "delivered"),
        (&t, "delivered"),
    ] {
        let id = of(a);
        delivery_where(&app, |d| {
            d["action_id"] == id.as_str() && d["status"] == status
        })
        .await;
    }

    // Newest first, the key's environment only.
    let all: Value = source.get("/v1/source/deliveries", 200).await;
    let actions: Vec<&str> = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["action_id"].as_str().unwrap())
        .collect();
    assert_eq!(actions, [of(&live[2]), of(&live[1]), of(&live[0])]);
    assert_eq!(all["has_more"], false);
    assert_eq!(all["data"][0]["object"], "webhook_delivery");
    assert_eq!(all["data"][0]["event_type"], "action.resolved");
    let tests: Value = source_test.get("/v1/source/deliveries", 200).await;
    assert_eq!(tests["data"].as_array().unwrap().len(), 1);
    assert_eq!(tests["data"][0]["action_id"], of(&t).as_str());
    let test_delivery = tests["data"][0]["id"].as_str().unwrap().to_owned();
    // Given up ones only; paged.
    let failed: Value = source.get("/v1/source/deliveries?status=failed", 200).await;
    let failed: Vec<Value> = failed["data"].as_array().unwrap().clone();
    assert_eq!(failed.len(), 2);
    assert!(
        failed
            .iter()
            .all(|d| d["status"] == "failed" && d["last_status_code"] == 410)
    );
    let (newer, older) = (failed[0].clone(), failed[1].clone());
    assert_eq!(newer["action_id"], of(&live[1]).as_str());
    let page: Value = source
        .get("/v1/source/deliveries?status=failed&limit=1", 200)
        .await;
    assert_eq!(
        (page["data"][0]["id"].clone(), page["has_more"].clone()),
        (newer["id"].clone(), json!(true))
    );
    let next = format!(
        "/v1/source/deliveries?status=failed&limit=1&starting_after={}",
        newer["id"].as_str().unwrap()
    );
    let page: Value = source.get(&next, 200).await;
    assert_eq!(
        (page["data"][0]["id"].clone(), page["has_more"].clone()),
        (older["id"].clone(), json!(false))
    );
    // One delivery with its attempts.
    let one: Value = source
        .get(
            &format!("/v1/source/deliveries/{}", older["id"].as_str().unwrap()),
            200,
        )
        .await;
    assert_eq!(one["data"]["attempts"][0]["status_code"], 410, "{one}");

    // Bad input, each named; another environment's or Source's: not found.
    for (query, field) in [
        ("status=pending", "status"),
        ("limit=0", "limit"),
        ("starting_after=msg_1", "starting_after"),
        (
            &*format!("starting_after={test_delivery}"),
            "starting_after",
        ),
    ] {
        let e = source
            .get_err(
                &format!("/v1/source/deliveries?{query}"),
                422,
                "VALIDATION_ERROR",
            )
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], field, "{query}: {e}");
    }
    let elsewhere = format!("/v1/source/deliveries/{test_delivery}");
    source.get_err(&elsewhere, 404, "DELIVERY_NOT_FOUND").await;
    source
        .post_err(
            &format!("{elsewhere}/resend"),
            json!({}),
            404,
            "DELIVERY_NOT_FOUND",
        )
        .await;
    let (_, other_key) = app.second_source().await;
    let theirs = format!("/v1/source/deliveries/{}", older["id"].as_str().unwrap());
    app.get(&theirs, &other_key)
        .await
        .error(404, "DELIVERY_NOT_FOUND");
    let none = app.get("/v1/source/deliveries", &other_key).await;
    assert_eq!(none.ok(200)["data"], json!([]));
    for (body, field) in [
        (json!({"since": "yesterday"}), "since"),
        (json!({}), "since"),
        (
            json!({"since": "2026-11-01T00:00:00Z", "until": "x"}),
            "until",
        ),
    ] {
        let e = source
            .post_err(
                "/v1/source/deliveries/recover",
                body.clone(),
                422,
                "VALIDATION_ERROR",
            )
            .await;
        assert!(e.to_string().contains(field), "{body}: {e}");
    }

    // Recover from the newer failure's creation on: that one alone.
    let r: Value = source
        .post(
            "/v1/source/deliveries/recover",
            json!({"since": newer["created_at"]}),
            202,
        )
        .await;
    assert_eq!(
        r,
        json!({"object": "webhook_recovery", "resent": 1, "has_more": false, "last_id": newer["id"]})
    );
    let got = rx.wait_for("out", 4).await;
    assert_eq!(got[3]["id"], newer["id"]);
    // From long before: the older one; the newer is no longer failed.
    let r: Value = source
        .post(
            "/v1/source/deliveries/recover",
            json!({"since": "2000-01-01T00:00:00Z"}),
            202,
        )
        .await;
    assert_eq!(r["resent"], 1);
    let got = rx.wait_for("out", 5).await;
    assert_eq!(got[4]["id"], older["id"]);
    for d in [&newer, &older] {
        let id = d["id"].as_str().unwrap();
        let d = delivery_where(&app, |x| x["id"] == id && x["status"] == "delivered").await;
        assert_eq!(d["attempts"], 2);
    }
    let r: Value = source
        .post(
            "/v1/source/deliveries/recover",
            json!({"since": "2000-01-01T00:00:00Z"}),
            202,
        )
        .await;
    assert_eq!(r["resent"], 0);
    // One delivery, resent by the Source: the same message again.
    let third = all["data"][0]["id"].as_str().unwrap();
    let r: Value = source
        .post(
            &format!("/v1/source/deliveries/{third}/resend"),
            json!({}),
            202,
        )
        .await;
    assert_eq!(r["data"]["status"], "pending");
    let got = rx.wait_for("out", 6).await;
    assert_eq!(got[5]["id"], third);
    assert_eq!(rx.received().await.len(), 7, "nothing else was sent");

    // Deliveries that fail again at once (410): the next request, given the
    // last one resent, goes on after it instead of taking them again.
    rx.script(&[410, 410, 410, 410], 0.0).await;
    for (i, title) in ["Fourth", "Fifth"].into_iter().enumerate() {
        decided(&app, title, &rx.url("again")).await;
        rx.wait_for("again", i + 1).await;
    }
    let failed_now = || async {
        let f: Value = source.get("/v1/source/deliveries?status=failed", 200).await;
        f["data"].as_array().unwrap().clone()
    };
    for _ in 0..250 {
        if failed_now().await.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let failed = failed_now().await;
    assert_eq!(failed.len(), 2, "{failed:?}");
    let since = json!({"since": "2000-01-01T00:00:00Z"});
    let r: Value = source
        .post("/v1/source/deliveries/recover", since.clone(), 202)
        .await;
    assert_eq!(r["resent"], 2);
    assert_eq!(r["last_id"], failed[0]["id"], "the newer one, taken last");
    rx.wait_for("again", 4).await;
    for _ in 0..250 {
        if failed_now().await.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(failed_now().await.len(), 2, "failed again");
    let mut next = since.clone();
    next["starting_after"] = r["last_id"].clone();
    let r: Value = source
        .post("/v1/source/deliveries/recover", next, 202)
        .await;
    assert_eq!(
        r,
        json!({"object": "webhook_recovery", "resent": 0, "has_more": false, "last_id": null})
    );
    let mut bad = since.clone();
    bad["starting_after"] = json!("act_1");
    let e = source
        .post_err(
            "/v1/source/deliveries/recover",
            bad,
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "starting_after", "{e}");
    // Both wrong: both named. Empty: from the start, as on the list.
    let e = source
        .post_err(
            "/v1/source/deliveries/recover",
            json!({"since": "soon", "starting_after": "x"}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"].as_array().unwrap().len(), 2, "{e}");
    let mut empty = since;
    empty["starting_after"] = json!("");
    let r: Value = source
        .post("/v1/source/deliveries/recover", empty, 202)
        .await;
    assert_eq!(r["resent"], 2, "from the start again: {r}");
}

/// An owner or admin withdraws a request its Source left open: it closes
/// as `cancelled` with the person as the actor and no receipt, the Source
/// hears `action.cancelled` (verified with `standardwebhooks`), and the
/// dashboard offers it to them only.
#[tokio::test]
async fn an_owner_or_admin_withdraws_an_open_action_and_the_source_is_told() {
    let (app, rx) = setup().await;
    let a = app
        .create_action(with_callback("Orphaned deploy", &rx.url("withdrawn")))
        .await;
    let id = a["id"].as_str().unwrap();
    let path = format!("/v1/actions/{id}/withdraw");
    // A reviewer may decide it, not withdraw it.
    let reviewer = app.member(hds::domain::access::Role::Reviewer);
    let e = reviewer
        .post_err(&path, json!({"reason": "x"}), 403, "FORBIDDEN")
        .await;
    assert_eq!(e["details"]["required_role"], "admin");
    let rb = app.browser(reviewer.person()).await;
    assert!(
        !rb.page(&format!("/app/actions/{id}"))
            .await
            .contains("withdraw-form")
    );
    // The owner, from the dashboard.
    let admin = app.admin();
    let b = app.browser(admin.person()).await;
    let page = format!("/app/actions/{id}");
    assert!(b.page(&page).await.contains("id=\"withdraw-form\""));
    let origin = b.url("");
    let origin = origin.trim_end_matches('/');
    // Without JavaScript a page asks first, keeping the reason; nothing
    // is withdrawn yet.
    let r = b
        .post_form(
            &format!("{page}/withdraw"),
            Some(origin),
            &[
                ("_csrf", b.csrf()),
                ("reason", "the agent that asked crashed"),
            ],
        )
        .await;
    assert_eq!(r.status(), 200);
    let ask = r.text().await.unwrap();
    assert!(ask.contains("Withdraw the request?"), "{ask}");
    assert!(
        ask.contains("value=\"the agent that asked crashed\""),
        "{ask}"
    );
    assert!(ask.contains("name=\"confirmed\" value=\"yes\""), "{ask}");
    let still: Value = admin.get(&format!("/v1/actions/{id}"), 200).await;
    assert_eq!(still["data"]["status"], "open");
    let r = b
        .post_form(
            &format!("{page}/withdraw"),
            Some(origin),
            &[
                ("_csrf", b.csrf()),
                ("reason", "the agent that asked crashed"),
                ("confirmed", "yes"),
            ],
        )
        .await;
    assert_eq!(r.status(), 303);
    assert_eq!(
        r.headers()["location"].to_str().unwrap(),
        format!("{page}?done=withdrawn")
    );
    let got = rx.wait_for("withdrawn", 1).await;
    let secret = app.creds["webhook_secret"].as_str().unwrap();
    assert_eq!(got[0]["verified"][secret], true);
    assert_eq!(got[0]["body"]["type"], "action.cancelled");
    let action = &got[0]["body"]["data"]["action"];
    assert_eq!(action["status"], "cancelled");
    assert_eq!(action["resolution_reason"], "the agent that asked crashed");
    assert_eq!(action["receipt"], Value::Null, "nothing was decided");
    let read: Value = admin.get(&format!("/v1/actions/{id}"), 200).await;
    let by = &read["data"]["resolved_by"];
    assert_eq!(by["type"], "user", "{read}");
    assert_eq!(by["id"], admin.person().id.as_str(), "{read}");
    // Once: a second withdrawal, or a decision, finds it closed.
    admin
        .post_err(&path, json!({}), 409, "ACTION_NOT_OPEN")
        .await;
    app.decide(&a, json!({"option_id": "approve"}))
        .await
        .error(409, "ACTION_NOT_OPEN");
    // A restricted Action: an owner not listed on it may not (restricting
    // it to named people is not undone by every admin).
    let mut body = two_options("Pay the invoice");
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([reviewer.person().id]);
    let r = app.create_action(body).await;
    let e = admin
        .post_err(
            &format!("/v1/actions/{}/withdraw", r["id"].as_str().unwrap()),
            json!({}),
            403,
            "FORBIDDEN",
        )
        .await;
    assert_eq!(e["details"]["listed"], false, "{e}");
    assert!(
        !b.page(&format!("/app/actions/{}", r["id"].as_str().unwrap()))
            .await
            .contains("withdraw-form")
    );
    // Through the API, without a body.
    let b2 = app.create_action(two_options("Forgotten job")).await;
    let r = admin
        .call(
            reqwest::Method::POST,
            &format!("/v1/actions/{}/withdraw", b2["id"].as_str().unwrap()),
            None,
            &[],
        )
        .await;
    let done = r.ok(200);
    assert_eq!(done["data"]["status"], "cancelled");
    assert_eq!(done["data"]["resolution_reason"], Value::Null);
}
