//! The Action lifecycle through the API.

use hds::domain::access::Role;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Resp, TestApp, two_options};

#[tokio::test]
async fn create_returns_every_field_with_version_one_and_a_fingerprint() {
    let app = TestApp::spawn().await;
    // An offset timestamp a month out; it comes back normalised to UTC `Z` form.
    let later = app
        .state
        .services
        .clock
        .now()
        .replace_nanosecond(0)
        .unwrap()
        + time::Duration::days(30);
    let offset = later
        .to_offset(time::macros::offset!(+2))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let utc = later
        .format(&time::macros::format_description!(
            "[year]-[month]-[day]T[hour]:[minute]:[second].000Z"
        ))
        .unwrap();
    let ops = app.member_as(hds::domain::access::Role::Reviewer, "ops@example.com");
    let ops_id = ops.person().id.clone();
    let a = app
        .create_action(json!({
            "title": "Deploy api v42", "description": "Rolls out **v42**", "priority": "high",
            "options": [{"label": "Ship it"}, {"id": "hold", "label": "Hold", "style": "destructive"}],
            "context": [{"type": "diff", "diff": "-a\n+b"}, {"type": "kv", "items": [{"key": "env", "value": "prod"}]}],
            "decision_class": "deploy", "decision_context": {"service": "api"}, "metadata": {"run": 7},
            "open_url": "https://ci.example.com/run/7", "expires_at": offset,
            "on_expire": {"action": "resolve", "option_id": "hold"}, "dedupe_key": "deploy-api-42",
            "assignee_email": "ops@example.com", "assignee_user_id": ops_id,
            "callback_url": "https://hooks.example.com/hds", "context_request_mode": "callback",
            "controls": [{"key": "rerun", "label": "Re-run", "kind": "callback", "mutating": true, "confirm": "Re-run the job?"},
                         {"key": "logs", "label": "Logs", "kind": "link", "url": "https://ci.example.com/logs"}],
            "visibility": "restricted", "reviewer_emails": ["admin@example.com", "ops@example.com"],
        }))
        .await;
    assert_eq!(a["callback_url"], "https://hooks.example.com/hds");
    assert_eq!(a["context_request_mode"], "callback");
    assert_eq!(
        a["controls"][0],
        json!({"key": "rerun", "label": "Re-run", "kind": "callback", "mutating": true, "confirm": "Re-run the job?"})
    );
    assert_eq!(a["controls"][1]["url"], "https://ci.example.com/logs");
    assert_eq!(a["visibility"], "restricted");
    assert_eq!(
        a["reviewer_emails"],
        json!(["admin@example.com", "ops@example.com"])
    );
    assert_eq!(a["assignee_user_id"], ops_id.as_str());
    assert_eq!(a["assignee_email"], "ops@example.com");
    assert_eq!(a["decision_class"], "deploy");
    assert_eq!(a["decision_context"], json!({"service": "api"}));
    assert_eq!(a["dedupe_key"], "deploy-api-42");
    assert_eq!(a["context"][0], json!({"type": "diff", "diff": "-a\n+b"}));
    assert_eq!(
        a["context"][1]["items"][0],
        json!({"key": "env", "value": "prod"})
    );
    assert_eq!(a["open_url"], "https://ci.example.com/run/7");
    assert_eq!(a["description"], "Rolls out **v42**");
    assert_eq!(a["status"], "open");
    assert_eq!(a["environment"], "live");
    assert_eq!(a["priority"], "high");
    assert_eq!(a["action_version"], 1);
    assert_eq!(
        a["options"][0],
        json!({"id": "ship_it", "label": "Ship it", "style": "secondary", "sort_order": 0})
    );
    assert_eq!(a["options"][1]["sort_order"], 1);
    assert_eq!(a["interaction"], serde_json::Value::Null);
    assert_eq!(a["expires_at"], utc);
    assert_eq!(a["metadata"], json!({"run": 7}));
    assert_eq!(
        a["on_expire"],
        json!({"action": "resolve", "option_id": "hold"})
    );
    assert!(a["id"].as_str().unwrap().starts_with("act_"));
    let fp = a["fingerprint"].as_str().unwrap();
    assert!(fp.starts_with("sha256:") && fp.len() == 71);
    assert!(a["created_at"].as_str().unwrap().ends_with('Z'));
}

#[tokio::test]
async fn a_test_key_creates_test_actions_that_live_readers_do_not_see() {
    let app = TestApp::spawn().await;
    let a = app
        .create_action_with(&app.test_key(), two_options("Test run"))
        .await;
    assert_eq!(a["environment"], "test");
    let id = a["id"].as_str().unwrap();
    // A member who may see it is told where it is; others learn nothing.
    let e = app
        .get(&format!("/v1/actions/{id}"), &app.user_token())
        .await
        .error(404, "ACTION_NOT_FOUND")
        .clone();
    assert!(
        e["message"].as_str().unwrap().contains("?environment=test"),
        "{e}"
    );
    assert_eq!(e["details"]["environment"], "test");
    let e = app
        .outsider()
        .get_err(&format!("/v1/actions/{id}"), 404, "ACTION_NOT_FOUND")
        .await;
    assert_eq!(
        e["message"],
        "no Action with that id is visible to this caller"
    );
    app.get(
        &format!("/v1/actions/{id}?environment=test"),
        &app.user_token(),
    )
    .await
    .ok(200);
    app.get(
        &format!("/v1/actions/{id}?environment=all"),
        &app.user_token(),
    )
    .await
    .ok(200);
    app.get(&format!("/v1/source/actions/{id}"), &app.live_key())
        .await
        .error(404, "ACTION_NOT_FOUND");
}

#[tokio::test]
async fn long_poll_returns_the_decision_with_a_receipt_as_soon_as_it_is_made() {
    let app = TestApp::spawn().await;
    let a = app.create_action(two_options("Deploy")).await;
    let id = a["id"].as_str().unwrap().to_owned();
    let poll = {
        let (http, base, key) = (app.http.clone(), app.base.clone(), app.live_key());
        tokio::spawn(async move {
            http.get(format!("{base}/v1/source/actions/{id}?wait_seconds=30"))
                .bearer_auth(key)
                .send()
                .await
                .unwrap()
                .json::<serde_json::Value>()
                .await
                .unwrap()
        })
    };
    // The poll is held by the server before the decision is made …
    app.until_polls_held(1).await;
    assert!(!poll.is_finished());
    let decided = app
        .decide(&a, json!({"option_id": "approve", "reason": "looks good"}))
        .await;
    decided.ok(200);
    let polled = tokio::time::timeout(std::time::Duration::from_secs(10), poll)
        .await
        .unwrap()
        .unwrap();
    let d = &polled["data"];
    assert_eq!(d["status"], "resolved");
    assert_eq!(d["resolution_option_id"], "approve");
    assert_eq!(d["resolution_reason"], "looks good");
    assert_eq!(d["resolved_by"]["type"], "user");
    assert_eq!(d["receipt"]["alg"], "EdDSA");
    assert_eq!(d["receipt"]["payload"]["decision"]["option_id"], "approve");
    assert!(
        d["receipt"]["payload"]["decision"]["reason_sha256"]
            .as_str()
            .unwrap()
            .len()
            == 64
    );
}

#[tokio::test]
async fn an_open_action_is_returned_when_the_wait_times_out() {
    let app = TestApp::spawn().await;
    let a = app.create_action(two_options("Deploy")).await;
    let r = app
        .get(
            &format!(
                "/v1/source/actions/{}?wait_seconds=1",
                a["id"].as_str().unwrap()
            ),
            &app.live_key(),
        )
        .await;
    assert_eq!(r.ok(200)["data"]["status"], "open");
    let r = app
        .get(
            &format!(
                "/v1/source/actions/{}?wait_seconds=31",
                a["id"].as_str().unwrap()
            ),
            &app.live_key(),
        )
        .await;
    assert_eq!(
        r.error(422, "VALIDATION_ERROR")["details"]["errors"][0]["field"],
        "wait_seconds"
    );
    // Not a number: said plainly, not in the parser's words.
    for bad in ["abc", "-1", "1.5", ""] {
        let r = app
            .get(
                &format!(
                    "/v1/source/actions/{}?wait_seconds={bad}",
                    a["id"].as_str().unwrap()
                ),
                &app.live_key(),
            )
            .await;
        let e = r.error(422, "VALIDATION_ERROR");
        assert_eq!(e["details"]["errors"][0]["field"], "wait_seconds", "{e}");
        let said = e["message"].as_str().unwrap();
        assert!(said.contains("must be a whole number"), "{bad}: {e}");
        assert!(!said.contains("invalid digit"), "{bad}: {e}");
    }
}

