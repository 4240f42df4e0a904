//! Controls (guide: "Controls"): pressing a callback control, the Action's
//! control requests, and the Source's result. Invoke never resolves the
//! Action or moves its binding; the webhook is queued in the same write.

use hds::domain::access::Role;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Actor, TestApp};

fn with_controls(title: &str) -> Value {
    json!({
        "title": title,
        "options": [{"id": "approve", "label": "Approve"}, {"id": "reject", "label": "Reject"}],
        "callback_url": "https://hooks.example.com/hds",
        "controls": [
            {"key": "restart", "label": "Restart the job", "kind": "callback", "mutating": true, "confirm": "Restart it?"},
            {"key": "logs", "label": "Fetch logs", "kind": "callback"},
            {"key": "runbook", "label": "Runbook", "kind": "link", "url": "https://docs.example.com/runbook"}
        ]
    })
}

fn binding(a: &Value) -> Value {
    json!({"action_version": a["action_version"], "fingerprint": a["fingerprint"]})
}

fn invoke_path(a: &Value, key: &str) -> String {
    format!(
        "/v1/actions/{}/controls/{key}/invoke",
        a["id"].as_str().unwrap()
    )
}

async fn invoke_with_key(
    who: &Actor,
    a: &Value,
    control: &str,
    key: &str,
    body: Value,
) -> crate::helpers::Resp {
    who.call(
        Method::POST,
        &invoke_path(a, control),
        Some(&body),
        &[("idempotency-key", key)],
    )
    .await
}

