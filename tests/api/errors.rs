//! Every SPEC §7 code this service produces, each from a real request, with the
//! envelope and (for validation) `details.errors`.

use reqwest::Method;
use serde_json::json;

use crate::helpers::{TestApp, two_options};

#[tokio::test]
async fn create_validation_codes() {
    let app = TestApp::spawn().await;
    let key = app.live_key();
    let with = |extra: serde_json::Value| {
        let mut b = two_options("x");
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        b
    };
    let e = app
        .post(
            "/v1/actions",
            &key,
            with(json!({"callback_url": "http://hooks.example.com/x"})),
        )
        .await;
    assert_eq!(
        e.error(400, "INVALID_CALLBACK_URL")["details"]["errors"][0]["field"],
        "callback_url"
    );
    app.post(
        "/v1/actions",
        &key,
        with(json!({"callback_url": "https://10.0.0.8/hook"})),
    )
    .await
    .error(400, "INVALID_CALLBACK_URL");
    app.post(
        "/v1/actions",
        &key,
        with(json!({"open_url": "javascript:alert(1)"})),
    )
    .await
    .error(400, "INVALID_OPEN_URL");
    app.post(
        "/v1/actions",
        &key,
        with(json!({"expires_at": "2001-01-01T00:00:00Z"})),
    )
    .await
    .error(400, "INVALID_EXPIRATION");
    app.post("/v1/actions", &key, with(json!({"expires_at": "tomorrow"})))
        .await
        .error(400, "INVALID_EXPIRATION");

    // Several problems at once: all listed, each with its field.
    let e = app.post("/v1/actions", &key, json!({"title": "", "options": [{"label": "a"}, {"label": "a"}], "priority": "now", "extra": 1})).await;
    let errs = e.error(422, "VALIDATION_ERROR")["details"]["errors"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(errs[0]["field"], "extra");
    let e = app
        .post(
            "/v1/actions",
            &key,
            json!({"title": "", "options": [{"label": "a"}, {"label": "a"}]}),
        )
        .await;
    let errs = e.error(422, "VALIDATION_ERROR")["details"]["errors"]
        .as_array()
        .unwrap()
        .clone();
    let fields: Vec<&str> = errs.iter().map(|e| e["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["title", "options[1].id"]);
    let e = app
        .post(
            "/v1/actions",
            &key,
            json!({"title": "x", "options": [{"label": 3}]}),
        )
        .await;
    assert_eq!(
        e.error(422, "VALIDATION_ERROR")["details"]["errors"][0]["field"],
        "options[0].label"
    );
    app.post(
        "/v1/actions",
        &key,
        json!({"title": "neither options nor interaction"}),
    )
    .await
    .error(422, "VALIDATION_ERROR");

    // Limits of SPEC §8.
    let big = "x".repeat(33 * 1024);
    let e = app
        .post(
            "/v1/actions",
            &key,
            with(json!({"metadata": {"blob": big}})),
        )
        .await;
    assert_eq!(
        e.error(422, "VALIDATION_ERROR")["details"]["errors"][0]["field"],
        "metadata"
    );
    let controls: Vec<_> = (0..13).map(|i| json!({"key": format!("c{i}"), "label": "L", "kind": "link", "url": "https://x.example.com"})).collect();
    app.post("/v1/actions", &key, with(json!({"controls": controls})))
        .await
        .error(422, "VALIDATION_ERROR");
    let mutating: Vec<_> = (0..4)
        .map(
            |i| json!({"key": format!("m{i}"), "label": "L", "kind": "callback", "mutating": true}),
        )
        .collect();
    let e = app
        .post(
            "/v1/actions",
            &key,
            with(json!({"controls": mutating, "callback_url": "https://hooks.example.com/x"})),
        )
        .await;
    assert!(
        e.error(422, "VALIDATION_ERROR")["message"]
            .as_str()
            .unwrap()
            .contains("mutating")
    );
    let reviewers: Vec<_> = (0..16).map(|i| format!("r{i}@example.com")).collect();
    app.post(
        "/v1/actions",
        &key,
        with(json!({"visibility": "restricted", "reviewer_emails": reviewers})),
    )
    .await
    .error(422, "VALIDATION_ERROR");
    app.post(
        "/v1/actions",
        &key,
        with(json!({"context_request_mode": "callback"})),
    )
    .await
    .error(422, "VALIDATION_ERROR");

    // Over 256 KB: 413 before anything is parsed.
    let huge = json!({"title": "x", "description": "y".repeat(300 * 1024)});
    app.post("/v1/actions", &key, huge.clone())
        .await
        .error(413, "ACTION_PAYLOAD_TOO_LARGE");
    let a = app.create_action(two_options("patch me")).await;
    app.patch(
        &format!("/v1/actions/{}", a["id"].as_str().unwrap()),
        &key,
        huge,
    )
    .await
    .error(413, "ACTION_PAYLOAD_TOO_LARGE");

    // Nothing was written by any of the refused requests.
    let list = app
        .get("/v1/me/actions?status=all", &app.user_token())
        .await;
    assert_eq!(list.ok(200)["data"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn malformed_bodies_get_the_envelope() {
    let app = TestApp::spawn().await;
    let r = app
        .http
        .post(format!("{}/v1/actions", app.base))
        .bearer_auth(app.live_key())
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 422);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "VALIDATION_ERROR");
    assert_eq!(body["error"]["details"]["errors"][0]["field"], "body");
    app.post("/v1/actions", &app.live_key(), json!([1, 2]))
        .await
        .error(422, "VALIDATION_ERROR");
}

#[tokio::test]
async fn decision_codes() {
    let app = TestApp::spawn().await;
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
    let e = app
        .post(
            &format!("/v1/actions/{}/decision", a["id"].as_str().unwrap()),
            &app.user_token(),
            json!({"option_id": "approve"}),
        )
        .await;
    e.error(422, "VALIDATION_ERROR");

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
    app.decide(&n, json!({"option_id": "approve"}))
        .await
        .error(400, "RESPONSE_TYPE_MISMATCH");
    // None of the refusals decided anything.
    assert_eq!(
        app.get(
            &format!("/v1/actions/{}", n["id"].as_str().unwrap()),
            &app.user_token()
        )
        .await
        .body["data"]["status"],
        "open"
    );
    app.decide(&n, json!({"response": {"value": 3}}))
        .await
        .ok(200);
    app.decide(&n, json!({"response": {"value": 4}}))
        .await
        .error(409, "ACTION_NOT_OPEN");
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
    app.post("/v1/actions", &app.live_key(), bad)
        .await
        .error(422, "VALIDATION_ERROR");
}

#[tokio::test]
async fn idempotency_codes() {
    let app = TestApp::spawn().await;
    let key = app.live_key();
    let post = |k: String, body: serde_json::Value| {
        let app = &app;
        let key = key.clone();
        async move {
            app.call(
                Method::POST,
                "/v1/actions",
                Some(&key),
                Some(&body),
                &[("idempotency-key", k.as_str())],
            )
            .await
        }
    };
    post("x".repeat(256), two_options("a"))
        .await
        .error(400, "INVALID_IDEMPOTENCY_KEY");
    post("tab\there".into(), two_options("a"))
        .await
        .error(400, "INVALID_IDEMPOTENCY_KEY");
    let first = post("order-1".into(), two_options("a")).await;
    first.ok(201);
    // Key order and whitespace do not make a request different.
    let replay = post(
        "order-1".into(),
        json!({"options": two_options("a")["options"], "title": "a"}),
    )
    .await;
    assert_eq!(replay.ok(201)["idempotent_replay"], true);
    assert_eq!(replay.headers["idempotent-replayed"], "true");
    assert_eq!(replay.body["data"]["id"], first.body["data"]["id"]);
    post("order-1".into(), two_options("b"))
        .await
        .error(409, "IDEMPOTENCY_KEY_REUSED");
    // Keys are scoped per environment: the test key may reuse it.
    let r = app
        .call(
            Method::POST,
            "/v1/actions",
            Some(&app.test_key()),
            Some(&two_options("b")),
            &[("idempotency-key", "order-1")],
        )
        .await;
    assert_eq!(r.ok(201)["data"]["environment"], "test");
}

#[tokio::test]
async fn auth_codes_and_boundaries() {
    let app = TestApp::spawn().await;
    app.call(
        Method::POST,
        "/v1/actions",
        None,
        Some(&two_options("x")),
        &[],
    )
    .await
    .error(401, "AUTH_REQUIRED");
    app.call(Method::GET, "/v1/me/actions", None, None, &[])
        .await
        .error(401, "AUTH_REQUIRED");
    app.post("/v1/actions", "svc_live_notakey", two_options("x"))
        .await
        .error(401, "INVALID_API_KEY");
    app.post("/v1/actions", "something-else", two_options("x"))
        .await
        .error(401, "INVALID_API_KEY");
    // A credential of one boundary is refused on the other.
    let e = app
        .post("/v1/actions", &app.user_token(), two_options("x"))
        .await;
    assert!(
        e.error(401, "INVALID_API_KEY")["message"]
            .as_str()
            .unwrap()
            .contains("Source key")
    );
    let e = app.get("/v1/me/actions", &app.live_key()).await;
    assert!(
        e.error(401, "INVALID_API_KEY")["message"]
            .as_str()
            .unwrap()
            .contains("user token")
    );
    let a = app.create_action(two_options("x")).await;
    app.decide_as(&a, &app.live_key())
        .await
        .error(401, "INVALID_API_KEY");
    app.get("/v1/me/actions", "svc_usr_unknown")
        .await
        .error(401, "INVALID_API_KEY");
}

#[tokio::test]
async fn rate_limit_answers_429_with_retry_after() {
    let app = TestApp::spawn_with(|c| c.rate_limit = 1).await;
    let mut codes = Vec::new();
    for _ in 0..4 {
        let r = app
            .get("/v1/source/actions/act_missing", &app.live_key())
            .await;
        codes.push(r.status.as_u16());
        if r.status.as_u16() == 429 {
            r.error(429, "RATE_LIMITED");
            assert!(
                r.headers["retry-after"]
                    .to_str()
                    .unwrap()
                    .parse::<u64>()
                    .unwrap()
                    >= 1
            );
        }
    }
    assert_eq!(codes, [404, 404, 429, 429]);
}

impl TestApp {
    async fn decide_as(&self, a: &serde_json::Value, token: &str) -> crate::helpers::Resp {
        self.post(
            &format!("/v1/actions/{}/decision", a["id"].as_str().unwrap()),
            token,
            json!({"action_version": 1, "fingerprint": a["fingerprint"], "option_id": "approve"}),
        )
        .await
    }
}

#[tokio::test]
async fn odd_headers_paths_and_numbers_get_precise_errors() {
    let app = TestApp::spawn().await;
    // A non-ASCII Idempotency-Key is refused, never silently ignored.
    let r = app
        .http
        .post(format!("{}/v1/actions", app.base))
        .bearer_auth(app.live_key())
        .header(
            "idempotency-key",
            reqwest::header::HeaderValue::from_bytes("clé-1".as_bytes()).unwrap(),
        )
        .body(two_options("x").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap()["error"]["code"],
        "INVALID_IDEMPOTENCY_KEY"
    );
    let r = app
        .call(
            Method::POST,
            "/v1/actions",
            Some(&app.live_key()),
            Some(&two_options("x")),
            &[("x-service-blocking", "maybe")],
        )
        .await;
    assert_eq!(
        r.error(422, "VALIDATION_ERROR")["details"]["errors"][0]["field"],
        "X-Service-Blocking"
    );
    // An undecodable path parameter gets the envelope.
    app.get("/v1/actions/%FF%FE", &app.user_token())
        .await
        .error(422, "VALIDATION_ERROR");
    // Integers beyond 2^53 would collide in the canonical form: refused.
    let mut big = two_options("x");
    big["decision_context"] = json!({"ticket": 9007199254740993u64});
    let e = app.post("/v1/actions", &app.live_key(), big).await;
    assert_eq!(
        e.error(422, "VALIDATION_ERROR")["details"]["errors"][0]["field"],
        "decision_context.ticket"
    );
    // Nothing was created.
    assert_eq!(
        app.get("/v1/me/actions?status=all", &app.user_token())
            .await
            .ok(200)["data"],
        json!([])
    );
}