#[tokio::test]
async fn a_blocking_create_returns_the_decided_action() {
    let app = TestApp::spawn().await;
    let (http, base, key) = (app.http.clone(), app.base.clone(), app.live_key());
    let create = tokio::spawn(async move {
        http.post(format!("{base}/v1/actions"))
            .bearer_auth(key)
            .header("x-service-blocking", "true")
            .header("idempotency-key", "blocking-1")
            .body(two_options("Blocking").to_string())
            .send()
            .await
            .unwrap()
    });
    // Find it in the inbox, then decide it.
    let mut listed = serde_json::Value::Null;
    for _ in 0..200 {
        let r = app.get("/v1/me/actions", &app.user_token()).await;
        if let Some(a) = r.body["data"].as_array().and_then(|d| d.first()) {
            listed = a.clone();
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(listed.is_object(), "the blocking create never committed");
    // While the first request is still held, a retry with its key is "in progress".
    let retry = app
        .call(
            Method::POST,
            "/v1/actions",
            Some(&app.live_key()),
            Some(&two_options("Blocking")),
            &[("idempotency-key", "blocking-1")],
        )
        .await;
    retry.error(409, "IDEMPOTENCY_CONFLICT");
    assert_eq!(retry.headers["retry-after"], "1");
    app.decide(&listed, json!({"option_id": "reject"}))
        .await
        .ok(200);
    let resp = create.await.unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["data"]["status"], "resolved");
    assert_eq!(body["data"]["resolution_option_id"], "reject");
}

#[tokio::test]
async fn patch_advances_the_version_only_for_material_changes() {
    let app = TestApp::spawn().await;
    let a = app.create_action(two_options("Deploy")).await;
    let path = format!("/v1/actions/{}", a["id"].as_str().unwrap());
    let same = app
        .patch(
            &path,
            &app.live_key(),
            json!({"priority": "urgent", "metadata": {"x": 1}}),
        )
        .await;
    let same = &same.ok(200)["data"];
    assert_eq!(
        (same["action_version"].clone(), same["fingerprint"].clone()),
        (a["action_version"].clone(), a["fingerprint"].clone())
    );
    assert_eq!(same["priority"], "urgent");
    let changed = app.patch(&path, &app.live_key(), json!({"title": "Deploy v2", "context": [{"type": "text", "text": "now with migrations"}]})).await;
    let changed = changed.ok(200)["data"].clone();
    assert_eq!(changed["action_version"], 2);
    assert_ne!(changed["fingerprint"], a["fingerprint"]);
    // A decision bound to the old content is refused and names the current binding.
    let stale = app.decide(&a, json!({"option_id": "approve"})).await;
    let e = stale.error(409, "ACTION_CHANGED");
    assert_eq!(e["details"]["action_version"], 2);
    assert_eq!(e["details"]["fingerprint"], changed["fingerprint"]);
    app.decide(&changed, json!({"option_id": "approve"}))
        .await
        .ok(200);
    // Only open Actions can be updated.
    app.patch(&path, &app.live_key(), json!({"title": "late"}))
        .await
        .error(409, "ACTION_NOT_OPEN");
    // History shows each step once.
    let h = app.get(&path, &app.user_token()).await;
    let kinds: Vec<&str> = h.body["data"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["created", "updated", "updated", "resolved"]);
}

/// Two workers of one Source change the same Action: the one that read
/// an older version learns of the other's change instead of undoing it.
#[tokio::test]
async fn patch_based_on_an_old_version_is_refused_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let source = app.source();
    let a = app.create_action(two_options("Deploy")).await;
    let id = a["id"].as_str().unwrap();
    let path = format!("/v1/actions/{id}");
    // Worker 1, based on version 1: current, so it applies.
    let v2: Value = source
        .patch(
            &path,
            json!({"title": "Deploy build 43", "action_version": 1}),
            200,
        )
        .await;
    assert_eq!(v2["data"]["action_version"], 2);
    assert_eq!(v2["data"]["title"], "Deploy build 43");
    // Worker 2 read version 1 too: refused, naming what is current.
    let e = source
        .patch_err(
            &path,
            json!({"title": "Deploy build 42", "priority": "urgent", "action_version": 1}),
            409,
            "ACTION_CHANGED",
        )
        .await;
    assert_eq!(e["details"]["action_version"], 2, "{e}");
    assert_eq!(
        e["details"]["fingerprint"], v2["data"]["fingerprint"],
        "{e}"
    );
    assert!(e["message"].as_str().unwrap().contains("re-read it"), "{e}");
    // Nothing of the refused change was written, nor a history entry.
    let now: Value = source.get(&format!("/v1/source/actions/{id}"), 200).await;
    assert_eq!(now["data"]["title"], "Deploy build 43");
    assert_eq!(now["data"]["priority"], v2["data"]["priority"]);
    assert_eq!(now["data"]["action_version"], 2);
    // Worker 1 retries its request (its answer was lost): the Action holds
    // exactly what it asks, so it is answered as it stands, not refused.
    let again: Value = source
        .patch(
            &path,
            json!({"title": "Deploy build 43", "action_version": 1}),
            200,
        )
        .await;
    assert_eq!(again["data"]["action_version"], 2);
    // Based on the current version: applies. A non-material change keeps
    // the version, and a later change based on it still applies.
    // `2.0` is the integer 2, as everywhere (guide: "Conventions").
    let urgent: Value = source
        .patch(
            &path,
            json!({"priority": "urgent", "action_version": 2.0}),
            200,
        )
        .await;
    assert_eq!(urgent["data"]["priority"], "urgent");
    assert_eq!(urgent["data"]["action_version"], 2);
    // Not a version: 422 naming it; alone it changes nothing: 422.
    for bad in [json!(0), json!("2"), json!(1.5), json!(null)] {
        let e = source
            .patch_err(
                &path,
                json!({"title": "x", "action_version": bad}),
                422,
                "VALIDATION_ERROR",
            )
            .await;
        assert_eq!(
            e["details"]["errors"][0]["field"], "action_version",
            "{bad}: {e}"
        );
    }
    let e = source
        .patch_err(&path, json!({"action_version": 2}), 422, "VALIDATION_ERROR")
        .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("at least one field"),
        "{e}"
    );
    let h = app.get(&path, &app.user_token()).await;
    let kinds: Vec<&str> = h.body["data"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["created", "updated", "updated"]);
}

#[tokio::test]
async fn patch_refuses_create_only_and_unknown_fields() {
    let app = TestApp::spawn().await;
    let a = app.create_action(two_options("Deploy")).await;
    let path = format!("/v1/actions/{}", a["id"].as_str().unwrap());
    let r = app
        .patch(
            &path,
            &app.live_key(),
            json!({"options": [], "callback_url": "https://x.example.com", "colour": "red"}),
        )
        .await;
    let errors = r.error(422, "VALIDATION_ERROR")["details"]["errors"]
        .as_array()
        .unwrap()
        .clone();
    let fields: Vec<&str> = errors
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["callback_url", "colour", "options"]);
    // `null` clears a field, but not the title: named, and nothing changes.
    let r = app
        .patch(&path, &app.live_key(), json!({"title": null}))
        .await;
    let e = r.error(422, "VALIDATION_ERROR");
    assert_eq!(e["details"]["errors"][0]["field"], "title", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("cannot be cleared"),
        "{e}"
    );
    let now: Value = app
        .source()
        .get(
            &format!("/v1/source/actions/{}", a["id"].as_str().unwrap()),
            200,
        )
        .await;
    assert_eq!(
        (
            now["data"]["title"].as_str(),
            now["data"]["action_version"].as_i64()
        ),
        (Some("Deploy"), Some(1))
    );
}

#[tokio::test]
async fn typed_interactions_record_the_response() {
    let app = TestApp::spawn().await;
    let cases = [
        (json!({"type": "boolean"}), json!(true)),
        (
            json!({"type": "text", "max_length": 20}),
            json!("ship on monday"),
        ),
        (json!({"type": "number", "min": 1, "max": 10}), json!(7)),
        (
            json!({"type": "choice", "multiple": true, "choices": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}]}),
            json!(["a", "b"]),
        ),
        (
            json!({"type": "form", "fields": [{"key": "ticket", "label": "Ticket", "type": "text", "required": true}, {"key": "risk", "label": "Risk", "type": "number"}]}),
            json!({"ticket": "OPS-1", "risk": 2}),
        ),
    ];
    for (interaction, value) in cases {
        let a = app
            .create_action(json!({"title": "Typed", "interaction": interaction}))
            .await;
        let r = app.decide(&a, json!({"response": {"value": value}})).await;
        let d = &r.ok(200)["data"];
        assert_eq!(d["response"], json!({"value": value}));
        assert_eq!(
            d["receipt"]["payload"]["decision"]["response"],
            json!({"value": value})
        );
    }
}

