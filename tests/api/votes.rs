//! Approval policies: listed reviewers vote; the quorum resolves with a receipt.

use hds::domain::access::Role;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{TestApp, two_options};

fn vote(a: &Value, v: &str) -> Value {
    json!({"vote": v, "action_version": a["action_version"], "fingerprint": a["fingerprint"]})
}

fn votes_of(a: &Value) -> String {
    format!("/v1/actions/{}/votes", a["id"].as_str().unwrap())
}

#[tokio::test]
async fn two_approvals_resolve_with_the_first_option_and_a_receipt_listing_the_votes() {
    let app = TestApp::spawn().await;
    let (admin, bob, carol) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );
    let mut body = two_options("Drop the staging database");
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([admin.person().id, bob.person().id]);
    body["approval_policy"] = json!({"required_approvals": 2});
    let a = app.create_action(body).await;
    let path = votes_of(&a);

    let first: Value = admin.post(&path, vote(&a, "approve"), 200).await;
    assert_eq!(first["data"]["status"], "open");
    assert_eq!(
        first["tally"],
        json!({"approvals": 1, "rejections": 0, "required_approvals": 2, "reject_threshold": 1})
    );
    let again = admin
        .call(
            Method::POST,
            &path,
            Some(&vote(&a, "approve")),
            &[("idempotency-key", "v1")],
        )
        .await;
    assert_eq!(again.ok(200)["idempotent_replay"], true);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    admin
        .post_err(&path, vote(&a, "reject"), 409, "VOTE_ALREADY_CAST")
        .await;
    // Not listed: the restricted Action is invisible to Carol.
    carol
        .post_err(&path, vote(&a, "approve"), 404, "ACTION_NOT_FOUND")
        .await;
    let maybe = json!({"vote": "maybe", "action_version": 1, "fingerprint": a["fingerprint"]});
    bob.post_err(&path, maybe, 422, "VALIDATION_ERROR").await;

    let done: Value = bob.post(&path, vote(&a, "approve"), 200).await;
    let d = &done["data"];
    assert_eq!(d["status"], "resolved");
    assert_eq!(d["resolution_option_id"], "approve");
    assert_eq!(d["resolution_reason"], "2 approvals, 0 rejections");
    assert_eq!(
        d["resolved_by"],
        json!({"type": "system", "id": "approval_policy"})
    );
    let votes = d["receipt"]["payload"]["decision"]["votes"]
        .as_array()
        .unwrap();
    assert_eq!(votes.len(), 2);
    // Admins see restricted Actions, but only listed reviewers vote.
    app.member(Role::Admin)
        .post_err(&path, vote(&a, "approve"), 403, "FORBIDDEN")
        .await;
}

#[tokio::test]
async fn one_rejection_resolves_a_boolean_action_as_false() {
    let app = TestApp::spawn().await;
    let a = app
        .create_action(json!({"title": "Grant prod access", "interaction": {"type": "boolean"}, "visibility": "restricted",
            "reviewer_emails": ["admin@example.com"], "approval_policy": {"required_approvals": 1}}))
        .await;
    let r: Value = app
        .admin()
        .post(&votes_of(&a), vote(&a, "reject"), 200)
        .await;
    assert_eq!(r["data"]["status"], "resolved");
    assert_eq!(r["data"]["response"], json!({"value": false}));
}

#[tokio::test]
async fn votes_need_a_policy_and_the_current_binding() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let plain = app.create_action(two_options("No policy")).await;
    admin
        .post_err(
            &votes_of(&plain),
            vote(&plain, "approve"),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    let mut body = two_options("Policy");
    body["visibility"] = json!("restricted");
    body["reviewer_emails"] = json!(["admin@example.com"]);
    body["approval_policy"] = json!({"required_approvals": 1});
    let a = app.create_action(body).await;
    let mut stale = vote(&a, "approve");
    stale["action_version"] = json!(7);
    admin
        .post_err(&votes_of(&a), stale, 409, "ACTION_CHANGED")
        .await;
}

#[tokio::test]
async fn approval_policy_requires_votes() {
    let app = TestApp::spawn().await;
    let mut body = two_options("Drop the staging database");
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([app.creds["user_id"]]);
    body["approval_policy"] = json!({"required_approvals": 1});
    let a = app.create_action(body).await;
    assert_eq!(
        a["approval_policy"],
        json!({"required_approvals": 1, "allow_self_approval": false})
    );
    app.decide(&a, json!({"option_id": "approve"}))
        .await
        .error(409, "APPROVAL_VOTE_REQUIRED");
    // A policy on a non-restricted Action is refused.
    let mut bad = two_options("x");
    bad["approval_policy"] = json!({"required_approvals": 1});
    app.source()
        .post_err("/v1/actions", bad, 422, "VALIDATION_ERROR")
        .await;
}
