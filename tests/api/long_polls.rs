//! Every way an Action closes, and a question to its Source, wakes a
//! Source's held long poll, after the commit (the decision itself: actions.rs; expiry: expiry.rs), and every
//! change tells open dashboards to refresh.

use hds::domain::access::Role;
use serde_json::{Value, json};

use crate::helpers::{TestApp, two_options};

fn binding(a: &Value) -> Value {
    json!({"action_version": a["action_version"], "fingerprint": a["fingerprint"]})
}

#[tokio::test]
async fn a_source_resolve_or_cancel_wakes_a_held_long_poll() {
    let app = TestApp::spawn().await;
    let source = app.source();
    let resolved = app.create_action(two_options("Resolve me")).await;
    let cancelled = app.create_action(two_options("Cancel me")).await;
    let id = |a: &Value| a["id"].as_str().unwrap().to_owned();

    let poll = app.held_poll(&id(&resolved)).await;
    let mut body = binding(&resolved);
    body["option_id"] = json!("approve");
    let _: Value = source
        .post(&format!("/v1/actions/{}/resolve", id(&resolved)), body, 200)
        .await;
    let d = TestApp::answer(poll).await;
    assert_eq!(d["status"], "resolved");
    assert_eq!(d["resolved_by"]["type"], "source");

    let poll = app.held_poll(&id(&cancelled)).await;
    let _: Value = source
        .post(
            &format!("/v1/actions/{}/cancel", id(&cancelled)),
            json!({"reason": "superseded"}),
            200,
        )
        .await;
    let d = TestApp::answer(poll).await;
    assert_eq!(d["status"], "cancelled");
    assert_eq!(d["resolution_reason"], "superseded");
}

#[tokio::test]
async fn a_vote_wakes_the_poll_only_when_it_reaches_the_quorum() {
    let app = TestApp::spawn().await;
    let (ann, bob) = (app.member(Role::Reviewer), app.member(Role::Reviewer));
    let mut body = two_options("Rotate the root key");
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([ann.person().id, bob.person().id]);
    body["approval_policy"] = json!({"required_approvals": 2});
    let a = app.create_action(body).await;
    let path = format!("/v1/actions/{}/votes", a["id"].as_str().unwrap());
    let vote = |v: &str| {
        let mut b = binding(&a);
        b["vote"] = json!(v);
        b
    };
    let poll = app.held_poll(a["id"].as_str().unwrap()).await;
    let _: Value = ann.post(&path, vote("approve"), 200).await;
    // One approval of two: the Action stays open and the poll stays held.
    tokio::task::yield_now().await;
    assert!(!poll.is_finished(), "an open Action woke the poll");
    let _: Value = bob.post(&path, vote("approve"), 200).await;
    let d = TestApp::answer(poll).await;
    assert_eq!(d["status"], "resolved");
    assert_eq!(d["resolution_option_id"], "approve");
}

/// A question to the Source (a context request) wakes its held long poll
/// with the Action still open, carrying the question: a poll-mode Source
/// learns of it at once, and a blocking create does not hold out against
/// a reviewer who waits for the answer. A comment does not wake it.
#[tokio::test]
async fn a_question_to_the_source_wakes_its_held_long_poll() {
    let app = TestApp::spawn().await;
    let mut body = two_options("Which region?");
    body["context_request_mode"] = json!("poll");
    let a = app.create_action(body).await;
    let id = a["id"].as_str().unwrap();
    let reviewer = app.member(Role::Reviewer);
    let poll = app.held_poll(id).await;
    let _: Value = reviewer
        .post(
            &format!("/v1/actions/{id}/comments"),
            json!({"body": "looking"}),
            201,
        )
        .await;
    // A woken poll answers after one read: a fifth of a second is ample.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(!poll.is_finished(), "a comment woke the poll");
    let q: Value = reviewer
        .post(
            &format!("/v1/actions/{id}/context-requests"),
            json!({"question": "Which region is this for?"}),
            201,
        )
        .await;
    let d = TestApp::answer(poll).await;
    assert_eq!(d["status"], "open");
    assert_eq!(d["context_requests"][0]["id"], q["data"]["id"], "{d}");
    assert_eq!(d["context_requests"][0]["status"], "open", "{d}");
}

#[tokio::test]
async fn every_change_to_an_action_tells_open_dashboards_to_refresh() {
    let app = TestApp::spawn().await;
    let mut changes = app.state.services.changes.subscribe();
    changes.mark_unchanged();
    let source = app.source();
    let a = app.create_action(two_options("Watched")).await;
    assert!(changes.has_changed().unwrap(), "create");
    changes.mark_unchanged();
    let path = format!("/v1/actions/{}", a["id"].as_str().unwrap());
    let patched: Value = source
        .patch(&path, json!({"title": "Watched closely"}), 200)
        .await;
    assert!(changes.has_changed().unwrap(), "patch");
    changes.mark_unchanged();
    let d = app
        .decide(&patched["data"], json!({"option_id": "approve"}))
        .await;
    let d = d.ok(200)["data"].clone();
    assert!(changes.has_changed().unwrap(), "decision");
    changes.mark_unchanged();
    // The outcome changes what the Action page and closed tabs show too.
    let mut outcome = binding(&d);
    outcome["status"] = json!("success");
    outcome["duration_ms"] = json!(1200);
    let _: Value = source.post(&format!("{path}/outcome"), outcome, 201).await;
    assert!(changes.has_changed().unwrap(), "outcome");
}

/// A key rotated away with no overlap (a leak) while a long poll it made is
/// held: the poll answers 401 `INVALID_API_KEY` when it wakes, as a new
/// request with that key would, not the Action and its receipt.
#[tokio::test]
async fn a_poll_whose_key_ended_while_it_waited_answers_401() {
    let app = TestApp::spawn().await;
    let a = app.create_action(two_options("Deploy")).await;
    let id = a["id"].as_str().unwrap().to_owned();
    let held = *app.state.services.waiters.held().borrow();
    let (http, url, key) = (
        app.http.clone(),
        format!("{}/v1/source/actions/{id}?wait_seconds=30", app.base),
        app.live_key(),
    );
    let poll = tokio::spawn(async move {
        let r = http.get(url).bearer_auth(key).send().await.unwrap();
        (r.status().as_u16(), r.json::<Value>().await.unwrap())
    });
    app.until_polls_held(held + 1).await;
    let sources: Value = app.admin().get("/v1/sources", 200).await;
    let sid = sources["data"][0]["id"].as_str().unwrap().to_owned();
    let _: Value = app
        .admin()
        .post(
            &format!("/v1/sources/{sid}/keys/rotate"),
            json!({"environment": "live", "key_overlap_seconds": 0}),
            200,
        )
        .await;
    app.decide(&a, json!({"option_id": "approve"}))
        .await
        .ok(200);
    let (status, body) = tokio::time::timeout(std::time::Duration::from_secs(10), poll)
        .await
        .expect("the held poll was not woken")
        .unwrap();
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["code"], "INVALID_API_KEY", "{body}");
    assert!(body.get("data").is_none(), "{body}");
}