#[tokio::test]
async fn resolve_and_cancel_by_the_source() {
    let app = TestApp::spawn().await;
    let a = app.create_action(two_options("Deploy")).await;
    let id = a["id"].as_str().unwrap();
    let r = app.post(&format!("/v1/actions/{id}/resolve"), &app.live_key(), json!({"option_id": "reject", "reason": "superseded", "action_version": 1, "fingerprint": a["fingerprint"]})).await;
    let d = &r.ok(200)["data"];
    assert_eq!(d["status"], "resolved");
    assert_eq!(
        d["resolved_by"],
        json!({"type": "source", "id": app.creds["source_id"]})
    );
    assert_eq!(d["receipt"]["payload"]["decided_by"]["type"], "source");

    let b = app.create_action(two_options("Other")).await;
    let id = b["id"].as_str().unwrap();
    // An empty body is allowed on cancel.
    let r = app
        .call(
            Method::POST,
            &format!("/v1/actions/{id}/cancel"),
            Some(&app.live_key()),
            None,
            &[],
        )
        .await;
    let d = &r.ok(200)["data"];
    assert_eq!(d["status"], "cancelled");
    assert_eq!(d["receipt"], serde_json::Value::Null);
    // The first terminal transition wins; history is not rewritten.
    app.post(
        &format!("/v1/actions/{id}/resolve"),
        &app.live_key(),
        json!({"option_id": "approve"}),
    )
    .await
    .error(409, "ACTION_NOT_OPEN");
    app.decide(&b, json!({"option_id": "approve"}))
        .await
        .error(409, "ACTION_NOT_OPEN");
}

#[tokio::test]
async fn outcome_is_recorded_once_and_exact_retries_replay() {
    let app = TestApp::spawn().await;
    let a = app.create_action(two_options("Deploy")).await;
    let path = format!("/v1/actions/{}/outcome", a["id"].as_str().unwrap());
    let report = json!({"status": "success", "duration_ms": 1234, "rollback": false, "action_version": 1, "fingerprint": a["fingerprint"]});
    let e = app
        .post(&path, &app.live_key(), report.clone())
        .await
        .error(409, "ACTION_NOT_RESOLVED")
        .clone();
    assert_eq!(e["details"]["status"], "open", "{e}");
    let decided = app.decide(&a, json!({"option_id": "approve"})).await;
    let receipt = decided.ok(200)["data"]["receipt"].clone();
    // Not the decided version's binding: 409 saying what to send (nothing
    // can be decided again); not a binding at all: 422 naming it.
    let mut wrong = report.clone();
    wrong["fingerprint"] = json!(format!("sha256:{}", "0".repeat(64)));
    let e = app
        .post(&path, &app.live_key(), wrong)
        .await
        .error(409, "ACTION_CHANGED")
        .clone();
    assert!(
        e["message"].as_str().unwrap().contains("resolved Action"),
        "{e}"
    );
    assert_eq!(e["details"]["fingerprint"], a["fingerprint"]);
    wrong = report.clone();
    wrong["fingerprint"] = json!("sha256:abc");
    let e = app
        .post(&path, &app.live_key(), wrong)
        .await
        .error(422, "VALIDATION_ERROR")
        .clone();
    assert_eq!(e["details"]["errors"][0]["field"], "fingerprint", "{e}");
    let r = app
        .call(
            Method::POST,
            &path,
            Some(&app.live_key()),
            Some(&report),
            &[("idempotency-key", "outcome-1")],
        )
        .await;
    let d = r.ok(201)["data"].clone();
    assert_eq!(d["outcome"]["status"], "success");
    assert_eq!(d["outcome"]["duration_ms"], 1234);
    // The outcome does not change the decision or its receipt.
    assert_eq!(d["receipt"], receipt);
    assert_eq!(d["resolution_option_id"], "approve");
    // Exact retry, with and without the key: the same outcome, flagged as a replay.
    let again = app
        .call(
            Method::POST,
            &path,
            Some(&app.live_key()),
            Some(&report),
            &[("idempotency-key", "outcome-1")],
        )
        .await;
    assert_eq!(again.ok(201)["idempotent_replay"], true);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(
        app.post(&path, &app.live_key(), report.clone())
            .await
            .ok(201)["idempotent_replay"],
        true
    );
    let mut different = report.clone();
    different["status"] = json!("failed");
    app.post(&path, &app.live_key(), different)
        .await
        .error(409, "OUTCOME_ALREADY_REPORTED");
}

#[tokio::test]
async fn dedupe_key_returns_the_open_action_or_conflicts() {
    let app = TestApp::spawn().await;
    let mut body = two_options("Rotate credentials");
    body["dedupe_key"] = json!("rotate-db");
    let first = app.create_action(body.clone()).await;
    let again = app.post("/v1/actions", &app.live_key(), body.clone()).await;
    assert_eq!(again.ok(200)["idempotent_replay"], true);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.body["data"]["id"], first["id"]);
    // Content that shows nothing is the same content: it matches too, and
    // a PATCH sending it changes nothing.
    let mut empty = body.clone();
    for (k, v) in [
        ("controls", json!([])),
        ("context", json!([])),
        ("decision_context", json!({})),
        ("description", json!("")),
    ] {
        empty[k] = v;
    }
    let same = app
        .post("/v1/actions", &app.live_key(), empty.clone())
        .await;
    assert_eq!(same.ok(200)["data"]["id"], first["id"], "{}", same.body);
    assert_eq!(same.body["data"]["fingerprint"], first["fingerprint"]);
    let path = format!("/v1/actions/{}", first["id"].as_str().unwrap());
    let patch = json!({"controls": [], "context": [], "decision_context": {}, "description": ""});
    let patched: Value = app.source().patch(&path, patch, 200).await;
    assert_eq!(patched["data"]["action_version"], 1, "{patched}");
    assert_eq!(patched["data"]["fingerprint"], first["fingerprint"]);
    assert_eq!(patched["data"]["controls"], Value::Null, "{patched}");
    let mut changed = body.clone();
    changed["title"] = json!("Rotate other credentials");
    let e = app
        .post("/v1/actions", &app.live_key(), changed.clone())
        .await;
    assert_eq!(
        e.error(409, "DEDUPE_CONFLICT")["details"]["action_id"],
        first["id"]
    );
    // Once the first is closed, the key is free again.
    app.post(
        &format!("/v1/actions/{}/cancel", first["id"].as_str().unwrap()),
        &app.live_key(),
        json!({}),
    )
    .await
    .ok(200);
    let next = app.create_action(changed).await;
    assert_ne!(next["id"], first["id"]);
}

#[tokio::test]
async fn on_expire_resolve_closes_the_action_with_a_system_receipt() {
    let app = TestApp::spawn().await;
    let clock = &app.state.services.clock;
    let in_an_hour = hds::domain::time::format(clock.now() + time::Duration::hours(1));
    let mut body = two_options("Auto-reject when nobody answers");
    body["expires_at"] = json!(in_an_hour);
    body["on_expire"] = json!({"action": "resolve", "option_id": "reject"});
    let a = app.create_action(body).await;
    // No waiting in real time: the Source's poll is held, the clock moves past
    // the deadline, the expiry pass runs at once and its commit wakes the poll.
    let poll = app.held_poll(a["id"].as_str().unwrap()).await;
    clock.advance(time::Duration::hours(2));
    let d = &TestApp::answer(poll).await;
    assert_eq!(d["status"], "resolved");
    assert_eq!(d["resolution_option_id"], "reject");
    assert_eq!(d["resolved_by"]["type"], "system");
    assert_eq!(
        d["receipt"]["payload"]["decided_by"],
        json!({"type": "system", "id": null})
    );
}

/// A two-option body with `extra` fields merged in.
fn with(extra: Value) -> Value {
    let mut b = two_options("x");
    b.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    b
}

