//! The dashboard in real headless Chromium (playwright-core, tests/node) against
//! the real server, plus form-level HTTP checks that need no browser: deciding
//! without JavaScript, and CSRF refusals.
//!
//! A scenario script prints one JSON object as its last stdout line. Before
//! that it may print `{"ask": {...}}` lines: the test waits for what only it
//! can observe (a long poll held by the server) and answers `ok` on stdin.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Actor, TestApp, python, run_node, two_options};

/// Longest a scenario may run; Chromium starts in about a second here.
const SCRIPT_LIMIT: Duration = Duration::from_secs(90);

/// Runs `tests/node/<script>` with `env`; answers its asks; returns its result
/// once it reports success with no CSP violation and no script error.
pub(crate) async fn run_script(app: &TestApp, script: &str, env: &[(&str, String)]) -> Value {
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.push(("BASE_URL", &app.base));
    let result = run_node(script, &env, SCRIPT_LIMIT, Some(app)).await;
    assert_eq!(
        result["ok"],
        true,
        "{script} failed: {}",
        result["error"].as_str().unwrap_or_default()
    );
    assert_eq!(
        result["csp_violations"],
        json!([]),
        "{script}: CSP violations"
    );
    assert_eq!(
        result["script_errors"],
        json!([]),
        "{script}: script errors"
    );
    result
}

async fn signin_link(app: &TestApp) -> String {
    app.signin_link("admin@example.com").await
}

#[tokio::test]
async fn a_new_action_appears_live_is_decided_in_chromium_and_the_long_poll_gets_a_verifying_receipt()
 {
    let app = TestApp::spawn().await;
    let env = [
        ("LINK", signin_link(&app).await),
        ("SOURCE_KEY", app.live_key()),
    ];
    let r = run_script(&app, "browser-decide.mjs", &env).await;

    assert_eq!(r["appeared_without_reload"], true);
    assert_eq!(r["nav_count"], "1");
    assert_eq!(r["shown_fingerprint"], r["fingerprint"]);
    assert_eq!(r["page_status"], "resolved");
    assert_eq!(r["page_verified"], true);
    // The long poll started before the decision and returned it.
    assert_eq!(r["poll_status"], 200);
    let polled = &r["poll"];
    assert_eq!(polled["status"], "resolved");
    assert_eq!(polled["resolution_option_id"], "approve");
    assert_eq!(polled["resolution_reason"], "Checked the changelog");
    assert_eq!(polled["receipt"]["kid"], r["page_kid"]);
    // An implementation independent of hds verifies the receipt.
    let jwks = app.get("/v1/receipts/keys", "unused").await;
    let out = python(
        "verify_receipt.py",
        &json!({ "jwks": jwks.body, "receipts": [polled["receipt"]["jws"]] }),
    );
    let claims: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(claims["sub"], r["action_id"]);
}

#[tokio::test]
async fn a_decision_on_a_changed_action_is_refused_with_old_and_new_shown_and_then_succeeds() {
    let app = TestApp::spawn().await;
    let env = [
        ("LINK", signin_link(&app).await),
        ("SOURCE_KEY", app.live_key()),
    ];
    let r = run_script(&app, "browser-stale.mjs", &env).await;

    assert_eq!(
        r["description_before"],
        "Scale to 12 replicas for the sale."
    );
    let stale = &r["stale"];
    assert_eq!(stale["status"], 409);
    assert!(
        stale["heading"].as_str().unwrap().contains("version 1 → 2"),
        "{stale}"
    );
    assert_eq!(stale["field"], "description");
    assert!(
        stale["old"]
            .as_str()
            .unwrap()
            .contains("Scale to **12** replicas"),
        "{stale}"
    );
    assert!(
        stale["new"]
            .as_str()
            .unwrap()
            .contains("Scale to **40** replicas"),
        "{stale}"
    );
    // The page shows the new content, bound to the new version.
    assert_eq!(stale["description"], "Scale to 40 replicas for the sale.");
    assert_eq!(stale["version"], "2");
    assert_eq!(stale["form_version"], "2");
    assert_eq!(r["status_after_refusal"], "open");
    assert_eq!(r["final"]["status"], "resolved");
    assert_eq!(r["final"]["option"], "approve");
    assert_eq!(r["final"]["receipt_version"], 2);
}

#[tokio::test]
async fn a_destructive_option_asks_first_with_and_without_javascript() {
    let app = TestApp::spawn().await;
    let env = [
        ("LINK", signin_link(&app).await),
        ("LINK2", signin_link(&app).await),
        ("SOURCE_KEY", app.live_key()),
    ];
    let r = run_script(&app, "browser-destructive.mjs", &env).await;

    let js = &r["js"];
    assert_eq!(
        js["dialog_text"],
        "Choose “Delete the branch” for “Delete the stale release branch”? This is destructive."
    );
    assert_eq!(js["after_cancel"], "open");
    assert_eq!(js["stayed_on_page"], true);
    assert_eq!(js["final_status"], "resolved");
    assert_eq!(js["final_option"], "reject");
    let plain = &r["no_js"];
    assert_eq!(plain["confirm_heading"], "This is destructive");
    assert_eq!(
        plain["confirm_text"],
        "Choose “Delete the branch” for “Delete the old staging database”? This is destructive."
    );
    assert_eq!(plain["after_first_post"], "open");
    assert_eq!(plain["after_cancel"], "open");
    assert_eq!(plain["final_status"], "resolved");
    assert_eq!(plain["final_option"], "reject");
}

