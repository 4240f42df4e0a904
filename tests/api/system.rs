//! System routes, the envelope on unknown routes, request ids, OpenAPI, docs.

use reqwest::Method;

use crate::helpers::TestApp;

#[tokio::test]
async fn system_routes_answer() {
    let app = TestApp::spawn().await;
    let r = app.call(Method::GET, "/", None, None, &[]).await;
    assert_eq!(r.ok(200)["api_version"], "0.1.7");
    assert_eq!(
        app.call(Method::GET, "/health", None, None, &[])
            .await
            .ok(200)["status"],
        "ok"
    );
    let ready = app.call(Method::GET, "/ready", None, None, &[]).await;
    assert_eq!(ready.ok(200)["checks"]["database_write"], "ok");
    assert_eq!(ready.ok(200)["checks"]["disk_space"], "ok");
    assert_eq!(ready.ok(200)["checks"]["receipt_signing"], "ok");
    let docs = app.call(Method::GET, "/v1/docs", None, None, &[]).await;
    let sections = docs.ok(200)["sections"].as_array().unwrap().clone();
    assert!(
        sections.len() >= 5,
        "the guide has {} sections",
        sections.len()
    );
    let all: String = sections
        .iter()
        .map(|s| s["markdown"].as_str().unwrap())
        .collect();
    for code in [
        "ACTION_CHANGED",
        "IDEMPOTENCY_KEY_REUSED",
        "RATE_LIMITED",
        "EdDSA",
        "rfc8785",
    ] {
        assert!(all.contains(code), "the guide does not mention {code}");
    }
}

#[tokio::test]
async fn unknown_routes_and_methods_use_the_envelope() {
    let app = TestApp::spawn().await;
    app.call(Method::GET, "/v1/nothing", None, None, &[])
        .await
        .error(404, "NOT_FOUND");
    app.call(Method::PUT, "/v1/actions", None, None, &[])
        .await
        .error(405, "METHOD_NOT_ALLOWED");
    // A long path is repeated cut short, saying how long it was.
    let long = format!("/v1/{}", "x".repeat(60_000));
    for method in [Method::GET, Method::PUT] {
        let r = app.call(method.clone(), &long, None, None, &[]).await;
        let text = r.body.to_string();
        assert!(text.len() < 1_000, "{method}: {} bytes", text.len());
        assert!(text.contains("… (60004 bytes)"), "{method}: {text}");
    }
    let r = app.call(Method::PUT, "/v1/actions", None, None, &[]).await;
    assert!(
        r.body
            .to_string()
            .contains("PUT is not allowed on /v1/actions"),
        "{:?}",
        r.body
    );
    // Input quoted in a message reads as sent: a direction override is
    // written as an escape, not applied to the text around it.
    let r = app
        .call(
            Method::POST,
            "/v1/actions",
            Some(&app.live_key()),
            Some(&serde_json::json!({"title": "t", "ti\u{202e}eltit": 1})),
            &[],
        )
        .await;
    let text = r.body.to_string();
    assert!(text.contains("ti\\\\u{202e}eltit"), "{text}");
    assert!(!text.contains('\u{202e}'), "{text}");
}

#[tokio::test]
async fn request_ids_are_echoed_or_assigned() {
    let app = TestApp::spawn().await;
    let r = app
        .call(
            Method::GET,
            "/health",
            None,
            None,
            &[("x-request-id", "client-123")],
        )
        .await;
    assert_eq!(r.headers["x-request-id"], "client-123");
    let r = app
        .call(
            Method::GET,
            "/health",
            None,
            None,
            &[("x-request-id", "bad id with spaces")],
        )
        .await;
    assert!(
        r.headers["x-request-id"]
            .to_str()
            .unwrap()
            .starts_with("req_")
    );
    let r = app
        .call(Method::GET, "/v1/me/actions", None, None, &[])
        .await;
    assert!(
        r.headers["x-request-id"]
            .to_str()
            .unwrap()
            .starts_with("req_")
    );
}