#[tokio::test]
async fn create_validation_codes() {
    let app = TestApp::spawn().await;
    let source = app.source();
    let refuse = |body: Value, status: u16, code: &'static str| {
        let source = &source;
        async move { source.post_err("/v1/actions", body, status, code).await }
    };
    let e = refuse(
        with(json!({"callback_url": "http://hooks.example.com/x"})),
        400,
        "INVALID_CALLBACK_URL",
    )
    .await;
    assert_eq!(e["details"]["errors"][0]["field"], "callback_url");
    refuse(
        with(json!({"callback_url": "https://10.0.0.8/hook"})),
        400,
        "INVALID_CALLBACK_URL",
    )
    .await;
    let e = refuse(
        with(json!({"callback_url": "https://1.1.1.1:0/hook"})),
        400,
        "INVALID_CALLBACK_URL",
    )
    .await;
    let message = e["details"]["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("port 0"), "{message}");
    refuse(
        with(json!({"open_url": "javascript:alert(1)"})),
        400,
        "INVALID_OPEN_URL",
    )
    .await;
    // URLs: 2,048 bytes at most, each.
    let long = |n: usize| {
        let base = "https://hooks.example.com/";
        format!("{base}{}", "a".repeat(n - base.len()))
    };
    for (field, code) in [
        ("callback_url", "INVALID_CALLBACK_URL"),
        ("open_url", "INVALID_OPEN_URL"),
    ] {
        let e = refuse(with(json!({field: long(2049)})), 400, code).await;
        assert_eq!(e["details"]["errors"][0]["field"], field, "{e}");
        assert!(e["message"].as_str().unwrap().contains("2048"), "{e}");
        let made: Value = source
            .post("/v1/actions", with(json!({field: long(2048)})), 201)
            .await;
        assert_eq!(made["data"][field].as_str().unwrap().len(), 2048);
    }
    refuse(
        with(json!({"expires_at": "2001-01-01T00:00:00Z"})),
        400,
        "INVALID_EXPIRATION",
    )
    .await;
    refuse(
        with(json!({"expires_at": "tomorrow"})),
        400,
        "INVALID_EXPIRATION",
    )
    .await;

    // Several problems at once: all listed, each with its field.
    let e = refuse(json!({"title": "", "options": [{"label": "a"}, {"label": "a"}], "priority": "now", "extra": 1}), 422, "VALIDATION_ERROR").await;
    assert_eq!(e["details"]["errors"][0]["field"], "extra");
    let e = refuse(
        json!({"title": "", "options": [{"label": "a"}, {"label": "a"}]}),
        422,
        "VALIDATION_ERROR",
    )
    .await;
    let fields: Vec<&str> = e["details"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["title", "options[1].id"]);
    let e = refuse(
        json!({"title": "x", "options": [{"label": 3}]}),
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(e["details"]["errors"][0]["field"], "options[0].label");
    refuse(
        json!({"title": "neither options nor interaction"}),
        422,
        "VALIDATION_ERROR",
    )
    .await;

    // Limits (guide: "Limits").
    let big = "x".repeat(33 * 1024);
    let e = refuse(
        with(json!({"metadata": {"blob": big}})),
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(e["details"]["errors"][0]["field"], "metadata");
    let controls: Vec<_> = (0..13).map(|i| json!({"key": format!("c{i}"), "label": "L", "kind": "link", "url": "https://x.example.com"})).collect();
    refuse(with(json!({"controls": controls})), 422, "VALIDATION_ERROR").await;
    let mutating: Vec<_> = (0..4)
        .map(
            |i| json!({"key": format!("m{i}"), "label": "L", "kind": "callback", "mutating": true}),
        )
        .collect();
    let e = refuse(
        with(json!({"controls": mutating, "callback_url": "https://hooks.example.com/x"})),
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert!(e["message"].as_str().unwrap().contains("mutating"), "{e}");
    let reviewers: Vec<_> = (0..16).map(|i| format!("r{i}@example.com")).collect();
    refuse(
        with(json!({"visibility": "restricted", "reviewer_emails": reviewers})),
        422,
        "VALIDATION_ERROR",
    )
    .await;
    refuse(
        with(json!({"context_request_mode": "callback"})),
        422,
        "VALIDATION_ERROR",
    )
    .await;

    // Over 256 KB: 413 before anything is parsed.
    let huge = json!({"title": "x", "description": "y".repeat(300 * 1024)});
    refuse(huge.clone(), 413, "ACTION_PAYLOAD_TOO_LARGE").await;
    let a = app.create_action(two_options("patch me")).await;
    source
        .patch_err(
            &format!("/v1/actions/{}", a["id"].as_str().unwrap()),
            huge,
            413,
            "ACTION_PAYLOAD_TOO_LARGE",
        )
        .await;

    // A URL stored before the limit does not block an unrelated PATCH; a
    // PATCH that sets it is held to the limit.
    let path = format!("/v1/actions/{}", a["id"].as_str().unwrap());
    let before_limit = long(3000);
    app.db()
        .execute(
            "UPDATE actions SET spec = json_set(spec, '$.open_url', ?1) WHERE id = ?2",
            rusqlite::params![before_limit, a["id"].as_str().unwrap()],
        )
        .unwrap();
    let _: Value = source.patch(&path, json!({"title": "patched"}), 200).await;
    source
        .patch_err(
            &path,
            json!({"open_url": long(2049)}),
            400,
            "INVALID_OPEN_URL",
        )
        .await;
    // A callback URL is measured as it is kept, normalised: 700 × "é" is
    // 1,400 bytes sent and 4,200 once percent-encoded.
    let grows = format!("https://hooks.example.com/{}", "é".repeat(700));
    let e = refuse(
        with(json!({"callback_url": grows})),
        400,
        "INVALID_CALLBACK_URL",
    )
    .await;
    assert!(
        e["message"].as_str().unwrap().contains("once normalised"),
        "{e}"
    );

    // Nothing was written by any of the refused requests: the Actions are
    // the two with 2,048-byte URLs and "patch me".
    let list: Value = app.admin().get("/v1/me/actions?status=all", 200).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn malformed_bodies_get_the_envelope() {
    let app = TestApp::spawn().await;
    let source = app.source();
    let r = source
        .http()
        .post(source.url("/v1/actions"))
        .bearer_auth(source.token())
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 422);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "VALIDATION_ERROR");
    assert_eq!(body["error"]["details"]["errors"][0]["field"], "body");
    source
        .post_err("/v1/actions", json!([1, 2]), 422, "VALIDATION_ERROR")
        .await;
}

#[tokio::test]
async fn idempotency_codes() {
    let app = TestApp::spawn().await;
    let source = app.source();
    let post = |k: String, body: Value| {
        let source = &source;
        async move {
            source
                .call(
                    Method::POST,
                    "/v1/actions",
                    Some(&body),
                    &[("idempotency-key", k.as_str())],
                )
                .await
        }
    };
    post("x".repeat(256), two_options("a"))
        .await
        .error(400, "INVALID_IDEMPOTENCY_KEY");
    post("tab\there".into(), two_options("a"))
        .await
        .error(400, "INVALID_IDEMPOTENCY_KEY");
    let first = post("order-1".into(), two_options("a")).await;
    first.ok(201);
    // Key order and whitespace do not make a request different.
    let replay = post(
        "order-1".into(),
        json!({"options": two_options("a")["options"], "title": "a"}),
    )
    .await;
    assert_eq!(replay.ok(201)["idempotent_replay"], true);
    assert_eq!(replay.headers["idempotent-replayed"], "true");
    assert_eq!(replay.body["data"]["id"], first.body["data"]["id"]);
    post("order-1".into(), two_options("b"))
        .await
        .error(409, "IDEMPOTENCY_KEY_REUSED");
    // Keys are scoped per environment: the test key may reuse it.
    let r = app
        .source_test()
        .call(
            Method::POST,
            "/v1/actions",
            Some(&two_options("b")),
            &[("idempotency-key", "order-1")],
        )
        .await;
    assert_eq!(r.ok(201)["data"]["environment"], "test");
}

#[tokio::test]
async fn odd_headers_paths_and_numbers_get_precise_errors() {
    let app = TestApp::spawn().await;
    let source = app.source();
    // A non-ASCII Idempotency-Key is refused, never silently ignored.
    let r = source
        .http()
        .post(source.url("/v1/actions"))
        .bearer_auth(source.token())
        .header(
            "idempotency-key",
            reqwest::header::HeaderValue::from_bytes("clé-1".as_bytes()).unwrap(),
        )
        .body(two_options("x").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"]["code"],
        "INVALID_IDEMPOTENCY_KEY"
    );
    let r = source
        .call(
            Method::POST,
            "/v1/actions",
            Some(&two_options("x")),
            &[("x-service-blocking", "maybe")],
        )
        .await;
    assert_eq!(
        r.error(422, "VALIDATION_ERROR")["details"]["errors"][0]["field"],
        "X-Service-Blocking"
    );
    // An undecodable path parameter gets the envelope.
    let admin = app.admin();
    admin
        .get_err("/v1/actions/%FF%FE", 422, "VALIDATION_ERROR")
        .await;
    // Integers beyond 2^53 would collide in the canonical form: refused.
    let mut big = two_options("x");
    big["decision_context"] = json!({"ticket": 9007199254740993u64});
    let e = source
        .post_err("/v1/actions", big, 422, "VALIDATION_ERROR")
        .await;
    assert_eq!(
        e["details"]["errors"][0]["field"],
        "decision_context.ticket"
    );
    // Nothing was created.
    let list: Value = admin.get("/v1/me/actions?status=all", 200).await;
    assert_eq!(list["data"], json!([]));
}

/// A keyed create stores only the Action's id, and a replay rebuilds the
/// first answer from it: the replay equals that answer however the Action
/// changed since (decided, commented on, asked for context, snoozed,
/// claimed, PATCHed), because the answer's text is kept before the first
/// write that could make a rebuilt one differ.
#[tokio::test]
async fn a_keyed_create_replays_its_first_answer_after_the_action_changes() {
    use hds::domain::access::Role;
    let app = TestApp::spawn().await;
    let key = app.live_key();
    let reviewer = app.member(Role::Reviewer);
    let stored = |k: &'static str| {
        let db = app.state.services.db.clone();
        async move {
            db.read(move |c| {
                Ok(c.query_row(
                    "SELECT response IS NOT NULL, action_id IS NOT NULL FROM idempotency_keys WHERE key = ?1",
                    [k],
                    |r| Ok((r.get::<_, bool>(0)?, r.get::<_, bool>(1)?)),
                )?)
            })
            .await
            .unwrap()
        }
    };
    let rich = |title: &str| {
        json!({
            "title": title, "description": "Rolls out **v42** — ünïcödé ✓", "priority": "high",
            "options": [{"label": "Ship it"}, {"id": "hold", "label": "Hold", "style": "destructive"}],
            "context": [{"type": "diff", "diff": "-a\n+b"}, {"type": "kv", "items": [{"key": "env", "value": "prod"}]}],
            "decision_class": "deploy",
            "decision_context": {"z": 1, "a": [1.5, 1e-7, 9007199254740991i64, -0.25, null, true], "m": {"é": "\u{1F600}"}},
            "metadata": {"run": 7, "ratio": 0.1, "sum": 0.30000000000000004, "tiny": 2.2250738585072014e-308,
                         "long": 123.45678901234568, "nested": {"b": [], "a": {}}},
            "open_url": "https://ci.example.com/run/7", "context_request_mode": "poll",
            "callback_url": "https://hooks.example.com/hds",
            "controls": [{"key": "rerun", "label": "Re-run", "kind": "callback", "mutating": true, "confirm": "Re-run?"}],
        })
    };
    let create = |k: &'static str, body: Value| {
        let (app, key) = (&app, key.clone());
        async move { keyed_create(app, &key, k, &body).await }
    };
    // What a replay of key `k` must answer: the first answer, flagged.
    let replays = |k: &'static str, body: Value, first: Value| {
        let create = &create;
        async move {
            let again = create(k, body).await;
            again.ok(201);
            assert_eq!(again.headers["idempotent-replayed"], "true");
            assert_eq!(again.body["idempotent_replay"], true);
            assert_eq!(again.body["data"], first, "replay of {k}");
        }
    };

    // 1. Rebuilt while the Action changes in ways the spec does not show.
    let body = rich("Deploy api v42");
    let first = create("rebuilt-1", body.clone()).await;
    let first = first.ok(201)["data"].clone();
    assert_eq!(stored("rebuilt-1").await, (false, true));
    replays("rebuilt-1", body.clone(), first.clone()).await;
    let id = first["id"].as_str().unwrap().to_owned();
    let at = |what: &str| format!("/v1/actions/{id}/{what}");
    reviewer
        .post::<Value>(&at("comments"), json!({"body": "Looks fine."}), 201)
        .await;
    reviewer
        .post::<Value>(
            &at("context-requests"),
            json!({"question": "Which region?"}),
            201,
        )
        .await;
    let in_an_hour =
        hds::domain::time::format(app.state.services.clock.now() + time::Duration::hours(1));
    reviewer
        .post::<Value>(&at("snooze"), json!({"until": in_an_hour}), 200)
        .await;
    let now: Value = reviewer.get(&format!("/v1/actions/{id}"), 200).await;
    assert_eq!(now["data"]["comment_count"], 1);
    assert_eq!(now["data"]["context_requests"].as_array().unwrap().len(), 1);
    replays("rebuilt-1", body.clone(), first.clone()).await;
    app.decide(&first, json!({"option_id": "ship_it"}))
        .await
        .ok(200);
    replays("rebuilt-1", body.clone(), first.clone()).await;
    let outcome = json!({"status": "success", "duration_ms": 5, "rollback": false, "action_version": 1, "fingerprint": first["fingerprint"]});
    app.post(&at("outcome"), &key, outcome).await.ok(201);
    replays("rebuilt-1", body.clone(), first.clone()).await;
    assert_eq!(stored("rebuilt-1").await, (false, true));

    // 2. A claim writes the assignee into the spec: the text is kept first.
    let body = rich("Deploy api v43");
    let first = create("claimed-1", body.clone()).await.ok(201)["data"].clone();
    let id = first["id"].as_str().unwrap();
    reviewer
        .post::<Value>(&format!("/v1/actions/{id}/claim"), json!(null), 200)
        .await;
    assert_eq!(stored("claimed-1").await, (true, false));
    replays("claimed-1", body.clone(), first.clone()).await;
    assert_eq!(first["assignee"], Value::Null);

    // 3. So does a PATCH, material or not; later ones find it kept.
    for (k, patches) in [
        ("patched-1", vec![json!({"metadata": {"run": 8}})]),
        (
            "patched-2",
            vec![
                json!({"title": "Deploy api v45"}),
                json!({"priority": "low"}),
            ],
        ),
    ] {
        let body = rich(k);
        let first = create(k, body.clone()).await.ok(201)["data"].clone();
        let path = format!("/v1/actions/{}", first["id"].as_str().unwrap());
        for p in patches {
            app.patch(&path, &key, p).await.ok(200);
        }
        assert_eq!(stored(k).await, (true, false));
        replays(k, body.clone(), first.clone()).await;
    }
    // The same key with another body is still refused.
    let other = create("patched-1", rich("another")).await;
    other.error(409, "IDEMPOTENCY_KEY_REUSED");
}