/// Every dashboard page at 390 px: nothing scrolls sideways and no word is
/// broken across lines. The same walk takes the README's screenshots; the
/// test run writes them to a temporary directory, and only the explicit
/// command in docs/screenshots.md (`HDS_SCREENSHOTS_DIR=docs/screenshots`)
/// rewrites the committed ones.
#[tokio::test]
async fn every_page_fits_a_phone_and_the_readme_screenshots_are_taken() {
    // Loopback callbacks, for the Source page's delivery log; mailed sign-in
    // links on, so the sign-in page shows its e-mail form (nothing is
    // mailed: no one asks, and no mail server listens).
    let app = TestApp::spawn_with(|c| {
        c.allow_private_callbacks = true;
        c.smtp = Some(crate::smtp::SmtpSink::config(crate::smtp::free_port()));
        c.auth.email_links = true;
    })
    .await;
    let rx = crate::receiver::Receiver::start();
    rx.script(&[410], 0.0).await;
    let tmp = tempfile::tempdir().unwrap();
    let out = match std::env::var("HDS_SCREENSHOTS_DIR") {
        Ok(dir) if !dir.is_empty() => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir),
        _ => tmp.path().to_owned(),
    };
    std::fs::create_dir_all(&out).unwrap();
    let out = out.to_str().unwrap().to_owned();
    // The admin's unsubscribe link, as a notification mail carries it.
    let unsubscribe = app
        .unsubscribe_path(app.creds["user_id"].as_str().unwrap())
        .await;
    let env = [
        ("LINK", signin_link(&app).await),
        ("UNSUBSCRIBE", unsubscribe),
        ("LINK2", signin_link(&app).await),
        ("SOURCE_KEY", app.live_key()),
        ("TEST_KEY", app.test_key()),
        ("USER_TOKEN", app.user_token()),
        (
            "SOURCE_ID",
            app.creds["source_id"].as_str().unwrap().to_owned(),
        ),
        ("OUT_DIR", out.clone()),
        ("HOOK_OK", rx.url("hooks")),
        // The discard port: nothing listens, the connection is refused.
        ("HOOK_DOWN", "http://127.0.0.1:9/hooks".to_owned()),
    ];
    let r = run_script(&app, "browser-screenshots.mjs", &env).await;
    // An unbroken title wraps inside its inbox row at 1280 px.
    assert_eq!(r["wide_rows_spilling"], json!([]), "{r}");
    let phone = r["phone"].as_object().unwrap();
    assert!(phone.len() >= 24, "{phone:?}");
    let misfits: Vec<String> = phone
        .iter()
        .filter(|(_, c)| {
            c["horizontal_overflow"] != 0
                || c["broken_words"] != json!([])
                || c.get("spilling_buttons").is_some_and(|b| b != &json!([]))
        })
        .map(|(page, c)| format!("{page}: {c}"))
        .collect();
    assert!(
        misfits.is_empty(),
        "at 390 px (sideways scroll in px, words broken across lines):\n{}",
        misfits.join("\n")
    );
    // Honest rows: the open Action with a deadline says when it expires; the
    // resolved ones say what was decided and by whom; with live and test
    // Actions listed, the nav's number is the Open tab's.
    let rows = &r["rows"];
    assert_eq!(rows["deadlines"], json!(["expires in 3 h"]), "{rows}");
    assert_eq!(
        rows["decided"],
        json!(["Reject by you", "Approve by you", "Approve by you"]),
        "{rows}"
    );
    // Cancelled Actions were decided by no one: their rows say nothing of it.
    assert_eq!(rows["cancelled"], 3, "{rows}");
    assert_eq!(rows["cancelled_decided"], json!([]), "{rows}");
    assert_eq!(rows["nav_count"], "7", "{rows}");
    assert_eq!(rows["open_tab"], rows["nav_count"], "{rows}");
    for f in r["files"].as_array().unwrap() {
        let png = std::fs::read(format!("{out}/{}", f.as_str().unwrap())).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{f} is not a PNG");
    }
}

