//! Sources (guide: "GET /v1/sources and GET /v1/sources/{source_id}") and Source scoping of Actions.

use hds::domain::access::Role;
use reqwest::{Method, StatusCode};
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
    // A Source always has a name: null is refused, not taken as "no change".
    let e = admin
        .patch_err(
            &format!("/v1/sources/{id}"),
            json!({"name": null, "description": "kept out"}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "name", "{e}");
    let msg = e["message"].as_str().unwrap();
    assert!(msg.contains("leave the field out"), "{msg}");
    let now = app.get(&format!("/v1/sources/{id}"), &user).await;
    assert_eq!(now.body["data"]["name"], "deploy-bot-2");
    assert_eq!(now.body["data"]["description"], Value::Null);

    // Rotation (no body: both keys, a day's overlap): the old key works for
    // a day more, then stops.
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
    app.create_action_with(&live, two_options("in the overlap"))
        .await;
    let clock = &app.state.services.clock;
    clock.advance(time::Duration::days(1));
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
    // Readable, so a change is not told "no such Source": it is told why.
    for r in [
        app.patch(
            &format!("/v1/sources/{id}"),
            &user,
            json!({"name": "again"}),
        )
        .await,
        app.post(&format!("/v1/sources/{id}/keys/rotate"), &user, json!({}))
            .await,
    ] {
        let e = r.error(404, "SOURCE_NOT_FOUND");
        assert_eq!(e["details"]["status"], "revoked", "{e}");
        assert!(
            e["message"].as_str().unwrap().contains("was revoked"),
            "{e}"
        );
    }
    app.patch("/v1/sources/src_nope", &user, json!({"name": "x"}))
        .await
        .error(404, "SOURCE_NOT_FOUND");
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
    let e = viewer.post_err(&decision, binding, 403, "FORBIDDEN").await;
    assert_eq!(e["details"]["required_role"], "reviewer", "{e}");
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

/// Creates racing a revocation, their key checked before it commits: what
/// committed first is cancelled by the revocation, what comes after is
/// refused inside the write, so no open Action of a revoked Source is left
/// for a reviewer to decide.
#[tokio::test]
async fn creates_racing_a_revocation_leave_no_open_action() {
    let app = TestApp::spawn().await;
    let src = app.creds["source_id"].as_str().unwrap().to_owned();
    app.create_action(two_options("warms the key cache")).await;
    let streams = (0..6)
        .map(|t| {
            (0..15)
                .map(|i| {
                    (
                        "/v1/actions".to_owned(),
                        two_options(&format!("race {t}.{i}")),
                    )
                })
                .collect()
        })
        .collect();
    let answers = racing_a_revocation(&app, &src, streams).await;
    assert!(answers.iter().any(|(s, _)| *s == 201));
    for (status, code) in &answers {
        assert!(
            *status == 201 || (*status == 401 && code == "SOURCE_REVOKED"),
            "{status} {code}"
        );
    }
    let open: i64 = app
        .db()
        .query_row(
            "SELECT count(*) FROM actions WHERE source_id = ?1 AND status = 'open'",
            [&src],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(open, 0, "open Actions of the revoked Source: {answers:?}");
}

/// Outcome reports racing a revocation, their key checked before it
/// commits: what committed first stays, what comes after is refused inside
/// the write (401 `SOURCE_REVOKED`), so nothing is recorded in a revoked
/// Source's name after its revocation (whose cancellation of the one open
/// Action marks where it committed in the Actions' history).
#[tokio::test]
async fn outcome_reports_racing_a_revocation_record_nothing_after_it() {
    let app = TestApp::spawn().await;
    let src = app.creds["source_id"].as_str().unwrap().to_owned();
    let mut resolved = Vec::new();
    for i in 0..60 {
        let a = app.create_action(two_options(&format!("done {i}"))).await;
        app.decide(&a, json!({"option_id": "approve"}))
            .await
            .ok(200);
        resolved.push(a);
    }
    let marker = app
        .create_action(two_options("open at the revocation"))
        .await;
    let streams = resolved
        .chunks(10)
        .map(|chunk| {
            chunk
                .iter()
                .map(|a| {
                    (
                        format!("/v1/actions/{}/outcome", a["id"].as_str().unwrap()),
                        json!({"status": "success", "duration_ms": 10, "rollback": false, "action_version": a["action_version"], "fingerprint": a["fingerprint"]}),
                    )
                })
                .collect()
        })
        .collect();
    let answers = racing_a_revocation(&app, &src, streams).await;
    assert!(answers.iter().any(|(s, _)| *s == 201));
    assert!(
        answers
            .iter()
            .any(|(s, c)| *s == 401 && c == "SOURCE_REVOKED"),
        "every report came before the revocation: {answers:?}"
    );
    for (status, code) in &answers {
        assert!(
            *status == 201 || (*status == 401 && code == "SOURCE_REVOKED"),
            "{status} {code}"
        );
    }
    let db = app.db();
    let revoked_at: i64 = db
        .query_row(
            "SELECT id FROM action_events WHERE action_id = ?1 AND kind = 'cancelled'",
            [marker["id"].as_str().unwrap()],
            |r| r.get(0),
        )
        .unwrap();
    let (after, recorded): (i64, i64) = db
        .query_row(
            "SELECT count(*) FILTER (WHERE e.id > ?2), count(*) FROM action_events e
              JOIN actions a ON a.id = e.action_id
             WHERE a.source_id = ?1 AND e.kind = 'outcome_reported'",
            rusqlite::params![src, revoked_at],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        after, 0,
        "outcomes recorded after the revocation: {answers:?}"
    );
    let accepted = answers.iter().filter(|(s, _)| *s == 201).count();
    assert_eq!(recorded, i64::try_from(accepted).unwrap());
}

/// Sends each stream's requests (path and body, with the live key) one
/// after another, the streams at once, and revokes Source `src` as soon as
/// one request answered 201, while the others are still under way. Answers
/// every request's status and error code.
async fn racing_a_revocation(
    app: &TestApp,
    src: &str,
    streams: Vec<Vec<(String, Value)>>,
) -> Vec<(u16, Value)> {
    let (first_tx, first) = tokio::sync::oneshot::channel::<()>();
    let first_tx = std::sync::Mutex::new(Some(first_tx));
    let sends = streams.into_iter().map(|stream| {
        let first_tx = &first_tx;
        async move {
            let mut answers = Vec::new();
            for (path, body) in stream {
                let r = app.post(&path, &app.live_key(), body).await;
                if r.status == 201
                    && let Some(tx) = first_tx.lock().unwrap().take()
                {
                    let _ = tx.send(());
                }
                answers.push((r.status.as_u16(), r.body["error"]["code"].clone()));
            }
            answers
        }
    });
    let revoke = async {
        // Bounded: the race starts with the first request that succeeded.
        tokio::time::timeout(std::time::Duration::from_secs(60), first)
            .await
            .expect("no request succeeded within 60 s")
            .unwrap();
        let _: Value = app.admin().delete(&format!("/v1/sources/{src}"), 204).await;
    };
    let (answers, ()) = tokio::join!(futures::future::join_all(sends), revoke);
    answers.into_iter().flatten().collect()
}

/// POST /v1/sources/{id}/keys/rotate as the init owner; the answer's body.
async fn rotate(app: &TestApp, body: Value) -> Value {
    let id = app.creds["source_id"].as_str().unwrap();
    app.admin()
        .post(&format!("/v1/sources/{id}/keys/rotate"), body, 200)
        .await
}

/// The init Source's `keys` as GET /v1/sources/{id} lists them.
async fn keys(app: &TestApp) -> Vec<Value> {
    let id = app.creds["source_id"].as_str().unwrap();
    let got: Value = app.admin().get(&format!("/v1/sources/{id}"), 200).await;
    got["data"]["keys"].as_array().unwrap().clone()
}

/// `secs` after the rotation that answered `r` (its Source's `updated_at`).
fn after_rotation(r: &Value, secs: i64) -> String {
    let at = hds::domain::time::parse(r["data"]["updated_at"].as_str().unwrap()).unwrap();
    hds::domain::time::format(at + time::Duration::seconds(secs))
}

#[tokio::test]
async fn a_replaced_key_works_during_its_overlap_and_is_refused_after_it() {
    let app = TestApp::spawn().await;
    let old = app.live_key();
    app.create_action_with(&old, two_options("cached")).await;
    let r = rotate(
        &app,
        json!({"environment": "live", "key_overlap_seconds": 3600}),
    )
    .await;
    let end = after_rotation(&r, 3600);
    let new = r["secrets"]["live_key"].as_str().unwrap().to_owned();
    assert!(r["secrets"].get("test_key").is_none());
    // Listed: the current live key, the old one with its end, the test key.
    let listed = keys(&app).await;
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert_eq!(listed[0]["environment"], "live");
    assert_eq!(listed[0]["expires_at"], Value::Null);
    assert_eq!(listed[1]["environment"], "live");
    assert_eq!(listed[1]["expires_at"], end);
    assert_eq!(listed[2]["environment"], "test");
    assert_eq!(r["data"]["keys"], json!(listed));

    // Both work during the overlap; the old one was cached before it began.
    app.create_action_with(&old, two_options("old, in overlap"))
        .await;
    app.create_action_with(&new, two_options("new")).await;
    let clock = &app.state.services.clock;
    clock.advance(time::Duration::seconds(3590));
    app.create_action_with(&old, two_options("old, near its end"))
        .await;
    clock.advance(time::Duration::seconds(10));
    app.post("/v1/actions", &old, two_options("old, after"))
        .await
        .error(401, "INVALID_API_KEY");
    app.create_action_with(&new, two_options("new, after"))
        .await;
    assert_eq!(keys(&app).await.len(), 2, "the old key is no longer listed");
}

#[tokio::test]
async fn an_overlap_of_zero_ends_the_old_key_at_once_and_the_other_environment_is_untouched() {
    let app = TestApp::spawn().await;
    let (old_live, test) = (app.live_key(), app.test_key());
    // `0.0` is the whole number 0, as on every route.
    let r = rotate(
        &app,
        json!({"environment": "live", "key_overlap_seconds": 0.0}),
    )
    .await;
    let new_live = r["secrets"]["live_key"].as_str().unwrap().to_owned();
    app.post("/v1/actions", &old_live, two_options("old"))
        .await
        .error(401, "INVALID_API_KEY");
    app.create_action_with(&new_live, two_options("new")).await;
    app.create_action_with(&test, two_options("test key untouched"))
        .await;
    let listed = keys(&app).await;
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|k| k["expires_at"].is_null()));

    // The test key alone, with the default overlap of a day.
    let r = rotate(&app, json!({"environment": "test"})).await;
    let end = after_rotation(&r, 86_400);
    assert!(r["secrets"].get("live_key").is_none());
    let new_test = r["secrets"]["test_key"].as_str().unwrap().to_owned();
    app.create_action_with(&test, two_options("old test, in overlap"))
        .await;
    app.create_action_with(&new_test, two_options("new test"))
        .await;
    app.create_action_with(&new_live, two_options("live untouched"))
        .await;
    let old_test: Vec<_> = keys(&app)
        .await
        .into_iter()
        .filter(|k| !k["expires_at"].is_null())
        .collect();
    assert_eq!(old_test.len(), 1);
    assert_eq!(old_test[0]["environment"], "test");
    assert_eq!(old_test[0]["expires_at"], end);
}

