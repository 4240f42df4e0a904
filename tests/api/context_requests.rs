//! Context requests (guide: "Context requests"): a reviewer asks the Source
//! for more; `poll` and `callback` Actions list the questions, `callback`
//! also sends `action.context_requested`, and a material PATCH answers them.

use hds::domain::access::Role;
use serde_json::{Value, json};

use crate::helpers::TestApp;

fn action(mode: Option<&str>) -> Value {
    let mut body = json!({
        "title": "Grant access",
        "options": [{"id": "approve", "label": "Approve"}, {"id": "reject", "label": "Reject"}],
        "callback_url": "https://hooks.example.com/hds"
    });
    if let Some(m) = mode {
        body["context_request_mode"] = json!(m);
    }
    body
}

fn ask_path(a: &Value) -> String {
    format!("/v1/actions/{}/context-requests", a["id"].as_str().unwrap())
}

async fn webhook_types(app: &TestApp) -> Vec<(String, Value)> {
    app.state
        .services
        .db
        .read(|c| {
            let mut st = c.prepare(
                "SELECT d.event_type, b.body FROM webhook_deliveries d JOIN webhook_bodies b ON b.id = d.body_id ORDER BY d.created_at, d.id",
            )?;
            let rows =
                st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
            let mut out = Vec::new();
            for row in rows {
                let (t, b) = row?;
                out.push((t, serde_json::from_str(&b)?));
            }
            Ok(out)
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn poll_mode_lists_questions_on_the_action_for_sources_and_users() {
    let app = TestApp::spawn().await;
    let a = app.create_action(action(Some("poll"))).await;
    assert_eq!(a["context_requests"], json!([]));
    let reviewer = app.member(Role::Reviewer);
    let q: Value = reviewer
        .post(
            &ask_path(&a),
            json!({"question": "Which team is this for?"}),
            201,
        )
        .await;
    let cx = &q["data"];
    assert!(cx["id"].as_str().unwrap().starts_with("cxr_"), "{cx}");
    assert_eq!(cx["object"], "context_request");
    assert_eq!(cx["action_id"], a["id"]);
    assert_eq!(cx["question"], "Which team is this for?");
    assert_eq!(cx["status"], "open");
    assert_eq!(cx["requested_by"]["user_id"], reviewer.person().id.as_str());
    assert_eq!(cx["answered_at"], Value::Null);
    assert_eq!(cx["answered_in_version"], Value::Null);
    let q2: Value = reviewer
        .post(&ask_path(&a), json!({"question": "And for how long?"}), 201)
        .await;

    let id = a["id"].as_str().unwrap();
    let src: Value = app
        .source()
        .get(&format!("/v1/source/actions/{id}"), 200)
        .await;
    let listed = src["data"]["context_requests"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    // Oldest first.
    assert_eq!(listed[0], *cx);
    assert_eq!(listed[1], q2["data"]);
    let user: Value = reviewer.get(&format!("/v1/actions/{id}"), 200).await;
    assert_eq!(
        user["data"]["context_requests"],
        src["data"]["context_requests"]
    );
    let last = user["data"]["history"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["type"], "context_requested");
    assert_eq!(last["data"]["context_request_id"], q2["data"]["id"]);
    // Nothing changed the binding, and poll mode sends no webhook.
    assert_eq!(src["data"]["action_version"], 1);
    assert_eq!(src["data"]["status"], "open");
    assert!(webhook_types(&app).await.is_empty());
}

#[tokio::test]
async fn callback_mode_also_queues_the_webhook() {
    let app = TestApp::spawn().await;
    let a = app.create_action(action(Some("callback"))).await;
    let reviewer = app.member(Role::Reviewer);
    let q: Value = reviewer
        .post(&ask_path(&a), json!({"question": "Link the ticket?"}), 201)
        .await;
    let queued = webhook_types(&app).await;
    assert_eq!(queued.len(), 1, "{queued:?}");
    let (kind, msg) = &queued[0];
    assert_eq!(kind, "action.context_requested");
    assert_eq!(msg["type"], "action.context_requested");
    assert_eq!(msg["data"]["context_request"], q["data"]);
    assert_eq!(msg["data"]["action"]["id"], a["id"]);
    // data.action is the Action as the Source reads it: the question listed.
    assert_eq!(msg["data"]["action"]["context_requests"][0], q["data"]);
}

#[tokio::test]
async fn unsupported_mode_refuses_and_lists_nothing() {
    let app = TestApp::spawn().await;
    for mode in [None, Some("unsupported")] {
        let a = app.create_action(action(mode)).await;
        assert_eq!(a["context_requests"], Value::Null);
        let e = app
            .member(Role::Reviewer)
            .post_err(
                &ask_path(&a),
                json!({"question": "Why?"}),
                409,
                "CONTEXT_REQUESTS_UNSUPPORTED",
            )
            .await;
        assert!(
            e["message"].as_str().unwrap().contains("unsupported"),
            "{e}"
        );
    }
    assert_eq!(app.count_rows("context_requests"), 0);
}

#[tokio::test]
async fn questions_are_validated_and_need_an_open_action_and_a_working_role() {
    let app = TestApp::spawn().await;
    let a = app.create_action(action(Some("poll"))).await;
    let reviewer = app.member(Role::Reviewer);
    let p = ask_path(&a);
    for bad in [
        json!({"question": ""}),
        json!({"question": "   \n "}),
        json!({"question": "\u{200b}\u{feff}"}),
        json!({}),
        json!({"question": 3}),
        json!({"question": "x".repeat(2001)}),
        json!({"question": "ok", "extra": 1}),
    ] {
        let e = reviewer
            .post_err(&p, bad.clone(), 422, "VALIDATION_ERROR")
            .await;
        assert!(
            e.to_string().contains("question") || e.to_string().contains("extra"),
            "{bad}: {e}"
        );
    }
    let ok: Value = reviewer
        .post(&p, json!({"question": "ü".repeat(2000)}), 201)
        .await;
    assert_eq!(
        ok["data"]["question"].as_str().unwrap().chars().count(),
        2000
    );

    let viewer = app.member(Role::Viewer);
    let e = viewer
        .post_err(&p, json!({"question": "Why?"}), 403, "FORBIDDEN")
        .await;
    assert_eq!(e["details"]["required_role"], "reviewer");
    app.outsider()
        .post_err(&p, json!({"question": "Why?"}), 404, "ACTION_NOT_FOUND")
        .await;
    app.source()
        .post_err(&p, json!({"question": "Why?"}), 401, "INVALID_API_KEY")
        .await;

    app.decide(&a, json!({"option_id": "approve"}))
        .await
        .ok(200);
    let e = reviewer
        .post_err(&p, json!({"question": "Too late?"}), 409, "ACTION_NOT_OPEN")
        .await;
    assert_eq!(e["details"]["status"], "resolved");
    assert_eq!(app.count_rows("context_requests"), 1);
}

#[tokio::test]
async fn a_material_patch_answers_open_questions_and_a_priority_change_does_not() {
    let app = TestApp::spawn().await;
    let a = app.create_action(action(Some("poll"))).await;
    let id = a["id"].as_str().unwrap();
    let reviewer = app.member(Role::Reviewer);
    let q: Value = reviewer
        .post(&ask_path(&a), json!({"question": "Which database?"}), 201)
        .await;
    let src = app.source();

    let p: Value = src
        .patch(
            &format!("/v1/actions/{id}"),
            json!({"priority": "high"}),
            200,
        )
        .await;
    assert_eq!(p["data"]["action_version"], 1);
    assert_eq!(p["data"]["context_requests"][0]["status"], "open");

    let p: Value = src
        .patch(
            &format!("/v1/actions/{id}"),
            json!({"description": "The orders database, read-only."}),
            200,
        )
        .await;
    assert_eq!(p["data"]["action_version"], 2);
    let answered = &p["data"]["context_requests"][0];
    assert_eq!(answered["id"], q["data"]["id"]);
    assert_eq!(answered["status"], "answered");
    assert_eq!(answered["answered_in_version"], 2);
    assert!(answered["answered_at"].is_string());

    // A later question stays open until the next material change.
    let q2: Value = reviewer
        .post(&ask_path(&a), json!({"question": "How long?"}), 201)
        .await;
    let read: Value = reviewer.get(&format!("/v1/actions/{id}"), 200).await;
    let list = read["data"]["context_requests"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["status"], "answered");
    assert_eq!(list[0]["answered_in_version"], 2);
    assert_eq!(list[1]["id"], q2["data"]["id"]);
    assert_eq!(list[1]["status"], "open");
    let p: Value = src
        .patch(
            &format!("/v1/actions/{id}"),
            json!({"title": "Grant access for 2 days"}),
            200,
        )
        .await;
    assert_eq!(p["data"]["context_requests"][1]["answered_in_version"], 3);
    // The first answer keeps its version.
    assert_eq!(p["data"]["context_requests"][0]["answered_in_version"], 2);
}

async fn ask_keyed(
    a: &Value,
    who: &crate::helpers::Actor,
    question: &str,
    key: &str,
) -> crate::helpers::Resp {
    who.call(
        reqwest::Method::POST,
        &ask_path(a),
        Some(&json!({ "question": question })),
        &[("idempotency-key", key)],
    )
    .await
}

/// A retried question with the same Idempotency-Key asks once: one request,
/// one webhook; another question under that key is refused, and keys are
/// each person's own.
#[tokio::test]
async fn a_question_retried_with_its_idempotency_key_is_asked_once() {
    let app = TestApp::spawn().await;
    let a = app.create_action(action(Some("callback"))).await;
    let reviewer = app.member(Role::Reviewer);
    let first = ask_keyed(&a, &reviewer, "Which release?", "q-1").await;
    let data = first.ok(201)["data"].clone();
    assert_eq!(first.ok(201)["idempotent_replay"], false);
    let again = ask_keyed(&a, &reviewer, "Which release?", "q-1").await;
    assert_eq!(again.ok(201)["idempotent_replay"], true);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.ok(201)["data"]["id"], data["id"]);
    let other = ask_keyed(&a, &reviewer, "Which region?", "q-1").await;
    other.error(409, "IDEMPOTENCY_KEY_REUSED");
    // Another person's key of the same name is theirs.
    let second = app.member(Role::Reviewer);
    let theirs = ask_keyed(&a, &second, "Which release?", "q-1").await;
    assert_ne!(theirs.ok(201)["data"]["id"], data["id"]);
    let bad = ask_keyed(&a, &reviewer, "Which release?", "").await;
    bad.error(400, "INVALID_IDEMPOTENCY_KEY");

    let asked: Vec<(String, Value)> = webhook_types(&app)
        .await
        .into_iter()
        .filter(|(t, _)| t == "action.context_requested")
        .collect();
    assert_eq!(asked.len(), 2, "{asked:?}");
    let src: Value = app
        .source()
        .get(
            &format!("/v1/source/actions/{}", a["id"].as_str().unwrap()),
            200,
        )
        .await;
    assert_eq!(
        src["data"]["context_requests"].as_array().unwrap().len(),
        2,
        "{src}"
    );
}

/// The dashboard's "Ask the Source" form carries one key per rendering: a
/// double submit asks once; a new rendering asks again.
#[tokio::test]
async fn a_double_submitted_question_in_the_dashboard_is_asked_once() {
    let app = TestApp::spawn().await;
    let a = app.create_action(action(Some("poll"))).await;
    let id = a["id"].as_str().unwrap();
    let reviewer = app.member(Role::Reviewer);
    let browser = app.browser(reviewer.person()).await;
    let page = browser.page(&format!("/app/actions/{id}")).await;
    let form_start = page.find(r#"id="context-form""#).expect("the form");
    let press = page[form_start..]
        .split(r#"name="press_id" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a press id in the form")
        .to_owned();
    let path = format!("/app/actions/{id}/context-requests");
    for _ in 0..2 {
        let r = browser
            .post_form(
                &path,
                Some(&app.base),
                &[
                    ("_csrf", browser.csrf()),
                    ("press_id", &press),
                    ("question", "Which release?"),
                ],
            )
            .await;
        assert_eq!(r.status(), 303);
        assert_eq!(
            r.headers()["location"],
            format!("/app/actions/{id}?done=asked")
        );
    }
    assert_eq!(app.count_rows("context_requests"), 1);
    let again = browser.page(&format!("/app/actions/{id}")).await;
    assert!(!again.contains(&press), "a new rendering, a new key");

    // A refused question comes back in its box, to be shortened.
    let long = format!("Which release? {}", "x".repeat(2_000));
    let r = browser
        .post_form(
            &path,
            Some(&app.base),
            &[("_csrf", browser.csrf()), ("question", &long)],
        )
        .await;
    assert_eq!(r.status(), 422);
    let html = r.text().await.unwrap();
    assert!(html.contains("Not sent: "), "{html}");
    assert!(html.contains(&format!(">{long}</textarea>")), "kept");
    assert_eq!(app.count_rows("context_requests"), 1);
}
