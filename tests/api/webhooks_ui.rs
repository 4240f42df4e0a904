//! The Source page's delivery log in a browser session (guide: "The Source
//! page"): a real receiver (tests/py/webhook_receiver.py) answers as scripted;
//! people of each role read the page and press (or forge) Resend.

use std::time::Duration;

use hds::domain::access::Role;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Actor, TestApp, two_options};
use crate::receiver::Receiver;
use crate::webhooks::{delivery_where, setup};

fn source_id(app: &TestApp) -> String {
    app.creds["source_id"].as_str().unwrap().to_owned()
}

/// A resolved Action whose `action.resolved` webhook goes to `rx.url(path)`.
async fn resolved_with_callback(app: &TestApp, rx: &Receiver, path: &str) -> String {
    let mut body = two_options("Ship it?");
    body["callback_url"] = json!(rx.url(path));
    let a = app.create_action(body).await;
    app.decide(&a, json!({"option_id": "approve"}))
        .await
        .ok(200);
    a["id"].as_str().unwrap().to_owned()
}

/// The `<tr>` of delivery `id` in the page's log.
fn row<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("id=\"delivery-{id}\""))
        .unwrap_or_else(|| panic!("no row for {id}: {html}"));
    let end = html[start..].find("</tr>").unwrap() + start;
    &html[start..end]
}

/// A page's status and HTML, whatever the status.
async fn fetch(who: &Actor, path: &str) -> (StatusCode, String) {
    let r = who.http().get(who.url(path)).send().await.unwrap();
    (r.status(), r.text().await.unwrap())
}

async fn in_browser(app: &TestApp, who: &Actor) -> Actor {
    app.browser(who.person.as_ref().unwrap()).await
}

#[tokio::test]
async fn an_admin_sees_a_failed_delivery_resends_it_and_sees_it_delivered() {
    let (app, rx) = setup().await;
    rx.script(&[500], 0.0).await;
    let action = resolved_with_callback(&app, &rx, "ui").await;
    let first = rx.wait_for("ui", 1).await;
    assert_eq!(first[0]["answered"], 500);
    let d = delivery_where(&app, |d| d["attempts"] == 1).await;
    let did = d["id"].as_str().unwrap();
    let src = source_id(&app);
    let browser = in_browser(&app, &app.admin()).await;

    // The Sources list links to the Source's page.
    let list = browser.page("/app/sources").await;
    assert!(
        list.contains(&format!("href=\"/app/sources/{src}\"")),
        "{list}"
    );

    let html = browser.page(&format!("/app/sources/{src}")).await;
    assert!(html.contains("Recent deliveries"), "{html}");
    assert!(
        html.contains("created <time"),
        "the Source's created date: {html}"
    );
    let r = row(&html, did);
    assert!(r.contains("action.resolved"), "{r}");
    assert!(
        r.contains(&format!("href=\"/app/actions/{action}\"")),
        "{r}"
    );
    assert!(
        r.contains("<span class=\"badge status-pending\">pending</span>"),
        "{r}"
    );
    assert!(
        r.contains("<td data-label=\"Attempts\">1</td>"),
        "one attempt: {r}"
    );
    assert!(r.contains("HTTP 500"), "{r}");
    assert!(
        r.contains("HTTP 500 Internal Server Error"),
        "the last error: {r}"
    );
    let next = d["next_attempt_at"].as_str().unwrap();
    assert!(
        r.contains(&format!("<time datetime=\"{next}\"")),
        "next retry: {r}"
    );
    assert!(r.contains(">Resend</button>"), "{r}");
    assert!(!html.contains("Load older"), "one page only: {html}");

    // Resend: the same message goes again now (the retry was due in 5 s,
    // and the server's clock does not move).
    let jobs_before = app.count_rows("jobs");
    let resp = browser
        .post_form(
            &format!("/app/sources/{src}/deliveries/{did}/resend"),
            Some(&app.base),
            &[("_csrf", browser.csrf())],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        resp.headers()["location"],
        format!("/app/sources/{src}?done=resent")
    );
    let both = rx.wait_for("ui", 2).await;
    assert_eq!(both[1]["id"], both[0]["id"], "the same webhook-id");
    assert_eq!(both[1]["id"], did);
    assert_eq!(both[1]["answered"], 200);
    let secret = app.creds["webhook_secret"].as_str().unwrap();
    assert_eq!(both[1]["verified"][secret], true);
    assert_eq!(jobs_before, 1, "the retry waiting, not a second job");
    delivery_where(&app, |d| d["id"] == did && d["status"] == "delivered").await;

    let html = browser
        .page(&format!("/app/sources/{src}?done=resent"))
        .await;
    assert!(html.contains("Queued again"), "{html}");
    let r = row(&html, did);
    assert!(
        r.contains("<span class=\"badge status-delivered\">delivered</span>"),
        "{r}"
    );
    assert!(
        r.contains("<td data-label=\"Attempts\">2</td>"),
        "two attempts: {r}"
    );
    assert!(r.contains("HTTP 200"), "{r}");
    assert!(
        !r.contains("Internal Server Error"),
        "the last answer was fine: {r}"
    );

    // The delivery's own page lists both attempts.
    let html = browser
        .page(&format!("/app/sources/{src}/deliveries/{did}"))
        .await;
    assert!(html.contains(did), "{html}");
    assert!(html.contains(&rx.url("ui")), "the URL: {html}");
    let attempts = &html[html.find("id=\"attempts\"").unwrap()..];
    let a500 = attempts.find("HTTP 500").expect("attempt 1");
    let a200 = attempts.find("HTTP 200").expect("attempt 2");
    assert!(a500 < a200, "first first: {attempts}");
    assert_eq!(app.count_rows("jobs"), 0, "nothing left queued");
}