/// `POST /v1/actions` by the Source of `source_key` with Idempotency-Key `k`.
async fn keyed_create(app: &TestApp, source_key: &str, k: &str, body: &Value) -> Resp {
    app.call(
        Method::POST,
        "/v1/actions",
        Some(source_key),
        Some(body),
        &[("idempotency-key", k)],
    )
    .await
}

/// A key is forgotten after its retention and may then be sent again for a
/// new Action. The first Action still names that key (`answer_key`) until
/// it changes; when it does, the key's new row, which belongs to the new
/// Action, is left as it is: a retry of the second create still gets the
/// second answer.
#[tokio::test]
async fn a_key_sent_again_after_its_prune_keeps_its_own_answer() {
    let app = TestApp::spawn().await;
    let key = app.live_key();
    let create = |title: &str| {
        let (app, key) = (&app, key.clone());
        let body = json!({"title": title, "options": [{"label": "Ship it"}, {"label": "Hold"}]});
        async move { keyed_create(app, &key, "nightly", &body).await }
    };
    let first = create("Deploy api v42").await.ok(201)["data"].clone();
    // Housekeeping's prune, 49 h later: the key is forgotten.
    let later =
        hds::domain::time::format(app.state.services.clock.now() + time::Duration::hours(49));
    let before =
        hds::domain::time::format(app.state.services.clock.now() + time::Duration::hours(1));
    let pruned = app
        .state
        .services
        .db
        .write(move |c| hds::store::idempotency::prune(c, &before, &later))
        .await
        .unwrap();
    assert_eq!(pruned, 1);
    let second = create("Deploy api v43").await;
    let second = second.ok(201)["data"].clone();
    assert_ne!(second["id"], first["id"], "a new Action, not a replay");
    // The first Action changes: its create answer would be kept, but the
    // key's row is the second Action's now.
    let path = format!("/v1/actions/{}", first["id"].as_str().unwrap());
    app.patch(&path, &key, json!({"title": "Deploy api v42.1"}))
        .await
        .ok(200);
    let again = create("Deploy api v43").await;
    again.ok(201);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.body["data"], second);
    let answer_key: Option<String> = {
        let id = first["id"].as_str().unwrap().to_owned();
        app.state
            .services
            .db
            .read(move |c| {
                Ok(
                    c.query_row("SELECT answer_key FROM actions WHERE id = ?1", [id], |r| {
                        r.get(0)
                    })?,
                )
            })
            .await
            .unwrap()
    };
    assert_eq!(answer_key, None, "cleared by the change");
}

