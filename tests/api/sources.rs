//! Sources (SPEC §4.8) and Source scoping of Actions.

use reqwest::Method;
use serde_json::json;

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

    let upd = app
        .patch(
            &format!("/v1/sources/{id}"),
            &user,
            json!({"name": "deploy-bot-2", "description": null}),
        )
        .await;
    assert_eq!(upd.ok(200)["data"]["name"], "deploy-bot-2");
    assert_eq!(upd.body["data"]["description"], serde_json::Value::Null);
    app.patch(&format!("/v1/sources/{id}"), &user, json!({"name": ""}))
        .await
        .error(422, "VALIDATION_ERROR");

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
    let del = app
        .call(
            Method::DELETE,
            &format!("/v1/sources/{id}"),
            Some(&user),
            None,
            &[],
        )
        .await;
    assert_eq!(del.status.as_u16(), 204);
    assert_eq!(del.body, serde_json::Value::Null);
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
    let outsider = app.outsider();
    app.get(&format!("/v1/actions/{id}"), &outsider)
        .await
        .error(404, "ACTION_NOT_FOUND");
    let binding =
        json!({"action_version": 1, "fingerprint": a["fingerprint"], "option_id": "approve"});
    app.post(
        &format!("/v1/actions/{id}/decision"),
        &outsider,
        binding.clone(),
    )
    .await
    .error(404, "ACTION_NOT_FOUND");
    assert_eq!(
        app.get("/v1/me/actions", &outsider).await.ok(200)["data"],
        json!([])
    );
    app.get("/v1/sources", &outsider).await.ok(200);
    app.get(
        &format!("/v1/sources/{}", app.creds["source_id"].as_str().unwrap()),
        &outsider,
    )
    .await
    .error(404, "SOURCE_NOT_FOUND");
    let (_, viewer) = app.add_member("viewer@example.com", "viewer");
    app.get(&format!("/v1/actions/{id}"), &viewer).await.ok(200);
    app.post(&format!("/v1/actions/{id}/decision"), &viewer, binding)
        .await
        .error(403, "FORBIDDEN");
    app.post("/v1/sources", &viewer, json!({"name": "x"}))
        .await
        .error(403, "FORBIDDEN");
    assert_eq!(
        app.get(&format!("/v1/actions/{id}"), &app.user_token())
            .await
            .body["data"]["status"],
        "open"
    );
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