#[tokio::test]
async fn openapi_covers_every_route() {
    let app = TestApp::spawn().await;
    let doc = app
        .call(Method::GET, "/v1/openapi.json", None, None, &[])
        .await;
    let paths = doc.ok(200)["paths"].as_object().unwrap().clone();
    let expected = [
        ("/", "get"),
        ("/health", "get"),
        ("/ready", "get"),
        ("/v1/receipts/keys", "get"),
        ("/v1/docs", "get"),
        ("/v1/openapi.json", "get"),
        ("/v1/actions", "post"),
        ("/v1/source/actions", "get"),
        ("/v1/source/actions/{action_id}", "get"),
        ("/v1/actions/{action_id}", "get"),
        ("/v1/actions/{action_id}", "patch"),
        ("/v1/actions/{action_id}/decision", "post"),
        ("/v1/actions/decisions", "post"),
        ("/v1/actions/{action_id}/votes", "post"),
        ("/v1/actions/{action_id}/votes", "get"),
        ("/v1/actions/{action_id}/resolve", "post"),
        ("/v1/actions/{action_id}/cancel", "post"),
        ("/v1/actions/{action_id}/withdraw", "post"),
        ("/v1/actions/{action_id}/outcome", "post"),
        ("/v1/actions/{action_id}/claim", "post"),
        ("/v1/actions/{action_id}/assignment", "patch"),
        ("/v1/actions/{action_id}/snooze", "post"),
        ("/v1/actions/{action_id}/comments", "get"),
        ("/v1/actions/{action_id}/comments", "post"),
        ("/v1/actions/{action_id}/comments/{comment_id}", "patch"),
        ("/v1/actions/{action_id}/comments/{comment_id}", "delete"),
        (
            "/v1/actions/{action_id}/controls/{control_key}/invoke",
            "post",
        ),
        ("/v1/actions/{action_id}/control-requests", "get"),
        ("/v1/source/actions/{action_id}/control-requests", "get"),
        ("/v1/source/control-requests/{request_id}/result", "post"),
        ("/v1/actions/{action_id}/context-requests", "post"),
        ("/v1/runs", "post"),
        ("/v1/runs", "get"),
        ("/v1/runs/{run_id}", "get"),
        ("/v1/runs/{run_id}/cancel", "post"),
        ("/v1/source/runs", "get"),
        ("/v1/source/runs/{run_id}", "get"),
        ("/v1/source/runs/{run_id}/progress", "patch"),
        ("/v1/source/runs/{run_id}/complete", "post"),
        ("/v1/me/actions", "get"),
        ("/v1/sources", "get"),
        ("/v1/sources", "post"),
        ("/v1/sources/{source_id}", "get"),
        ("/v1/sources/{source_id}", "patch"),
        ("/v1/sources/{source_id}", "delete"),
        ("/v1/sources/{source_id}/keys/rotate", "post"),
        ("/v1/sources/{source_id}/deliveries", "get"),
        ("/v1/sources/{source_id}/deliveries/{delivery_id}", "get"),
        (
            "/v1/sources/{source_id}/deliveries/{delivery_id}/resend",
            "post",
        ),
        ("/v1/source/deliveries", "get"),
        ("/v1/source/deliveries/{delivery_id}", "get"),
        ("/v1/source/deliveries/{delivery_id}/resend", "post"),
        ("/v1/source/deliveries/recover", "post"),
        ("/v1/workspaces", "get"),
        ("/v1/workspaces", "post"),
        ("/v1/workspaces/select", "post"),
        ("/v1/account", "get"),
        ("/v1/account", "patch"),
        ("/v1/account/export", "get"),
        ("/v1/account", "delete"),
        ("/v1/analytics/summary", "get"),
        ("/v1/analytics/events", "post"),
        ("/v1/workspaces/members", "get"),
        ("/v1/workspaces/members/{user_id}", "patch"),
        ("/v1/workspaces/members/{user_id}", "delete"),
        ("/v1/auth/providers", "get"),
        ("/v1/auth/session", "get"),
        ("/v1/auth/logout", "post"),
        ("/v1/bootstrap", "get"),
        ("/v1/auth/{provider}/start", "get"),
        ("/v1/auth/{provider}/callback", "get"),
        ("/v1/auth/{provider}/callback", "post"),
        ("/v1/auth/{provider}/native/challenge", "post"),
        ("/v1/auth/{provider}/native", "post"),
        ("/v1/auth/{provider}/android", "post"),
        ("/v1/workspaces/invitations", "get"),
        ("/v1/workspaces/invitations", "post"),
        ("/v1/workspaces/invitations/{invitation_id}", "delete"),
        ("/v1/workspace-invitations/accept", "post"),
        ("/v1/workspaces/emails", "get"),
        ("/v1/notifications", "get"),
        ("/v1/notifications/summary", "get"),
        ("/v1/notifications/read-all", "post"),
        ("/v1/notifications/{notification_id}/read", "post"),
        ("/v1/notification-preferences", "get"),
        ("/v1/notification-preferences", "patch"),
        ("/v1/workspaces/notification-policy", "get"),
        ("/v1/workspaces/notification-policy", "patch"),
        ("/v1/billing", "get"),
        ("/v1/billing/portal", "post"),
        ("/v1/billing/checkout", "post"),
        ("/v1/billing/stripe/webhook", "post"),
    ];
    for (path, method) in expected {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{method} {path} missing from OpenAPI"
        );
    }
    let counted: usize = paths.values().map(|p| p.as_object().unwrap().len()).sum();
    assert_eq!(
        counted,
        expected.len(),
        "OpenAPI lists a route the table does not have, or vice versa"
    );
    assert_eq!(doc.body["info"]["version"], "0.1.7");
}