/// A create is identified by what it parses to: key order, whitespace,
/// escapes, how a number is written, or sending a field's default instead of
/// leaving it out do not make it another request; any other difference does.
/// A key stored before this rule (its hash over the canonical body) still
/// replays an exact retry, even one that no longer validates.
#[tokio::test]
async fn a_create_is_the_same_request_however_it_is_spelt() {
    let app = TestApp::spawn().await;
    let source = app.source();
    let send = |k: &'static str, text: String| {
        let source = &source;
        async move {
            let r = source
                .http()
                .post(source.url("/v1/actions"))
                .bearer_auth(source.token())
                .header("idempotency-key", k)
                .header("content-type", "application/json")
                .body(text)
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap())
        }
    };
    let first = r#"{"title":"Rotate é","options":[{"id":"go","label":"Go"}],"metadata":{"n":100,"x":[0.5,true]}}"#;
    let (status, created) = send("spelt-1", first.into()).await;
    assert_eq!(status, 201, "{created}");
    for same in [
        r#"{ "metadata": {"x": [5e-1, true], "n": 1e2}, "title": "Rotate \u00e9",
             "options": [{"label": "Go", "id": "go"}] }"#,
        r#"{"title":"Rotate é","priority":"normal","description":null,"options":[{"id":"go","label":"Go"}],"metadata":{"n":100.0,"x":[0.50,true]}}"#,
        // Every other documented default, sent.
        r#"{"title":"Rotate é","options":[{"id":"go","label":"Go","style":"secondary","sort_order":0}],"metadata":{"n":100,"x":[0.5,true]},
            "visibility":"workspace","context_request_mode":"unsupported","controls":[]}"#,
    ] {
        let (status, again) = send("spelt-1", same.into()).await;
        assert_eq!(status, 201, "{same}: {again}");
        assert_eq!(again["idempotent_replay"], true);
        assert_eq!(again["data"], created["data"]);
    }
    for other in [
        r#"{"title":"Rotate e","options":[{"id":"go","label":"Go"}],"metadata":{"n":100,"x":[0.5,true]}}"#,
        r#"{"title":"Rotate é","options":[{"id":"go","label":"Go"}],"metadata":{"n":"100","x":[0.5,true]}}"#,
        r#"{"title":"Rotate é","priority":"high","options":[{"id":"go","label":"Go"}],"metadata":{"n":100,"x":[0.5,true]}}"#,
        r#"{"title":"Rotate é","options":[{"id":"go","label":"Go"}],"metadata":{"n":100,"x":[true,0.5]}}"#,
        r#"{"title": 5}"#,
        r#"{"title":"Rotate é","options":[{"id":"go","label":"Go","style":"primary"}],"metadata":{"n":100,"x":[0.5,true]}}"#,
        r#"{"title":"Rotate é","options":[{"id":"go","label":"Go"}],"metadata":{"n":100,"x":[0.5,true]},"context_request_mode":"poll"}"#,
    ] {
        let (status, e) = send("spelt-1", other.into()).await;
        assert_eq!(
            (status, e["error"]["code"].as_str()),
            (409, Some("IDEMPOTENCY_KEY_REUSED")),
            "{other}: {e}"
        );
    }
    // Defaults inside controls and on_expire, sent or left out: one request.
    let expires = (app
        .state
        .services
        .clock
        .now()
        .replace_nanosecond(0)
        .unwrap()
        + time::Duration::days(30))
    .format(&time::format_description::well_known::Rfc3339)
    .unwrap();
    let plain = format!(
        r#"{{"title":"Deploy","options":[{{"label":"Go"}}],"callback_url":"https://hooks.example.com/x",
            "controls":[{{"key":"r","label":"Restart","kind":"callback"}}],"expires_at":"{expires}"}}"#
    );
    let (status, made) = send("spelt-2", plain).await;
    assert_eq!(status, 201, "{made}");
    let defaults = format!(
        r#"{{"title":"Deploy","options":[{{"label":"Go"}}],"callback_url":"https://hooks.example.com/x",
            "controls":[{{"key":"r","label":"Restart","kind":"callback","mutating":false}}],
            "expires_at":"{expires}","on_expire":{{"action":"expire"}}}}"#
    );
    let (status, again) = send("spelt-2", defaults).await;
    assert_eq!((status, &again["data"]), (201, &made["data"]), "{again}");
    assert_eq!(again["idempotent_replay"], true);
    // A body that is not JSON is no retry of anything: refused as such.
    let (status, e) = send("spelt-1", "not json".into()).await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (422, Some("VALIDATION_ERROR")),
        "{e}"
    );
    assert_eq!(e["error"]["details"]["errors"][0]["field"], "body", "{e}");
    // Nor is no body at all, told as such (not as the parser's end of input).
    let (status, e) = send("spelt-1", String::new()).await;
    assert_eq!(status, 422, "{e}");
    assert_eq!(
        e["error"]["details"]["errors"][0]["message"],
        "the request body is empty; send a JSON object ({…}) with Content-Type: application/json",
        "{e}"
    );
    // The key of a create used on another route is refused there.
    let cancel = format!(
        "/v1/actions/{}/cancel",
        created["data"]["id"].as_str().unwrap()
    );
    let r = source
        .call(
            Method::POST,
            &cancel,
            Some(&json!({})),
            &[("idempotency-key", "spelt-1")],
        )
        .await;
    r.error(409, "IDEMPOTENCY_KEY_REUSED");

    // A row as hds stored it before: the canonical body's hash, the text.
    let expired = json!({"title": "Old", "options": [{"id": "go", "label": "Go"}], "expires_at": "2020-01-01T00:00:00Z"});
    store_older_row(&app, "legacy-1", &expired, Older::Text("act_legacy")).await;
    // The exact retry replays although its expires_at has passed since;
    // with its keys in another order too; another body is refused.
    for same in [
        expired.to_string(),
        r#"{"expires_at":"2020-01-01T00:00:00Z","options":[{"label":"Go","id":"go"}],"title":"Old"}"#.to_owned(),
    ] {
        let (status, again) = send("legacy-1", same.clone()).await;
        assert_eq!(status, 201, "{same}: {again}");
        assert_eq!(again["data"]["id"], "act_legacy");
        assert_eq!(again["idempotent_replay"], true);
    }
    let mut valid = expired.clone();
    valid["expires_at"] = Value::Null;
    let (status, e) = send("legacy-1", valid.to_string()).await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (409, Some("IDEMPOTENCY_KEY_REUSED")),
        "{e}"
    );

    // An older row whose request still validates: its exact retry reaches
    // the writer, which hands the row back to be compared by the old hash.
    let fine =
        json!({"title": "Older", "options": [{"id": "go", "label": "Go"}], "metadata": {"n": 1.5}});
    store_older_row(&app, "legacy-2", &fine, Older::Text("act_older")).await;
    let (status, again) = send("legacy-2", fine.to_string()).await;
    assert_eq!(status, 201, "{again}");
    assert_eq!(again["data"]["id"], "act_older");
    assert_eq!(again["idempotent_replay"], true);
    // A row that keeps an Action's id under the canonical-body hash (as the
    // first build with rebuilt answers stored them): an exact retry gets the
    // rebuilt answer, not an empty one.
    let body = json!({"title": "Rebuilt", "options": [{"id": "go", "label": "Go"}]});
    let made = app.create_action(body.clone()).await;
    let id = made["id"].as_str().unwrap();
    store_older_row(&app, "legacy-3", &body, Older::Created(id)).await;
    let (status, again) = send("legacy-3", body.to_string()).await;
    assert_eq!(status, 201, "{again}");
    assert_eq!(again["data"], made);
    assert_eq!(again["idempotent_replay"], true);

    let mut other = fine.clone();
    other["metadata"]["n"] = json!(2.5);
    let (status, e) = send("legacy-2", other.to_string()).await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (409, Some("IDEMPOTENCY_KEY_REUSED")),
        "{e}"
    );
}

