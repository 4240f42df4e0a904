//! GET /v1/analytics/summary reads the daily rollup kept in step with every
//! create, close and outcome in the same transaction; POST /v1/analytics/events stores
//! usage events locally, checked, and housekeeping forgets them after 90 days.

use serde_json::{Value, json};

use crate::helpers::{TestApp, two_options};
use hds::domain::access::Role;

#[tokio::test]
async fn the_summary_counts_statuses_times_rates_and_outcomes_per_source() {
    let app = TestApp::spawn().await;
    let clock = &app.state.services.clock;
    let approved = app.create_action(two_options("approve me")).await;
    let rejected = app.create_action(two_options("reject me")).await;
    let cancelled = app.create_action(two_options("cancel me")).await;
    let mut body = two_options("nobody answers");
    body["expires_at"] = json!(hds::domain::time::format(
        clock.now() + time::Duration::hours(1)
    ));
    let expiring = app.create_action(body).await;
    let _open = app.create_action(two_options("still open")).await;
    // Another environment is counted apart.
    let _test = app
        .create_action_with(&app.test_key(), two_options("test"))
        .await;

    app.decide(&approved, json!({"option_id": "approve"}))
        .await
        .ok(200);
    clock.advance(time::Duration::minutes(3));
    app.decide(&rejected, json!({"option_id": "reject"}))
        .await
        .ok(200);
    let source = app.source();
    let _: Value = source
        .post(
            &format!("/v1/actions/{}/cancel", cancelled["id"].as_str().unwrap()),
            json!({}),
            200,
        )
        .await;
    let report = json!({"status": "failed", "duration_ms": 5, "rollback": true, "action_version": 1, "fingerprint": approved["fingerprint"]});
    let _: Value = source
        .post(
            &format!("/v1/actions/{}/outcome", approved["id"].as_str().unwrap()),
            report,
            201,
        )
        .await;
    let poll = app.held_poll(expiring["id"].as_str().unwrap()).await;
    clock.advance(time::Duration::minutes(61));
    assert_eq!(TestApp::answer(poll).await["status"], "expired");

    let viewer = app.member(Role::Viewer);
    let s: Value = viewer.get("/v1/analytics/summary?window=7d", 200).await;
    let t = &s["totals"];
    assert_eq!(s["object"], "analytics_summary");
    assert_eq!(s["environment"], "live");
    assert_eq!(t["created"], 5, "{s}");
    assert_eq!(
        t["by_status"],
        json!({"open": 1, "resolved": 2, "cancelled": 1, "expired": 1})
    );
    assert_eq!(
        (t["decided"].clone(), t["approved"].clone()),
        (json!(2), json!(1))
    );
    assert_eq!(t["approval_rate"], 0.5);
    assert_eq!(t["expiry_rate"], 0.25, "one of four closed Actions expired");
    assert_eq!(
        t["outcomes"],
        json!({"success": 0, "failed": 1, "rollback": 1})
    );
    // One decision at 0 s (bucket ≤ 10 s), one at 180 s (bucket 120–300 s).
    assert_eq!(t["decision_seconds"]["p50"], 10.0);
    assert_eq!(t["decision_seconds"]["p90"], 264.0);
    assert_eq!(s["sources"].as_array().unwrap().len(), 1);
    assert_eq!(s["sources"][0]["created"], 5);
    assert!(s["sources"][0]["source_name"].is_string(), "{s}");
    let days = s["days"].as_array().unwrap();
    assert_eq!(days.len(), 7);
    assert_eq!(
        days.iter()
            .map(|d| d["created"].as_i64().unwrap())
            .sum::<i64>(),
        5
    );

    // Filters: the test environment, a Source, an unknown Source.
    let s: Value = viewer
        .get("/v1/analytics/summary?environment=test&window=90d", 200)
        .await;
    assert_eq!(s["totals"]["created"], 1);
    assert_eq!(s["days"].as_array().unwrap().len(), 90);
    let s: Value = viewer
        .get("/v1/analytics/summary?environment=all&window=7d", 200)
        .await;
    assert_eq!(s["environment"], "all");
    assert_eq!(s["totals"]["created"], 6, "both environments");
    assert_eq!(s["sources"][0]["created"], 6, "one Source, in both");
    let sources: Value = app.admin().get("/v1/sources", 200).await;
    let src = sources["data"][0]["id"].as_str().unwrap();
    let s: Value = viewer
        .get(&format!("/v1/analytics/summary?source_id={src}"), 200)
        .await;
    assert_eq!(s["totals"]["created"], 5);
    assert_eq!(s["source_id"], src);
    let s: Value = viewer
        .get("/v1/analytics/summary?source_id=src_nope", 200)
        .await;
    assert_eq!(s["totals"]["created"], 0);
    assert_eq!(s["totals"]["approval_rate"], Value::Null);
    // What could be no id is refused, not answered back in the summary.
    for bad in ["src%00", &"s".repeat(65)] {
        let e = viewer
            .get_err(
                &format!("/v1/analytics/summary?source_id={bad}"),
                422,
                "VALIDATION_ERROR",
            )
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], "source_id", "{e}");
    }
    // Another workspace sees none of it.
    let s: Value = app.outsider().get("/v1/analytics/summary", 200).await;
    assert_eq!(s["totals"]["created"], 0);
}