#[tokio::test]
async fn rate_limit_answers_429_with_retry_after() {
    let app = TestApp::spawn_with(|c| c.rate_limit = 1).await;
    let source = app.source();
    let mut codes = Vec::new();
    for _ in 0..4 {
        let r = source
            .call(Method::GET, "/v1/source/actions/act_missing", None, &[])
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

/// Routes for people take the user token or the session cookie (guide:
/// "Authentication"), and the document says so for every one of them, so a
/// client generated from it may send either.
#[tokio::test]
async fn openapi_lists_the_cookie_wherever_a_user_token_is_taken() {
    let app = TestApp::spawn().await;
    let doc = app
        .call(Method::GET, "/v1/openapi.json", None, None, &[])
        .await;
    let body = doc.ok(200);
    let mut token_only = Vec::new();
    let mut checked = 0;
    for (path, ops) in body["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let schemes: Vec<&str> = op["security"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_object())
                .flat_map(|s| s.keys().map(String::as_str))
                .collect();
            if schemes.contains(&"user_token") {
                checked += 1;
                if !schemes.contains(&"session_cookie") {
                    token_only.push(format!("{method} {path}"));
                }
            }
        }
    }
    assert!(checked > 40, "only {checked} user routes found");
    assert!(
        token_only.is_empty(),
        "user routes without the cookie: {token_only:?}"
    );
}

/// Every 2xx response in the OpenAPI document names its body's schema, so a
/// client can be generated from it; 204 has no body and 3xx are exempt.
#[tokio::test]
async fn openapi_gives_every_success_response_a_schema() {
    let app = TestApp::spawn().await;
    let doc = app
        .call(Method::GET, "/v1/openapi.json", None, None, &[])
        .await;
    let body = doc.ok(200);
    let mut missing = Vec::new();
    let mut checked = 0;
    for (path, ops) in body["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            for (status, resp) in op["responses"].as_object().into_iter().flatten() {
                if !status.starts_with('2') || status == "204" {
                    continue;
                }
                checked += 1;
                let has_schema = resp["content"]
                    .as_object()
                    .is_some_and(|c| !c.is_empty() && c.values().all(|m| m["schema"].is_object()));
                if !has_schema {
                    missing.push(format!("{method} {path} {status}"));
                }
            }
        }
    }
    assert!(checked > 20, "only {checked} success responses found");
    assert!(
        missing.is_empty(),
        "success responses without a schema: {missing:?}"
    );
    // The Action schema is a real object with its fields, not prose.
    let action = &body["components"]["schemas"]["ActionOut"];
    assert!(action["properties"]["fingerprint"].is_object(), "{action}");
    // A created comment comes in `data`, as the other user-API creates do.
    let resolve = |s: &serde_json::Value| match s["$ref"].as_str() {
        Some(r) => body["components"]["schemas"][r.rsplit('/').next().unwrap()].clone(),
        None => s.clone(),
    };
    for (path, status) in [
        ("/v1/actions/{action_id}/comments", "201"),
        ("/v1/workspaces", "201"),
        ("/v1/workspaces/invitations", "201"),
    ] {
        let schema = &body["paths"][path]["post"]["responses"][status]["content"]["application/json"]
            ["schema"];
        let schema = resolve(schema);
        assert!(schema["properties"]["data"].is_object(), "{path}: {schema}");
    }
}