#[tokio::test]
async fn every_page_has_the_csp_no_inline_code_and_chromium_reports_no_violation() {
    let app = TestApp::spawn().await;
    let env = [
        ("LINK", signin_link(&app).await),
        ("SOURCE_KEY", app.live_key()),
        (
            "SOURCE_ID",
            app.creds["source_id"].as_str().unwrap().to_owned(),
        ),
    ];
    let r = run_script(&app, "browser-csp.mjs", &env).await;

    let pages = r["pages"].as_object().unwrap();
    assert_eq!(pages.len(), 12);
    // The analytics page draws its charts as inline SVG, each with a title.
    let a = &pages["analytics"];
    assert!(a["svg_charts"].as_i64().unwrap() >= 2, "{a}");
    assert_eq!(a["svg_charts"], a["svg_chart_titles"], "{a}");
    for (name, p) in pages {
        assert_eq!(p["status"], 200, "{name}");
        let csp = p["csp"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: no CSP"));
        assert!(csp.contains("script-src 'self'"), "{name}: {csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{name}: {csp}");
        for what in [
            "inline_scripts",
            "style_elements",
            "style_attributes",
            "handler_attributes",
        ] {
            assert_eq!(p[what], 0, "{name}: {what}");
        }
    }
    // Raw HTML in Markdown is shown as text; nothing ran or loaded.
    let d = &r["description"];
    assert_eq!(d["pwned"], Value::Null);
    assert_eq!(d["pwned_after_click"], Value::Null);
    assert_eq!(d["images"], 0);
    assert_eq!(d["iframes"], 0);
    assert_eq!(d["javascript_links"], 0);
    assert!(d["text"].as_str().unwrap().contains("<script>"), "{d}");
}

/// "Next in the inbox" leads only to a request the person can act on: it
/// passes over their own request (separation of duties) and an approval
/// request whose version they already voted on, however high in the
/// inbox; a test request's "nothing else" leads to the test inbox.
#[tokio::test]
async fn next_in_the_inbox_skips_what_the_reviewer_cannot_act_on() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let me = admin.person().clone();
    let client = form_session(&app).await;
    let done = app.create_action(two_options("Decided first")).await;
    let mut own = two_options("My own request");
    own["priority"] = json!("urgent");
    own["requested_by_email"] = json!(me.email);
    app.create_action(own).await;
    let mut voted = two_options("Voted already");
    voted["priority"] = json!("urgent");
    voted["visibility"] = json!("restricted");
    let other = app.member(hds::domain::access::Role::Reviewer);
    voted["reviewer_user_ids"] = json!([me.id, other.person().id]);
    voted["approval_policy"] = json!({"required_approvals": 2});
    let voted = app.create_action(voted).await;
    let _: Value = admin
        .post(
            &format!("/v1/actions/{}/votes", voted["id"].as_str().unwrap()),
            json!({"action_version": 1, "fingerprint": voted["fingerprint"], "vote": "approve"}),
            200,
        )
        .await;
    // Restricted to another reviewer: an owner sees it, but decides nothing.
    let mut theirs = two_options("Restricted to another");
    theirs["priority"] = json!("urgent");
    theirs["visibility"] = json!("restricted");
    theirs["reviewer_user_ids"] = json!([other.person().id]);
    app.create_action(theirs).await;
    let next = app.create_action(two_options("Normal and open")).await;
    let decide = |a: &Value| json!({"action_version": 1, "fingerprint": a["fingerprint"], "option_id": "approve"});
    let done_id = done["id"].as_str().unwrap();
    let _: Value = admin
        .post(
            &format!("/v1/actions/{done_id}/decision"),
            decide(&done),
            200,
        )
        .await;
    let after = client
        .page(&format!("/app/actions/{done_id}?done=decided"))
        .await;
    assert!(
        after.contains(&format!(
            "<a href=\"/app/actions/{}\" id=\"next-request\">Next in the inbox: Normal and open →</a>",
            next["id"].as_str().unwrap()
        )),
        "{after}"
    );
    // Decided too: the two left are not for this person, so nothing waits.
    let next_id = next["id"].as_str().unwrap();
    let _: Value = admin
        .post(
            &format!("/v1/actions/{next_id}/decision"),
            decide(&next),
            200,
        )
        .await;
    let after = client
        .page(&format!("/app/actions/{next_id}?done=decided"))
        .await;
    assert!(!after.contains("next-request"), "{after}");
    assert!(
        after.contains("<a href=\"/app\">Nothing else in the inbox waits for you.</a>"),
        "{after}"
    );
    // Past the first 200 open requests (all the person's own here), the
    // link says it looked no further, and leads to the inbox.
    for i in 0..200 {
        let mut own = two_options(&format!("Own request {i}"));
        own["priority"] = json!("high");
        own["requested_by_email"] = json!(me.email);
        app.create_action(own).await;
    }
    let mut far = two_options("Far down");
    far["priority"] = json!("low");
    app.create_action(far).await;
    let last = app.create_action(two_options("Decided last")).await;
    let last_id = last["id"].as_str().unwrap();
    let _: Value = admin
        .post(
            &format!("/v1/actions/{last_id}/decision"),
            decide(&last),
            200,
        )
        .await;
    let after = client
        .page(&format!("/app/actions/{last_id}?done=decided"))
        .await;
    assert!(
        after.contains(
            "<a href=\"/app\">None of the next 200 requests in the inbox waits for you: see the inbox.</a>"
        ),
        "{after}"
    );
    // A test request leads back to the test inbox.
    let t = app
        .create_action_with(&app.test_key(), two_options("Test only"))
        .await;
    let t_id = t["id"].as_str().unwrap();
    let _: Value = admin
        .post(&format!("/v1/actions/{t_id}/decision"), decide(&t), 200)
        .await;
    let after = client
        .page(&format!("/app/actions/{t_id}?done=decided"))
        .await;
    assert!(
        after.contains(
            "<a href=\"/app?environment=test\">Nothing else in the inbox waits for you.</a>"
        ),
        "{after}"
    );
}

