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
    // A version below 1 is a malformed body (422 naming it), not a stale
    // binding, on every route that takes one back.
    let id = a["id"].as_str().unwrap();
    let fp = a["fingerprint"].clone();
    let source = app.source();
    for v in [json!(0), json!(-1)] {
        let mut bad = a.clone();
        bad["action_version"] = v.clone();
        let e = app.decide(&bad, json!({"option_id": "approve"})).await;
        let e = e.error(422, "VALIDATION_ERROR");
        assert_eq!(e["details"]["errors"][0]["field"], "action_version", "{e}");
        assert!(e["message"].as_str().unwrap().contains("1 or more"), "{e}");
        let binding = json!({"action_version": v, "fingerprint": fp});
        let mut resolve = binding.clone();
        resolve["option_id"] = json!("approve");
        let mut outcome = binding.clone();
        outcome["status"] = json!("success");
        outcome["duration_ms"] = json!(1);
        let mut vote = binding.clone();
        vote["vote"] = json!("approve");
        let mut item = binding.clone();
        item["action_id"] = json!(id);
        item["option_id"] = json!("approve");
        for (who, path, body) in [
            (&source, format!("/v1/actions/{id}/resolve"), resolve),
            (&source, format!("/v1/actions/{id}/outcome"), outcome),
            (&admin, format!("/v1/actions/{id}/votes"), vote),
            (
                &admin,
                format!("/v1/actions/{id}/controls/restart/invoke"),
                binding.clone(),
            ),
            (
                &admin,
                "/v1/actions/decisions".to_owned(),
                json!({"decisions": [item]}),
            ),
        ] {
            let e = who.post_err(&path, body, 422, "VALIDATION_ERROR").await;
            let field = e["details"]["errors"][0]["field"].as_str().unwrap();
            assert!(field.ends_with("action_version"), "{path}: {e}");
        }
    }
    // A fingerprint of the wrong shape is a malformed body too, never 409
    // ACTION_CHANGED (a client would re-read and retry forever): 422 naming
    // it, on every route that takes one back.
    let upper = fp
        .as_str()
        .unwrap()
        .to_uppercase()
        .replace("SHA256:", "sha256:");
    for f in ["garbage", "sha256:abc", upper.as_str(), ""] {
        let binding = json!({"action_version": 1, "fingerprint": f});
        let mut decide = binding.clone();
        decide["option_id"] = json!("approve");
        let mut resolve = decide.clone();
        resolve["reason"] = json!("x");
        let mut vote = binding.clone();
        vote["vote"] = json!("approve");
        let mut item = decide.clone();
        item["action_id"] = json!(id);
        for (who, path, body) in [
            (&admin, format!("/v1/actions/{id}/decision"), decide),
            (&source, format!("/v1/actions/{id}/resolve"), resolve),
            (&admin, format!("/v1/actions/{id}/votes"), vote),
            (
                &admin,
                format!("/v1/actions/{id}/controls/restart/invoke"),
                binding.clone(),
            ),
            (
                &admin,
                "/v1/actions/decisions".to_owned(),
                json!({"decisions": [item]}),
            ),
        ] {
            let e = who.post_err(&path, body, 422, "VALIDATION_ERROR").await;
            let field = e["details"]["errors"][0]["field"].as_str().unwrap();
            assert!(field.ends_with("fingerprint"), "{path}: {e}");
            assert!(
                e["message"].as_str().unwrap().contains("64 lowercase hex"),
                "{path}: {e}"
            );
        }
    }
    // No binding at all.
    let decision = format!("/v1/actions/{id}/decision");
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
