//! Decisions on Actions (guide: "POST /v1/actions/{action_id}/decision"): each refusal with its code, and that no
//! refusal decides anything.

use serde_json::{Value, json};

use crate::helpers::{TestApp, two_options};

#[tokio::test]
async fn decision_codes() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
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
    // A version below 1 is a malformed body (422 naming it), not a stale
    // binding, on every route that takes one back.
    let id = a["id"].as_str().unwrap();
    let fp = a["fingerprint"].clone();
    let source = app.source();
    for v in [json!(0), json!(-1)] {
        let mut bad = a.clone();
        bad["action_version"] = v.clone();
        let e = app.decide(&bad, json!({"option_id": "approve"})).await;
        let e = e.error(422, "VALIDATION_ERROR");
        assert_eq!(e["details"]["errors"][0]["field"], "action_version", "{e}");
        assert!(e["message"].as_str().unwrap().contains("1 or more"), "{e}");
        let binding = json!({"action_version": v, "fingerprint": fp});
        let mut resolve = binding.clone();
        resolve["option_id"] = json!("approve");
        let mut outcome = binding.clone();
        outcome["status"] = json!("success");
        outcome["duration_ms"] = json!(1);
        let mut vote = binding.clone();
        vote["vote"] = json!("approve");
        let mut item = binding.clone();
        item["action_id"] = json!(id);
        item["option_id"] = json!("approve");
        for (who, path, body) in [
            (&source, format!("/v1/actions/{id}/resolve"), resolve),
            (&source, format!("/v1/actions/{id}/outcome"), outcome),
            (&admin, format!("/v1/actions/{id}/votes"), vote),
            (
                &admin,
                format!("/v1/actions/{id}/controls/restart/invoke"),
                binding.clone(),
            ),
            (
                &admin,
                "/v1/actions/decisions".to_owned(),
                json!({"decisions": [item]}),
            ),
        ] {
            let e = who.post_err(&path, body, 422, "VALIDATION_ERROR").await;
            let field = e["details"]["errors"][0]["field"].as_str().unwrap();
            assert!(field.ends_with("action_version"), "{path}: {e}");
        }
    }
    // A fingerprint of the wrong shape is a malformed body too, never 409
    // ACTION_CHANGED (a client would re-read and retry forever): 422 naming
    // it, on every route that takes one back.
    let upper = fp
        .as_str()
        .unwrap()
        .to_uppercase()
        .replace("SHA256:", "sha256:");
    for f in ["garbage", "sha256:abc", upper.as_str(), ""] {
        let binding = json!({"action_version": 1, "fingerprint": f});
        let mut decide = binding.clone();
        decide["option_id"] = json!("approve");
        let mut resolve = decide.clone();
        resolve["reason"] = json!("x");
        let mut vote = binding.clone();
        vote["vote"] = json!("approve");
        let mut item = decide.clone();
        item["action_id"] = json!(id);
        for (who, path, body) in [
            (&admin, format!("/v1/actions/{id}/decision"), decide),
            (&source, format!("/v1/actions/{id}/resolve"), resolve),
            (&admin, format!("/v1/actions/{id}/votes"), vote),
            (
                &admin,
                format!("/v1/actions/{id}/controls/restart/invoke"),
                binding.clone(),
            ),
            (
                &admin,
                "/v1/actions/decisions".to_owned(),
                json!({"decisions": [item]}),
            ),
        ] {
            let e = who.post_err(&path, body, 422, "VALIDATION_ERROR").await;
            let field = e["details"]["errors"][0]["field"].as_str().unwrap();
            assert!(field.ends_with("fingerprint"), "{path}: {e}");
            assert!(
                e["message"].as_str().unwrap().contains("64 lowercase hex"),
                "{path}: {e}"
            );
        }
    }
    // No binding at all.
    let decision = format!("/v1/actions/{id}/decision");
    admin
        .post_err(
            &decision,
            json!({"option_id": "approve"}),
            422,
            "VALIDATION_ERROR",
        )
        .await;

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
    // A member beside `value` would be dropped silently: refused instead.
    app.decide(&n, json!({"response": {"value": 3, "extra": 1}}))
        .await
        .error(400, "RESPONSE_TYPE_MISMATCH");
    app.decide(&n, json!({"option_id": "approve"}))
        .await
        .error(400, "RESPONSE_TYPE_MISMATCH");
    // None of the refusals decided anything.
    let now: Value = admin
        .get(&format!("/v1/actions/{}", n["id"].as_str().unwrap()), 200)
        .await;
    assert_eq!(now["data"]["status"], "open");
    app.decide(&n, json!({"response": {"value": 3}}))
        .await
        .ok(200);
    app.decide(&n, json!({"response": {"value": 4}}))
        .await
        .error(409, "ACTION_NOT_OPEN");
}

