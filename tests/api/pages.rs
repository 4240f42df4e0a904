//! Dashboard pages as people meet them: the guide in the browser, HTML error
//! pages for unknown dashboard paths, the sign-in page's ways in, and what
//! the Action page shows next to the decision.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Resp, TestApp};

const HTML: &[(&str, &str)] = &[("accept", "text/html")];

fn html_of(r: &Resp) -> &str {
    let ct = r.headers["content-type"].to_str().unwrap();
    assert!(ct.starts_with("text/html"), "{}: {ct}", r.what);
    assert!(
        r.headers.contains_key("content-security-policy"),
        "{}: no CSP",
        r.what
    );
    r.body.as_str().unwrap()
}

#[tokio::test]
async fn the_guide_is_a_page_with_a_table_of_contents_for_everyone() {
    let app = TestApp::spawn().await;
    let docs = app.call(Method::GET, "/v1/docs", None, None, &[]).await;
    let sections = docs.ok(200)["sections"].as_array().unwrap().clone();

    // Signed out: the whole guide, a slim header with the way to sign in.
    let r = app
        .anonymous()
        .call(Method::GET, "/app/guide", None, HTML)
        .await;
    assert_eq!(r.status.as_u16(), 200);
    let page = html_of(&r);
    assert!(page.contains("<h1>hds guide</h1>"), "{page}");
    for s in &sections {
        let id = s["id"].as_str().unwrap();
        assert!(
            page.contains(&format!("<h2 id=\"{id}\">")),
            "no heading {id}"
        );
        assert!(
            page.contains(&format!("href=\"#{id}\"")),
            "no contents entry {id}"
        );
    }
    assert!(page.contains("href=\"/app/signin?next=%2Fapp%2Fguide\""));
    assert!(
        !page.contains("name=\"workspace_id\""),
        "no switcher signed out"
    );
    // Rendered by the safe renderer: only the page's own script element.
    assert_eq!(page.matches("<script").count(), 1);

    // Signed in: the dashboard's header, with the guide current.
    let browser = app.browser(app.admin().person()).await;
    let page = browser.page("/app/guide").await;
    assert!(
        page.contains("id=\"nav-guide\" href=\"/app/guide\" title=\"Guide\" aria-current=\"page\"")
    );
    assert!(page.contains("action=\"/app/signout\""));
    let inbox = browser.page("/app").await;
    assert!(
        inbox.contains("id=\"nav-guide\" href=\"/app/guide\" title=\"Guide\">"),
        "linked from the header"
    );
}