/// Errors the application produces are never bare: static files and
/// undecodable paths answer in the envelope, dashboard pages with the error page.
#[tokio::test]
async fn static_and_dashboard_errors_are_never_bare_text() {
    let app = TestApp::spawn().await;
    let anyone = app.anonymous();
    let e = anyone
        .get_err("/static/no-such-file.css", 404, "NOT_FOUND")
        .await;
    assert!(e["message"].as_str().unwrap().contains("no-such-file.css"));
    anyone
        .get_err("/static/%FF.css", 422, "VALIDATION_ERROR")
        .await;
    let admin = app.admin();
    let browser = app.browser(admin.person()).await;
    let r = browser
        .call(Method::GET, "/app/actions/%FF", None, &[])
        .await;
    assert_eq!(r.status.as_u16(), 422, "{}", r.body);
    let ct = r.headers["content-type"].to_str().unwrap();
    assert!(ct.starts_with("text/html"), "{ct}");
    assert!(r.body.as_str().unwrap().contains("VALIDATION_ERROR"));
    // A query that is not UTF-8 is decoded leniently: the inbox names the
    // bad filter instead of failing.
    let r = browser
        .call(Method::GET, "/app?priority=%FF%FE", None, &[])
        .await;
    assert_eq!(r.status.as_u16(), 200);
    assert!(
        r.body
            .as_str()
            .unwrap()
            .contains("is not valid; use one of low")
    );
}

