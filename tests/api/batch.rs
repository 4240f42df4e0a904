//! Batch decisions (guide: "POST /v1/actions/decisions"): each item bound to
//! its own version and fingerprint, answered per item in request order; a
//! refused item stays open and undoes nothing else; the receipts chain in
//! order.

use serde_json::{Value, json};

use hds::domain::access::Role;
use hds::domain::receipt::{self, PublicKey};

use crate::helpers::{TestApp, two_options};

const ROUTE: &str = "/v1/actions/decisions";

fn item(a: &Value, option: &str) -> Value {
    json!({
        "action_id": a["id"],
        "action_version": a["action_version"],
        "fingerprint": a["fingerprint"],
        "option_id": option,
    })
}

/// The published keys, as `hds verify-receipt --keys` reads them.
async fn keys(app: &TestApp) -> Vec<PublicKey> {
    let jwks = app.get("/v1/receipts/keys", "unused").await;
    jwks.body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| PublicKey {
            kid: k["kid"].as_str().unwrap().to_owned(),
            x: k["x"].as_str().unwrap().to_owned(),
            status: k["status"].as_str().unwrap().to_owned(),
            created_at: k["created_at"].as_str().unwrap().to_owned(),
            retired_at: k["retired_at"].as_str().map(str::to_owned),
        })
        .collect()
}

/// Each receipt verifies, and each one's `prev` is the hash of the one before.
pub fn assert_chain(receipts: &[&Value], keys: &[PublicKey]) {
    let mut last: Option<(i64, String)> = None;
    for r in receipts {
        let jws = r["jws"].as_str().unwrap();
        let claims = receipt::verify(jws, keys).unwrap();
        let seq = claims["seq"].as_i64().unwrap();
        if let Some((prev_seq, prev_jws)) = &last {
            assert_eq!(seq, prev_seq + 1);
            assert_eq!(claims["prev"], receipt::chain_hash(prev_jws));
        }
        last = Some((seq, jws.to_owned()));
    }
}

#[tokio::test]
async fn a_batch_decides_each_item_and_leaves_a_changed_one_open() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let source = app.source();
    let mut shown = Vec::new();
    for t in ["one", "two", "three"] {
        shown.push(app.create_action(two_options(t)).await);
    }
    // The Source changes the second after the reviewer saw it.
    let id2 = shown[1]["id"].as_str().unwrap();
    let _: Value = source
        .patch(
            &format!("/v1/actions/{id2}"),
            json!({"title": "two, now bigger"}),
            200,
        )
        .await;
    let body = json!({"decisions": [
        item(&shown[0], "approve"),
        item(&shown[1], "approve"),
        json!({"action_id": shown[2]["id"], "action_version": shown[2]["action_version"],
               "fingerprint": shown[2]["fingerprint"], "option_id": "reject", "reason": "not now"}),
    ]});
    let out: Value = admin.post(ROUTE, body, 200).await;
    assert_eq!(out["summary"], json!({"decided": 2, "failed": 1}));
    let rows = out["data"].as_array().unwrap();
    let ids: Vec<&Value> = rows.iter().map(|r| &r["action_id"]).collect();
    assert_eq!(ids, [&shown[0]["id"], &shown[1]["id"], &shown[2]["id"]]);
    assert_eq!(rows[0]["status"], "decided");
    assert_eq!(rows[0]["action"]["status"], "resolved");
    assert_eq!(rows[0]["action"]["resolution_option_id"], "approve");
    assert_eq!(rows[1]["status"], "error");
    assert_eq!(rows[1]["error"]["code"], "ACTION_CHANGED", "{out}");
    assert!(rows[1].get("action").is_none());
    assert_eq!(rows[2]["action"]["resolution_option_id"], "reject");
    assert_eq!(rows[2]["action"]["resolution_reason"], "not now");

    // The changed Action is still open; deciding it at its new version works.
    let now: Value = admin.get(&format!("/v1/actions/{id2}"), 200).await;
    assert_eq!(now["data"]["status"], "open");
    assert_eq!(now["data"]["action_version"], 2);
    // Each decided item has its own receipt; they verify and chain in order.
    let keys = keys(&app).await;
    assert_chain(
        &[&rows[0]["action"]["receipt"], &rows[2]["action"]["receipt"]],
        &keys,
    );
    let retry: Value = admin
        .post(
            ROUTE,
            json!({"decisions": [item(&now["data"], "approve")]}),
            200,
        )
        .await;
    assert_eq!(retry["summary"], json!({"decided": 1, "failed": 0}));
    assert_chain(
        &[
            &rows[2]["action"]["receipt"],
            &retry["data"][0]["action"]["receipt"],
        ],
        &keys,
    );
    // Sending the first batch again decides nothing twice: each item is closed.
    let again: Value = admin
        .post(
            ROUTE,
            json!({"decisions": [item(&shown[0], "approve")]}),
            200,
        )
        .await;
    assert_eq!(again["data"][0]["error"]["code"], "ACTION_NOT_OPEN");
}

