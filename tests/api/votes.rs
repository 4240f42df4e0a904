//! Approval policies: listed reviewers vote; the quorum resolves with a receipt.

use reqwest::Method;
use serde_json::json;

use crate::helpers::{TestApp, two_options};

fn vote(a: &serde_json::Value, v: &str) -> serde_json::Value {
    json!({"vote": v, "action_version": a["action_version"], "fingerprint": a["fingerprint"]})
}

#[tokio::test]
async fn two_approvals_resolve_with_the_first_option_and_a_receipt_listing_the_votes() {
    let app = TestApp::spawn().await;
    let (bob, bob_token) = app.add_member("bob@example.com", "reviewer");
    let (_, carol_token) = app.add_member("carol@example.com", "reviewer");
    let mut body = two_options("Drop the staging database");
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([app.creds["user_id"], bob]);
    body["approval_policy"] = json!({"required_approvals": 2});
    let a = app.create_action(body).await;
    let path = format!("/v1/actions/{}/votes", a["id"].as_str().unwrap());

    let first = app
        .post(&path, &app.user_token(), vote(&a, "approve"))
        .await;
    assert_eq!(first.ok(200)["data"]["status"], "open");
    assert_eq!(
        first.body["tally"],
        json!({"approvals": 1, "rejections": 0, "required_approvals": 2, "reject_threshold": 1})
    );
    let again = app
        .call(
            Method::POST,
            &path,
            Some(&app.user_token()),
            Some(&vote(&a, "approve")),
            &[("idempotency-key", "v1")],
        )
        .await;
    assert_eq!(again.ok(200)["idempotent_replay"], true);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    app.post(&path, &app.user_token(), vote(&a, "reject"))
        .await
        .error(409, "VOTE_ALREADY_CAST");
    // Not listed: the restricted Action is invisible to Carol.
    app.post(&path, &carol_token, vote(&a, "approve"))
        .await
        .error(404, "ACTION_NOT_FOUND");
    app.post(
        &path,
        &bob_token,
        json!({"vote": "maybe", "action_version": 1, "fingerprint": a["fingerprint"]}),
    )
    .await
    .error(422, "VALIDATION_ERROR");

    let done = app.post(&path, &bob_token, vote(&a, "approve")).await;
    let d = done.ok(200)["data"].clone();
    assert_eq!(d["status"], "resolved");
    assert_eq!(d["resolution_option_id"], "approve");
    assert_eq!(
        d["resolved_by"],
        json!({"type": "system", "id": "approval_policy"})
    );
    let votes = d["receipt"]["payload"]["decision"]["votes"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(votes.len(), 2);
    // Admins see restricted Actions, but only listed reviewers vote.
    let (_, dave_token) = app.add_member("dave@example.com", "admin");
    app.post(&path, &dave_token, vote(&a, "approve"))
        .await
        .error(403, "FORBIDDEN");
}

#[tokio::test]
async fn one_rejection_resolves_a_boolean_action_as_false() {
    let app = TestApp::spawn().await;
    let a = app
        .create_action(json!({"title": "Grant prod access", "interaction": {"type": "boolean"}, "visibility": "restricted",
            "reviewer_emails": ["admin@example.com"], "approval_policy": {"required_approvals": 1}}))
        .await;
    let r = app
        .post(
            &format!("/v1/actions/{}/votes", a["id"].as_str().unwrap()),
            &app.user_token(),
            vote(&a, "reject"),
        )
        .await;
    let d = &r.ok(200)["data"];
    assert_eq!(d["status"], "resolved");
    assert_eq!(d["response"], json!({"value": false}));
}

#[tokio::test]
async fn votes_need_a_policy_and_the_current_binding() {
    let app = TestApp::spawn().await;
    let plain = app.create_action(two_options("No policy")).await;
    app.post(
        &format!("/v1/actions/{}/votes", plain["id"].as_str().unwrap()),
        &app.user_token(),
        vote(&plain, "approve"),
    )
    .await
    .error(422, "VALIDATION_ERROR");
    let mut body = two_options("Policy");
    body["visibility"] = json!("restricted");
    body["reviewer_emails"] = json!(["admin@example.com"]);
    body["approval_policy"] = json!({"required_approvals": 1});
    let a = app.create_action(body).await;
    let mut stale = vote(&a, "approve");
    stale["action_version"] = json!(7);
    app.post(
        &format!("/v1/actions/{}/votes", a["id"].as_str().unwrap()),
        &app.user_token(),
        stale,
    )
    .await
    .error(409, "ACTION_CHANGED");
}