/// At most two keys of an environment work: rotating again during an
/// overlap ends the key that was already ending, at once.
#[tokio::test]
async fn rotating_again_during_an_overlap_ends_the_oldest_key() {
    let app = TestApp::spawn().await;
    let first = app.live_key();
    let r = rotate(&app, json!({"environment": "live"})).await;
    let second = r["secrets"]["live_key"].as_str().unwrap().to_owned();
    app.create_action_with(&first, two_options("first, cached"))
        .await;
    app.state
        .services
        .clock
        .advance(time::Duration::minutes(10));
    let r = rotate(
        &app,
        json!({"environment": "live", "key_overlap_seconds": 600}),
    )
    .await;
    let end = after_rotation(&r, 600);
    let third = r["secrets"]["live_key"].as_str().unwrap().to_owned();
    app.post("/v1/actions", &first, two_options("first"))
        .await
        .error(401, "INVALID_API_KEY");
    app.create_action_with(&second, two_options("second")).await;
    app.create_action_with(&third, two_options("third")).await;
    let live: Vec<_> = keys(&app)
        .await
        .into_iter()
        .filter(|k| k["environment"] == "live")
        .collect();
    assert_eq!(live.len(), 2, "{live:?}");
    assert_eq!(live[1]["expires_at"], end, "the new overlap, not the first");
}