#[tokio::test]
async fn a_batch_answers_each_refusal_with_the_single_routes_code() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let ok = app.create_action(two_options("fine")).await;
    let mut body = two_options("vote");
    body["visibility"] = json!("restricted");
    body["reviewer_emails"] = json!(["admin@example.com"]);
    body["approval_policy"] = json!({"required_approvals": 1});
    let voted = app.create_action(body).await;
    let body = json!({"decisions": [
        {"action_id": "act_missing", "action_version": 1, "fingerprint": ok["fingerprint"], "option_id": "approve"},
        item(&ok, "maybe"),
        {"action_id": voted["id"], "action_version": 1, "fingerprint": voted["fingerprint"]},
        {"action_id": ok["id"], "action_version": 1, "fingerprint": ok["fingerprint"], "option_id": "approve",
         "reason": "x".repeat(2001)},
    ]});
    // The same Action twice is refused before anything is decided…
    admin
        .post_err(ROUTE, body.clone(), 422, "VALIDATION_ERROR")
        .await;
    let mut body = body;
    body["decisions"].as_array_mut().unwrap().pop();
    let out: Value = admin.post(ROUTE, body, 200).await;
    let codes: Vec<&Value> = out["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["error"]["code"])
        .collect();
    assert_eq!(
        codes,
        [
            "ACTION_NOT_FOUND",
            "OPTION_NOT_FOUND",
            "APPROVAL_VOTE_REQUIRED"
        ]
    );
    assert_eq!(
        out["data"][1]["error"]["details"]["option_ids"],
        json!(["approve", "reject"])
    );
    assert_eq!(out["summary"], json!({"decided": 0, "failed": 3}));
    // … and a reason too long is that item's VALIDATION_ERROR.
    let long = json!({"decisions": [{"action_id": ok["id"], "action_version": 1,
        "fingerprint": ok["fingerprint"], "option_id": "approve", "reason": "x".repeat(2001)}]});
    let out: Value = admin.post(ROUTE, long, 200).await;
    assert_eq!(out["data"][0]["error"]["code"], "VALIDATION_ERROR");
    let still: Value = admin
        .get(&format!("/v1/actions/{}", ok["id"].as_str().unwrap()), 200)
        .await;
    assert_eq!(still["data"]["status"], "open");
}