/// A cookie session as a browser without JavaScript gets it: the link's
/// confirmation page, then its form.
async fn form_session(app: &TestApp) -> Actor {
    app.browser(app.admin().person()).await
}

/// The page's form token, as a browser would submit it.
fn csrf_of(html: &str) -> String {
    let at = html.find(r#"name="_csrf" value=""#).expect("a form token") + 20;
    html[at..].split('"').next().unwrap().to_owned()
}

#[tokio::test]
async fn a_plain_form_post_decides_without_javascript() {
    let app = TestApp::spawn().await;
    let client = form_session(&app).await;
    let a = app.create_action(two_options("Ship it")).await;
    let id = a["id"].as_str().unwrap();
    let url = format!("/app/actions/{id}");
    let html = client.page(&url).await;
    let version = a["action_version"].to_string();
    let fields = [
        ("_csrf", csrf_of(&html)),
        ("action_version", version),
        ("fingerprint", a["fingerprint"].as_str().unwrap().to_owned()),
        ("option_id", "approve".to_owned()),
        ("reason", "looks right".to_owned()),
    ];
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();

    // A form whose fingerprint is not this version's (an old tab, a form
    // changed on its way) decides nothing and says so, not "changed 1 → 1".
    let other = "sha256:".to_owned() + &"0".repeat(64);
    let mut altered = fields.clone();
    altered[2] = ("fingerprint", other.as_str());
    let r = client
        .post_form(&format!("{url}/decide"), Some(&app.base), &altered)
        .await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let page = r.text().await.unwrap();
    assert!(
        page.contains("Your form did not match this request"),
        "{page}"
    );
    assert!(!page.contains("version 1 → 1"), "{page}");

    let r = client
        .post_form(&format!("{url}/decide"), Some(&app.base), &fields)
        .await;

    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        r.headers()["location"],
        format!("/app/actions/{id}?done=decided")
    );
    let now = app
        .get(&format!("/v1/actions/{id}"), &app.user_token())
        .await;
    assert_eq!(now.body["data"]["status"], "resolved");
    assert_eq!(now.body["data"]["resolution_option_id"], "approve");
    assert_eq!(now.body["data"]["resolution_reason"], "looks right");
    let after = client.page(&format!("{url}?done=decided")).await;
    assert!(after.contains("Signature verified by this server"));
    // Nothing else open: said, with the way back to the inbox.
    assert!(
        after.contains("<a href=\"/app\">Nothing else in the inbox waits for you.</a>"),
        "{after}"
    );
    // With another open request (a test one does not count: the decided
    // one is live), the confirmation leads on to it.
    app.create_action_with(&app.test_key(), two_options("Test only"))
        .await;
    let next = app.create_action(two_options("Rotate the keys")).await;
    let after = client.page(&format!("{url}?done=decided")).await;
    assert!(
        after.contains(&format!(
            "<a href=\"/app/actions/{}\" id=\"next-request\">Next in the inbox: Rotate the keys →</a>",
            next["id"].as_str().unwrap()
        )),
        "{after}"
    );
    // Only after a decision or a vote.
    assert!(!client.page(&url).await.contains("next-request"));
    // It has no callback_url: the Source is not said to have been told.
    assert!(
        after.contains("The Source learns of it when it next reads the request"),
        "{after}"
    );
    // The receipt downloads as a file that `hds verify-receipt` accepts.
    let receipt = client
        .http()
        .get(client.url(&format!("{url}/receipt.json")))
        .send()
        .await
        .unwrap();
    assert_eq!(
        receipt.headers()["content-disposition"],
        format!("attachment; filename=\"receipt-{id}.json\"")
    );
    let receipt: Value = receipt.json().await.unwrap();
    assert_eq!(receipt["jws"], now.body["data"]["receipt"]["jws"]);
}

