//! Decisions on Actions (guide: "POST /v1/actions/{action_id}/decision"): each refusal with its code, and that no
//! refusal decides anything.

use serde_json::{Value, json};

use crate::helpers::{TestApp, two_options};

#[tokio::test]
async fn decision_codes() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let a = app.create_action(two_options("Deploy")).await;
    app.decide(&a, json!({}))
        .await
        .error(400, "RESPONSE_REQUIRED");
    let e = app.decide(&a, json!({"option_id": "maybe"})).await;
    assert_eq!(
        e.error(400, "OPTION_NOT_FOUND")["details"]["option_ids"],
        json!(["approve", "reject"])
    );
    app.decide(&a, json!({"response": {"value": true}}))
        .await
        .error(400, "RESPONSE_TYPE_MISMATCH");
    let mut stale = a.clone();
    stale["fingerprint"] = json!(format!("sha256:{}", "0".repeat(64)));
    app.decide(&stale, json!({"option_id": "approve"}))
        .await
        .error(409, "ACTION_CHANGED");
    // No binding at all.
    let decision = format!("/v1/actions/{}/decision", a["id"].as_str().unwrap());
    admin
        .post_err(
            &decision,
            json!({"option_id": "approve"}),
            422,
            "VALIDATION_ERROR",
        )
        .await;

    let n = app.create_action(json!({"title": "How many replicas?", "interaction": {"type": "number", "min": 1, "max": 5}})).await;
    app.decide(&n, json!({}))
        .await
        .error(400, "RESPONSE_REQUIRED");
    app.decide(&n, json!({"response": {"value": "three"}}))
        .await
        .error(400, "RESPONSE_TYPE_MISMATCH");
    app.decide(&n, json!({"response": {"value": 9}}))
        .await
        .error(400, "INVALID_RESPONSE");
    // A member beside `value` would be dropped silently: refused instead.
    app.decide(&n, json!({"response": {"value": 3, "extra": 1}}))
        .await
        .error(400, "RESPONSE_TYPE_MISMATCH");
    app.decide(&n, json!({"option_id": "approve"}))
        .await
        .error(400, "RESPONSE_TYPE_MISMATCH");
    // None of the refusals decided anything.
    let now: Value = admin
        .get(&format!("/v1/actions/{}", n["id"].as_str().unwrap()), 200)
        .await;
    assert_eq!(now["data"]["status"], "open");
    app.decide(&n, json!({"response": {"value": 3}}))
        .await
        .ok(200);
    app.decide(&n, json!({"response": {"value": 4}}))
        .await
        .error(409, "ACTION_NOT_OPEN");
}