#[tokio::test]
async fn unknown_dashboard_paths_answer_an_html_404_with_a_way_back() {
    let app = TestApp::spawn().await;
    let anyone = app.anonymous();
    let r = anyone.call(Method::GET, "/app/nope", None, HTML).await;
    assert_eq!(r.status.as_u16(), 404);
    let page = html_of(&r);
    assert!(page.contains("<h1>Not found</h1>"), "{page}");
    assert!(page.contains("There is no page at /app/nope."), "{page}");
    assert!(
        page.contains("href=\"/app\""),
        "a link back to the inbox: {page}"
    );
    assert!(
        !page.contains("action=\"/app/signout\""),
        "no header signed out"
    );
    // A wrong method on a page: the HTML page too.
    let r = anyone.call(Method::DELETE, "/app/guide", None, HTML).await;
    assert_eq!(r.status.as_u16(), 405);
    assert!(html_of(&r).contains("METHOD_NOT_ALLOWED"));
    // An Action that does not exist, signed in.
    let browser = app.browser(app.admin().person()).await;
    let r = browser
        .call(
            Method::GET,
            "/app/actions/act_01JZZZZZZZZZZZZZZZZZZZZZZZ",
            None,
            HTML,
        )
        .await;
    assert_eq!(r.status.as_u16(), 404);
    let page = html_of(&r);
    assert!(
        page.contains("ACTION_NOT_FOUND") && page.contains("href=\"/app\""),
        "{page}"
    );
    assert!(
        page.contains("It may be in another of your workspaces"),
        "said for a person: {page}"
    );
    // Signed in, an error page keeps the dashboard's header: the nav, the
    // workspace switcher, the bell and the way to sign out.
    let r = browser.call(Method::GET, "/app/nope", None, HTML).await;
    assert_eq!(r.status.as_u16(), 404);
    for page in [page, html_of(&r)] {
        assert!(page.contains("<nav aria-label=\"Main\">"), "{page}");
        assert!(page.contains("name=\"workspace_id\""), "{page}");
        assert!(page.contains("id=\"nav-bell\""), "{page}");
        assert!(page.contains("action=\"/app/signout\""), "{page}");
        assert!(page.contains("<title>Not found · hds</title>"), "{page}");
    }
    // So does a refused form (here a stale CSRF token), with its own words.
    let r = browser
        .post_form(
            "/app/account/name",
            Some(&app.base),
            &[("_csrf", "stale"), ("name", "X")],
        )
        .await;
    assert_eq!(r.status().as_u16(), 403);
    let page = r.text().await.unwrap();
    assert!(page.contains("This form expired"), "{page}");
    assert!(page.contains("id=\"nav-bell\""), "{page}");
    // The API keeps its JSON envelope, whatever the client accepts.
    anyone
        .call(Method::GET, "/v1/nope", None, HTML)
        .await
        .error(404, "NOT_FOUND");
}