/// A session that ended (signed out elsewhere, expired) sends the browser
/// to sign in and back to where it was: for a form, to the form's page,
/// saying that what it sent was not saved.
#[tokio::test]
async fn an_ended_session_signs_in_again_back_to_the_page_and_says_why() {
    let app = TestApp::spawn().await;
    let client = form_session(&app).await;
    let a = app.create_action(two_options("Ship it")).await;
    let id = a["id"].as_str().unwrap();
    let url = format!("/app/actions/{id}");
    let html = client.page(&url).await;
    let fields = [
        ("_csrf", csrf_of(&html)),
        ("action_version", "1".to_owned()),
        ("fingerprint", a["fingerprint"].as_str().unwrap().to_owned()),
        ("option_id", "approve".to_owned()),
    ];
    let other = form_session(&app).await;
    app.db().execute("DELETE FROM web_sessions", []).unwrap();
    // A page asked for with the dead cookie: back to it, the session ended
    // (once: the answer expires the cookie).
    let r = other
        .http()
        .get(other.url("/app/runs"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.headers()["location"],
        "/app/signin?next=%2Fapp%2Fruns&done=session_ended"
    );
    let r = client
        .http()
        .post(client.url(&format!("{url}/decide")))
        .header("origin", &app.base)
        .header("referer", format!("{}{url}", app.base))
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let to = r.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(
        to,
        format!("/app/signin?next=%2Fapp%2Factions%2F{id}&done=session_ended_unsaved")
    );
    let page = crate::helpers::browser_client()
        .get(format!("{}{to}", app.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("what you sent was not saved"), "{page}");
    let now: Value = app.source().get(&format!("/v1/actions/{id}"), 200).await;
    assert_eq!(now["data"]["status"], "open", "nothing decided");
    // A Referer from another site is not followed (and the cookie is gone now).
    let r = client
        .http()
        .post(client.url(&format!("{url}/decide")))
        .header("origin", &app.base)
        .header("referer", format!("https://evil.example{url}"))
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["location"], "/app/signin?next=%2Fapp");
    // A page whose address holds a secret is not where it goes back to.
    let r = client
        .http()
        .post(client.url(&format!("{url}/decide")))
        .header("origin", &app.base)
        .header(
            "referer",
            format!(
                "{}/app/signin/link/Jd8xRk2vQm9sT4wY7zB1nC5eF3gH6iK0",
                app.base
            ),
        )
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["location"], "/app/signin?next=%2Fapp");
    // Signing out with a session that already ended: signed out, nothing lost.
    let third = form_session(&app).await;
    let token = csrf_of(&third.page("/app").await);
    app.db().execute("DELETE FROM web_sessions", []).unwrap();
    let r = third
        .post_form(
            "/app/signout",
            Some(&app.base),
            &[("_csrf", token.as_str())],
        )
        .await;
    assert_eq!(
        r.headers()["location"],
        "/app/signin?next=%2Fapp&done=signed_out"
    );
}

#[tokio::test]
async fn form_posts_without_the_token_or_from_another_origin_are_refused_and_decide_nothing() {
    let app = TestApp::spawn().await;
    let client = form_session(&app).await;
    let a = app.create_action(two_options("Ship it")).await;
    let id = a["id"].as_str().unwrap();
    let url = format!("/app/actions/{id}");
    let token = csrf_of(&client.page(&url).await);
    let version = a["action_version"].to_string();
    let fp = a["fingerprint"].as_str().unwrap();
    let decide = format!("{url}/decide");
    let binding = [
        ("action_version", version.as_str()),
        ("fingerprint", fp),
        ("option_id", "approve"),
    ];

    // No token.
    let r = client.post_form(&decide, Some(&app.base), &binding).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(r.text().await.unwrap().contains("CSRF_FAILED"));
    // A wrong token.
    let mut wrong = binding.to_vec();
    wrong.push(("_csrf", "not-the-token"));
    let r = client.post_form(&decide, Some(&app.base), &wrong).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    // The right token, sent by another site.
    let mut right = binding.to_vec();
    right.push(("_csrf", token.as_str()));
    let r = client
        .post_form(&decide, Some("https://evil.example"), &right)
        .await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    // Sign-out is a form too.
    let r = client
        .post_form(
            "/app/signout",
            Some("https://evil.example"),
            &[("_csrf", token.as_str())],
        )
        .await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);

    let now = app
        .get(&format!("/v1/actions/{id}"), &app.user_token())
        .await;
    assert_eq!(now.body["data"]["status"], "open");
    // The session still works, and the same form from our origin decides.
    let r = client.post_form(&decide, Some(&app.base), &right).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn a_signed_out_browser_is_sent_to_sign_in_and_comes_back() {
    let app = TestApp::spawn().await;
    let client = crate::helpers::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = client
        .get(format!("{}/app/sources?x=1", app.base))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_redirection());
    assert_eq!(
        r.headers()["location"],
        "/app/signin?next=%2Fapp%2Fsources%3Fx%3D1"
    );
    let signin = client
        .get(format!("{}/app/signin?error=SIGNIN_NOT_ALLOWED", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(signin.status(), StatusCode::FORBIDDEN);
    assert!(signin.text().await.unwrap().contains("Who may sign in"));
    // A used link is refused on its confirmation page and when posted.
    let link = signin_link(&app).await;
    let first = form_session_with(&app, &link).await;
    assert_eq!(first, StatusCode::SEE_OTHER);
    assert_eq!(form_session_with(&app, &link).await, StatusCode::GONE);
    let again = client.get(&link).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::GONE);
}