/// `(event_type, action_id, body)` of every queued webhook.
async fn deliveries(app: &TestApp) -> Vec<(String, String, Value)> {
    app.state
        .services
        .db
        .read(|c| {
            let mut st = c.prepare("SELECT d.event_type, d.action_id, b.body FROM webhook_deliveries d JOIN webhook_bodies b ON b.id = d.body_id ORDER BY d.created_at, d.id")?;
            let rows = st.query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (t, a, b) = row?;
                out.push((t, a, serde_json::from_str(&b)?));
            }
            Ok(out)
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn a_reviewer_invokes_a_callback_control_and_the_source_is_told() {
    let app = TestApp::spawn().await;
    let a = app.create_action(with_controls("Deploy")).await;
    let reviewer = app.member(Role::Reviewer);
    let r = invoke_with_key(&reviewer, &a, "restart", "press-1", binding(&a)).await;
    let body = r.ok(202).clone();
    assert!(!r.headers.contains_key("idempotent-replayed"));
    assert_eq!(body["idempotent_replay"], false);
    let cr = &body["data"];
    assert!(cr["id"].as_str().unwrap().starts_with("ctr_"), "{cr}");
    assert_eq!(cr["object"], "control_request");
    assert_eq!(cr["action_id"], a["id"]);
    assert_eq!(cr["control_key"], "restart");
    assert_eq!(cr["status"], "pending");
    assert_eq!(cr["message"], Value::Null);
    assert_eq!(cr["requested_by"]["user_id"], reviewer.person().id.as_str());
    assert_eq!(cr["action_version"], 1);
    assert_eq!(cr["created_at"], cr["updated_at"]);

    // The Action is untouched: still open, same binding.
    let after: Value = app
        .source()
        .get(
            &format!("/v1/source/actions/{}", a["id"].as_str().unwrap()),
            200,
        )
        .await;
    assert_eq!(after["data"]["status"], "open");
    assert_eq!(after["data"]["action_version"], a["action_version"]);
    assert_eq!(after["data"]["fingerprint"], a["fingerprint"]);

    // The webhook is queued with the control and the request.
    let queued = deliveries(&app).await;
    assert_eq!(queued.len(), 1, "{queued:?}");
    let (kind, action_id, msg) = &queued[0];
    assert_eq!(kind, "action.control_requested");
    assert_eq!(action_id, a["id"].as_str().unwrap());
    assert_eq!(msg["type"], "action.control_requested");
    assert_eq!(msg["data"]["action"]["id"], a["id"]);
    assert_eq!(msg["data"]["control"]["key"], "restart");
    assert_eq!(msg["data"]["control"]["kind"], "callback");
    assert_eq!(msg["data"]["control_request"], *cr);

    // History shows it; the list has it.
    let got: Value = reviewer
        .get(&format!("/v1/actions/{}", a["id"].as_str().unwrap()), 200)
        .await;
    let last = got["data"]["history"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["type"], "control_requested", "{last}");
    assert_eq!(
        last["data"],
        json!({"control_request_id": cr["id"], "control_key": "restart"})
    );
    assert_eq!(last["actor"]["id"], reviewer.person().id.as_str());
    let list: Value = reviewer
        .get(
            &format!("/v1/actions/{}/control-requests", a["id"].as_str().unwrap()),
            200,
        )
        .await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
    assert_eq!(list["data"][0], *cr);
}

#[tokio::test]
async fn an_identical_retry_replays_and_another_body_with_the_key_is_refused() {
    let app = TestApp::spawn().await;
    let a = app.create_action(with_controls("Deploy")).await;
    let reviewer = app.member(Role::Reviewer);
    let first = invoke_with_key(&reviewer, &a, "restart", "k-1", binding(&a))
        .await
        .ok(202)
        .clone();
    let again = invoke_with_key(&reviewer, &a, "restart", "k-1", binding(&a)).await;
    assert_eq!(again.ok(202)["idempotent_replay"], true);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.body["data"], first["data"]);
    // Same key, another control: a different request.
    invoke_with_key(&reviewer, &a, "logs", "k-1", binding(&a))
        .await
        .error(409, "IDEMPOTENCY_KEY_REUSED");
    // Same key, another body.
    let other = json!({"action_version": 1, "fingerprint": format!("sha256:{}", "0".repeat(64))});
    invoke_with_key(&reviewer, &a, "restart", "k-1", other)
        .await
        .error(409, "IDEMPOTENCY_KEY_REUSED");
    // The key is the person's own: another reviewer may use the same one.
    let other_reviewer = app.member(Role::Reviewer);
    let theirs = invoke_with_key(&other_reviewer, &a, "restart", "k-1", binding(&a))
        .await
        .ok(202)
        .clone();
    assert_ne!(theirs["data"]["id"], first["data"]["id"]);
    // Without a key every press is a new request.
    let p = invoke_path(&a, "logs");
    let x: Value = reviewer.post(&p, binding(&a), 202).await;
    let y: Value = reviewer.post(&p, binding(&a), 202).await;
    assert_ne!(x["data"]["id"], y["data"]["id"]);
    let list: Value = reviewer
        .get(
            &format!("/v1/actions/{}/control-requests", a["id"].as_str().unwrap()),
            200,
        )
        .await;
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 4);
    // Newest first.
    assert_eq!(ids[0], y["data"]["id"].as_str().unwrap());
    assert_eq!(ids[3], first["data"]["id"].as_str().unwrap());
    assert_eq!(app.count_rows("control_requests"), 4);
    // A replay still answers once the Action has closed.
    app.decide(&a, json!({"option_id": "approve"}))
        .await
        .ok(200);
    let late = invoke_with_key(&reviewer, &a, "restart", "k-1", binding(&a)).await;
    assert_eq!(late.ok(202)["data"], first["data"]);
    // A bad key is refused before anything.
    invoke_with_key(&reviewer, &a, "restart", "", binding(&a))
        .await
        .error(400, "INVALID_IDEMPOTENCY_KEY");
}