#[tokio::test]
async fn key_overlap_seconds_must_be_between_0_and_7_days() {
    let app = TestApp::spawn().await;
    let id = app.creds["source_id"].as_str().unwrap();
    for bad in [json!(-1), json!(604_801), json!("3600"), json!(1.5)] {
        let r = app
            .post(
                &format!("/v1/sources/{id}/keys/rotate"),
                &app.user_token(),
                json!({"environment": "live", "key_overlap_seconds": bad}),
            )
            .await;
        let e = r.error(422, "VALIDATION_ERROR");
        assert!(e.to_string().contains("key_overlap_seconds"), "{bad}: {e}");
    }
    // Nothing was rotated.
    app.create_action(two_options("still works")).await;
    assert_eq!(keys(&app).await.len(), 2);
    rotate(
        &app,
        json!({"environment": "live", "key_overlap_seconds": 604_800}),
    )
    .await;
}

#[tokio::test]
async fn revoking_a_source_ends_keys_in_their_overlap_too() {
    let app = TestApp::spawn().await;
    let old = app.live_key();
    app.create_action_with(&old, two_options("cached")).await;
    let r = rotate(&app, json!({"environment": "both"})).await;
    let new = r["secrets"]["live_key"].as_str().unwrap().to_owned();
    app.create_action_with(&old, two_options("in overlap"))
        .await;
    let id = app.creds["source_id"].as_str().unwrap();
    let _: Value = app.admin().delete(&format!("/v1/sources/{id}"), 204).await;
    app.post("/v1/actions", &old, two_options("old"))
        .await
        .error(401, "INVALID_API_KEY");
    app.post("/v1/actions", &new, two_options("new"))
        .await
        .error(401, "SOURCE_REVOKED");
    app.post("/v1/actions", &app.test_key(), two_options("old test"))
        .await
        .error(401, "INVALID_API_KEY");
    assert_eq!(keys(&app).await, Vec::<Value>::new());
}

