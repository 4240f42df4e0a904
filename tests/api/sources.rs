//! Sources (guide: "GET /v1/sources and GET /v1/sources/{source_id}") and Source scoping of Actions.

use hds::domain::access::Role;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{TestApp, two_options};

#[tokio::test]
async fn another_sources_key_gets_404_on_every_action_route() {
    let app = TestApp::spawn().await;
    let a = app.create_action(two_options("Mine")).await;
    let id = a["id"].as_str().unwrap();
    let (_, other) = app.second_source().await;
    let binding =
        json!({"action_version": 1, "fingerprint": a["fingerprint"], "option_id": "approve"});
    app.get(&format!("/v1/source/actions/{id}"), &other)
        .await
        .error(404, "ACTION_NOT_FOUND");
    app.get(&format!("/v1/source/actions/{id}?wait_seconds=1"), &other)
        .await
        .error(404, "ACTION_NOT_FOUND");
    app.get(&format!("/v1/actions/{id}"), &other)
        .await
        .error(404, "ACTION_NOT_FOUND");
    app.patch(
        &format!("/v1/actions/{id}"),
        &other,
        json!({"title": "hijack"}),
    )
    .await
    .error(404, "ACTION_NOT_FOUND");
    app.post(
        &format!("/v1/actions/{id}/resolve"),
        &other,
        binding.clone(),
    )
    .await
    .error(404, "ACTION_NOT_FOUND");
    app.post(&format!("/v1/actions/{id}/cancel"), &other, json!({}))
        .await
        .error(404, "ACTION_NOT_FOUND");
    app.post(&format!("/v1/actions/{id}/outcome"), &other, json!({"status": "success", "duration_ms": 1, "action_version": 1, "fingerprint": a["fingerprint"]})).await.error(404, "ACTION_NOT_FOUND");
    // Untouched by all of that.
    let still = app
        .get(&format!("/v1/source/actions/{id}"), &app.live_key())
        .await;
    assert_eq!(still.ok(200)["data"]["title"], "Mine");
    assert_eq!(still.body["data"]["status"], "open");
}