#[tokio::test]
async fn a_batch_must_hold_one_to_a_hundred_distinct_actions() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let a = app.create_action(two_options("one")).await;
    let e = admin
        .post_err(ROUTE, json!({"decisions": []}), 422, "VALIDATION_ERROR")
        .await;
    assert!(e.to_string().contains("1 to 100"), "{e}");
    // An item that is not an object is said so, without our type's name.
    let e = admin
        .post_err(ROUTE, json!({"decisions": [null]}), 422, "VALIDATION_ERROR")
        .await;
    let said = e["message"].as_str().unwrap();
    assert!(
        said.contains("expected an object") && !said.contains("BatchItem"),
        "{e}"
    );
    let many: Vec<Value> = (0..101)
        .map(|i| json!({"action_id": format!("act_{i}"), "action_version": 1, "fingerprint": a["fingerprint"], "option_id": "approve"}))
        .collect();
    let e = admin
        .post_err(ROUTE, json!({"decisions": many}), 422, "VALIDATION_ERROR")
        .await;
    assert!(e.to_string().contains("at most 100"), "{e}");
    let e = admin
        .post_err(
            ROUTE,
            json!({"decisions": [item(&a, "approve"), item(&a, "reject")]}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert!(e.to_string().contains("decisions[1].action_id"), "{e}");
    admin
        .post_err(
            ROUTE,
            json!({"decisions": [{"action_id": a["id"]}]}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    admin
        .post_err(ROUTE, json!({"items": []}), 422, "VALIDATION_ERROR")
        .await;
    app.source()
        .post_err(
            ROUTE,
            json!({"decisions": [item(&a, "approve")]}),
            401,
            "INVALID_API_KEY",
        )
        .await;
    // None of it decided anything.
    let now: Value = admin
        .get(&format!("/v1/actions/{}", a["id"].as_str().unwrap()), 200)
        .await;
    assert_eq!(now["data"]["status"], "open");
}

#[tokio::test]
async fn a_member_who_may_not_decide_gets_forbidden_per_item() {
    let app = TestApp::spawn().await;
    let a = app.create_action(two_options("one")).await;
    let b = app.create_action(two_options("two")).await;
    let viewer = app.member(Role::Viewer);
    let out: Value = viewer
        .post(
            ROUTE,
            json!({"decisions": [item(&a, "approve"), item(&b, "approve")]}),
            200,
        )
        .await;
    assert_eq!(out["data"][0]["error"]["code"], "FORBIDDEN");
    assert_eq!(out["data"][1]["error"]["code"], "FORBIDDEN");
    assert_eq!(out["summary"], json!({"decided": 0, "failed": 2}));
    // A reviewer of the same workspace decides both; an outsider sees neither.
    let outsider = app.outsider();
    let out: Value = outsider
        .post(ROUTE, json!({"decisions": [item(&a, "approve")]}), 200)
        .await;
    assert_eq!(out["data"][0]["error"]["code"], "ACTION_NOT_FOUND");
    let reviewer = app.member(Role::Reviewer);
    let out: Value = reviewer
        .post(
            ROUTE,
            json!({"decisions": [item(&a, "approve"), item(&b, "reject")]}),
            200,
        )
        .await;
    assert_eq!(out["summary"], json!({"decided": 2, "failed": 0}));
}

/// The inbox's batch form without JavaScript: each picked row posts the
/// binding it was rendered with; a destructive option asks first; the inbox
/// then names what changed and was left open.
#[tokio::test]
async fn the_inbox_form_decides_picked_rows_and_names_the_changed_one() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let browser = app.browser(admin.person()).await;
    let a = app.create_action(two_options("Rotate edge-1")).await;
    let b = app.create_action(two_options("Rotate edge-2")).await;
    let html = browser.page("/app").await;
    let pick = |x: &Value| {
        format!(
            "{} {} {}",
            x["id"].as_str().unwrap(),
            x["action_version"],
            x["fingerprint"].as_str().unwrap()
        )
    };
    let (pa, pb) = (pick(&a), pick(&b));
    assert!(html.contains(&format!("value=\"{pa}\"")), "{html}");
    let _: Value = app
        .source()
        .patch(
            &format!("/v1/actions/{}", b["id"].as_str().unwrap()),
            json!({"title": "Rotate edge-2 and restart"}),
            200,
        )
        .await;
    let base = browser.url("");
    let origin = base.trim_end_matches('/');
    let csrf = browser.csrf().to_owned();
    // A destructive option: the confirmation page first, nothing decided.
    let r = browser
        .post_form(
            "/app/inbox/decide",
            Some(origin),
            &[
                ("_csrf", &csrf),
                ("back", "status=open"),
                ("pick", &pa),
                ("pick", &pb),
                ("option_id", "reject"),
            ],
        )
        .await;
    assert_eq!(r.status(), 200);
    let confirm = r.text().await.unwrap();
    assert!(
        confirm.contains("Choose “Reject” for 2 requests?"),
        "{confirm}"
    );
    assert!(
        confirm
            .contains("<title>This is destructive: Choose “Reject” for 2 requests? · hds</title>"),
        "{confirm}"
    );
    assert!(confirm.contains(&format!("value=\"{pa}\"")), "{confirm}");
    let r = browser
        .post_form(
            "/app/inbox/decide",
            Some(origin),
            &[
                ("_csrf", &csrf),
                ("back", "status=open"),
                ("pick", &pa),
                ("pick", &pb),
                ("option_id", "reject"),
                ("reason", "  edge nodes are being replaced  "),
                ("confirmed", "yes"),
            ],
        )
        .await;
    assert_eq!(r.status(), 303);
    let to = r.headers()["location"].to_str().unwrap().to_owned();
    let b_id = b["id"].as_str().unwrap();
    // The result waits in the session, not in the link: shown once.
    assert_eq!(to, "/app?status=open&batch=done");
    let page = browser.page(&to).await;
    assert!(page.contains("Decided 1 request;"), "{page}");
    assert!(page.contains("Rotate edge-2 and restart"), "{page}");
    let again = browser.page(&to).await;
    assert!(!again.contains("Decided 1 request"), "{again}");
    let now: Value = admin.get(&format!("/v1/actions/{b_id}"), 200).await;
    assert_eq!(now["data"]["status"], "open");
    let now: Value = admin
        .get(&format!("/v1/actions/{}", a["id"].as_str().unwrap()), 200)
        .await;
    assert_eq!(now["data"]["resolution_option_id"], "reject");
    // The bar's one reason is kept with each decision, trimmed.
    assert_eq!(
        now["data"]["resolution_reason"],
        "edge nodes are being replaced"
    );
    // The same batch sent again (another tab, a retry): the decided one is
    // said to be decided by this very person, not merely "closed".
    let r = browser
        .post_form(
            "/app/inbox/decide",
            Some(origin),
            &[
                ("_csrf", &csrf),
                ("back", "status=open"),
                ("pick", &pa),
                ("option_id", "approve"),
            ],
        )
        .await;
    let to = r.headers()["location"].to_str().unwrap().to_owned();
    let page = browser.page(&to).await;
    assert!(page.contains("already decided by you"), "{page}");
    // One closed by someone else is only "already closed".
    let c = app.create_action(two_options("Rotate edge-3")).await;
    let pc = format!(
        "{} {} {}",
        c["id"].as_str().unwrap(),
        c["action_version"],
        c["fingerprint"].as_str().unwrap()
    );
    app.source()
        .post::<Value>(
            &format!("/v1/actions/{}/cancel", c["id"].as_str().unwrap()),
            json!({}),
            200,
        )
        .await;
    let r = browser
        .post_form(
            "/app/inbox/decide",
            Some(origin),
            &[
                ("_csrf", &csrf),
                ("back", "status=open"),
                ("pick", &pc),
                ("option_id", "approve"),
            ],
        )
        .await;
    let to = r.headers()["location"].to_str().unwrap().to_owned();
    let page = browser.page(&to).await;
    assert!(page.contains("Rotate edge-3</a>: already closed"), "{page}");
    assert!(!page.contains("already decided by you"), "{page}");
    // Only the changed one picked again (its old binding): nothing decided,
    // said so rather than "Decided 0 requests".
    let r = browser
        .post_form(
            "/app/inbox/decide",
            Some(origin),
            &[
                ("_csrf", &csrf),
                ("back", "status=open"),
                ("pick", &pb),
                ("option_id", "approve"),
            ],
        )
        .await;
    let to = r.headers()["location"].to_str().unwrap().to_owned();
    let page = browser.page(&to).await;
    assert!(page.contains("No request was decided."), "{page}");
    assert!(!page.contains("Decided 0"), "{page}");
    // Nothing picked: nothing sent, said in words.
    let r = browser
        .post_form(
            "/app/inbox/decide",
            Some(origin),
            &[("_csrf", &csrf), ("option_id", "approve")],
        )
        .await;
    let to = r.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        browser
            .page(&to)
            .await
            .contains("pick at least one request first")
    );
}

/// The inbox's batch with an option that needs a reason: without one,
/// nothing is decided and the inbox says why (before a destructive
/// option's confirmation); with one, every picked row is decided with it.
#[tokio::test]
async fn the_inbox_batch_asks_for_the_reason_an_option_needs() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let browser = app.browser(admin.person()).await;
    let spec = |title: &str| {
        let mut s = two_options(title);
        s["options"][1]["reason_required"] = json!(true);
        s
    };
    let a = app.create_action(spec("Pay invoice 1")).await;
    let b = app.create_action(spec("Pay invoice 2")).await;
    let pick = |x: &Value| {
        format!(
            "{} {} {}",
            x["id"].as_str().unwrap(),
            x["action_version"],
            x["fingerprint"].as_str().unwrap()
        )
    };
    let (pa, pb) = (pick(&a), pick(&b));
    let html = browser.page("/app").await;
    assert!(
        html.contains("placeholder=\"Reason (optional unless the option needs one)\""),
        "{html}"
    );
    let base = browser.url("");
    let origin = base.trim_end_matches('/');
    let csrf = browser.csrf().to_owned();
    for reason in ["", "   ", "\u{200b}"] {
        let r = browser
            .post_form(
                "/app/inbox/decide",
                Some(origin),
                &[
                    ("_csrf", &csrf),
                    ("back", "status=open"),
                    ("pick", &pa),
                    ("pick", &pb),
                    ("option_id", "reject"),
                    ("reason", reason),
                ],
            )
            .await;
        assert_eq!(r.status(), 303, "no confirmation page first");
        let to = r.headers()["location"].to_str().unwrap().to_owned();
        assert_eq!(to, "/app?status=open&batch_error=reason");
        let html = browser.page(&to).await;
        assert!(
            html.contains("Nothing was decided: that option needs a reason."),
            "{html}"
        );
        // The rows are still picked, for the reason to be written.
        for p in [&pa, &pb] {
            assert!(
                html.contains(&format!(r#"name="pick" value="{p}" form="batch-form""#))
                    && html
                        .split(&format!(r#"value="{p}""#))
                        .nth(1)
                        .is_some_and(|rest| rest.split('>').next().unwrap().contains(" checked")),
                "{html}"
            );
        }
        // Once: a reload shows the inbox as it was.
        let again = browser.page(&to).await;
        assert!(!again.contains(" checked>"), "{again}");
    }
    // A reason too long for any decision: said once, up front, whichever
    // option was chosen.
    let long = "x".repeat(2_001);
    let r = browser
        .post_form(
            "/app/inbox/decide",
            Some(origin),
            &[
                ("_csrf", &csrf),
                ("back", "status=open"),
                ("pick", &pa),
                ("pick", &pb),
                ("option_id", "approve"),
                ("reason", &long),
            ],
        )
        .await;
    let to = r.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(to, "/app?status=open&batch_error=reason_long");
    let html = browser.page(&to).await;
    // The reason typed is back in its box, to be shortened.
    assert!(html.contains(&format!(r#"value="{long}""#)), "reason kept");
    assert!(
        html.contains("Nothing was decided: the reason is longer than 2,000 characters."),
        "{html}"
    );
    // A direction control in it would refuse every row alike: said once,
    // up front, before any destructive option's confirmation.
    let r = browser
        .post_form(
            "/app/inbox/decide",
            Some(origin),
            &[
                ("_csrf", &csrf),
                ("back", "status=open"),
                ("pick", &pa),
                ("pick", &pb),
                ("option_id", "reject"),
                ("reason", "ok \u{202e}devorppa"),
            ],
        )
        .await;
    let to = r.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(to, "/app?status=open&batch_error=reason_direction");
    let html = browser.page(&to).await;
    assert!(html.contains("direction control"), "{html}");
    for x in [&a, &b] {
        let now: Value = admin
            .get(&format!("/v1/actions/{}", x["id"].as_str().unwrap()), 200)
            .await;
        assert_eq!(now["data"]["status"], "open");
    }
    // The other option needs none; with a reason, the destructive one asks
    // first and then decides both.
    let r = browser
        .post_form(
            "/app/inbox/decide",
            Some(origin),
            &[
                ("_csrf", &csrf),
                ("back", "status=open"),
                ("pick", &pa),
                ("pick", &pb),
                ("option_id", "reject"),
                ("reason", "Duplicate invoices"),
            ],
        )
        .await;
    assert_eq!(r.status(), 200);
    assert!(
        r.text()
            .await
            .unwrap()
            .contains("Choose “Reject” for 2 requests?")
    );
    let r = browser
        .post_form(
            "/app/inbox/decide",
            Some(origin),
            &[
                ("_csrf", &csrf),
                ("back", "status=open"),
                ("pick", &pa),
                ("pick", &pb),
                ("option_id", "reject"),
                ("reason", "Duplicate invoices"),
                ("confirmed", "yes"),
            ],
        )
        .await;
    assert_eq!(r.status(), 303);
    for x in [&a, &b] {
        let now: Value = admin
            .get(&format!("/v1/actions/{}", x["id"].as_str().unwrap()), 200)
            .await;
        assert_eq!(now["data"]["status"], "resolved");
        assert_eq!(now["data"]["resolution_reason"], "Duplicate invoices");
    }
}