/// A reason (of a decision, a vote, a cancel or a withdrawal, one per item of
/// a batch) and an outcome's message are read by other people beside the
/// Action, in receipts and e-mails: a Unicode direction control in them is
/// refused with 422 naming the field, and nothing is written.
#[tokio::test]
async fn reasons_and_messages_refuse_direction_controls() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let source = app.source();
    let a = app.create_action(two_options("Deploy")).await;
    let id = a["id"].as_str().unwrap();
    let binding = json!({"action_version": a["action_version"], "fingerprint": a["fingerprint"]});
    let with = |extra: Value| {
        let mut b = binding.clone();
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        b
    };
    // "ok \u{202e}dekcehc" would read "ok checked" with its letters reordered.
    let bad = "ok \u{202e}dekcehc";
    let bob = app.member(hds::domain::access::Role::Reviewer);
    let mut voted = two_options("Two approvals");
    voted["visibility"] = json!("restricted");
    voted["reviewer_user_ids"] = json!([admin.person().id, bob.person().id]);
    voted["approval_policy"] = json!({"required_approvals": 2});
    let v = app.create_action(voted).await;
    let vid = v["id"].as_str().unwrap();
    let vote = json!({"action_version": v["action_version"], "fingerprint": v["fingerprint"], "vote": "approve", "reason": bad});
    for (who, path, body, field) in [
        (
            &admin,
            format!("/v1/actions/{id}/decision"),
            with(json!({"option_id": "approve", "reason": bad})),
            "reason",
        ),
        (
            &source,
            format!("/v1/actions/{id}/resolve"),
            with(json!({"option_id": "approve", "reason": bad})),
            "reason",
        ),
        (
            &source,
            format!("/v1/actions/{id}/cancel"),
            json!({"reason": bad}),
            "reason",
        ),
        (
            &admin,
            format!("/v1/actions/{id}/withdraw"),
            json!({"reason": bad}),
            "reason",
        ),
        (&admin, format!("/v1/actions/{vid}/votes"), vote, "reason"),
    ] {
        let e = who.post_err(&path, body, 422, "VALIDATION_ERROR").await;
        let f = e["details"]["errors"][0]["field"].as_str().unwrap();
        assert!(f.ends_with(field), "{path}: {e}");
        let m = e["message"].as_str().unwrap();
        assert!(m.contains("direction control"), "{path}: {e}");
        assert!(m.contains("U+200E"), "{path}: {e}");
    }
    // In a batch, the item is refused and the batch answers.
    let item = with(json!({"action_id": id, "option_id": "approve", "reason": bad}));
    let out: Value = admin
        .post("/v1/actions/decisions", json!({"decisions": [item]}), 200)
        .await;
    let e = &out["data"][0]["error"];
    assert_eq!(e["code"], "VALIDATION_ERROR", "{out}");
    assert!(
        e["message"].as_str().unwrap().contains("direction control"),
        "{out}"
    );
    // Nothing was decided, cancelled or voted.
    for x in [id, vid] {
        let now: Value = admin.get(&format!("/v1/actions/{x}"), 200).await;
        assert_eq!(now["data"]["status"], "open", "{now}");
        assert!(now["data"]["receipt"].is_null(), "{now}");
    }
    let now: Value = admin.get(&format!("/v1/actions/{vid}/votes"), 200).await;
    assert_eq!(now["data"]["votes"], json!([]), "{now}");
    // The marks U+200E and U+200F stay allowed; the outcome's message is
    // checked the same way.
    app.decide(
        &a,
        json!({"option_id": "approve", "reason": "ok \u{200f}checked"}),
    )
    .await
    .ok(200);
    let outcome =
        |message: &str| with(json!({"status": "failed", "duration_ms": 5, "message": message}));
    let path = format!("/v1/actions/{id}/outcome");
    let e = source
        .post_err(
            &path,
            outcome("rolled \u{2067}kcab"),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "message", "{e}");
    let now: Value = admin.get(&format!("/v1/actions/{id}"), 200).await;
    assert!(now["data"]["outcome"].is_null(), "{now}");
    let ok: Value = source.post(&path, outcome("rolled back"), 201).await;
    assert_eq!(ok["data"]["outcome"]["message"], "rolled back", "{ok}");
}