#[tokio::test]
async fn invoke_refuses_stale_bindings_links_unknown_keys_and_closed_actions() {
    let app = TestApp::spawn().await;
    let a = app.create_action(with_controls("Deploy")).await;
    let reviewer = app.member(Role::Reviewer);
    let id = a["id"].as_str().unwrap();

    let stale = json!({"action_version": 1, "fingerprint": format!("sha256:{}", "f".repeat(64))});
    let e = reviewer
        .post_err(&invoke_path(&a, "restart"), stale, 409, "ACTION_CHANGED")
        .await;
    assert_eq!(e["details"]["action_version"], 1);
    assert_eq!(e["details"]["fingerprint"], a["fingerprint"]);
    // A PATCH that changes content makes the old binding stale.
    let patched: Value = app
        .source()
        .patch(
            &format!("/v1/actions/{id}"),
            json!({"title": "Deploy v2"}),
            200,
        )
        .await;
    assert_eq!(patched["data"]["action_version"], 2);
    let e = reviewer
        .post_err(
            &invoke_path(&a, "restart"),
            binding(&a),
            409,
            "ACTION_CHANGED",
        )
        .await;
    assert_eq!(e["details"]["action_version"], 2);
    let a = patched["data"].clone();

    let e = reviewer
        .post_err(
            &invoke_path(&a, "runbook"),
            binding(&a),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("link control")
            || e.to_string().contains("link control"),
        "{e}"
    );
    let e = reviewer
        .post_err(
            &invoke_path(&a, "nope"),
            binding(&a),
            404,
            "CONTROL_NOT_FOUND",
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("nope"), "{e}");
    // The keys it has (callback ones: a link control is not invoked).
    assert_eq!(
        e["details"]["control_keys"],
        json!(["restart", "logs"]),
        "{e}"
    );
    reviewer
        .post_err(
            &invoke_path(&a, "restart"),
            json!({"action_version": 2}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    reviewer
        .post_err(
            &invoke_path(&a, "restart"),
            json!({"action_version": 2, "fingerprint": a["fingerprint"], "extra": 1}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    reviewer
        .post_err(
            "/v1/actions/act_nope/controls/restart/invoke",
            binding(&a),
            404,
            "ACTION_NOT_FOUND",
        )
        .await;

    app.decide(&a, json!({"option_id": "reject"})).await.ok(200);
    let e = reviewer
        .post_err(
            &invoke_path(&a, "restart"),
            binding(&a),
            409,
            "ACTION_NOT_OPEN",
        )
        .await;
    assert_eq!(e["details"]["status"], "resolved");
    assert_eq!(app.count_rows("control_requests"), 0);
    assert!(
        deliveries(&app)
            .await
            .iter()
            .all(|(k, _, _)| k != "action.control_requested")
    );
}

#[tokio::test]
async fn viewers_outsiders_and_unlisted_reviewers_may_not_invoke() {
    let app = TestApp::spawn().await;
    let a = app.create_action(with_controls("Deploy")).await;
    let viewer = app.member(Role::Viewer);
    let e = viewer
        .post_err(&invoke_path(&a, "restart"), binding(&a), 403, "FORBIDDEN")
        .await;
    assert_eq!(e["details"]["required_role"], "reviewer");
    // A viewer still reads the list.
    let list: Value = viewer
        .get(
            &format!("/v1/actions/{}/control-requests", a["id"].as_str().unwrap()),
            200,
        )
        .await;
    assert_eq!(list["data"], json!([]));
    let outsider = app.outsider();
    outsider
        .post_err(
            &invoke_path(&a, "restart"),
            binding(&a),
            404,
            "ACTION_NOT_FOUND",
        )
        .await;
    outsider
        .get_err(
            &format!("/v1/actions/{}/control-requests", a["id"].as_str().unwrap()),
            404,
            "ACTION_NOT_FOUND",
        )
        .await;
    app.anonymous()
        .post_err(
            &invoke_path(&a, "restart"),
            binding(&a),
            401,
            "AUTH_REQUIRED",
        )
        .await;

    // Restricted: only the listed reviewer; an unlisted reviewer does not see it,
    // an admin sees it but may not press.
    let listed = app.member(Role::Reviewer);
    let unlisted = app.member(Role::Reviewer);
    let admin = app.member(Role::Admin);
    let mut body = with_controls("Restricted");
    body["visibility"] = json!("restricted");
    body["reviewer_emails"] = json!([listed.person().email]);
    let r = app.create_action(body).await;
    unlisted
        .post_err(
            &invoke_path(&r, "restart"),
            binding(&r),
            404,
            "ACTION_NOT_FOUND",
        )
        .await;
    admin
        .post_err(&invoke_path(&r, "restart"), binding(&r), 403, "FORBIDDEN")
        .await;
    let ok: Value = listed
        .post(&invoke_path(&r, "restart"), binding(&r), 202)
        .await;
    assert_eq!(ok["data"]["status"], "pending");
    assert_eq!(app.count_rows("control_requests"), 1);
}

#[tokio::test]
async fn a_demoted_reviewer_is_refused_inside_the_write() {
    let app = TestApp::spawn().await;
    let a = app.create_action(with_controls("Deploy")).await;
    let reviewer = app.member(Role::Reviewer);
    let uid = reviewer.person().id.clone();
    let _: Value = app
        .admin()
        .patch(
            &format!("/v1/workspaces/members/{uid}"),
            json!({"role": "viewer"}),
            200,
        )
        .await;
    reviewer
        .post_err(&invoke_path(&a, "restart"), binding(&a), 403, "FORBIDDEN")
        .await;
    assert_eq!(app.count_rows("control_requests"), 0);
}

/// A Source reads the control requests of its own Actions (one that missed
/// the webhook finds the presses still `pending`); another Source, or the
/// other environment's key, gets 404 as for the Action itself.
#[tokio::test]
async fn a_source_lists_the_control_requests_of_its_own_action() {
    let app = TestApp::spawn().await;
    let a = app.create_action(with_controls("Deploy")).await;
    let id = a["id"].as_str().unwrap();
    let reviewer = app.member(Role::Reviewer);
    let first: Value = reviewer
        .post(&invoke_path(&a, "restart"), binding(&a), 202)
        .await;
    let second: Value = reviewer
        .post(&invoke_path(&a, "logs"), binding(&a), 202)
        .await;
    let path = format!("/v1/source/actions/{id}/control-requests");
    let list: Value = app.source().get(&path, 200).await;
    assert_eq!(list["object"], "list");
    assert_eq!(list["has_more"], false);
    assert_eq!(list["data"][0]["id"], second["data"]["id"], "newest first");
    assert_eq!(list["data"][1]["id"], first["data"]["id"]);
    assert_eq!(list["data"][1]["status"], "pending");
    assert_eq!(list["data"][1]["control_key"], "restart");
    // The same list a reviewer reads.
    let theirs: Value = reviewer
        .get(&format!("/v1/actions/{id}/control-requests"), 200)
        .await;
    assert_eq!(theirs, list);
    let page: Value = app
        .source()
        .get(
            &format!(
                "{path}?limit=1&starting_after={}",
                second["data"]["id"].as_str().unwrap()
            ),
            200,
        )
        .await;
    assert_eq!(page["data"][0]["id"], first["data"]["id"]);
    let (_, other_key) = app.second_source().await;
    for who in [app.bearer(&other_key), app.source_test()] {
        who.get_err(&path, 404, "ACTION_NOT_FOUND").await;
    }
    app.source()
        .get_err(&format!("{path}?limit=0"), 422, "VALIDATION_ERROR")
        .await;
    app.source()
        .get_err(
            &format!("{path}?starting_after=ctl_nope"),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    reviewer.get_err(&path, 401, "INVALID_API_KEY").await;
}

#[tokio::test]
async fn the_source_reports_running_then_a_final_result() {
    let app = TestApp::spawn().await;
    let a = app.create_action(with_controls("Deploy")).await;
    let reviewer = app.member(Role::Reviewer);
    let cr: Value = reviewer
        .post(&invoke_path(&a, "restart"), binding(&a), 202)
        .await;
    let rid = cr["data"]["id"].as_str().unwrap();
    let path = format!("/v1/source/control-requests/{rid}/result");
    let src = app.source();

    let running: Value = src
        .post(
            &path,
            json!({"status": "running", "message": "queued on worker 3"}),
            200,
        )
        .await;
    assert_eq!(running["data"]["id"], rid);
    assert_eq!(running["data"]["status"], "running");
    assert_eq!(running["data"]["message"], "queued on worker 3");
    // running → running updates the message.
    let again: Value = src.post(&path, json!({"status": "running"}), 200).await;
    assert_eq!(again["data"]["message"], Value::Null);
    let done = src
        .call(
            Method::POST,
            &path,
            Some(&json!({"status": "succeeded", "message": "restarted in 4 s"})),
            &[],
        )
        .await;
    assert!(!done.headers.contains_key("idempotent-replayed"));
    assert_eq!(done.ok(200)["data"]["status"], "succeeded");
    assert_eq!(done.body["data"]["message"], "restarted in 4 s");

    // Final: an exact repeat answers the same; anything else is refused.
    let repeat = src
        .call(
            Method::POST,
            &path,
            Some(&json!({"status": "succeeded", "message": "restarted in 4 s"})),
            &[],
        )
        .await;
    assert_eq!(repeat.ok(200)["data"], done.body["data"]);
    assert_eq!(repeat.headers["idempotent-replayed"], "true");
    for body in [
        json!({"status": "failed"}),
        json!({"status": "running"}),
        json!({"status": "succeeded", "message": "other"}),
    ] {
        let e = src
            .post_err(&path, body, 409, "CONTROL_REQUEST_CLOSED")
            .await;
        assert_eq!(e["details"]["status"], "succeeded");
    }
    // The reviewer reads the result; the Action is still open and unchanged.
    let list: Value = reviewer
        .get(
            &format!("/v1/actions/{}/control-requests", a["id"].as_str().unwrap()),
            200,
        )
        .await;
    assert_eq!(list["data"][0]["status"], "succeeded");
    assert_eq!(list["data"][0]["message"], "restarted in 4 s");
    let after: Value = src
        .get(
            &format!("/v1/source/actions/{}", a["id"].as_str().unwrap()),
            200,
        )
        .await;
    assert_eq!(after["data"]["status"], "open");
    assert_eq!(after["data"]["action_version"], 1);

    // failed is final too.
    let cr2: Value = reviewer
        .post(&invoke_path(&a, "logs"), binding(&a), 202)
        .await;
    let p2 = format!(
        "/v1/source/control-requests/{}/result",
        cr2["data"]["id"].as_str().unwrap()
    );
    let f: Value = src
        .post(&p2, json!({"status": "failed", "message": "no logs"}), 200)
        .await;
    assert_eq!(f["data"]["status"], "failed");
    src.post_err(
        &p2,
        json!({"status": "succeeded"}),
        409,
        "CONTROL_REQUEST_CLOSED",
    )
    .await;
}

#[tokio::test]
async fn results_are_validated_and_only_for_the_owning_source() {
    let app = TestApp::spawn().await;
    let a = app.create_action(with_controls("Deploy")).await;
    let reviewer = app.member(Role::Reviewer);
    let cr: Value = reviewer
        .post(&invoke_path(&a, "restart"), binding(&a), 202)
        .await;
    let rid = cr["data"]["id"].as_str().unwrap();
    let path = format!("/v1/source/control-requests/{rid}/result");
    let src = app.source();

    let e = src
        .post_err(&path, json!({"status": "pending"}), 422, "VALIDATION_ERROR")
        .await;
    assert!(e.to_string().contains("status"), "{e}");
    src.post_err(&path, json!({"status": "done"}), 422, "VALIDATION_ERROR")
        .await;
    src.post_err(&path, json!({}), 422, "VALIDATION_ERROR")
        .await;
    src.post_err(
        &path,
        json!({"status": "running", "extra": true}),
        422,
        "VALIDATION_ERROR",
    )
    .await;
    let e = src
        .post_err(
            &path,
            json!({"status": "running", "message": "x".repeat(2001)}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert!(e.to_string().contains("2000"), "{e}");
    // "done \u{202e}deliaf" would read "done failed" beside a green status.
    let e = src
        .post_err(
            &path,
            json!({"status": "succeeded", "message": "done \u{202e}deliaf"}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("direction control"),
        "{e}"
    );
    let ok: Value = src
        .post(
            &path,
            json!({"status": "running", "message": "é".repeat(2000)}),
            200,
        )
        .await;
    assert_eq!(
        ok["data"]["message"].as_str().unwrap().chars().count(),
        2000
    );

    // Unknown id, another Source, the other environment, a user: 404 / 401.
    src.post_err(
        "/v1/source/control-requests/ctr_nope/result",
        json!({"status": "running"}),
        404,
        "CONTROL_REQUEST_NOT_FOUND",
    )
    .await;
    let (_, other_key) = app.second_source().await;
    app.bearer(&other_key)
        .post_err(
            &path,
            json!({"status": "failed"}),
            404,
            "CONTROL_REQUEST_NOT_FOUND",
        )
        .await;
    app.source_test()
        .post_err(
            &path,
            json!({"status": "failed"}),
            404,
            "CONTROL_REQUEST_NOT_FOUND",
        )
        .await;
    app.admin()
        .post_err(&path, json!({"status": "failed"}), 401, "INVALID_API_KEY")
        .await;
    // Nothing of that changed the request.
    let list: Value = reviewer
        .get(
            &format!("/v1/actions/{}/control-requests", a["id"].as_str().unwrap()),
            200,
        )
        .await;
    assert_eq!(list["data"][0]["status"], "running");
}

#[tokio::test]
async fn an_action_without_callback_url_queues_no_webhook() {
    let app = TestApp::spawn().await;
    let a = app
        .create_action(json!({"title": "Links only", "options": [{"id": "ok", "label": "OK"}],
            "controls": [{"key": "docs", "label": "Docs", "kind": "link", "url": "https://docs.example.com"}]}))
        .await;
    let reviewer = app.member(Role::Reviewer);
    reviewer
        .post_err(
            &invoke_path(&a, "docs"),
            binding(&a),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(app.count_rows("control_requests"), 0);
    // Closing it queues nothing either: there is nowhere to send it.
    let id = a["id"].as_str().unwrap();
    app.source()
        .post::<Value>(&format!("/v1/actions/{id}/cancel"), json!({}), 200)
        .await;
    assert!(deliveries(&app).await.is_empty());
    assert_eq!(app.count_rows("jobs"), 0);
    assert_eq!(app.count_rows("webhook_deliveries"), 0);
}

#[tokio::test]
async fn the_dashboard_confirms_a_mutating_control_without_javascript_and_a_double_submit_is_one_press()
 {
    let app = TestApp::spawn().await;
    let a = app.create_action(with_controls("Deploy")).await;
    let id = a["id"].as_str().unwrap();
    let reviewer = app.member(Role::Reviewer);
    let browser = app.browser(reviewer.person()).await;
    let page = browser.page(&format!("/app/actions/{id}")).await;
    assert!(page.contains(r#"id="control-restart""#), "{page}");
    assert!(page.contains(
        r#"href="https://docs.example.com/runbook" target="_blank" rel="noopener noreferrer""#
    ));
    let version = a["action_version"].to_string();
    let form = [
        ("_csrf", browser.csrf()),
        ("action_version", version.as_str()),
        ("fingerprint", a["fingerprint"].as_str().unwrap()),
        ("press_id", "01TESTPRESS"),
        ("control_key", "restart"),
    ];
    let base = app.base.clone();
    let path = format!("/app/actions/{id}/controls");
    // Mutating: a confirmation page first, nothing created.
    let r = browser.post_form(&path, Some(&base), &form).await;
    assert_eq!(r.status(), 200);
    let html = r.text().await.unwrap();
    assert!(
        html.contains("Restart it?") && html.contains(r#"name="confirmed" value="yes""#),
        "{html}"
    );
    assert_eq!(app.count_rows("control_requests"), 0);
    // Confirmed, twice (a double click): one control request.
    let mut confirmed = form.to_vec();
    confirmed.push(("confirmed", "yes"));
    for _ in 0..2 {
        let r = browser.post_form(&path, Some(&base), &confirmed).await;
        assert_eq!(r.status(), 303);
        assert_eq!(
            r.headers()["location"],
            format!("/app/actions/{id}?done=control")
        );
    }
    assert_eq!(app.count_rows("control_requests"), 1);
    // The live fragment lists it.
    let fragment = browser.page(&format!("/app/actions/{id}/requests")).await;
    assert!(
        fragment.contains(r#"data-status="pending""#) && fragment.contains("Restart the job"),
        "{fragment}"
    );
    // A wrong CSRF token: refused, nothing created.
    let mut forged: Vec<(&str, &str)> = confirmed
        .iter()
        .filter(|(k, _)| *k != "_csrf" && *k != "press_id")
        .copied()
        .collect();
    forged.push(("_csrf", "forged"));
    forged.push(("press_id", "01OTHERPRESS"));
    let r = browser.post_form(&path, Some(&base), &forged).await;
    assert_eq!(r.status(), 403);
    assert_eq!(app.count_rows("control_requests"), 1);
}

/// The list pages with `limit` and `starting_after`, newest first, without a
/// repeat or a gap, also across requests made in the same millisecond; a
/// cursor that is not a request of this Action is 422 naming it.
#[tokio::test]
async fn control_requests_page_by_starting_after_without_repeats_or_gaps() {
    let app = TestApp::spawn().await;
    let a = app.create_action(with_controls("Deploy")).await;
    let b = app.create_action(with_controls("Another")).await;
    let reviewer = app.member(Role::Reviewer);
    let p = invoke_path(&a, "logs");
    for _ in 0..7 {
        let _: Value = reviewer.post(&p, binding(&a), 202).await;
    }
    let theirs: Value = reviewer
        .post(&invoke_path(&b, "logs"), binding(&b), 202)
        .await;
    // Four of them in one millisecond: their ids order them.
    app.db()
        .execute(
            "UPDATE control_requests SET created_at = '2026-11-26T10:00:00.000Z'
              WHERE id IN (SELECT id FROM control_requests WHERE action_id = ?1 ORDER BY id LIMIT 4)",
            [a["id"].as_str().unwrap()],
        )
        .unwrap();
    let list_path = format!("/v1/actions/{}/control-requests", a["id"].as_str().unwrap());
    let ids = |v: &Value| -> Vec<String> {
        v["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let all: Value = reviewer.get(&list_path, 200).await;
    let all = ids(&all);
    assert_eq!(all.len(), 7);
    for limit in 1..=3 {
        let mut seen: Vec<String> = Vec::new();
        let mut path = format!("{list_path}?limit={limit}&starting_after=");
        for _ in 0..10 {
            let page: Value = reviewer.get(&path, 200).await;
            let got = ids(&page);
            assert!(got.len() <= limit, "{page}");
            seen.extend(got);
            if page["has_more"] == false {
                break;
            }
            path = format!(
                "{list_path}?limit={limit}&starting_after={}",
                seen.last().unwrap()
            );
        }
        assert_eq!(seen, all, "limit {limit}");
    }
    // The oldest has nothing after it.
    let last: Value = reviewer
        .get(&format!("{list_path}?starting_after={}", all[6]), 200)
        .await;
    assert_eq!(last["data"], json!([]));
    assert_eq!(last["has_more"], false);
    // Another Action's request, an unknown id, garbage: 422 naming the cursor.
    for bad in [
        theirs["data"]["id"].as_str().unwrap(),
        "ctr_01JD8XQ0000000000000000000",
        "act_x",
    ] {
        let e = reviewer
            .get_err(
                &format!("{list_path}?starting_after={bad}"),
                422,
                "VALIDATION_ERROR",
            )
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], "starting_after");
    }
    for bad in ["0", "101", "x"] {
        let e = reviewer
            .get_err(&format!("{list_path}?limit={bad}"), 422, "VALIDATION_ERROR")
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], "limit", "{e}");
    }
    // Someone who may not see the Action learns nothing from a cursor.
    let outsider = app.outsider();
    outsider
        .get_err(
            &format!("{list_path}?starting_after={}", all[0]),
            404,
            "ACTION_NOT_FOUND",
        )
        .await;
}

/// `mutating: false` is the documented default of every control, a link's
/// too: sent, it changes nothing (a keyed retry without it replays), while
/// `mutating: true` on a link is refused naming the field.
#[tokio::test]
async fn a_link_control_takes_mutating_false_and_refuses_true() {
    let app = TestApp::spawn().await;
    let src = app.source();
    let link = |mutating: Option<bool>| {
        let mut c = json!({"key": "runbook", "label": "Runbook", "kind": "link", "url": "https://docs.example.com/runbook"});
        if let Some(m) = mutating {
            c["mutating"] = json!(m);
        }
        json!({"title": "Links", "options": [{"label": "OK"}], "controls": [c]})
    };
    let first = src
        .call(
            Method::POST,
            "/v1/actions",
            Some(&link(Some(false))),
            &[("idempotency-key", "link-false")],
        )
        .await;
    let created = first.ok(201).clone();
    assert_eq!(created["data"]["controls"][0]["kind"], "link", "{created}");
    let again = src
        .call(
            Method::POST,
            "/v1/actions",
            Some(&link(None)),
            &[("idempotency-key", "link-false")],
        )
        .await;
    assert_eq!(
        again
            .headers
            .get("idempotent-replayed")
            .map(|v| v.to_str().unwrap()),
        Some("true")
    );
    assert_eq!(again.ok(201)["data"]["id"], created["data"]["id"]);
    let e = src
        .call(Method::POST, "/v1/actions", Some(&link(Some(true))), &[])
        .await;
    let e = e.error(422, "VALIDATION_ERROR");
    assert_eq!(
        e["details"]["errors"][0]["field"], "controls[0].mutating",
        "{e}"
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("cannot be mutating"),
        "{e}"
    );
}

/// What the reviewer reads before pressing a control, and the link a
/// control opens, are held to the rules of labels and links: a `confirm`
/// that is blank, too long, on several lines or reversed by a direction
/// override is refused, and so is a link that shows one host and opens
/// another (`user@host` before the real host).
#[tokio::test]
async fn a_controls_confirm_text_and_link_are_held_to_the_label_and_link_rules() {
    let app = TestApp::spawn().await;
    let src = app.source();
    let with = |control: Value| {
        json!({
            "title": "Refund",
            "options": [{"id": "ok", "label": "OK"}],
            "callback_url": "https://hooks.example.com/hds",
            "controls": [control],
        })
    };
    let long = "x".repeat(501);
    for (control, field, says) in [
        (
            json!({"key": "m", "label": "Mut", "kind": "callback", "mutating": true, "confirm": ""}),
            "controls[0].confirm",
            "must not be blank",
        ),
        (
            json!({"key": "m", "label": "Mut", "kind": "callback", "confirm": "\u{200b} "}),
            "controls[0].confirm",
            "must not be blank",
        ),
        (
            json!({"key": "m", "label": "Mut", "kind": "callback", "confirm": long}),
            "controls[0].confirm",
            "at most 500 characters",
        ),
        (
            json!({"key": "m", "label": "Mut", "kind": "callback", "confirm": "Refund \u{202e}0001$ to the customer?"}),
            "controls[0].confirm",
            "direction overrides",
        ),
        (
            json!({"key": "m", "label": "Mut", "kind": "callback", "confirm": "two\nlines"}),
            "controls[0].confirm",
            "one line",
        ),
        (
            json!({"key": "l", "label": "Open the bank", "kind": "link", "url": "https://bank.example.com@evil.example/"}),
            "controls[0].url",
            "must not carry a user:password@ part",
        ),
    ] {
        let e = src
            .call(
                Method::POST,
                "/v1/actions",
                Some(&with(control.clone())),
                &[],
            )
            .await;
        let e = e.error(422, "VALIDATION_ERROR");
        assert_eq!(e["details"]["errors"][0]["field"], field, "{control}: {e}");
        assert!(
            e["message"].as_str().unwrap().contains(says),
            "{control}: {e}"
        );
    }
    // The same spoof in an open_url or a context link is refused too.
    let mut body =
        with(json!({"key": "m", "label": "Mut", "kind": "callback", "confirm": "Refund $84.00?"}));
    body["open_url"] = json!("https://shop.example.com@evil.example/orders/1");
    body["context"] =
        json!([{"type": "link", "label": "Order", "url": "https://a:b@shop.example.com/"}]);
    let e = src
        .call(Method::POST, "/v1/actions", Some(&body), &[])
        .await;
    let e = e.error(400, "INVALID_OPEN_URL");
    let fields: Vec<&str> = e["details"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["open_url", "context[0].url"], "{e}");
    // A plain confirm text is taken, and shown before pressing.
    body.as_object_mut().unwrap().remove("open_url");
    body.as_object_mut().unwrap().remove("context");
    let made = src.post::<Value>("/v1/actions", body, 201).await;
    assert_eq!(
        made["data"]["controls"][0]["confirm"], "Refund $84.00?",
        "{made}"
    );
}