/// The text of the element with `id` in `html` (its first text run).
fn text_of<'a>(html: &'a str, id: &str) -> Option<&'a str> {
    let start = html.find(&format!("id=\"{id}\">"))? + id.len() + 6;
    html[start..].split('<').next()
}

/// POST-redirect-GET on the dashboard: rotating from the Source page (after
/// its confirmation) redirects to a page that shows the new key once; a
/// reload shows a notice and rotates nothing. Creating a Source does the same.
#[tokio::test]
async fn the_source_page_shows_new_keys_once_and_a_reload_changes_nothing() {
    let app = TestApp::spawn().await;
    let browser = app.browser(app.admin().person()).await;
    let id = app.creds["source_id"].as_str().unwrap();
    let rotate = format!("/app/sources/{id}/rotate");
    let form = [
        ("_csrf", browser.csrf()),
        ("environment", "live"),
        ("overlap", "3600"),
    ];
    // First the confirmation, which changes nothing.
    let ask = browser.post_form(&rotate, Some(&app.base), &form).await;
    assert_eq!(ask.status(), StatusCode::OK);
    let html = ask.text().await.unwrap();
    assert!(html.contains("Replace the live key?"), "{html}");
    assert!(html.contains("keeps working until"), "{html}");
    app.create_action(two_options("not rotated yet")).await;

    let mut confirmed = form.to_vec();
    confirmed.push(("confirmed", "yes"));
    let done = browser
        .post_form(&rotate, Some(&app.base), &confirmed)
        .await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    let to = done.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(to, format!("/app/sources/{id}?done=rotated"));
    let shown = browser.page(&to).await;
    let new = text_of(&shown, "secret-live")
        .expect("the new live key")
        .to_owned();
    assert!(new.starts_with("svc_live_"), "{new}");
    assert!(
        text_of(&shown, "secret-test").is_none(),
        "only the live key"
    );
    assert!(shown.contains("old live key works until"), "{shown}");

    let again = browser.page(&to).await;
    assert!(!again.contains(&new), "shown once: {again}");
    assert!(again.contains("id=\"shown-once\""), "{again}");
    assert!(again.contains("old live key works until"), "{again}");
    // The reload rotated nothing: the shown key and the old one both work.
    app.create_action_with(&new, two_options("new key")).await;
    app.create_action(two_options("old key, in overlap")).await;
    assert_eq!(keys(&app).await.len(), 3);
    // Replacing the live key again: the confirmation says the key still in
    // its overlap stops at once (at most two keys per environment).
    let ask = browser.post_form(&rotate, Some(&app.base), &form).await;
    let html = ask.text().await.unwrap();
    assert!(
        html.contains("The live key svc_live_")
            && html.contains("replaced earlier, which would work until"),
        "{html}"
    );
    assert!(html.contains("stops working at once."), "{html}");

    // Creating a Source: redirected to its page, secrets shown there once.
    let made = browser
        .post_form(
            "/app/sources",
            Some(&app.base),
            &[("_csrf", browser.csrf()), ("name", "Deploy bot")],
        )
        .await;
    assert_eq!(made.status(), StatusCode::SEE_OTHER);
    let to = made.headers()["location"].to_str().unwrap().to_owned();
    assert!(to.ends_with("?done=created"), "{to}");
    let shown = browser.page(&to).await;
    assert!(shown.contains("Source “Deploy bot” created"), "{shown}");
    let live = text_of(&shown, "secret-live").unwrap().to_owned();
    let test = text_of(&shown, "secret-test").unwrap().to_owned();
    let secret = text_of(&shown, "secret-webhook").unwrap().to_owned();
    assert!(test.starts_with("svc_test_") && secret.starts_with("whsec_"));
    let again = browser.page(&to).await;
    for s in [&live, &test, &secret] {
        assert!(!again.contains(s.as_str()), "{again}");
    }
    app.create_action_with(&live, two_options("from the new Source"))
        .await;
}