/// `options[].reason_required`: a decision choosing that option (by a person,
/// in a batch, from the dashboard, or by the Source) must say why; the flag
/// is left out of the Action when false, so fingerprints do not move.
#[tokio::test]
async fn an_option_may_require_a_reason() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let source = app.source();
    let spec = |title: &str| {
        json!({"title": title, "options": [
            {"id": "approve", "label": "Approve", "style": "primary"},
            {"id": "changes", "label": "Request changes", "reason_required": true}]})
    };
    let a = app.create_action(spec("Merge #12")).await;
    assert_eq!(a["options"][1]["reason_required"], true);
    assert!(a["options"][0].get("reason_required").is_none(), "{a}");
    // false is the default and is left out: the same fingerprint.
    let plain = app.create_action(two_options("Same")).await;
    let mut explicit = two_options("Same");
    explicit["options"][0]["reason_required"] = json!(false);
    let explicit = app.create_action(explicit).await;
    assert_eq!(plain["fingerprint"], explicit["fingerprint"]);
    assert!(explicit["options"][0].get("reason_required").is_none());
    // Not a boolean: the create is refused, naming it; null is the default.
    let mut bad = spec("Bad");
    bad["options"][1]["reason_required"] = json!("yes");
    let e = source
        .post_err("/v1/actions", bad, 422, "VALIDATION_ERROR")
        .await;
    assert_eq!(
        e["details"]["errors"][0]["field"],
        "options[1].reason_required"
    );
    let mut null = two_options("Same");
    null["options"][0]["reason_required"] = Value::Null;
    let null = app.create_action(null).await;
    assert_eq!(null["fingerprint"], plain["fingerprint"]);

    let id = a["id"].as_str().unwrap();
    // White space or invisible characters alone say nothing.
    for reason in [
        None,
        Some(""),
        Some("  \n "),
        Some("\u{200b}"),
        Some(" \u{feff}\u{2060} "),
        Some("\u{3164}\u{2800}"),
    ] {
        let mut choice = json!({"option_id": "changes"});
        if let Some(r) = reason {
            choice["reason"] = json!(r);
        }
        let e = app.decide(&a, choice).await;
        let e = e.error(422, "VALIDATION_ERROR");
        assert_eq!(e["details"]["errors"][0]["field"], "reason", "{e}");
        assert_eq!(e["details"]["option_id"], "changes", "{e}");
        assert_eq!(
            e["message"],
            "choosing \"Request changes\" needs a reason: say why you chose it"
        );
    }
    let batch = json!({"decisions": [{"action_id": id, "action_version": 1,
        "fingerprint": a["fingerprint"], "option_id": "changes"}]});
    let out: Value = admin.post("/v1/actions/decisions", batch, 200).await;
    assert_eq!(out["data"][0]["error"]["code"], "VALIDATION_ERROR");
    assert_eq!(
        out["data"][0]["error"]["details"]["errors"][0]["field"],
        "reason"
    );
    source
        .post_err(
            &format!("/v1/actions/{id}/resolve"),
            json!({"option_id": "changes"}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    let still: Value = admin.get(&format!("/v1/actions/{id}"), 200).await;
    assert_eq!(still["data"]["status"], "open");

    // The dashboard names the options that need one, and a form without it
    // comes back with the message tied to the reason box.
    let b = app.browser(admin.person()).await;
    let page = format!("/app/actions/{id}");
    let html = b.page(&page).await;
    assert!(
        html.contains("(needed to choose “Request changes”; kept with the decision)"),
        "{html}"
    );
    let origin = b.url("");
    let origin = origin.trim_end_matches('/');
    let version = a["action_version"].to_string();
    let fp = a["fingerprint"].as_str().unwrap();
    let r = b
        .post_form(
            &format!("{page}/decide"),
            Some(origin),
            &[
                ("_csrf", b.csrf()),
                ("action_version", &version),
                ("fingerprint", fp),
                ("option_id", "changes"),
                ("reason", ""),
            ],
        )
        .await;
    assert_eq!(r.status(), 422);
    let html = r.text().await.unwrap();
    assert!(
        html.contains(
            "Your answer was not accepted: choosing &#34;Request changes&#34; needs a reason: say why you chose it."
        ),
        "{html}"
    );
    assert!(
        html.contains("id=\"decide-reason\" rows=\"2\" maxlength=\"2000\" aria-invalid=\"true\" aria-describedby=\"decide-error\""),
        "{html}"
    );
    let r = b
        .post_form(
            &format!("{page}/decide"),
            Some(origin),
            &[
                ("_csrf", b.csrf()),
                ("action_version", &version),
                ("fingerprint", fp),
                ("option_id", "changes"),
                ("reason", "Add a test for the empty case."),
            ],
        )
        .await;
    assert_eq!(r.status(), 303);
    let done: Value = admin.get(&format!("/v1/actions/{id}"), 200).await;
    assert_eq!(done["data"]["status"], "resolved");
    assert_eq!(done["data"]["resolution_option_id"], "changes");
    assert_eq!(
        done["data"]["resolution_reason"],
        "Add a test for the empty case."
    );
    // The other option needs none.
    let b2 = app.create_action(spec("Merge #13")).await;
    app.decide(&b2, json!({"option_id": "approve"}))
        .await
        .ok(200);
    // A destructive option that needs a reason asks for the reason before
    // its confirmation.
    let mut d = spec("Drop #14");
    d["options"][1]["style"] = json!("destructive");
    let d = app.create_action(d).await;
    let r = b
        .post_form(
            &format!("/app/actions/{}/decide", d["id"].as_str().unwrap()),
            Some(origin),
            &[
                ("_csrf", b.csrf()),
                ("action_version", "1"),
                ("fingerprint", d["fingerprint"].as_str().unwrap()),
                ("option_id", "changes"),
            ],
        )
        .await;
    assert_eq!(r.status(), 422);
    let html = r.text().await.unwrap();
    assert!(
        html.contains("needs a reason: say why you chose it"),
        "{html}"
    );
}

/// `interaction.default` on text and number: a proposed answer the
/// reviewer starts from (an agent's draft), held to the rules of a
/// response, shown in the page's input, part of the fingerprint only when
/// given.
#[tokio::test]
async fn a_typed_answer_may_start_from_a_proposed_default() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let source = app.source();
    let text = |default: Value| {
        json!({"title": "Reply to ticket 881", "interaction":
            {"type": "text", "max_length": 60, "default": default}})
    };
    let draft = "Sorry for the wait: the refund went out today.";
    let a = app.create_action(text(json!(draft))).await;
    assert_eq!(a["interaction"]["default"], draft);
    // Refused as a response would be, naming the field.
    for (bad, says) in [
        (
            json!("x".repeat(61)),
            "default is longer than 60 characters",
        ),
        (json!("   "), "default must not be blank"),
        (
            json!(7),
            "interaction.default: invalid type: integer `7`, expected a string",
        ),
    ] {
        let e = source
            .post_err("/v1/actions", text(bad), 422, "VALIDATION_ERROR")
            .await;
        let errs = e["details"]["errors"].as_array().unwrap();
        assert!(
            errs.iter()
                .any(|x| x["field"].as_str().unwrap().starts_with("interaction")),
            "{e}"
        );
        assert_eq!(errs[0]["field"], "interaction.default", "{e}");
        assert_eq!(errs[0]["message"], says, "{e}");
    }
    // A member of the wrong type is named by itself, in words, not as the
    // whole interaction; so is a member the kind does not take.
    for (body, field, says) in [
        (
            json!({"type": "number", "default": "5"}),
            "interaction.default",
            "interaction.default: invalid type: string \"5\", expected a number",
        ),
        (
            json!({"type": "text", "max_length": "60"}),
            "interaction.max_length",
            "interaction.max_length: invalid type: string \"60\", expected a JSON number",
        ),
        (
            json!({"type": "choice", "choices": [{"id": "a", "label": "A"}], "multiple": "yes"}),
            "interaction.multiple",
            "interaction.multiple: invalid type: string \"yes\", expected a boolean",
        ),
    ] {
        let e = source
            .post_err(
                "/v1/actions",
                json!({"title": "Typed", "interaction": body}),
                422,
                "VALIDATION_ERROR",
            )
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], field, "{e}");
        assert_eq!(e["details"]["errors"][0]["message"], says, "{e}");
    }
    // A tagged object of many members (an unknown type hides them all from
    // serde) is not searched member by member: refused as a whole, at once,
    // on create and on PATCH (whose parse runs in the writer).
    let junk: serde_json::Map<String, Value> = (0..20_000)
        .map(|i| (format!("a{i:05}"), json!(0)))
        .collect();
    let mut interaction = Value::Object(junk.clone());
    interaction["type"] = json!("text");
    let e = source
        .post_err(
            "/v1/actions",
            json!({"title": "Typed", "interaction": interaction}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "interaction", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("interaction: unknown field `a00000`"),
        "{e}"
    );
    let mut block = Value::Object(junk);
    block["type"] = json!("zz");
    let open = app.create_action(two_options("Patched")).await;
    let e = source
        .patch_err(
            &format!("/v1/actions/{}", open["id"].as_str().unwrap()),
            json!({"context": [block]}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "context[0].type", "{e}");
    let number = |default: Value| {
        json!({"title": "Replicas", "interaction":
            {"type": "number", "min": 1, "max": 10, "default": default}})
    };
    // Not taken on the other kinds.
    source
        .post_err(
            "/v1/actions",
            json!({"title": "Pick", "interaction": {"type": "choice",
                "choices": [{"id": "a", "label": "A"}], "default": "a"}}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    let e = source
        .post_err("/v1/actions", number(json!(20)), 422, "VALIDATION_ERROR")
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "interaction.default");
    assert_eq!(
        e["details"]["errors"][0]["message"],
        "default 20 is outside the allowed range: give a number from 1 to 10"
    );
    // None given (or null): the fingerprint is what it was before defaults.
    let plain = app
        .create_action(
            json!({"title": "Replicas", "interaction": {"type": "number", "min": 1, "max": 10}}),
        )
        .await;
    let null = app.create_action(number(Value::Null)).await;
    assert_eq!(plain["fingerprint"], null["fingerprint"]);
    assert!(null["interaction"].get("default").is_none(), "{null}");
    let n = app.create_action(number(json!(3))).await;
    assert_ne!(n["fingerprint"], plain["fingerprint"]);

    // The page starts from it, says whose it is, and a refused form keeps
    // what was typed rather than the proposal.
    let b = app.browser(admin.person()).await;
    let page = format!("/app/actions/{}", a["id"].as_str().unwrap());
    let html = b.page(&page).await;
    assert!(html.contains(&format!(">\n{draft}</textarea>")), "{html}");
    assert!(html.contains("proposed by the Source: edit it or send it as it is"));
    let html = b
        .page(&format!("/app/actions/{}", n["id"].as_str().unwrap()))
        .await;
    assert!(html.contains("value=\"3\""), "{html}");
    let origin = b.url("");
    let origin = origin.trim_end_matches('/');
    let version = a["action_version"].to_string();
    let fp = a["fingerprint"].as_str().unwrap();
    let long = "y".repeat(61);
    let r = b
        .post_form(
            &format!("{page}/decide"),
            Some(origin),
            &[
                ("_csrf", b.csrf()),
                ("action_version", &version),
                ("fingerprint", fp),
                ("value", &long),
            ],
        )
        .await;
    assert_eq!(r.status(), 400, "INVALID_RESPONSE");
    let html = r.text().await.unwrap();
    assert!(html.contains(&format!(">\n{long}</textarea>")), "{html}");
    // Edited, then sent: the response is what the reviewer sent.
    let edited = "Sorry for the wait: the refund went out on Monday.";
    let r = b
        .post_form(
            &format!("{page}/decide"),
            Some(origin),
            &[
                ("_csrf", b.csrf()),
                ("action_version", &version),
                ("fingerprint", fp),
                ("value", edited),
            ],
        )
        .await;
    assert_eq!(r.status(), 303);
    let done: Value = admin
        .get(&format!("/v1/actions/{}", a["id"].as_str().unwrap()), 200)
        .await;
    assert_eq!(done["data"]["response"]["value"], edited, "{done}");
}
