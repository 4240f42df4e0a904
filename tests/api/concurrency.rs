//! Races: the first terminal transition wins; one idempotency key makes one Action.

use reqwest::Method;
use serde_json::json;

use crate::helpers::{TestApp, two_options};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_concurrent_decisions_one_wins() {
    let app = std::sync::Arc::new(TestApp::spawn().await);
    let a = app.create_action(two_options("Race")).await;
    let mut tasks = Vec::new();
    for i in 0..16 {
        let (app, a) = (app.clone(), a.clone());
        let choice = if i % 2 == 0 { "approve" } else { "reject" };
        tasks.push(tokio::spawn(async move {
            app.decide(&a, json!({"option_id": choice})).await
        }));
    }
    let mut won = Vec::new();
    let mut lost = 0;
    for t in tasks {
        let r = t.await.unwrap();
        match r.status.as_u16() {
            200 => won.push(r.body["data"]["resolution_option_id"].clone()),
            _ => {
                r.error(409, "ACTION_NOT_OPEN");
                lost += 1;
            }
        }
    }
    assert_eq!((won.len(), lost), (1, 15));
    let h = app
        .get(
            &format!("/v1/actions/{}", a["id"].as_str().unwrap()),
            &app.user_token(),
        )
        .await;
    let resolved: Vec<_> = h.body["data"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "resolved")
        .collect();
    assert_eq!(resolved.len(), 1);
    assert_eq!(h.body["data"]["resolution_option_id"], won[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_concurrent_creates_with_one_key_make_one_action() {
    let app = std::sync::Arc::new(TestApp::spawn().await);
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let app = app.clone();
        tasks.push(tokio::spawn(async move {
            app.call(
                Method::POST,
                "/v1/actions",
                Some(&app.live_key()),
                Some(&two_options("Once")),
                &[("idempotency-key", "same-key")],
            )
            .await
        }));
    }
    let mut ids = std::collections::HashSet::new();
    for t in tasks {
        let r = t.await.unwrap();
        match r.status.as_u16() {
            201 => {
                ids.insert(r.body["data"]["id"].as_str().unwrap().to_owned());
            }
            _ => {
                r.error(409, "IDEMPOTENCY_CONFLICT");
            }
        }
    }
    assert_eq!(ids.len(), 1);
    let all = app
        .get("/v1/me/actions?status=all", &app.user_token())
        .await;
    assert_eq!(all.ok(200)["data"].as_array().unwrap().len(), 1);
}