async fn form_session_with(app: &TestApp, link: &str) -> StatusCode {
    crate::helpers::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .post(link)
        .header("origin", &app.base)
        .form(&[("next", "/app")])
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test]
async fn a_reviewer_presses_a_control_and_sees_the_sources_result_live_in_chromium() {
    let app = TestApp::spawn().await;
    let reviewer = app.member(hds::domain::access::Role::Reviewer);
    let env = [
        ("LINK", app.signin_link(&reviewer.person().email).await),
        ("SOURCE_KEY", app.live_key()),
    ];
    let r = run_script(&app, "browser-controls.mjs", &env).await;

    // A link control opens its URL in a new tab and creates nothing.
    assert_eq!(r["link"]["href"], "https://grafana.example.com/d/checkout");
    assert_eq!(r["link"]["target"], "_blank");
    assert_eq!(r["link"]["rel"], "noopener noreferrer");
    assert_eq!(r["dialog_text"], "Restart all checkout workers?");
    // A control's dialog asks as its page without JavaScript does, not
    // "This is destructive" (that is for destructive options).
    assert_eq!(r["dialog_title"], "Press “Restart workers”?");
    assert_eq!(r["pending"], "pending");
    assert_eq!(r["shown"]["status"], "succeeded");
    assert_eq!(r["shown"]["message"], "12 workers restarted in 8 s");
    assert_eq!(r["shown"]["no_reload"], true);
    assert_eq!(r["asked"]["text"], "Which release introduced the errors?");
    assert_eq!(r["asked"]["status"], "open");
    assert!(
        r["answered"]["detail"]
            .as_str()
            .unwrap()
            .contains("Answered by version 2"),
        "{r}"
    );
    assert_eq!(r["answered"]["no_reload"], true);
    // The control never decided anything.
    assert_eq!(r["source_status"], "open");
    assert_eq!(r["source_context"][0]["status"], "answered");
    assert_eq!(app.count_rows("control_requests"), 1);
}

/// Key rotation on the Source page (POST-redirect-GET): the live key alone,
/// shown once; a reload shows a notice and rotates nothing, the shown key
/// works, and the old one works until the end the page shows.
#[tokio::test]
async fn the_source_page_replaces_the_live_key_shows_it_once_and_a_reload_changes_nothing() {
    let app = TestApp::spawn().await;
    let env = [
        ("LINK", signin_link(&app).await),
        ("SOURCE_KEY", app.live_key()),
        (
            "SOURCE_ID",
            app.creds["source_id"].as_str().unwrap().to_owned(),
        ),
    ];
    let r = run_script(&app, "browser-rotate.mjs", &env).await;

    assert_eq!(r["overlap_default"], "86400");
    assert_eq!(r["confirm_heading"], "Replace the live key?");
    let shown = r["shown_key"].as_str().unwrap();
    assert!(shown.starts_with("svc_live_"), "{shown}");
    assert_ne!(shown, app.live_key());
    assert_eq!(r["shown_test_keys"], 0, "only the live key was replaced");
    let line = r["old_key_line"].as_str().unwrap();
    assert!(line.contains("old live key works until"), "{line}");
    // The end the API lists, as the page writes it (to the minute, UTC).
    let src = format!("/v1/sources/{}", app.creds["source_id"].as_str().unwrap());
    let got: Value = app.admin().get(&src, 200).await;
    let old = got["data"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["environment"] == "live" && !k["expires_at"].is_null())
        .expect("the old live key, listed with its end")
        .clone();
    let end = old["expires_at"].as_str().unwrap();
    assert!(
        line.contains(&format!("{} {} UTC", &end[..10], &end[11..16])),
        "{line} / {end}"
    );
    let after = &r["after_reload"];
    assert_eq!(after["secrets"], 0);
    assert_eq!(after["key_in_page"], false);
    assert!(
        after["notice"]
            .as_str()
            .unwrap()
            .contains("shown only once")
    );
    assert_eq!(after["old_key_line"], r["old_key_line"]);
    assert_eq!(r["new_key_status"], 201, "the shown key works");
    assert_eq!(r["old_key_status"], 201, "the old key works in its overlap");
}