#[tokio::test]
async fn viewers_and_reviewers_see_no_log_and_a_forged_resend_queues_nothing() {
    let (app, rx) = setup().await;
    resolved_with_callback(&app, &rx, "ro").await;
    rx.wait_for("ro", 1).await;
    let d = delivery_where(&app, |d| d["status"] == "delivered").await;
    let did = d["id"].as_str().unwrap().to_owned();
    let src = source_id(&app);
    assert_eq!(app.count_rows("jobs"), 0);

    for role in [Role::Viewer, Role::Reviewer] {
        let browser = in_browser(&app, &app.member(role)).await;
        // The Source, but not its log: it names every Action, restricted ones too.
        let html = browser.page(&format!("/app/sources/{src}")).await;
        assert!(html.contains("id=\"source-name\""), "{html}");
        assert!(!html.contains(&did), "{role:?} sees no delivery: {html}");
        assert!(!html.contains("/resend"), "{role:?} sees no Resend form");
        assert!(
            html.contains("Workspace owners and admins see this Source's webhook deliveries"),
            "{html}"
        );
        // The delivery page is refused, in words.
        let r = browser
            .http()
            .get(browser.url(&format!("/app/sources/{src}/deliveries/{did}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{role:?}");
        assert!(
            r.text()
                .await
                .unwrap()
                .contains("only workspace owners and admins manage Sources")
        );

        // Posting anyway, with a valid form token: refused, in words.
        let resp = browser
            .post_form(
                &format!("/app/sources/{src}/deliveries/{did}/resend"),
                Some(&app.base),
                &[("_csrf", browser.csrf())],
            )
            .await;
        assert_eq!(resp.status(), StatusCode::FORBIDDEN, "{role:?}");
        let body = resp.text().await.unwrap();
        assert!(
            body.contains("only workspace owners and admins manage Sources"),
            "{body}"
        );
        // Rotating or revoking: refused at once, before any confirmation
        // page could offer a button the server then refuses.
        for (path, form) in [
            ("rotate", vec![("environment", "live")]),
            (
                "rotate",
                vec![("environment", "none"), ("webhook_secret", "yes")],
            ),
            ("revoke", vec![]),
        ] {
            let mut form = form;
            form.push(("_csrf", browser.csrf()));
            let resp = browser
                .post_form(
                    &format!("/app/sources/{src}/{path}"),
                    Some(&app.base),
                    &form,
                )
                .await;
            assert_eq!(resp.status(), StatusCode::FORBIDDEN, "{role:?} {path}");
            let body = resp.text().await.unwrap();
            assert!(!body.contains("name=\"confirmed\""), "{body}");
            assert!(
                body.contains("only workspace owners and admins manage Sources"),
                "{body}"
            );
        }
        // Without the token: the CSRF refusal.
        let resp = browser
            .post_form(
                &format!("/app/sources/{src}/deliveries/{did}/resend"),
                Some(&app.base),
                &[],
            )
            .await;
        assert_eq!(resp.status(), StatusCode::FORBIDDEN);
        assert!(resp.text().await.unwrap().contains("CSRF_FAILED"));
    }
    // An admin's form without its token is refused as well.
    let admin = in_browser(&app, &app.admin()).await;
    let resp = admin
        .post_form(
            &format!("/app/sources/{src}/deliveries/{did}/resend"),
            Some("https://evil.example"),
            &[("_csrf", admin.csrf())],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);

    // Nothing queued, nothing sent again, the log unchanged.
    assert_eq!(app.count_rows("jobs"), 0);
    let now = delivery_where(&app, |d| d["id"] == did.as_str()).await;
    assert_eq!(now["status"], "delivered");
    assert_eq!(now["attempts"], 1);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(rx.received().await.len(), 1);
}

#[tokio::test]
async fn another_workspace_and_unknown_deliveries_get_the_not_found_page() {
    let (app, rx) = setup().await;
    resolved_with_callback(&app, &rx, "nf").await;
    rx.wait_for("nf", 1).await;
    let d = delivery_where(&app, |d| d["status"] == "delivered").await;
    let did = d["id"].as_str().unwrap().to_owned();
    let src = source_id(&app);

    // Another workspace's owner: the Source does not exist for them.
    let outsider = in_browser(&app, &app.outsider()).await;
    for path in [
        format!("/app/sources/{src}"),
        format!("/app/sources/{src}/deliveries/{did}"),
    ] {
        let (status, html) = fetch(&outsider, &path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert!(html.contains("Not found"), "{html}");
        assert!(
            html.contains("no Source with that id in this workspace"),
            "{html}"
        );
        assert!(!html.contains(&did), "nothing of the log leaks: {html}");
    }
    let resp = outsider
        .post_form(
            &format!("/app/sources/{src}/deliveries/{did}/resend"),
            Some(&app.base),
            &[("_csrf", outsider.csrf())],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    assert!(resp.text().await.unwrap().contains("SOURCE_NOT_FOUND"));

    // A delivery id the Source does not have.
    let admin = in_browser(&app, &app.admin()).await;
    let (status, html) = fetch(&admin, &format!("/app/sources/{src}/deliveries/msg_nope")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(html.contains("Not found"), "{html}");
    assert!(
        html.contains("no webhook delivery with that id for this Source"),
        "{html}"
    );
    assert!(html.contains("DELIVERY_NOT_FOUND"), "{html}");
    let resp = admin
        .post_form(
            &format!("/app/sources/{src}/deliveries/msg_nope/resend"),
            Some(&app.base),
            &[("_csrf", admin.csrf())],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let html = resp.text().await.unwrap();
    assert!(
        html.contains("no webhook delivery with that id for this Source"),
        "the Source page again, with the reason: {html}"
    );
    assert!(html.contains(&did), "the log is still shown: {html}");
    // An unknown Source.
    let (status, html) = fetch(&admin, "/app/sources/src_nope").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(html.contains("SOURCE_NOT_FOUND"), "{html}");
    // A query the page does not know (a link's tracking tag) is ignored.
    let html = admin
        .page(&format!("/app/sources/{src}?utm_source=mail"))
        .await;
    assert!(html.contains(&did), "{html}");
    assert_eq!(app.count_rows("jobs"), 0, "nothing queued");
    assert_eq!(rx.received().await.len(), 1);
}

#[tokio::test]
async fn the_log_starts_empty_and_pages_back_fifty_at_a_time() {
    let (app, rx) = setup().await;
    let src = source_id(&app);
    let admin = in_browser(&app, &app.admin()).await;
    let html = admin.page(&format!("/app/sources/{src}")).await;
    assert!(
        html.contains("No webhooks yet: hds sends one when an Action with a callback_url is resolved, cancelled or expires, or a reviewer presses a control or asks for context"),
        "{html}"
    );

    // 51 cancelled Actions, each with its webhook.
    let mut body = two_options("Cancel me");
    body["callback_url"] = json!(rx.url("many"));
    for _ in 0..51 {
        let a = app.create_action(body.clone()).await;
        let id = a["id"].as_str().unwrap();
        app.source()
            .post::<Value>(
                &format!("/v1/actions/{id}/cancel"),
                json!({"reason": "not needed"}),
                200,
            )
            .await;
    }
    rx.wait_for("many", 51).await;
    let list: Value = app
        .admin()
        .get(&format!("/v1/sources/{src}/deliveries?limit=100"), 200)
        .await;
    let all: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(all.len(), 51);

    let html = admin.page(&format!("/app/sources/{src}")).await;
    assert_eq!(html.matches("id=\"delivery-").count(), 50, "{html}");
    assert!(
        html.contains(&format!("id=\"delivery-{}\"", all[0])),
        "newest first"
    );
    assert!(!html.contains(&format!("id=\"delivery-{}\"", all[50])));
    let older = format!("/app/sources/{src}?starting_after={}", all[49]);
    assert!(
        html.contains(&format!("href=\"{older}\"")),
        "Load older: {html}"
    );
    assert!(html.contains("Load older"));

    let html = admin.page(&older).await;
    assert_eq!(html.matches("id=\"delivery-").count(), 1, "{html}");
    assert!(html.contains(&format!("id=\"delivery-{}\"", all[50])));
    assert!(!html.contains("Load older"), "{html}");
    assert!(
        html.contains(&format!("href=\"/app/sources/{src}\">Newest")),
        "{html}"
    );
    // `before`, the older name of the cursor, still pages.
    let html = admin
        .page(&format!("/app/sources/{src}?before={}", all[50]))
        .await;
    assert!(html.contains("No older deliveries."), "{html}");
}