/// Every JSON body is strict: an object, no key twice, no NUL, integers within
/// ±2^53. Each refusal names the field, and nothing is written.
#[tokio::test]
async fn bodies_with_duplicate_keys_arrays_nul_or_huge_integers_are_refused() {
    let app = TestApp::spawn().await;
    let source = app.source();
    let admin = app.admin();
    let opts = r#""options":[{"id":"a","label":"A"},{"id":"b","label":"B"}]"#;
    let cases = [
        (
            format!(r#"{{"title":"x",{opts},"title":"y"}}"#),
            "title",
            "twice",
        ),
        (
            format!(r#"{{"title":"x",{opts},"metadata":{{"k":1,"k":2}}}}"#),
            "metadata.k",
            "twice",
        ),
        (format!(r#"{{"title":"a\u0000b",{opts}}}"#), "title", "NUL"),
        (
            format!(r#"{{"title":"x",{opts},"metadata":{{"n":18446744073709551615}}}}"#),
            "metadata.n",
            "2^53",
        ),
        (
            r#"["x",[{"id":"a","label":"A"}]]"#.to_string(),
            "body",
            "JSON object",
        ),
    ];
    for (body, field, words) in &cases {
        let r = source.raw(Method::POST, "/v1/actions", body).await;
        let e = r.error(422, "VALIDATION_ERROR");
        let f = &e["details"]["errors"][0];
        assert_eq!(f["field"], *field, "{body}: {e}");
        assert!(
            f["message"].as_str().unwrap().contains(words),
            "{body}: {e}"
        );
    }
    // The other bodies follow the same rules: a positional array, a duplicate key.
    let a = app
        .create_action(crate::helpers::two_options("Strict"))
        .await;
    let id = a["id"].as_str().unwrap();
    let fp = a["fingerprint"].as_str().unwrap();
    let decision = format!(
        r#"{{"action_version":1,"fingerprint":"{fp}","option_id":"approve","option_id":"reject"}}"#
    );
    let path = format!("/v1/actions/{id}/decision");
    let r = admin.raw(Method::POST, &path, &decision).await;
    assert_eq!(
        r.error(422, "VALIDATION_ERROR")["details"]["errors"][0]["field"],
        "option_id"
    );
    let positional = format!(r#"[1,"{fp}","approve"]"#);
    admin
        .raw(Method::POST, &path, &positional)
        .await
        .error(422, "VALIDATION_ERROR");
    let src_id = app.creds["source_id"].as_str().unwrap();
    let patch = format!("/v1/sources/{src_id}");
    admin
        .raw(Method::PATCH, &patch, r#"["renamed"]"#)
        .await
        .error(422, "VALIDATION_ERROR");
    let rotate = format!("/v1/sources/{src_id}/keys/rotate");
    admin
        .raw(Method::POST, &rotate, r#"["live"]"#)
        .await
        .error(422, "VALIDATION_ERROR");
    // Nothing was decided, renamed or rotated; the one Action is still open.
    let list: serde_json::Value = admin.get("/v1/me/actions?status=all", 200).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
    assert_eq!(list["data"][0]["status"], "open");
    let src: serde_json::Value = admin.get(&format!("/v1/sources/{src_id}"), 200).await;
    assert_eq!(src["data"]["name"], "Default Source");
    // An outcome's duration beyond 2^53 is refused like any other integer.
    let huge = format!(
        r#"{{"status":"success","duration_ms":18446744073709551615,"action_version":1,"fingerprint":"{fp}"}}"#
    );
    let r = source
        .raw(Method::POST, &format!("/v1/actions/{id}/outcome"), &huge)
        .await;
    assert_eq!(
        r.error(422, "VALIDATION_ERROR")["details"]["errors"][0]["field"],
        "duration_ms"
    );
}

/// Single-line fields (a title, an option label, a Source name) refuse
/// control characters with the field named; error text never echoes a
/// control character raw; `1.0` is the integer 1, as JSON Schema counts it.
#[tokio::test]
async fn single_line_fields_refuse_control_characters() {
    let app = TestApp::spawn().await;
    let source = app.source();
    let admin = app.admin();
    let cases = [
        (
            r#"{"title":"two\nlines","options":[{"id":"a","label":"A"}]}"#,
            "title",
        ),
        (
            r#"{"title":"tab\there","options":[{"id":"a","label":"A"}]}"#,
            "title",
        ),
        (
            r#"{"title":"ok","options":[{"id":"a","label":"A\u001b[31m"}]}"#,
            "options[0].label",
        ),
    ];
    for (body, field) in cases {
        let r = source.raw(Method::POST, "/v1/actions", body).await;
        let e = r.error(422, "VALIDATION_ERROR");
        assert_eq!(e["details"]["errors"][0]["field"], field, "{body}: {e}");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("control characters"),
            "{e}"
        );
    }
    let r = admin
        .raw(Method::POST, "/v1/sources", r#"{"name":"line\rbreak"}"#)
        .await;
    assert_eq!(
        r.error(422, "VALIDATION_ERROR")["details"]["errors"][0]["field"],
        "name"
    );
    // An unknown key holding control characters is named, escaped.
    let r = source
        .raw(
            Method::POST,
            "/v1/actions",
            r#"{"title":"x","options":[{"id":"a","label":"A"}],"bad\u0007key":1}"#,
        )
        .await;
    let e = r.error(422, "VALIDATION_ERROR");
    let field = e["details"]["errors"][0]["field"].as_str().unwrap();
    assert_eq!(field, "bad\\u{7}key", "{e}");
    assert!(!e.to_string().contains('\u{7}'));
    // Nothing was created.
    let list: serde_json::Value = admin.get("/v1/me/actions?status=all", 200).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 0);

    // `"action_version": 1.0` is the whole number 1; 1.5 is refused.
    let a = app
        .create_action(crate::helpers::two_options("Whole"))
        .await;
    let id = a["id"].as_str().unwrap();
    let fp = a["fingerprint"].as_str().unwrap();
    let path = format!("/v1/actions/{id}/decision");
    let half = format!(r#"{{"action_version":1.5,"fingerprint":"{fp}","option_id":"approve"}}"#);
    let r = admin.raw(Method::POST, &path, &half).await;
    let e = r.error(422, "VALIDATION_ERROR");
    assert_eq!(e["details"]["errors"][0]["field"], "action_version", "{e}");
    let whole = format!(r#"{{"action_version":1.0,"fingerprint":"{fp}","option_id":"approve"}}"#);
    let decided = admin.raw(Method::POST, &path, &whole).await;
    assert_eq!(decided.ok(200)["data"]["status"], "resolved");
}

/// The document names every answer a route can give: 401 and 429 on every
/// route that takes a credential, 404 wherever a path names a resource, 422
/// wherever a body or parameter is read, 413 wherever a body is; query
/// parameters are in the query; strings carry the no-NUL rule and integers
/// the ±2^53 bound.
#[tokio::test]
async fn openapi_lists_every_status_a_route_can_answer() {
    let app = TestApp::spawn().await;
    let doc = app
        .call(Method::GET, "/v1/openapi.json", None, None, &[])
        .await;
    let body = doc.ok(200);
    let mut wrong = Vec::new();
    for (path, ops) in body["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let has = |s: &str| op["responses"].get(s).is_some();
            let secured = op["security"].as_array().is_some_and(|s| !s.is_empty());
            let params: Vec<&str> = op["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| p["in"].as_str().unwrap())
                .collect();
            let body = op.get("requestBody").is_some();
            let mut need = Vec::new();
            if secured {
                need.extend(["401", "429"]);
            }
            if params.contains(&"path") {
                need.push("404");
            }
            if body {
                need.extend(["413", "422"]);
            }
            if params.contains(&"query") {
                need.push("422");
            }
            for s in need {
                if !has(s) {
                    wrong.push(format!("{method} {path} lacks {s}"));
                }
            }
            // A path parameter must be in the path template.
            for p in op["parameters"].as_array().into_iter().flatten() {
                let name = p["name"].as_str().unwrap();
                if p["in"] == "path" && !path.contains(&format!("{{{name}}}")) {
                    wrong.push(format!("{method} {path}: {name} is not a path parameter"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    let schemas = &body["components"]["schemas"];
    let decision = &schemas["DecisionRequest"]["properties"];
    assert_eq!(decision["action_version"]["maximum"], 9007199254740991u64);
    // A field with its own pattern keeps it (it allows no NUL either).
    assert_eq!(decision["fingerprint"]["pattern"], "^sha256:[0-9a-f]{64}$");
    assert_eq!(decision["reason"]["pattern"], "^[^\\u0000]*$");
    assert_eq!(decision["reason"]["maxLength"], 2000);
    assert_eq!(
        schemas["VoteRequest"]["properties"]["vote"]["enum"],
        serde_json::json!(["approve", "reject"])
    );
    assert_eq!(
        schemas["ActionCreate"]["properties"]["options"]["maxItems"],
        20
    );
    assert!(schemas["JsonValue"]["anyOf"].is_array());
    let wait = &body["paths"]["/v1/source/actions/{action_id}"]["get"]["parameters"];
    let wait = wait
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "wait_seconds")
        .unwrap();
    assert_eq!(wait["in"], "query");
    assert_eq!(wait["schema"]["maximum"], 30);
    // Answers the rules above do not derive, named route by route.
    let paths = &body["paths"];
    let expected: &[(&str, &str, &[&str])] = &[
        (
            "/v1/actions/{action_id}/decision",
            "post",
            &["400", "403", "409"],
        ),
        ("/v1/actions/{action_id}/votes", "post", &["403", "409"]),
        ("/v1/sources", "get", &["403"]),
        ("/v1/sources", "post", &["403"]),
        ("/v1/sources/{source_id}", "patch", &["403"]),
        ("/v1/sources/{source_id}", "delete", &["403"]),
        ("/v1/sources/{source_id}/keys/rotate", "post", &["403"]),
        (
            "/v1/auth/{provider}/start",
            "get",
            &["404", "429", "502", "503"],
        ),
        ("/v1/auth/{provider}/callback", "get", &["503"]),
        ("/v1/auth/{provider}/native/challenge", "post", &["429"]),
        ("/v1/auth/logout", "post", &["403"]),
        ("/v1/actions", "post", &["400", "409", "413", "503"]),
    ];
    for (path, method, statuses) in expected {
        for s in *statuses {
            assert!(
                paths[path][method]["responses"].get(s).is_some(),
                "{method} {path} does not list {s}"
            );
        }
    }
    // PATCH takes the changeable fields only.
    let patch = &schemas["ActionPatch"];
    assert_eq!(patch["additionalProperties"], false);
    assert!(patch["properties"]["title"].is_object());
    assert!(patch["properties"].get("options").is_none(), "{patch}");
    assert_eq!(
        paths["/v1/actions/{action_id}"]["patch"]["requestBody"]["content"]["application/json"]["schema"]
            ["$ref"],
        "#/components/schemas/ActionPatch"
    );
}

/// What a client generated from the document relies on beyond shapes: the
/// body schemas carry the names the interface specification gives them, the
/// Action's people are their own schema (not the signed-in person's), bodies
/// that may be left out say so, and every route that takes an
/// Idempotency-Key declares it with the 400 a bad key gets.
#[tokio::test]
async fn openapi_names_bodies_as_specified_and_declares_keys_and_optional_bodies() {
    let app = TestApp::spawn().await;
    let doc = app
        .call(Method::GET, "/v1/openapi.json", None, None, &[])
        .await;
    let body = doc.ok(200);
    let paths = &body["paths"];
    let schemas = &body["components"]["schemas"];
    let body_ref = |path: &str, method: &str| {
        paths[path][method]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
            .as_str()
            .unwrap_or_default()
            .rsplit('/')
            .next()
            .unwrap()
            .to_owned()
    };
    for (path, method, name) in [
        ("/v1/actions", "post", "ActionCreate"),
        (
            "/v1/actions/{action_id}/comments",
            "post",
            "ActionCommentCreate",
        ),
        (
            "/v1/actions/{action_id}/outcome",
            "post",
            "ActionOutcomeReport",
        ),
        (
            "/v1/workspaces/members/{user_id}",
            "patch",
            "MembershipRoleUpdate",
        ),
        (
            "/v1/actions/{action_id}/decision",
            "post",
            "DecisionRequest",
        ),
        ("/v1/actions/{action_id}/resolve", "post", "ResolveRequest"),
        ("/v1/actions/{action_id}/cancel", "post", "CancelRequest"),
    ] {
        assert_eq!(body_ref(path, method), name, "{method} {path}");
    }
    // Tagged objects refuse members their kind does not take, as the
    // server does.
    for tagged in ["Interaction", "ContextBlock"] {
        let variants = schemas[tagged]["oneOf"].as_array().unwrap();
        assert!(!variants.is_empty(), "{tagged}");
        for v in variants {
            assert_eq!(v["additionalProperties"], false, "{tagged}: {v}");
        }
    }
    // A flag whose default is false takes null as left out.
    assert_eq!(
        schemas["ActionOption"]["properties"]["reason_required"]["type"],
        serde_json::json!(["boolean", "null"])
    );
    let person = &schemas["ActionPerson"]["properties"];
    assert!(person["user_id"].is_object(), "{person}");
    assert!(schemas["Person"]["properties"]["id"].is_object());
    for (path, required) in [
        ("/v1/actions/{action_id}/cancel", false),
        ("/v1/actions/{action_id}/withdraw", false),
        ("/v1/runs/{run_id}/cancel", false),
        ("/v1/sources/{source_id}/keys/rotate", false),
        ("/v1/actions/{action_id}/resolve", true),
    ] {
        assert_eq!(
            paths[path]["post"]["requestBody"]["required"],
            serde_json::json!(required),
            "{path}"
        );
    }
    for path in [
        "/v1/actions",
        "/v1/actions/{action_id}/resolve",
        "/v1/actions/{action_id}/cancel",
        "/v1/actions/{action_id}/outcome",
        "/v1/runs",
    ] {
        let op = &paths[path]["post"];
        let params = op["parameters"].as_array().unwrap();
        assert!(
            params
                .iter()
                .any(|p| p["name"] == "Idempotency-Key" && p["in"] == "header"),
            "{path}: {params:?}"
        );
        assert!(op["responses"]["400"].is_object(), "{path}");
    }
    for path in ["/v1/actions", "/v1/runs"] {
        let forbidden = paths[path]["post"]["responses"]["403"]["description"]
            .as_str()
            .unwrap_or_default();
        assert!(forbidden.contains("PLAN_LIMIT_REACHED"), "{path}");
    }
}

/// Less free space than `--ready-min-free-mb` on the data dir's file system:
/// not ready, so a load balancer sends no more work before writes fail.
#[tokio::test]
async fn ready_fails_when_the_data_dirs_disk_is_nearly_full() {
    // More than any test machine has free: the check must fail.
    let app = TestApp::spawn_with(|c| c.ready_min_free_mb = 1_048_576).await;
    let ready = app.call(Method::GET, "/ready", None, None, &[]).await;
    let body = ready.ok(503);
    assert_eq!(body["status"], "unavailable", "{body}");
    assert_eq!(body["checks"]["disk_space"], "failing", "{body}");
    assert_eq!(body["checks"]["database_write"], "ok", "{body}");
    // How much is free is for the operator's own tools, not this public route.
    assert!(body["checks"].get("disk_free_bytes").is_none(), "{body}");
}

/// A database that can grow no further (as on a full disk; here the writer's
/// `max_page_count`) refuses a write with 503 and `Retry-After`, keeps
/// nothing of it, and takes writes again once there is room.
#[tokio::test]
async fn a_full_database_answers_503_and_keeps_nothing_of_the_write() {
    let app = TestApp::spawn().await;
    let limit = |pages: Option<i64>| {
        let db = app.state.services.db.clone();
        async move {
            db.write(move |c| {
                let now: i64 = c.query_row("PRAGMA page_count", [], |r| r.get(0))?;
                let max = pages.unwrap_or(now);
                let set: i64 =
                    c.query_row(&format!("PRAGMA max_page_count = {max}"), [], |r| r.get(0))?;
                Ok(set)
            })
            .await
            .unwrap()
        }
    };
    limit(None).await;
    let long = "x".repeat(20_000);
    let mut created = 0;
    let mut refused = None;
    for i in 0..200 {
        let body = serde_json::json!({
            "title": format!("Fill {i}"),
            "description": long,
            "options": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}]
        });
        let r = app.post("/v1/actions", &app.live_key(), body).await;
        if r.status.as_u16() == 201 {
            created += 1;
            continue;
        }
        refused = Some(r);
        break;
    }
    let r = refused.expect("a create refused once the database is full");
    let body = r.ok(503);
    assert_eq!(body["error"]["code"], "SERVICE_UNAVAILABLE", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("disk holding hds's data is full"),
        "{body}"
    );
    assert_eq!(r.headers["retry-after"], "1");
    limit(Some(1_073_741_823)).await;
    assert_eq!(app.count_rows("actions"), created);
    let body = serde_json::json!({
        "title": "Room again",
        "options": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}]
    });
    let r = app.post("/v1/actions", &app.live_key(), body).await;
    r.ok(201);
}