#[tokio::test]
async fn a_batch_from_the_inbox_leaves_a_changed_action_open_and_keys_decide_an_action() {
    let app = TestApp::spawn().await;
    let env = [
        ("LINK", signin_link(&app).await),
        ("SOURCE_KEY", app.live_key()),
    ];
    let r = run_script(&app, "browser-batch.mjs", &env).await;

    // Batch: three picked, the second changed after the page was rendered.
    let b = &r["batch"];
    assert_eq!(b["bar"], "3 requests picked:", "{r}");
    assert_eq!(b["bar_in_view"], true, "the bar floats at the bottom: {r}");
    assert_eq!(b["patched"], 200);
    assert_eq!(
        b["after_enter"],
        json!(["open", "open", "open"]),
        "Enter in the reason box decided: {r}"
    );
    assert_eq!(
        b["statuses"],
        json!(["resolved", "open", "resolved"]),
        "{r}"
    );
    assert!(
        b["decided_text"]
            .as_str()
            .unwrap()
            .starts_with("Decided 2 requests"),
        "{r}"
    );
    assert_eq!(b["changed_ids"], json!([b["ids"][1]]));
    assert!(
        b["changed_text"]
            .as_str()
            .unwrap()
            .contains("Rotate the TLS cert on edge-2 and restart it"),
        "{r}"
    );

    // The same options in another style are one bar; the stronger style wins.
    assert_eq!(
        b["mixed_styles"],
        json!({"buttons": [["Approve", "btn btn-primary"], ["Reject", "btn btn-danger"]], "note": ""}),
        "{r}"
    );
    assert_eq!(b["mixed_labels"]["buttons"], 0, "{r}");
    assert!(
        b["mixed_labels"]["note"]
            .as_str()
            .unwrap()
            .contains("different options"),
        "{r}"
    );

    // Keys: shown on the buttons, listed by `?`, ignored while typing.
    let k = &r["keys"];
    assert_eq!(
        k["shown"],
        json!([["Approve", "a", "a"], ["Reject", "r", "r"]])
    );
    let help = k["help"].as_str().unwrap();
    assert!(
        help.contains("Approve") && help.contains("Reject (asks first)"),
        "{help}"
    );
    assert_eq!(k["focused"], "body", "c goes to the comment box");
    assert_eq!(k["while_typing"], "open");
    assert_eq!(
        k["by_key"],
        json!({"status": "resolved", "option": "approve", "reason": "read only, as agreed"})
    );
    assert_eq!(
        k["by_number"],
        json!({"status": "resolved", "option": "hold"})
    );
    // A destructive option still asks first; cancelled, nothing is decided.
    let confirm = k["confirm_text"].as_str().unwrap();
    assert!(
        confirm.contains("destructive") && confirm.contains("Reject"),
        "{confirm}"
    );
    assert_eq!(k["destructive_after_cancel"], "open");
}