#[tokio::test]
async fn the_signin_page_names_invitations_and_create_as() {
    let app = TestApp::spawn().await;
    let r = app
        .anonymous()
        .call(Method::GET, "/app/signin", None, HTML)
        .await;
    let page = html_of(&r);
    assert!(
        page.contains("Ask a workspace owner or admin to invite you"),
        "{page}"
    );
    assert!(
        page.contains("<code>hds users link you@company.com --create-as reviewer</code>"),
        "{page}"
    );
    let methods = app
        .call(Method::GET, "/v1/auth/providers", None, None, &[])
        .await;
    let link = methods.ok(200)["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["kind"] == "link")
        .unwrap()
        .clone();
    let how = link["how"].as_str().unwrap();
    assert!(
        how.contains("invites you") && how.contains("--create-as ROLE"),
        "{how}"
    );
}

/// The fingerprint appears once as text (under Details; the forms carry it
/// hidden), and a number's allowed range stands next to its input.
#[tokio::test]
async fn the_action_page_shows_the_fingerprint_once_and_the_number_range() {
    let app = TestApp::spawn().await;
    let a: Value = app
        .create_action(json!({"title": "Replicas for checkout",
            "interaction": {"type": "number", "min": 2, "max": 60}}))
        .await;
    let browser = app.browser(app.admin().person()).await;
    let page = browser
        .page(&format!("/app/actions/{}", a["id"].as_str().unwrap()))
        .await;
    let fp = a["fingerprint"].as_str().unwrap();
    assert_eq!(page.matches(&format!(">{fp}<")).count(), 1, "{page}");
    assert!(
        page.contains("<span class=\"hint\" id=\"number-range\">Allowed: 2 – 60</span>"),
        "{page}"
    );
    assert!(page.contains("min=\"2\" max=\"60\" aria-describedby=\"number-range\""));

    let only_min: Value = app
        .create_action(json!({"title": "Budget", "interaction": {"type": "number", "min": 0.5}}))
        .await;
    let page = browser
        .page(&format!(
            "/app/actions/{}",
            only_min["id"].as_str().unwrap()
        ))
        .await;
    assert!(page.contains("Allowed: at least 0.5<"), "{page}");
}

/// A link block reads as what it opens: without a label, its URL with an
/// international host in ASCII form (a Cyrillic "а" in apple.com shows as
/// xn--pple-43d.com); beside a label, the host.
#[tokio::test]
async fn a_link_block_shows_the_host_it_opens() {
    let app = TestApp::spawn().await;
    let a: Value = app
        .create_action(json!({"title": "Links", "interaction": {"type": "boolean"},
            "context": [
                {"type": "link", "url": "https://\u{0430}pple.com/login"},
                {"type": "link", "url": "https://evil.example/pay", "label": "Your bank"},
                {"type": "link", "url": "https://docs.example.com/runbook", "label": "Runbook on docs.example.com"}
            ]}))
        .await;
    let browser = app.browser(app.admin().person()).await;
    let page = browser
        .page(&format!("/app/actions/{}", a["id"].as_str().unwrap()))
        .await;
    assert!(
        page.contains(">https://xn--pple-43d.com/login \u{2197}</a>"),
        "{page}"
    );
    assert!(
        page.contains(
            ">Your bank \u{2197}</a> <span class=\"muted small link-host\">evil.example</span>"
        ),
        "{page}"
    );
    // Beside every label, even one that names a host: "apple.com login"
    // may open https://pple.com/.
    assert!(
        page.contains(">Runbook on docs.example.com \u{2197}</a> <span class=\"muted small link-host\">docs.example.com</span>"),
        "{page}"
    );
}

/// Counts read as words: "2 options", "1 option", "1 approval".
#[tokio::test]
async fn counts_on_pages_use_the_right_plural() {
    let app = TestApp::spawn().await;
    app.create_action(json!({"title": "One way", "options": [{"id": "ok", "label": "OK"}]}))
        .await;
    let mut voted = crate::helpers::two_options("Vote on it");
    voted["visibility"] = json!("restricted");
    voted["reviewer_emails"] = json!(["admin@example.com"]);
    voted["approval_policy"] = json!({"required_approvals": 1});
    let v = app.create_action(voted).await;
    let browser = app.browser(app.admin().person()).await;
    let inbox = browser.page("/app").await;
    assert!(inbox.contains("1 option<"), "{inbox}");
    assert!(!inbox.contains("1 options"), "{inbox}");
    let page = browser
        .page(&format!("/app/actions/{}", v["id"].as_str().unwrap()))
        .await;
    assert!(
        page.contains("Needs 1 approval; 1 rejection rejects it."),
        "{page}"
    );
}

/// A refused form ties its message to the field it is about
/// (`aria-invalid`, `aria-describedby` naming the message), so a screen
/// reader on that field hears why (WCAG 3.3.1).
#[tokio::test]
async fn a_refused_field_carries_its_message() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let browser = app.browser(admin.person()).await;
    let tied = r#"aria-invalid="true" aria-describedby="form-error""#;
    for (path, form, field) in [
        ("/app/sources", vec![("name", " ")], r#"name="name""#),
        ("/app/workspaces", vec![("name", " ")], r#"name="name""#),
        ("/app/account/tokens", vec![("name", " ")], r#"name="name""#),
        (
            "/app/account/delete",
            vec![("confirm", "someone@else.example"), ("understood", "yes")],
            r#"name="confirm""#,
        ),
        (
            "/app/account/delete",
            vec![("confirm", "admin@example.com")],
            r#"name="understood""#,
        ),
    ] {
        let mut form = form;
        form.push(("_csrf", browser.csrf()));
        let r = browser.post_form(path, Some(&app.base), &form).await;
        assert_eq!(r.status(), 422, "{path}");
        let html = r.text().await.unwrap();
        assert!(html.contains(r#"id="form-error""#), "{path}: {html}");
        let input = html
            .split("<input")
            .find(|i| i.contains(field))
            .unwrap_or_else(|| panic!("{path}: no {field}"));
        assert!(input.contains(tied), "{path}: {input}");
        assert_eq!(html.matches("aria-invalid").count(), 1, "{path}");
    }
}

/// A refused answer on the Action page is said beside the form and tied to
/// its inputs (`aria-invalid`, `aria-describedby`), names a form's field by
/// its label, and keeps what was typed; a Source's Markdown headings sit
/// below the page's own; a refused invitation marks its field; the
/// workspaces table becomes cards on a phone.
#[tokio::test]
async fn refused_forms_are_tied_to_their_fields_and_keep_what_was_typed() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let browser = app.browser(admin.person()).await;
    let origin = app.base.clone();
    let a = app
        .create_action(json!({
            "title": "Ship the release?",
            "description": "# Risk\n\n## Rollback\n\nplain text",
            "interaction": {"type": "form", "fields": [
                {"key": "ticket", "label": "Ticket number", "type": "text", "required": true},
                {"key": "count", "label": "How many", "type": "number", "required": false},
                {"key": "ok", "label": "Checked", "type": "boolean", "required": false}
            ]}
        }))
        .await;
    let id = a["id"].as_str().unwrap();
    let page = browser.page(&format!("/app/actions/{id}")).await;
    assert!(
        page.contains("<h3>Risk</h3>") && page.contains("<h4>Rollback</h4>"),
        "{page}"
    );
    assert_eq!(page.matches("<h1").count(), 1, "one h1: {page}");

    let v = a["action_version"].to_string();
    let fp = a["fingerprint"].as_str().unwrap();
    let r = browser
        .post_form(
            &format!("/app/actions/{id}/decide"),
            Some(&origin),
            &[
                ("_csrf", browser.csrf()),
                ("action_version", &v),
                ("fingerprint", fp),
                ("field.count", "5"),
                ("field.ok", "true"),
                ("reason", "kept too"),
            ],
        )
        .await;
    assert_eq!(r.status(), 400);
    let html = r.text().await.unwrap();
    assert!(
        html.contains(r#"<p class="field-error" id="answer-error">Your answer was not accepted: “Ticket number” is required.</p>"#),
        "{html}"
    );
    assert!(
        html.contains(r#"name="field.ticket" value="" required aria-invalid="true" aria-describedby="answer-error">"#),
        "{html}"
    );
    // Only the field the refusal names is marked.
    assert!(html.contains(r#"name="field.count" value="5">"#), "{html}");
    assert!(
        html.contains(r#"<option value="true" selected>Yes</option>"#),
        "{html}"
    );
    assert!(html.contains(">kept too</textarea>"), "{html}");
    assert_eq!(app.count_rows("receipts"), 0, "nothing decided");

    // An empty text answer is asked for as typing, not choosing.
    let t = app
        .create_action(json!({"title": "Why?", "interaction": {"type": "text"}}))
        .await;
    let tid = t["id"].as_str().unwrap();
    let r = browser
        .post_form(
            &format!("/app/actions/{tid}/decide"),
            Some(&origin),
            &[
                ("_csrf", browser.csrf()),
                ("action_version", &t["action_version"].to_string()),
                ("fingerprint", t["fingerprint"].as_str().unwrap()),
                ("value", ""),
            ],
        )
        .await;
    let html = r.text().await.unwrap();
    assert!(
        html.contains(r#"id="answer-error">Type your answer before submitting."#),
        "{html}"
    );

    // The invitation form marks the address it refused.
    let r = browser
        .post_form(
            "/app/invitations",
            Some(&origin),
            &[
                ("_csrf", browser.csrf()),
                ("email", "nope"),
                ("role", "viewer"),
            ],
        )
        .await;
    assert_eq!(r.status(), 422);
    let html = r.text().await.unwrap();
    assert!(html.contains(r#"role="alert" id="form-error""#), "{html}");
    assert!(
        html.contains(r#"value="nope" aria-invalid="true" aria-describedby="form-error""#),
        "{html}"
    );

    let html = browser.page("/app/workspaces").await;
    assert!(html.contains(r#"<table class="list stack">"#), "{html}");
    assert!(html.contains(r#"<td data-label="Your role">"#), "{html}");
}