/// What an older idempotency row keeps.
enum Older<'a> {
    /// An answer's text, naming this (made-up) Action id.
    Text(&'a str),
    /// The id of the Action the answer is rebuilt from.
    Created(&'a str),
}

/// Stores a create's answer under `key` as hds did before typed request
/// hashes: the hash of the canonical body.
async fn store_older_row(app: &TestApp, key: &'static str, body: &Value, older: Older<'_>) {
    let hash = hds::service::idempotency::request_hash("POST /v1/actions", body);
    store_row(app, key, hash, body, older).await;
}

/// Stores a create's answer under `key` with this request hash.
async fn store_row(app: &TestApp, key: &'static str, hash: String, body: &Value, older: Older<'_>) {
    let (text, action_id) = match older {
        Older::Text(id) => (
            Some(
                json!({"data": {"id": id, "title": body["title"]}, "idempotent_replay": false})
                    .to_string(),
            ),
            None,
        ),
        Older::Created(id) => (None, Some(id.to_owned())),
    };
    let source_id = app.creds["source_id"].as_str().unwrap().to_owned();
    app.state
        .services
        .db
        .write(move |c| {
            let response = match (&text, &action_id) {
                (Some(t), _) => hds::store::idempotency::Answer::Text(t),
                (None, id) => {
                    hds::store::idempotency::Answer::Created(id.as_deref().unwrap_or_default())
                }
            };
            hds::store::idempotency::put(
                c,
                &source_id,
                hds::domain::action::Environment::Live,
                key,
                &hds::store::idempotency::New {
                    request_hash: &hash,
                    status_code: 201,
                    response,
                    created_at: "2026-01-01T00:00:00.000Z",
                },
            )
        })
        .await
        .unwrap();
}

/// Titles, names and labels are one line: no line break and no direction
/// override, which would make the same title read differently in the inbox
/// and in a notification; labels have at most 100 characters; a text block
/// at most 20,000. Each refusal names its field and writes nothing.
#[tokio::test]
async fn titles_names_and_labels_are_one_line_without_direction_overrides() {
    let app = TestApp::spawn().await;
    let source = app.source();
    let admin = app.admin();
    let rlo = "Refund customer \u{202e}0001$ tnuoma";
    let long = "L".repeat(101);
    let before = app.count_rows("actions");
    for (body, field) in [
        (
            json!({"title": rlo, "interaction": {"type": "boolean"}}),
            "title",
        ),
        (
            json!({"title": "t", "options": [{"label": "Approve \u{2066}x"}, {"label": "No"}]}),
            "options[0].label",
        ),
        (
            json!({"title": "t", "interaction": {"type": "choice", "choices": [{"id": "a", "label": "line\nbreak"}, {"id": "b", "label": "ok"}]}}),
            "interaction.choices[0].label",
        ),
        (
            json!({"title": "t", "interaction": {"type": "form", "fields": [{"key": "k", "label": long, "type": "text"}]}}),
            "interaction.fields[0].label",
        ),
        (
            json!({"title": "t", "interaction": {"type": "boolean"}, "controls": [{"key": "logs", "label": long, "kind": "link", "url": "https://ci.example.com/x"}]}),
            "controls[0].label",
        ),
        (
            json!({"title": "t", "interaction": {"type": "boolean"}, "controls": [{"key": "logs", "label": "a\r\nb", "kind": "link", "url": "https://ci.example.com/x"}]}),
            "controls[0].label",
        ),
        (
            json!({"title": "t", "interaction": {"type": "boolean"}, "context": [{"type": "text", "text": "w".repeat(20_001)}]}),
            "context[0]",
        ),
        // Direction controls in the text a reviewer reads, however long:
        // "Pay \u{202e}0001 EUR" would show as "Pay RUE 1000".
        (
            json!({"title": "t", "interaction": {"type": "boolean"}, "description": "Pay \u{202e}0001 EUR"}),
            "description",
        ),
        (
            json!({"title": "t", "interaction": {"type": "boolean"}, "context": [{"type": "code", "code": "ok"}, {"type": "kv", "items": [{"key": "Amount", "value": "USD \u{202e}0001"}]}]}),
            "context[1].items[0].value",
        ),
        (
            json!({"title": "t", "interaction": {"type": "boolean"}, "context": [{"type": "link", "url": "https://bank.example.com/", "label": "https://\u{202e}moc.knab"}]}),
            "context[0].label",
        ),
        // Titles and labels that show nothing (zero-width characters, a
        // Hangul filler): an empty heading, a blank button.
        (
            json!({"title": "\u{200b}\u{2060}", "interaction": {"type": "boolean"}}),
            "title",
        ),
        (
            json!({"title": "t", "options": [{"id": "a", "label": "\u{3164}"}, {"id": "b", "label": "No"}]}),
            "options[0].label",
        ),
        (
            json!({"title": "t", "interaction": {"type": "boolean"}, "controls": [{"key": "logs", "label": "\u{200b}", "kind": "link", "url": "https://ci.example.com/x"}]}),
            "controls[0].label",
        ),
    ] {
        let e = source
            .post_err("/v1/actions", body.clone(), 422, "VALIDATION_ERROR")
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], field, "{e}");
    }
    assert_eq!(app.count_rows("actions"), before);
    // Browsers break lines at a line separator too.
    source
        .post_err(
            "/v1/actions",
            json!({"title": "line1\u{2028}line2", "interaction": {"type": "boolean"}}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    admin
        .post_err(
            "/v1/workspaces",
            json!({"name": "Team\u{2028}B"}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    // Marks (U+200E, U+200F) and right-to-left text itself stay allowed.
    app.create_action(json!({"title": "שלום \u{200f}עולם", "interaction": {"type": "boolean"}}))
        .await;
    // Workspace and Source names; a Source's description (500 at most).
    admin
        .post_err(
            "/v1/workspaces",
            json!({"name": "Team\u{202e}nimda sa"}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    let e = admin
        .post_err(
            "/v1/sources",
            json!({"name": "CI", "description": "D".repeat(501)}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "description", "{e}");
    let src: Value = admin
        .post(
            "/v1/sources",
            json!({"name": "CI", "description": "D".repeat(500)}),
            201,
        )
        .await;
    let id = src["data"]["id"]
        .as_str()
        .unwrap_or_else(|| src["id"].as_str().unwrap());
    admin
        .patch_err(
            &format!("/v1/sources/{id}"),
            json!({"description": "D".repeat(501)}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    admin
        .patch_err(
            &format!("/v1/sources/{id}"),
            json!({"name": "CI \u{2067}x"}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
}

/// A header that decides who asks or what the request is, sent twice, is
/// refused: which copy a proxy or a server reads first is not the client's
/// to guess. Nothing is created.
#[tokio::test]
async fn a_repeated_credential_key_or_blocking_header_is_refused() {
    let app = TestApp::spawn().await;
    let source = app.source();
    let test_key = app.test_key();
    let send = |pairs: Vec<(&'static str, String)>| {
        let source = &source;
        async move {
            let mut h = reqwest::header::HeaderMap::new();
            h.insert("content-type", "application/json".parse().unwrap());
            for (k, v) in pairs {
                h.append(k, v.parse().unwrap());
            }
            let r = source
                .http()
                .post(source.url("/v1/actions"))
                .headers(h)
                .body(two_options("Twice").to_string())
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let bearer = |k: &str| format!("Bearer {k}");
    let live = bearer(source.token());
    let cases = [
        (
            vec![
                ("authorization", live.clone()),
                ("idempotency-key", "k1".into()),
                ("idempotency-key", "k2".into()),
            ],
            400,
            "INVALID_IDEMPOTENCY_KEY",
        ),
        (
            vec![
                ("authorization", live.clone()),
                ("authorization", bearer(&test_key)),
            ],
            401,
            "AUTH_REQUIRED",
        ),
        (
            vec![
                ("authorization", live.clone()),
                ("x-service-blocking", "false".into()),
                ("x-service-blocking", "true".into()),
            ],
            422,
            "VALIDATION_ERROR",
        ),
    ];
    for (pairs, status, code) in cases {
        let (got, body) = send(pairs).await;
        assert_eq!(
            (got, body["error"]["code"].as_str()),
            (status, Some(code)),
            "{body}"
        );
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("not several"),
            "{body}"
        );
    }
    assert_eq!(app.count_rows("actions"), 0);
    // One of each is fine.
    let (got, body) = send(vec![
        ("authorization", live),
        ("idempotency-key", "k1".into()),
    ])
    .await;
    assert_eq!(got, 201, "{body}");
}

/// A key stored while the typed hash still covered defaults as sent (`t1:`)
/// is compared as it was stored: an exact retry of a body that sends a
/// default replays; another body is refused.
#[tokio::test]
async fn a_key_stored_under_the_first_typed_hash_still_replays() {
    let app = TestApp::spawn().await;
    let body = json!({"title": "Rotate", "options": [{"label": "Go", "style": "secondary"}],
        "visibility": "workspace"});
    let made = app.create_action(body.clone()).await;
    let parsed = hds::domain::validate::parse_create_bytes(body.to_string().as_bytes()).unwrap();
    let v1 = hds::service::idempotency::typed_request_hash_v1("POST /v1/actions", &parsed).unwrap();
    assert!(v1.starts_with("t1:"));
    let id = made["id"].as_str().unwrap().to_owned();
    store_row(&app, "typed-1", v1, &body, Older::Created(&id)).await;
    let source = app.source();
    let again = source
        .call(
            Method::POST,
            "/v1/actions",
            Some(&body),
            &[("idempotency-key", "typed-1")],
        )
        .await;
    assert_eq!(again.ok(201)["data"]["id"], made["id"]);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    // Leaving the defaults out was another request under `t1:`: refused.
    let bare = json!({"title": "Rotate", "options": [{"label": "Go"}]});
    source
        .call(
            Method::POST,
            "/v1/actions",
            Some(&bare),
            &[("idempotency-key", "typed-1")],
        )
        .await
        .error(409, "IDEMPOTENCY_KEY_REUSED");
}

fn action_ids(list: &Value) -> Vec<Value> {
    list["data"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|a| a["id"].clone())
        .collect()
}

/// A Source lists its own Actions (a worker that restarted finds what is
/// still open): one status at a time, in its key's environment, in the
/// inbox's order, restricted ones included, never another Source's; pages
/// continue after the last id; a cursor of anyone else's is 422.
#[tokio::test]
async fn a_source_lists_its_own_actions_by_status_and_pages_them() {
    let app = TestApp::spawn().await;
    let source = app.source();
    let mut urgent = two_options("Urgent one");
    urgent["priority"] = json!("urgent");
    let old = app.create_action(two_options("Older")).await;
    let newer = app.create_action(two_options("Newer")).await;
    let first = app.create_action(urgent).await;
    let mut restricted = two_options("Restricted");
    restricted["visibility"] = json!("restricted");
    restricted["reviewer_user_ids"] = json!([app.admin().person().id]);
    let hidden = app.create_action(restricted).await;
    let decided = app.create_action(two_options("Decided")).await;
    app.decide(&decided, json!({"option_id": "approve"}))
        .await
        .ok(200);
    let cancelled = app.create_action(two_options("Cancelled")).await;
    source
        .post::<Value>(
            &format!("/v1/actions/{}/cancel", cancelled["id"].as_str().unwrap()),
            json!({}),
            200,
        )
        .await;
    let test = app
        .create_action_with(&app.test_key(), two_options("Test one"))
        .await;
    let (_, other_key) = app.second_source().await;
    let theirs = app
        .create_action_with(&other_key, two_options("Another Source's"))
        .await;

    // Open (the default): most pressing first, then oldest.
    let open: Value = source.get("/v1/source/actions", 200).await;
    assert_eq!(open["object"], "list");
    assert_eq!(open["has_more"], false);
    assert_eq!(
        action_ids(&open),
        [&first, &old, &newer, &hidden].map(|a| a["id"].clone())
    );
    assert_eq!(open["data"][0]["title"], "Urgent one");
    assert_eq!(open["data"][0]["fingerprint"], first["fingerprint"]);
    for (status, want) in [("resolved", &decided), ("cancelled", &cancelled)] {
        let l: Value = source
            .get(&format!("/v1/source/actions?status={status}"), 200)
            .await;
        assert_eq!(action_ids(&l), [want["id"].clone()], "{status}");
    }
    let urgent_only: Value = source.get("/v1/source/actions?priority=urgent", 200).await;
    assert_eq!(action_ids(&urgent_only), [first["id"].clone()]);
    // The test key's list and the other Source's hold only their own.
    let t: Value = app.source_test().get("/v1/source/actions", 200).await;
    assert_eq!(action_ids(&t), [test["id"].clone()]);
    let o: Value = app.bearer(&other_key).get("/v1/source/actions", 200).await;
    assert_eq!(action_ids(&o), [theirs["id"].clone()]);

    // Pages.
    let p1: Value = source.get("/v1/source/actions?limit=2", 200).await;
    assert_eq!(p1["has_more"], true);
    assert_eq!(action_ids(&p1), [first["id"].clone(), old["id"].clone()]);
    let p2: Value = source
        .get(
            &format!(
                "/v1/source/actions?limit=2&starting_after={}",
                old["id"].as_str().unwrap()
            ),
            200,
        )
        .await;
    assert_eq!(p2["has_more"], false);
    assert_eq!(action_ids(&p2), [newer["id"].clone(), hidden["id"].clone()]);

    // A cursor that is not one of this Source's Actions here, and bad
    // queries: 422 naming the parameter.
    for cursor in [&theirs, &test] {
        let e = source
            .get_err(
                &format!(
                    "/v1/source/actions?starting_after={}",
                    cursor["id"].as_str().unwrap()
                ),
                422,
                "VALIDATION_ERROR",
            )
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], "starting_after", "{e}");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("is not an Action of this Source"),
            "{e}"
        );
    }
    for (q, field) in [
        ("status=all", "status"),
        ("status=done", "status"),
        ("priority=now", "priority"),
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        (
            "starting_after=run_01JD8XQ0000000000000000000",
            "starting_after",
        ),
        ("environment=test", "environment"),
        ("source_id=src_x", "source_id"),
    ] {
        let e = source
            .get_err(&format!("/v1/source/actions?{q}"), 422, "VALIDATION_ERROR")
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], field, "{q}: {e}");
    }
    app.admin()
        .get_err("/v1/source/actions", 401, "INVALID_API_KEY")
        .await;
}

/// Refusals that say what to send instead, in the words of what was being
/// done: an unknown value lists the values taken, a boolean interaction
/// takes only its `type`, a bad version names its field once, a number out
/// of range gives the range, a stale press or vote says to press or vote
/// again, a person cancelling a finished run is told it is finished, and
/// deleting an account without a body says what to send.
#[tokio::test]
async fn refusals_say_what_to_send_instead() {
    let app = TestApp::spawn().await;
    let src = app.source();
    let e = src
        .post_err(
            "/v1/actions",
            json!({"title": "t", "priority": "bogus", "options": [{"label": "A"}]}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains("`bogus` is not a value this field takes: use one of `low`"),
        "{msg}"
    );
    assert!(!msg.contains("variant"), "{msg}");
    let e = src
        .post_err(
            "/v1/actions",
            json!({"title": "t", "interaction": {"type": "boolean", "default": true}}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(
        e["details"]["errors"][0]["field"], "interaction.default",
        "{e}"
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("takes only its `type`"),
        "{e}"
    );

    let a = app.create_action(two_options("Ship it?")).await;
    let resolve = format!("/v1/actions/{}/resolve", a["id"].as_str().unwrap());
    let e = src
        .post_err(
            &resolve,
            json!({"option_id": "approve", "action_version": 0}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(
        e["message"], "action_version: must be 1 or more (the version you were shown), got 0",
        "{e}"
    );

    let n = app
        .create_action(
            json!({"title": "Replicas?", "interaction": {"type": "number", "min": 1, "max": 20}}),
        )
        .await;
    let e = app.decide(&n, json!({"response": {"value": 21}})).await;
    let e = e.error(400, "INVALID_RESPONSE");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("give a number from 1 to 20"),
        "{e}"
    );

    // A control pressed, and a vote cast, on a version since replaced.
    let mut body = two_options("Restart?");
    body["callback_url"] = json!("https://hooks.example.com/hds");
    body["controls"] = json!([{"key": "restart", "label": "Restart", "kind": "callback"}]);
    let admin = app.admin();
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([admin.person().id]);
    body["approval_policy"] = json!({"required_approvals": 1});
    let c = app.create_action(body).await;
    let cid = c["id"].as_str().unwrap().to_owned();
    src.call(
        Method::PATCH,
        &format!("/v1/actions/{cid}"),
        Some(&json!({"title": "Restart now?"})),
        &[],
    )
    .await
    .ok(200);
    let stale = json!({"action_version": c["action_version"], "fingerprint": c["fingerprint"]});
    let e = admin
        .post_err(
            &format!("/v1/actions/{cid}/controls/restart/invoke"),
            stale.clone(),
            409,
            "ACTION_CHANGED",
        )
        .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .ends_with("press the control again"),
        "{e}"
    );
    let mut v = stale.clone();
    v["vote"] = json!("approve");
    let e = admin
        .post_err(
            &format!("/v1/actions/{cid}/votes"),
            v,
            409,
            "ACTION_CHANGED",
        )
        .await;
    assert!(
        e["message"].as_str().unwrap().ends_with("and vote again"),
        "{e}"
    );

    // A person cancelling a run that has finished.
    let run: Value = src.post("/v1/runs", json!({"name": "import"}), 201).await;
    let rid = run["data"]["id"].as_str().unwrap().to_owned();
    let _: Value = src
        .post(
            &format!("/v1/source/runs/{rid}/complete"),
            json!({"status": "succeeded"}),
            200,
        )
        .await;
    let e = admin
        .post_err(
            &format!("/v1/runs/{rid}/cancel"),
            json!({}),
            409,
            "RUN_NOT_ACTIVE",
        )
        .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("there is nothing left to cancel"),
        "{e}"
    );
    assert_eq!(e["details"]["status"], "succeeded", "{e}");

    // Deleting an account without saying whose: what to send.
    let viewer = app.member(Role::Viewer);
    let r = viewer.call(Method::DELETE, "/v1/account", None, &[]).await;
    let e = r.error(422, "VALIDATION_ERROR");
    assert_eq!(e["details"]["errors"][0]["field"], "confirm", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains(r#"send {"confirm": "<your e-mail address>"}"#),
        "{e}"
    );
    let r = viewer
        .call(Method::DELETE, "/v1/account", Some(&json!({})), &[])
        .await;
    let e = r.error(422, "VALIDATION_ERROR");
    assert_eq!(e["details"]["errors"][0]["field"], "confirm", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains(r#"send {"confirm""#),
        "{e}"
    );
    // One-sided and fractional ranges are given as they are.
    let half = app
        .create_action(json!({"title": "Ratio?", "interaction": {"type": "number", "min": 0.5}}))
        .await;
    let e = app
        .decide(&half, json!({"response": {"value": 0.25}}))
        .await;
    let e = e.error(400, "INVALID_RESPONSE");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .ends_with("give a number 0.5 or more"),
        "{e}"
    );
}