#[tokio::test]
async fn source_lifecycle_create_read_update_rotate_revoke() {
    let app = TestApp::spawn().await;
    let user = app.user_token();
    let r = app
        .post(
            "/v1/sources",
            &user,
            json!({"name": "deploy-bot", "description": "CI"}),
        )
        .await;
    let created = r.ok(201).clone();
    let id = created["data"]["id"].as_str().unwrap().to_owned();
    let live = created["secrets"]["live_key"].as_str().unwrap().to_owned();
    assert!(live.starts_with("svc_live_"));
    assert!(
        created["secrets"]["test_key"]
            .as_str()
            .unwrap()
            .starts_with("svc_test_")
    );
    assert!(
        created["secrets"]["webhook_secret"]
            .as_str()
            .unwrap()
            .starts_with("whsec_")
    );
    // Keys are never shown again: reads carry hints only.
    let got = app.get(&format!("/v1/sources/{id}"), &user).await;
    let text = got.ok(200).to_string();
    assert!(!text.contains(&live) && !text.contains("whsec_"));
    assert_eq!(got.body["data"]["keys"].as_array().unwrap().len(), 2);
    let list = app.get("/v1/sources", &user).await;
    assert_eq!(list.ok(200)["data"].as_array().unwrap().len(), 2);

    let admin = app.admin();
    let upd: Value = admin
        .patch(
            &format!("/v1/sources/{id}"),
            json!({"name": "deploy-bot-2", "description": null}),
            200,
        )
        .await;
    assert_eq!(upd["data"]["name"], "deploy-bot-2");
    assert_eq!(upd["data"]["description"], Value::Null);
    admin
        .patch_err(
            &format!("/v1/sources/{id}"),
            json!({"name": ""}),
            422,
            "VALIDATION_ERROR",
        )
        .await;

    // Rotation: the old key stops working with the response that shows the new one.
    let a = app
        .create_action_with(&live, two_options("before rotation"))
        .await;
    let rot = app
        .call(
            Method::POST,
            &format!("/v1/sources/{id}/keys/rotate"),
            Some(&user),
            None,
            &[],
        )
        .await;
    let new_live = rot.ok(200)["secrets"]["live_key"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(new_live, live);
    app.post("/v1/actions", &live, two_options("x"))
        .await
        .error(401, "INVALID_API_KEY");
    app.get(
        &format!("/v1/source/actions/{}", a["id"].as_str().unwrap()),
        &new_live,
    )
    .await
    .ok(200);

    // Revoke: keys fail with SOURCE_REVOKED; Actions and history stay readable.
    let del: Value = admin.delete(&format!("/v1/sources/{id}"), 204).await;
    assert_eq!(del, Value::Null);
    app.post("/v1/actions", &new_live, two_options("x"))
        .await
        .error(401, "SOURCE_REVOKED");
    let kept = app
        .get(&format!("/v1/actions/{}", a["id"].as_str().unwrap()), &user)
        .await;
    assert_eq!(kept.ok(200)["data"]["history"][0]["type"], "created");
    assert_eq!(
        app.get(&format!("/v1/sources/{id}"), &user).await.ok(200)["data"]["status"],
        "revoked"
    );
}

#[tokio::test]
async fn unknown_sources_are_404() {
    let app = TestApp::spawn().await;
    let user = app.user_token();
    app.get("/v1/sources/src_nope", &user)
        .await
        .error(404, "SOURCE_NOT_FOUND");
    app.patch("/v1/sources/src_nope", &user, json!({"name": "x"}))
        .await
        .error(404, "SOURCE_NOT_FOUND");
    app.call(
        Method::DELETE,
        "/v1/sources/src_nope",
        Some(&user),
        None,
        &[],
    )
    .await
    .error(404, "SOURCE_NOT_FOUND");
    app.call(
        Method::POST,
        "/v1/sources/src_nope/keys/rotate",
        Some(&user),
        None,
        &[],
    )
    .await
    .error(404, "SOURCE_NOT_FOUND");
    app.get("/v1/actions/act_nope", &user)
        .await
        .error(404, "ACTION_NOT_FOUND");
    app.post("/v1/sources", &user, json!({"name": "x", "kind": "y"}))
        .await
        .error(422, "VALIDATION_ERROR");
}

#[tokio::test]
async fn members_of_other_workspaces_and_viewers_cannot_decide() {
    let app = TestApp::spawn().await;
    let a = app.create_action(two_options("Ours")).await;
    let id = a["id"].as_str().unwrap();
    let (action, decision) = (
        format!("/v1/actions/{id}"),
        format!("/v1/actions/{id}/decision"),
    );
    let outsider = app.outsider();
    outsider.get_err(&action, 404, "ACTION_NOT_FOUND").await;
    let binding =
        json!({"action_version": 1, "fingerprint": a["fingerprint"], "option_id": "approve"});
    outsider
        .post_err(&decision, binding.clone(), 404, "ACTION_NOT_FOUND")
        .await;
    let inbox: Value = outsider.get("/v1/me/actions", 200).await;
    assert_eq!(inbox["data"], json!([]));
    let _: Value = outsider.get("/v1/sources", 200).await;
    let source = format!("/v1/sources/{}", app.creds["source_id"].as_str().unwrap());
    outsider.get_err(&source, 404, "SOURCE_NOT_FOUND").await;
    let viewer = app.member(Role::Viewer);
    let _: Value = viewer.get(&action, 200).await;
    viewer.post_err(&decision, binding, 403, "FORBIDDEN").await;
    viewer
        .post_err("/v1/sources", json!({"name": "x"}), 403, "FORBIDDEN")
        .await;
    let still: Value = app.admin().get(&action, 200).await;
    assert_eq!(still["data"]["status"], "open");
}

#[tokio::test]
async fn the_webhook_secret_rotates_on_request() {
    let app = TestApp::spawn().await;
    let id = app.creds["source_id"].as_str().unwrap();
    let r = app
        .post(
            &format!("/v1/sources/{id}/keys/rotate"),
            &app.user_token(),
            json!({"environment": "none", "webhook_secret": true}),
        )
        .await;
    let secrets = &r.ok(200)["secrets"];
    assert!(
        secrets["webhook_secret"]
            .as_str()
            .unwrap()
            .starts_with("whsec_")
    );
    assert_ne!(secrets["webhook_secret"], app.creds["webhook_secret"]);
    assert!(secrets.get("live_key").is_none());
    // Keys were untouched.
    app.create_action(two_options("still works")).await;
    app.post(
        &format!("/v1/sources/{id}/keys/rotate"),
        &app.user_token(),
        json!({"environment": "none"}),
    )
    .await
    .error(422, "VALIDATION_ERROR");
}

/// Revoking a Source cancels its open Actions (live and test) in the same
/// commit: nobody is left to act on a decision, so none can be made, and the
/// Source's held long poll answers at once. Closed Actions are untouched.
#[tokio::test]
async fn revoking_a_source_cancels_its_open_actions() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let live = app.create_action(two_options("Open, live")).await;
    let test = app
        .create_action_with(&app.test_key(), two_options("Open, test"))
        .await;
    let done = app.create_action(two_options("Decided")).await;
    app.decide(&done, json!({"option_id": "approve"}))
        .await
        .ok(200);
    let poll = app.held_poll(live["id"].as_str().unwrap()).await;

    let src = app.creds["source_id"].as_str().unwrap();
    let _: Value = admin.delete(&format!("/v1/sources/{src}"), 204).await;

    let polled = TestApp::answer(poll).await;
    assert_eq!(polled["status"], "cancelled");
    assert_eq!(polled["resolution_reason"], "the Source was revoked");
    for (a, env) in [(&live, "live"), (&test, "test")] {
        let id = a["id"].as_str().unwrap();
        let read: Value = admin
            .get(&format!("/v1/actions/{id}?environment={env}"), 200)
            .await;
        let last = read["data"]["history"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(read["data"]["status"], "cancelled");
        assert_eq!(last["type"], "cancelled");
        assert_eq!(last["actor"]["type"], "system");
        assert_eq!(last["data"]["reason"], "the Source was revoked");
        app.decide(a, json!({"option_id": "approve"}))
            .await
            .error(409, "ACTION_NOT_OPEN");
    }
    let kept: Value = admin
        .get(
            &format!("/v1/actions/{}", done["id"].as_str().unwrap()),
            200,
        )
        .await;
    assert_eq!(kept["data"]["status"], "resolved");
}
