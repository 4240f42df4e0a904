//! GET /v1/me/actions: filters and bounds (guide: "GET /v1/me/actions").

use serde_json::json;

use crate::helpers::{TestApp, two_options};

fn titles(v: &serde_json::Value) -> Vec<String> {
    v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn inbox_filters_sort_and_bound() {
    let app = TestApp::spawn().await;
    let user = app.user_token();
    let mut low = two_options("Low thing");
    low["priority"] = json!("low");
    app.create_action(low).await;
    let mut urgent = two_options("Urgent 100% thing");
    urgent["priority"] = json!("urgent");
    urgent["assignee_user_id"] = app.creds["user_id"].clone();
    app.create_action(urgent).await;
    let done = app.create_action(two_options("Done thing")).await;
    app.decide(&done, json!({"option_id": "approve"}))
        .await
        .ok(200);
    app.create_action_with(&app.test_key(), two_options("Test thing"))
        .await;

    // Default: live, open, most pressing first.
    assert_eq!(
        titles(app.get("/v1/me/actions", &user).await.ok(200)),
        ["Urgent 100% thing", "Low thing"]
    );
    assert_eq!(
        titles(
            app.get("/v1/me/actions?status=resolved", &user)
                .await
                .ok(200)
        ),
        ["Done thing"]
    );
    assert_eq!(
        titles(
            app.get("/v1/me/actions?environment=test", &user)
                .await
                .ok(200)
        ),
        ["Test thing"]
    );
    assert_eq!(
        app.get("/v1/me/actions?environment=all&status=all", &user)
            .await
            .ok(200)["data"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    assert_eq!(
        titles(app.get("/v1/me/actions?priority=low", &user).await.ok(200)),
        ["Low thing"]
    );
    // `%` is matched literally, not as a wildcard.
    assert_eq!(
        titles(app.get("/v1/me/actions?search=100%25", &user).await.ok(200)),
        ["Urgent 100% thing"]
    );
    assert_eq!(
        titles(app.get("/v1/me/actions?scope=mine", &user).await.ok(200)),
        ["Urgent 100% thing"]
    );
    assert_eq!(
        titles(
            app.get("/v1/me/actions?routing=unassigned", &user)
                .await
                .ok(200)
        ),
        ["Low thing"]
    );
    let src = app.creds["source_id"].as_str().unwrap();
    assert_eq!(
        app.get(&format!("/v1/me/actions?source_id={src}"), &user)
            .await
            .ok(200)["data"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let page = app.get("/v1/me/actions?limit=1", &user).await;
    assert_eq!(page.ok(200)["data"].as_array().unwrap().len(), 1);
    assert_eq!(page.body["has_more"], true);

    for bad in [
        "limit=0",
        "limit=201",
        "limit=ten",
        "status=pending",
        "environment=prod",
        "scope=team",
        "priority=p1",
        "routing=x",
    ] {
        app.get(&format!("/v1/me/actions?{bad}"), &user)
            .await
            .error(422, "VALIDATION_ERROR");
    }
    let long = "a".repeat(121);
    let e = app
        .get(&format!("/v1/me/actions?search={long}"), &user)
        .await;
    assert_eq!(
        e.error(422, "VALIDATION_ERROR")["details"]["errors"][0]["field"],
        "search"
    );
    app.get(&format!("/v1/me/actions?search={}", "a".repeat(120)), &user)
        .await
        .ok(200);
}