#[tokio::test]
async fn summary_bad_queries_are_refused_with_the_field() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    for (q, field, says) in [
        (
            "window=1y",
            "window",
            "window must be 7d, 30d or 90d, not `1y`",
        ),
        (
            "environment=both",
            "environment",
            "environment must be live, test or all, not `both`",
        ),
        ("source_id=", "source_id", "source_id is empty"),
    ] {
        let e = admin
            .get_err(
                &format!("/v1/analytics/summary?{q}"),
                422,
                "VALIDATION_ERROR",
            )
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], field, "{e}");
        assert!(e["message"].as_str().unwrap().contains(says), "{e}");
    }
    admin
        .get_err("/v1/analytics/summary?days=7", 422, "VALIDATION_ERROR")
        .await;
    app.anonymous()
        .get_err("/v1/analytics/summary", 401, "AUTH_REQUIRED")
        .await;
}

#[tokio::test]
async fn events_are_stored_checked_and_forgotten_after_90_days() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let ok: Value = admin
        .post(
            "/v1/analytics/events",
            json!({"name": "inbox.filter_changed", "properties": {"tab": "mine"}}),
            200,
        )
        .await;
    assert_eq!(ok, json!({"accepted": true}));
    let at = hds::domain::time::format(app.state.services.clock.now() - time::Duration::hours(2));
    let _: Value = admin
        .post(
            "/v1/analytics/events",
            json!({"name": "page.view", "occurred_at": at}),
            200,
        )
        .await;
    assert_eq!(app.count_rows("analytics_events"), 2);

    let old = hds::domain::time::format(app.state.services.clock.now() - time::Duration::hours(25));
    let big = "x".repeat(5000);
    for (body, field) in [
        (json!({"name": "Inbox Opened"}), "name"),
        (json!({"name": ""}), "name"),
        (json!({"name": "a".repeat(65)}), "name"),
        (
            json!({"name": "a", "properties": {"blob": big}}),
            "properties",
        ),
        (json!({"name": "a", "occurred_at": old}), "occurred_at"),
        (
            json!({"name": "a", "occurred_at": "yesterday"}),
            "occurred_at",
        ),
    ] {
        let e = admin
            .post_err(
                "/v1/analytics/events",
                body.clone(),
                422,
                "VALIDATION_ERROR",
            )
            .await;
        let fields: Vec<&str> = e["details"]["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["field"].as_str().unwrap())
            .collect();
        assert!(fields.contains(&field), "{body}: {e}");
    }
    admin
        .post_err(
            "/v1/analytics/events",
            json!({"name": "a", "extra": 1}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    admin
        .post_err(
            "/v1/analytics/events",
            json!({"name": "a", "properties": [1]}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(app.count_rows("analytics_events"), 2, "nothing written");

    app.state.services.clock.advance(time::Duration::days(91));
    let n = hds::service::analytics::prune_events(&app.state.services)
        .await
        .unwrap();
    assert_eq!(n, 2);
    assert_eq!(app.count_rows("analytics_events"), 0);
}

#[tokio::test]
async fn the_analytics_page_draws_the_summary_as_svg_with_tables() {
    let app = TestApp::spawn().await;
    let a = app.create_action(two_options("chart me")).await;
    app.decide(&a, json!({"option_id": "approve"}))
        .await
        .ok(200);
    let viewer = app.member(Role::Viewer);
    let browser = app.browser(viewer.person()).await;
    let html = browser.page("/app/analytics?window=7d").await;
    for id in [
        "chart-per-day",
        "chart-decision-time",
        "chart-approval",
        "analytics-totals",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "{id}: {html}");
    }
    assert!(html.contains("role=\"img\""), "{html}");
    assert!(html.contains("100%"), "approval rate shown: {html}");
    assert!(
        html.contains("href=\"/app/analytics\" aria-current=\"page\""),
        "nav: {html}"
    );
    assert!(
        html.contains("href=\"/app/analytics?window=90d&amp;environment=live\""),
        "{html}"
    );
    assert!(html.contains("Live Actions created from"), "{html}");
    let created = |html: &str| {
        let at = html.find("<th scope=\"row\">Created</th><td>").unwrap();
        html[at..]
            .split("<td>")
            .nth(1)
            .unwrap()
            .split('<')
            .next()
            .unwrap()
            .to_owned()
    };
    assert_eq!(created(&html), "1");

    // The environment and Source filters, as the API takes them.
    app.source_test()
        .post::<Value>("/v1/actions", two_options("a test one"), 201)
        .await;
    app.source_test()
        .post::<Value>("/v1/actions", two_options("another test one"), 201)
        .await;
    let test = browser
        .page("/app/analytics?window=7d&environment=test")
        .await;
    assert!(test.contains("Test Actions created from"), "{test}");
    assert_eq!(created(&test), "2");
    assert!(test.contains(r#"<option value="test" selected>test</option>"#));
    assert!(test.contains("href=\"/app/analytics?window=30d&amp;environment=test\""));
    let both = browser
        .page("/app/analytics?window=7d&environment=all")
        .await;
    assert_eq!(created(&both), "3");
    let sid = app.creds["source_id"].as_str().unwrap();
    let one = browser
        .page(&format!("/app/analytics?window=7d&source_id={sid}"))
        .await;
    assert!(
        one.contains("Live Actions from Default Source created"),
        "{one}"
    );
    assert!(one.contains(&format!(
        r#"<option value="{sid}" selected>Default Source</option>"#
    )));
    assert_eq!(created(&one), "1");
    // A Source that is none of this workspace's is named as such, selected,
    // never read as "every Source".
    let other = "src_01JZZZZZZZZZZZZZZZZZZZZZZZ";
    let none = browser
        .page(&format!("/app/analytics?window=7d&source_id={other}"))
        .await;
    assert!(
        none.contains(&format!(
            "Live Actions from {other} (no Source of this workspace) created"
        )),
        "{none}"
    );
    assert!(none.contains(&format!(r#"<option value="{other}" selected>"#)));
    assert!(!none.contains(r#"<option value="" selected>"#), "{none}");
    assert_eq!(created(&none), "0");
    // A window the page does not offer: the error page, 422.
    let r = browser
        .http()
        .get(browser.url("/app/analytics?window=1y"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
}