/// A vote that stands for a destructive option asks first, as choosing
/// that option does: one rejection closes the Action with it (the default
/// reject_threshold). The button carries the question; without
/// JavaScript the server asks with a confirmation page, and only a
/// confirmed vote counts.
#[tokio::test]
async fn a_vote_for_a_destructive_option_asks_first() {
    let app = TestApp::spawn().await;
    let client = form_session(&app).await;
    let a = app
        .create_action(json!({
            "title": "Clean up staging",
            "options": [
                {"id": "keep", "label": "Keep it", "style": "primary"},
                {"id": "drop", "label": "Drop the database", "style": "destructive"}
            ],
            "visibility": "restricted",
            "reviewer_emails": ["admin@example.com"],
            "approval_policy": {"required_approvals": 1}
        }))
        .await;
    let id = a["id"].as_str().unwrap();
    let url = format!("/app/actions/{id}");
    let html = client.page(&url).await;
    let question = "Choose “Drop the database” for “Clean up staging”? This is destructive.";
    assert!(
        html.contains(&format!(r#"value="reject" class="btn btn-danger" data-label="Reject" data-key="r" aria-keyshortcuts="r" data-confirm="{question}""#)),
        "{html}"
    );
    let version = a["action_version"].to_string();
    let mut fields = vec![
        ("_csrf", csrf_of(&html)),
        ("action_version", version),
        ("fingerprint", a["fingerprint"].as_str().unwrap().to_owned()),
        ("vote", "reject".to_owned()),
    ];
    let as_pairs = |f: &[(&'static str, String)]| -> Vec<(&'static str, String)> { f.to_vec() };
    let send = |f: Vec<(&'static str, String)>| {
        let client = &client;
        let decide = format!("{url}/decide");
        let base = app.base.clone();
        async move {
            let pairs: Vec<(&str, &str)> = f.iter().map(|(k, v)| (*k, v.as_str())).collect();
            client.post_form(&decide, Some(&base), &pairs).await
        }
    };
    let asked = send(as_pairs(&fields)).await;
    assert_eq!(asked.status(), StatusCode::OK);
    let page = asked.text().await.unwrap();
    assert!(
        page.contains("This is destructive") && page.contains(question),
        "{page}"
    );
    let open = app
        .get(&format!("/v1/actions/{id}"), &app.user_token())
        .await;
    assert_eq!(open.body["data"]["status"], "open", "nothing counted yet");
    fields.push(("confirmed", "yes".to_owned()));
    let done = send(as_pairs(&fields)).await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    let now = app
        .get(&format!("/v1/actions/{id}"), &app.user_token())
        .await;
    assert_eq!(now.body["data"]["status"], "resolved");
    assert_eq!(now.body["data"]["resolution_option_id"], "drop");
}

/// Single-key shortcuts cannot decide by accident (WCAG 2.1.4): not while
/// another button has the focus, not once turned off (remembered in the
/// browser); and a live refresh keeps the keyboard focus where it was.
#[tokio::test]
async fn shortcut_keys_decide_only_when_meant_and_refreshes_keep_the_focus() {
    let app = TestApp::spawn().await;
    let env = [
        ("LINK", signin_link(&app).await),
        ("SOURCE_KEY", app.live_key()),
    ];
    let r = run_script(&app, "browser-keys.mjs", &env).await;
    assert_eq!(r["on_another_button"]["status"], "open", "{r}");
    assert_eq!(r["on_another_button"]["help_open"], false, "{r}");
    assert_eq!(r["label_on"], "Turn single-key shortcuts off", "{r}");
    assert_eq!(r["label_off"], "Turn single-key shortcuts on", "{r}");
    assert_eq!(r["while_off"]["status"], "open", "{r}");
    assert_eq!(r["remembered"], "off", "{r}");
    assert_eq!(r["focused_on_click"], "MAIN", "{r}");
    assert_eq!(r["decided"], "resolved", "{r}");
    assert!(
        r["focused_before"]
            .as_str()
            .unwrap()
            .contains("status=resolved"),
        "{r}"
    );
    assert_eq!(r["focused_after"], r["focused_before"], "{r}");
}

/// The "changed while you were reading" banner compares with what the
/// reviewer saw: a field changed and changed back since is not listed, and
/// a field's "Before" is its value in the version they were shown, not an
/// intermediate one.
#[tokio::test]
async fn the_stale_banner_compares_with_the_version_seen() {
    let app = TestApp::spawn().await;
    let client = form_session(&app).await;
    let a = app.create_action(two_options("Two patches")).await;
    let id = a["id"].as_str().unwrap();
    let url = format!("/app/actions/{id}");
    let html = client.page(&url).await;
    let src = app.source();
    for body in [
        json!({"title": "Two patches B"}),
        json!({"description": "d2"}),
        json!({"title": "Two patches"}),
        json!({"description": "d3"}),
    ] {
        let _: Value = src.patch(&format!("/v1/actions/{id}"), body, 200).await;
    }
    let r = decide_version_1(&app, &client, &a, &html, &[("option_id", "approve")]).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let page = r.text().await.unwrap();
    assert!(page.contains("version 1 → 5"), "{page}");
    assert!(
        !page.contains(r#"<span class="field-name">title</span>"#),
        "changed back: {page}"
    );
    assert!(
        page.contains(r#"<span class="field-name">description</span>"#),
        "{page}"
    );
    assert!(page.contains("<ins>d3</ins>"), "{page}");
    assert!(!page.contains("<del>d2</del>"), "never seen: {page}");
}

/// A refused choice answer comes back with its picks ticked, as text,
/// number and form answers come back with their values.
#[tokio::test]
async fn a_refused_choice_answer_keeps_its_picks() {
    let app = TestApp::spawn().await;
    let client = form_session(&app).await;
    let a = app
        .create_action(json!({
            "title": "Where to deploy",
            "interaction": {"type": "choice", "multiple": true, "choices": [
                {"id": "eu", "label": "Europe"}, {"id": "us", "label": "US"}, {"id": "ap", "label": "Asia"}]}
        }))
        .await;
    let id = a["id"].as_str().unwrap();
    let url = format!("/app/actions/{id}");
    let html = client.page(&url).await;
    let _: Value = app
        .source()
        .patch(
            &format!("/v1/actions/{id}"),
            json!({"title": "Where to deploy now"}),
            200,
        )
        .await;
    let answer = [("value", "eu"), ("value", "us"), ("reason", "both")];
    let r = decide_version_1(&app, &client, &a, &html, &answer).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let page = r.text().await.unwrap();
    assert!(page.contains(r#"value="eu" checked>"#), "{page}");
    assert!(page.contains(r#"value="us" checked>"#), "{page}");
    assert!(page.contains(r#"value="ap">"#), "{page}");
}

/// Posts `a`'s decide form as the page `html` was rendered for `client`
/// (its CSRF token), bound to version 1 and `a`'s first fingerprint, with
/// `answer`: the form a reviewer sends after the Source changed the Action.
async fn decide_version_1(
    app: &TestApp,
    client: &Actor,
    a: &Value,
    html: &str,
    answer: &[(&str, &str)],
) -> reqwest::Response {
    let csrf = csrf_of(html);
    let mut fields = vec![
        ("_csrf", csrf.as_str()),
        ("action_version", "1"),
        ("fingerprint", a["fingerprint"].as_str().unwrap()),
    ];
    fields.extend_from_slice(answer);
    let url = format!("/app/actions/{}/decide", a["id"].as_str().unwrap());
    client.post_form(&url, Some(&app.base), &fields).await
}

/// Placeholder text reads at 4.5:1 or better against its field, in the
/// light and the dark colour scheme (the browser's own grey did not on the
/// dark field).
#[tokio::test]
async fn placeholders_are_readable_in_both_colour_schemes() {
    let app = TestApp::spawn().await;
    let link = app.signin_link("admin@example.com").await;
    let r = run_script(&app, "browser-placeholder.mjs", &[("LINK", link)]).await;
    for scheme in ["light", "dark"] {
        let fields = r[scheme].as_array().unwrap();
        assert!(!fields.is_empty(), "{scheme}: {r}");
        for f in fields {
            assert!(f["ratio"].as_f64().unwrap() >= 4.5, "{scheme}: {f}");
        }
    }
}