/// The Source page's second form replaces only the webhook secret (shown
/// once, keys untouched); an overlap out of range is refused on the page.
#[tokio::test]
async fn the_source_page_replaces_the_webhook_secret_alone_and_refuses_a_bad_overlap() {
    let app = TestApp::spawn().await;
    let browser = app.browser(app.admin().person()).await;
    let id = app.creds["source_id"].as_str().unwrap();
    let rotate = format!("/app/sources/{id}/rotate");
    let form = |overlap| {
        [
            ("_csrf", browser.csrf()),
            ("environment", "none"),
            ("webhook_secret", "yes"),
            ("overlap", overlap),
            ("confirmed", "yes"),
        ]
    };
    let bad = browser
        .post_form(&rotate, Some(&app.base), &form("604801"))
        .await;
    assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = bad.text().await.unwrap();
    assert!(html.contains("between 0 and 604800"), "{html}");
    // Refused before the confirmation is drawn, too: an overlap out of
    // range (even one past the calendar's end) and keys that do not exist.
    for (env, overlap, says) in [
        ("live", "99999999999999", "between 0 and 604800"),
        ("live", "-5", "between 0 and 604800"),
        (
            "staging",
            "3600",
            "choose the live key, the test key or both",
        ),
        ("none", "3600", "choose the live key, the test key or both"),
    ] {
        let r = browser
            .post_form(
                &rotate,
                Some(&app.base),
                &[
                    ("_csrf", browser.csrf()),
                    ("environment", env),
                    ("overlap", overlap),
                ],
            )
            .await;
        assert_eq!(
            r.status(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "{env} {overlap}"
        );
        let html = r.text().await.unwrap();
        assert!(html.contains(says), "{env} {overlap}: {html}");
    }

    let done = browser
        .post_form(&rotate, Some(&app.base), &form("0"))
        .await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    let shown = browser
        .page(&format!("/app/sources/{id}?done=rotated"))
        .await;
    let secret = text_of(&shown, "secret-webhook").unwrap();
    assert!(secret.starts_with("whsec_"), "{secret}");
    assert_ne!(secret, app.creds["webhook_secret"].as_str().unwrap());
    assert!(text_of(&shown, "secret-live").is_none());
    // Keys untouched.
    app.create_action(two_options("same key")).await;
    assert_eq!(keys(&app).await.len(), 2);
}

/// The dashboard's revocation asks first and says how many open Actions it
/// cancels; confirmed, it cancels them.
#[tokio::test]
async fn revoking_a_source_in_the_dashboard_says_what_it_cancels() {
    let app = TestApp::spawn().await;
    let created = app
        .post(
            "/v1/sources",
            &app.user_token(),
            json!({"name": "deploy-bot"}),
        )
        .await
        .ok(201)
        .clone();
    let id = created["data"]["id"].as_str().unwrap().to_owned();
    let key = created["secrets"]["live_key"].as_str().unwrap().to_owned();
    let bot = app.bearer(&key);
    let mut made = Vec::new();
    for t in ["One", "Two"] {
        let a: Value = bot.post("/v1/actions", two_options(t), 201).await;
        made.push(a["data"]["id"].as_str().unwrap().to_owned());
    }
    let browser = app.browser(app.admin().person()).await;
    let path = format!("/app/sources/{id}/revoke");
    let r = browser
        .post_form(&path, Some(&app.base), &[("_csrf", browser.csrf())])
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let page = r.text().await.unwrap();
    assert!(
        page.contains("Its 2 open Actions will be cancelled."),
        "{page}"
    );
    let r = browser
        .post_form(
            &path,
            Some(&app.base),
            &[("_csrf", browser.csrf()), ("confirmed", "yes")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    for a in &made {
        let got: Value = app.admin().get(&format!("/v1/actions/{a}"), 200).await;
        assert_eq!(got["data"]["status"], "cancelled", "{got}");
    }
}
