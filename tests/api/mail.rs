//! E-mail (guide: "E-mail") against a real SMTP server on loopback
//! (tests/py/smtp_sink.py): the invitation mail and its link, no `[smtp]`,
//! retries on 451 and on an outage with the test clock, a 550 in the admin
//! log, secrets scrubbed, and the log's bad queries.

use std::time::Duration;

use hds::domain::access::Role;
use serde_json::{Value, json};

use crate::helpers::{Actor, Person, TestApp};
use crate::smtp::{SmtpSink, free_port};

const INVITATIONS: &str = "/v1/workspaces/invitations";
const EMAILS: &str = "/v1/workspaces/emails";

async fn app_with_smtp(port: u16) -> TestApp {
    TestApp::spawn_with(|c| c.smtp = Some(SmtpSink::config(port))).await
}

/// With `[smtp]` and `[auth] email_links = true`.
async fn app_mailing_links(port: u16) -> TestApp {
    TestApp::spawn_with(|c| {
        c.smtp = Some(SmtpSink::config(port));
        c.auth.email_links = true;
    })
    .await
}

/// Invites `email` as `role`; answers the creation response's `data`.
async fn invite(by: &Actor, email: &str, role: &str) -> Value {
    let r: Value = by
        .post(INVITATIONS, json!({ "email": email, "role": role }), 201)
        .await;
    r["data"].clone()
}

/// The workspace's mail log as `by` reads it.
async fn mails(by: &Actor, query: &str) -> Value {
    by.get(&format!("{EMAILS}{query}"), 200).await
}

/// Waits (at most 20 s) until the log holds a mail to `to` that `pred` likes.
async fn mail_where(by: &Actor, to: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..1000 {
        last = mails(by, "").await;
        if let Some(m) = last["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["to"] == to && pred(m))
        {
            return m.clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no such mail to {to} in 20 s: {last}");
}

/// `(status, text_body, html_body, secret)` of a mail, read from the SQLite
/// file read-only.
fn stored(app: &TestApp, id: &str) -> (String, Option<String>, Option<String>, i64) {
    let conn = rusqlite::Connection::open_with_flags(
        app.data_dir().join("hds.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    conn.query_row(
        "SELECT status, text_body, html_body, secret FROM mail_outbox WHERE id = ?1",
        [id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )
    .unwrap()
}

/// A person with a token who belongs to no workspace yet.
fn newcomer(app: &TestApp, email: &str) -> Actor {
    let conn = hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap();
    let user = hds::store::users::create(&conn, email, Some("Ana"), &app.now()).unwrap();
    let (token, _) =
        hds::store::users::issue_token(&conn, &user.id, "test", None, &app.now()).unwrap();
    let mut actor = app.bearer(&token);
    actor.person = Some(Person {
        id: user.id,
        email: email.to_owned(),
    });
    actor
}

#[tokio::test]
async fn the_invitation_mail_arrives_with_both_parts_and_its_link_lets_the_person_in() {
    let sink = SmtpSink::start();
    let app = app_with_smtp(sink.port).await;
    let admin = app.member(Role::Admin);
    let inv = invite(&admin, "ana@example.com", "reviewer").await;
    assert_eq!(inv["email_delivery"], "queued", "{inv}");
    // The inviter's copy of the link; the mail carries a link of its own.
    let shown_url = inv["accept_url"].as_str().unwrap();

    let got = sink.wait_for("ana@example.com", 1).await;
    let m = &got[0];
    assert_eq!(m["mail_from"], "hds@example.com");
    assert_eq!(m["from"], "hds <hds@example.com>");
    assert_eq!(m["to"], "ana@example.com");
    assert_eq!(m["content_type"], "multipart/alternative");
    assert_eq!(m["auto_submitted"], "auto-generated");
    let subject = m["subject"].as_str().unwrap();
    assert!(subject.contains(&admin.person().email), "{subject}");
    assert!(subject.contains("invited you to"), "{subject}");
    // The text part: who, which workspace, which role, the link, the expiry.
    let text = m["text"].as_str().unwrap().replace("\r\n", "\n");
    assert!(text.contains("as a reviewer"), "{text}");
    let accept_url = text
        .lines()
        .find(|l| l.contains("/app/invitations/"))
        .unwrap()
        .trim();
    assert!(accept_url.starts_with(&format!("{}/app/invitations/", app.base)));
    assert_ne!(
        accept_url, shown_url,
        "the mail's link is not the inviter's"
    );
    assert!(
        text.contains(&format!("Accept the invitation:\n{accept_url}")),
        "{text}"
    );
    assert!(text.contains(" UTC"), "{text}");
    // The HTML part: the button and the URL written out.
    let html = m["html"].as_str().unwrap();
    assert!(html.contains(&format!("href=\"{accept_url}\"")), "{html}");
    assert!(html.contains(&format!(">{accept_url}</a>")), "{html}");
    assert!(html.contains("Accept the invitation"), "{html}");
    let mid = m["message_id"].as_str().unwrap();
    assert!(
        mid.starts_with("<mail_") && mid.ends_with("@example.com>"),
        "{mid}"
    );

    // Someone signed in as the invited address accepts with either link:
    // here the inviter's copy.
    let token = shown_url.rsplit('/').next().unwrap();
    let ana = newcomer(&app, "ana@example.com");
    let joined: Value = ana
        .post(
            "/v1/workspace-invitations/accept",
            json!({ "token": token }),
            200,
        )
        .await;
    assert_eq!(joined["data"]["role"], "reviewer");

    // The log shows it sent, once, without its bodies; the DB no longer
    // holds the link (it was secret).
    let logged = mail_where(&admin, "ana@example.com", |m| m["status"] == "sent").await;
    assert_eq!(logged["object"], "email");
    assert_eq!(logged["kind"], "invitation");
    assert_eq!(logged["subject"], subject);
    assert_eq!(logged["attempts"], 1);
    assert!(logged["sent_at"].is_string() && logged["last_error"].is_null());
    assert!(logged.get("text_body").is_none() && logged.get("html_body").is_none());
    assert_eq!(
        mid,
        format!("<{}@example.com>", logged["id"].as_str().unwrap())
    );
    let (status, text_body, html_body, secret) = stored(&app, logged["id"].as_str().unwrap());
    assert_eq!((status.as_str(), secret), ("sent", 1));
    assert!(
        text_body.is_none() && html_body.is_none(),
        "secret bodies are scrubbed"
    );
    assert_eq!(app.count_rows("jobs"), 0);
}

#[tokio::test]
async fn without_smtp_the_invitation_says_not_configured_and_queues_no_mail() {
    let app = TestApp::spawn().await;
    let inv = invite(&app.admin(), "ben@example.com", "viewer").await;
    assert_eq!(inv["email_delivery"], "not_configured");
    assert!(inv["accept_url"].is_string());
    assert_eq!(app.count_rows("mail_outbox"), 0);
    assert_eq!(app.count_rows("jobs"), 0);
    let log = mails(&app.admin(), "").await;
    assert_eq!(log["data"], json!([]));
    assert_eq!(log["has_more"], false);
    // The invitation as listed carries neither the link nor the e-mail status.
    let listed: Value = app.admin().get(INVITATIONS, 200).await;
    assert!(listed["data"][0].get("email_delivery").is_none());
}

#[tokio::test]
async fn a_451_is_retried_when_the_clock_reaches_the_schedule_and_then_delivered() {
    let sink = SmtpSink::start();
    sink.script(&[451]).await;
    let app = app_with_smtp(sink.port).await;
    let owner = app.admin();
    invite(&owner, "cho@example.com", "reviewer").await;
    let m = mail_where(&owner, "cho@example.com", |m| m["attempts"] == 1).await;
    assert_eq!(m["status"], "pending");
    let err = m["last_error"].as_str().unwrap();
    assert!(err.starts_with("SMTP 451"), "{err}");
    assert!(err.contains("try again later"), "{err}");
    assert!(m["sent_at"].is_null());
    // Pending: the bodies stay until the mail is sent.
    let (_, text, html, _) = stored(&app, m["id"].as_str().unwrap());
    assert!(text.is_some() && html.is_some());
    assert!(sink.to("cho@example.com").await.is_empty());

    // Not before 30 s from the attempt's start…
    app.state
        .services
        .clock
        .advance(time::Duration::seconds(20));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(sink.to("cho@example.com").await.is_empty());
    // …then it goes.
    app.state
        .services
        .clock
        .advance(time::Duration::seconds(11));
    sink.wait_for("cho@example.com", 1).await;
    let m = mail_where(&owner, "cho@example.com", |m| m["status"] == "sent").await;
    assert_eq!(m["attempts"], 2);
    assert_eq!(m["last_error"], Value::Null);
}

#[tokio::test]
async fn an_smtp_outage_is_retried_and_the_mail_arrives_once_the_server_is_back() {
    let port = free_port();
    let app = app_with_smtp(port).await;
    let owner = app.admin();
    invite(&owner, "dev@example.com", "viewer").await;
    let m = mail_where(&owner, "dev@example.com", |m| m["attempts"] == 1).await;
    assert_eq!(m["status"], "pending");
    let err = m["last_error"].as_str().unwrap();
    assert!(err.to_lowercase().contains("refused"), "{err}");
    // Still down at the second attempt (30 s later).
    app.state
        .services
        .clock
        .advance(time::Duration::seconds(31));
    let m = mail_where(&owner, "dev@example.com", |m| m["attempts"] == 2).await;
    assert_eq!(m["status"], "pending");

    // The server comes back; the third attempt (2 min later) delivers.
    let sink = SmtpSink::start_on(port);
    app.state
        .services
        .clock
        .advance(time::Duration::seconds(121));
    let got = sink.wait_for("dev@example.com", 1).await;
    assert_eq!(got.len(), 1);
    let m = mail_where(&owner, "dev@example.com", |m| m["status"] == "sent").await;
    assert_eq!(m["attempts"], 3);
}

#[tokio::test]
async fn revoking_an_invitation_stops_its_pending_mail_and_erases_the_link() {
    let port = free_port();
    let app = app_with_smtp(port).await;
    let owner = app.admin();
    let inv = invite(&owner, "eve@example.com", "reviewer").await;
    let m = mail_where(&owner, "eve@example.com", |m| m["attempts"] == 1).await;
    assert_eq!(m["status"], "pending");
    let id = m["id"].as_str().unwrap().to_owned();
    let (_, text, _, _) = stored(&app, &id);
    assert!(
        text.unwrap().contains("/app/invitations/"),
        "the link waits in the pending mail"
    );
    let revoked: Value = owner
        .delete(
            &format!("{INVITATIONS}/{}", inv["id"].as_str().unwrap()),
            200,
        )
        .await;
    assert_eq!(revoked["data"]["status"], "revoked");
    let m = mail_where(&owner, "eve@example.com", |m| m["status"] == "failed").await;
    assert!(m["last_error"].as_str().unwrap().contains("revoked"), "{m}");
    assert_eq!(stored(&app, &id), ("failed".into(), None, None, 1));
    // The server comes back and the retry falls due: nothing goes out.
    let sink = SmtpSink::start_on(port);
    app.state
        .services
        .clock
        .advance(time::Duration::seconds(31));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(sink.to("eve@example.com").await.is_empty());
}

#[tokio::test]
async fn a_550_fails_the_mail_which_owners_and_admins_see_and_reviewers_do_not() {
    let sink = SmtpSink::start();
    sink.script(&[550]).await;
    let app = app_with_smtp(sink.port).await;
    let admin = app.member(Role::Admin);
    invite(&admin, "eve@example.com", "reviewer").await;
    let m = mail_where(&admin, "eve@example.com", |m| m["status"] == "failed").await;
    assert_eq!(m["attempts"], 1);
    let err = m["last_error"].as_str().unwrap();
    assert!(
        err.starts_with("SMTP 550") && err.contains("No such mailbox"),
        "{err}"
    );
    assert!(m["sent_at"].is_null());
    let (_, text, html, _) = stored(&app, m["id"].as_str().unwrap());
    assert!(
        text.is_none() && html.is_none(),
        "a failed secret mail is scrubbed too"
    );
    assert_eq!(app.count_rows("jobs"), 0, "a 5xx is not retried");
    // The owner sees it, filtered by status too.
    let failed = mails(&app.admin(), "?status=failed").await;
    assert_eq!(failed["data"].as_array().unwrap().len(), 1);
    assert_eq!(failed["data"][0]["id"], m["id"]);
    assert_eq!(mails(&app.admin(), "?status=sent").await["data"], json!([]));
    // Reviewers and viewers are refused; another workspace sees nothing of it.
    for role in [Role::Reviewer, Role::Viewer] {
        let e = app.member(role).get_err(EMAILS, 403, "FORBIDDEN").await;
        assert_eq!(e["details"]["required_role"], "admin");
    }
    assert_eq!(mails(&app.outsider(), "").await["data"], json!([]));
    // Hours later nothing more was sent.
    app.state.services.clock.advance(time::Duration::hours(7));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(sink.to("eve@example.com").await.is_empty());
}

#[tokio::test]
async fn a_mail_that_keeps_failing_gives_up_after_eight_attempts() {
    let sink = SmtpSink::start();
    sink.script(&[451; 8]).await;
    let app = app_with_smtp(sink.port).await;
    let owner = app.admin();
    invite(&owner, "fay@example.com", "viewer").await;
    for (attempt, wait) in [30, 120, 600, 1800, 3600, 10_800, 21_600]
        .iter()
        .enumerate()
    {
        mail_where(&owner, "fay@example.com", |m| m["attempts"] == attempt + 1).await;
        app.state
            .services
            .clock
            .advance(time::Duration::seconds(wait + 1));
    }
    let m = mail_where(&owner, "fay@example.com", |m| m["status"] == "failed").await;
    assert_eq!(m["attempts"], 8);
    let err = m["last_error"].as_str().unwrap();
    assert!(
        err.starts_with("gave up after 8 attempts; the last: SMTP 451"),
        "{err}"
    );
    assert_eq!(app.count_rows("jobs"), 0);
    assert!(sink.to("fay@example.com").await.is_empty());
}

#[tokio::test]
async fn the_log_pages_newest_first_and_refuses_bad_queries_with_their_field() {
    let sink = SmtpSink::start();
    let app = app_with_smtp(sink.port).await;
    let owner = app.admin();
    for who in ["g1", "g2", "g3"] {
        invite(&owner, &format!("{who}@example.com"), "viewer").await;
    }
    // An address SMTP cannot deliver to: the invitation stands, its mail
    // fails at once, and the log says why.
    let odd = invite(
        &owner,
        "a-local-part-longer-than-the-sixty-four-characters-smtp-allows-xyz@example.com",
        "viewer",
    )
    .await;
    assert_eq!(odd["email_delivery"], "failed");
    let all = mails(&owner, "").await;
    let ids: Vec<&str> = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 4);
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first: {ids:?}");
    assert_eq!(
        all["data"][0]["to"],
        "a-local-part-longer-than-the-sixty-four-characters-smtp-allows-xyz@example.com"
    );
    assert_eq!(all["data"][0]["status"], "failed");
    assert_eq!(all["data"][0]["attempts"], 0);
    assert!(
        all["data"][0]["last_error"]
            .as_str()
            .unwrap()
            .contains("not sent")
    );
    let page1 = mails(&owner, "?limit=3").await;
    assert_eq!(page1["has_more"], true);
    assert_eq!(page1["data"].as_array().unwrap().len(), 3);
    let page2 = mails(&owner, &format!("?limit=3&starting_after={}", ids[2])).await;
    assert_eq!(page2["has_more"], false);
    assert_eq!(page2["data"][0]["id"], ids[3]);
    // An empty cursor is the first page, as on runs and the inbox.
    assert_eq!(
        mails(&owner, "?limit=3&starting_after=").await["data"],
        page1["data"]
    );

    let before = app.count_rows("mail_outbox");
    for (query, field) in [
        ("?status=bounced", "status"),
        ("?limit=0", "limit"),
        ("?limit=201", "limit"),
        ("?limit=ten", "limit"),
        ("?starting_after=msg_01", "starting_after"),
        (
            "?starting_after=mail_not-a-ulid-at-all-xxxxxxxx",
            "starting_after",
        ),
        // The right shape, but no mail of this log (one made now: an id
        // older than the log keeps is taken as a position).
        (
            &*format!("?starting_after={}", hds::domain::ids::new_id("mail")),
            "starting_after",
        ),
        ("?sort=asc", ""),
    ] {
        let e = owner
            .get_err(&format!("{EMAILS}{query}"), 422, "VALIDATION_ERROR")
            .await;
        let errors = e["details"]["errors"].as_array().unwrap();
        assert!(!errors.is_empty(), "{query}: {e}");
        if !field.is_empty() {
            assert_eq!(errors[0]["field"], field, "{query}: {e}");
        }
        assert!(e["message"].as_str().unwrap().len() > 10, "{e}");
    }
    assert_eq!(app.count_rows("mail_outbox"), before, "nothing written");
    // A reviewer is refused before the query is looked at.
    app.member(Role::Reviewer)
        .get_err(&format!("{EMAILS}?limit=0"), 403, "FORBIDDEN")
        .await;
}

#[tokio::test]
async fn the_dashboards_invite_form_mails_the_link_and_says_so() {
    let sink = SmtpSink::start();
    let app = app_with_smtp(sink.port).await;
    let owner = app.admin();
    let browser = app.browser(owner.person()).await;
    let r = browser
        .post_form(
            "/app/invitations",
            Some(&app.base),
            &[
                ("_csrf", browser.csrf()),
                ("email", "hal@example.com"),
                ("role", "reviewer"),
            ],
        )
        .await;
    assert_eq!(r.status(), 303);
    let html = browser.page("/app/invitations?done=created").await;
    assert!(
        html.contains("hds is e-mailing hal@example.com a link of its own"),
        "{html}"
    );
    let got = sink.wait_for("hal@example.com", 1).await;
    assert!(
        got[0]["text"]
            .as_str()
            .unwrap()
            .contains("/app/invitations/")
    );
}

#[tokio::test]
async fn the_email_log_page_lists_the_mails_for_owners_and_admins_only() {
    let sink = SmtpSink::start();
    sink.script(&[550]).await;
    let app = app_with_smtp(sink.port).await;
    let owner = app.admin();
    invite(&owner, "ivy@example.com", "viewer").await;
    mail_where(&owner, "ivy@example.com", |m| m["status"] == "failed").await;
    let browser = app.browser(owner.person()).await;
    let html = browser.page("/app/settings/emails?status=failed").await;
    // A narrow card may break the address after its @, nowhere else.
    assert!(html.contains("ivy@<wbr>example.com"), "{html}");
    assert!(html.contains("SMTP 550"), "{html}");
    assert!(html.contains("status-failed"), "{html}");
    assert!(
        !html.contains("/app/invitations/"),
        "no body, no link: {html}"
    );
    let sent = browser.page("/app/settings/emails?status=sent").await;
    assert!(sent.contains("No mails with status sent."), "{sent}");
    // A reviewer gets the refusal page, not the log.
    let reviewer = app.member(Role::Reviewer);
    let rb = app.browser(reviewer.person()).await;
    let r = rb
        .http()
        .get(rb.url("/app/settings/emails"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert!(!r.text().await.unwrap().contains("ivy@example.com"));
}

#[tokio::test]
async fn the_openapi_document_enumerates_email_delivery_and_the_log_statuses() {
    let app = TestApp::spawn().await;
    let doc: Value = app.anonymous().get("/v1/openapi.json", 200).await;
    let inv = &doc["components"]["schemas"]["InvitationOut"]["properties"]["email_delivery"];
    assert_eq!(
        inv["enum"],
        json!(["queued", "not_configured", "failed"]),
        "{inv}"
    );
    let op = &doc["paths"]["/v1/workspaces/emails"]["get"];
    let status = op["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "status")
        .unwrap();
    assert_eq!(
        status["schema"]["enum"],
        json!(["pending", "sent", "failed"])
    );
    for code in ["200", "403", "422"] {
        assert!(op["responses"][code].is_object(), "{code}: {op}");
    }
}

/// The Workspaces page sends an invited person to their mailbox only for
/// an invitation hds e-mailed.
#[tokio::test]
async fn the_workspaces_page_points_to_the_invitation_mail_hds_sent() {
    let sink = SmtpSink::start();
    let app = app_with_smtp(sink.port).await;
    let admin = app.member(Role::Admin);
    let ana = app.outsider();
    let email = ana.person().email.clone();
    invite(&admin, &email, "viewer").await;
    sink.wait_for(&email, 1).await;
    let html = app
        .browser(ana.person())
        .await
        .page("/app/workspaces")
        .await;
    assert!(
        html.contains(&format!(
            "To join, open the link in the invitation e-mail sent to {email}."
        )),
        "{html}"
    );
    assert!(!html.contains("hds sent no e-mail"), "{html}");
}

/// An invitation hds e-mailed signs a new person in by the e-mailed link
/// only: whoever invited was shown the other copy, and must not be able to
/// sign in as the invited address (and decide or vote as them). That copy
/// says so, signed out, and opens no session; the e-mailed one does.
#[tokio::test]
async fn only_the_mailed_link_signs_a_newcomer_in() {
    let sink = SmtpSink::start();
    let app = app_with_smtp(sink.port).await;
    let admin = app.member(Role::Admin);
    let inv = invite(&admin, "cfo@example.com", "reviewer").await;
    let shown = inv["accept_url"].as_str().unwrap().to_owned();
    let got = sink.wait_for("cfo@example.com", 1).await;
    let text = got[0]["text"].as_str().unwrap().replace("\r\n", "\n");
    let mailed = text
        .lines()
        .find(|l| l.contains("/app/invitations/"))
        .unwrap()
        .trim()
        .to_owned();

    // The inviter's copy, signed out: the page explains, no button.
    let http = crate::helpers::browser_client();
    let page = http.get(&shown).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("id=\"accept-refused\""), "{page}");
    assert!(
        page.contains("hds e-mailed this invitation to cfo@example.com"),
        "{page}"
    );
    assert!(!page.contains("Sign in and join"), "{page}");
    // Posted anyway: refused, no person, no session, still pending.
    let (users, sessions) = (app.count_rows("users"), app.count_rows("user_tokens"));
    let body = crate::helpers::refused_signed_out(&app, &shown, 401).await;
    assert!(body.contains("open the link in that e-mail"), "{body}");
    assert_eq!(app.count_rows("users"), users, "no person was made");
    assert_eq!(app.count_rows("user_tokens"), sessions);

    // The e-mailed link signs the newcomer in and joins.
    let cfo = app.sign_in_with_link(&mailed).await;
    let ws: Value = cfo.get("/v1/workspaces", 200).await;
    assert!(
        ws["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["role"] == "reviewer"),
        "{ws}"
    );
    let export: Value = cfo.get("/v1/account/export", 200).await;
    assert!(export.to_string().contains("cfo@example.com"), "{export}");
    // Used: neither copy works again.
    for link in [&shown, &mailed] {
        let page = http.get(link).send().await.unwrap();
        assert_eq!(page.status(), 404, "{link}");
    }
}

/// With an identity provider configured, the inviter's copy of a mailed
/// invitation still offers the provider: signing in with it proves the
/// address, so either copy works.
#[tokio::test]
async fn with_a_provider_the_inviters_copy_offers_it() {
    let sink = SmtpSink::start();
    let port = sink.port;
    let app = TestApp::spawn_with(move |c| {
        c.smtp = Some(SmtpSink::config(port));
        c.auth.providers.insert(
            "corp".into(),
            crate::signin_oidc::idp::provider(
                hds::config::ProviderKind::Oidc,
                "http://127.0.0.1:9/issuer",
                "hds-test",
            ),
        );
    })
    .await;
    let inv = invite(&app.member(Role::Admin), "dee@example.com", "viewer").await;
    assert_eq!(inv["email_delivery"], "queued");
    let shown = inv["accept_url"].as_str().unwrap();
    let page = crate::helpers::browser_client()
        .get(shown)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!page.contains("accept-refused"), "{page}");
    assert!(page.contains("/v1/auth/corp/start"), "{page}");
}

/// An address whose domain has letters outside ASCII is delivered to its
/// ASCII (IDNA) form; one with such letters before the @ cannot go through
/// a relay without SMTPUTF8 (this sink has none) and fails at once, saying
/// why, instead of being retried for hours.
#[tokio::test]
async fn an_international_domain_is_sent_in_ascii_and_a_local_part_fails_at_once() {
    let sink = SmtpSink::start();
    let app = app_with_smtp(sink.port).await;
    let admin = app.member(Role::Admin);
    invite(&admin, "eva@exämple.com", "viewer").await;
    let got = sink.wait_for("eva@xn--exmple-cua.com", 1).await;
    assert_eq!(got.len(), 1);

    invite(&admin, "éva@example.com", "viewer").await;
    let m = mail_where(&admin, "éva@example.com", |m| m["status"] != "pending").await;
    assert_eq!(m["status"], "failed", "{m}");
    assert_eq!(m["attempts"], 1, "{m}");
    let why = m["last_error"].as_str().unwrap();
    assert!(why.contains("SMTPUTF8"), "{why}");
    assert_eq!(app.count_rows("jobs"), 0, "no retry is queued");
}

/// The text of a page fetched without a session.
async fn anonymous_page(url: String) -> String {
    crate::helpers::browser_client()
        .get(url)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Deleting an account forgets the sign-in page's requests for its address
/// (kept by a hash of it); others' stay.
#[tokio::test]
async fn deleting_an_account_forgets_the_link_requests_for_its_address() {
    let sink = SmtpSink::start();
    let app = app_mailing_links(sink.port).await;
    let leaver = app.member_as(Role::Reviewer, "leaver@example.com");
    for email in ["Leaver@Example.com", "someone.else@example.com"] {
        let r = ask_for_link(&app, &app.base, email).await;
        assert_eq!(r.status(), 303, "{email}");
    }
    assert_eq!(app.count_rows("signin_requests"), 2);
    let r = leaver
        .call(
            reqwest::Method::DELETE,
            "/v1/account",
            Some(&json!({"confirm": "leaver@example.com"})),
            &[],
        )
        .await;
    assert_eq!(r.status, 204, "{:?}", r.body);
    assert_eq!(app.count_rows("signin_requests"), 1);
}

/// POSTs the sign-in page's e-mail form from `origin`; answers the response.
async fn ask_for_link(app: &TestApp, origin: &str, email: &str) -> reqwest::Response {
    crate::helpers::browser_client()
        .post(format!("{}/app/signin/email", app.base))
        .header("origin", origin)
        .form(&[("email", email), ("next", "/app/runs")])
        .send()
        .await
        .unwrap()
}

/// The sign-in links `email`'s account holds and the sign-in mails to it,
/// read from the SQLite file.
fn links_and_mails(app: &TestApp, email: &str) -> (i64, i64) {
    let db = app.db();
    // Links of 15 minutes (the first start made a 24-hour one for the admin).
    let links = db
        .query_row(
            "SELECT count(*) FROM signin_links l JOIN users u ON u.id = l.user_id
              WHERE u.email = ?1 AND julianday(l.expires_at) - julianday(l.created_at) < 1",
            [email],
            |r| r.get(0),
        )
        .unwrap();
    let mails = db
        .query_row(
            "SELECT count(*) FROM mail_outbox WHERE kind = 'signin' AND to_addr = ?1 AND workspace_id IS NULL",
            [email],
            |r| r.get(0),
        )
        .unwrap();
    (links, mails)
}

#[tokio::test]
async fn the_signin_page_mails_a_one_time_link_to_an_account_and_tells_no_one_who_has_one() {
    let sink = SmtpSink::start();
    let app = app_mailing_links(sink.port).await;
    let admin = "admin@example.com";
    let page = anonymous_page(format!("{}/app/signin?next=/app/runs", app.base)).await;
    assert!(page.contains("id=\"email-link-form\""), "{page}");
    assert!(page.contains("name=\"next\" value=\"/app/runs\""), "{page}");

    // Known address (in another case), unknown address: the same answer.
    let done = "/app/signin?done=link_mailed&next=%2Fapp%2Fruns";
    for email in ["Admin@Example.com", "nobody@example.com"] {
        let r = ask_for_link(&app, &app.base, email).await;
        assert_eq!(r.status(), 303, "{email}");
        assert_eq!(r.headers()["location"], done, "{email}");
    }
    let page = anonymous_page(format!("{}{done}", app.base)).await;
    assert!(page.contains("Check your e-mail"), "{page}");
    assert!(!page.contains("Admin@Example.com") && !page.contains("nobody@"));

    let got = sink.wait_for(admin, 1).await;
    let m = &got[0];
    assert_eq!(m["from"], "hds <hds@example.com>");
    let subject = m["subject"].as_str().unwrap();
    assert!(
        subject.starts_with("Your sign-in link for hds at 127.0.0.1"),
        "{subject}"
    );
    let text = m["text"].as_str().unwrap().replace("\r\n", "\n");
    assert!(text.contains("within 15 minutes"), "{text}");
    let link = text
        .lines()
        .find(|l| l.contains("/app/signin/link/"))
        .unwrap()
        .trim()
        .to_owned();
    assert!(
        link.starts_with(&format!("{}/app/signin/link/", app.base))
            && link.ends_with("?next=%2Fapp%2Fruns"),
        "{link}"
    );
    assert!(
        m["html"]
            .as_str()
            .unwrap()
            .contains(&format!("href=\"{link}\""))
    );
    assert!(sink.to("nobody@example.com").await.is_empty());
    assert_eq!(links_and_mails(&app, "nobody@example.com"), (0, 0));
    // A form whose hidden `next` was changed to leave the site: the form
    // again (422), leading to the inbox, the address kept; nothing mailed.
    let r = crate::helpers::browser_client()
        .post(format!("{}/app/signin/email", app.base))
        .header("origin", &app.base)
        .form(&[
            ("email", "Admin@Example.com"),
            ("next", "https://evil.example/"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let page = r.text().await.unwrap();
    assert!(page.contains("That sign-in link leads elsewhere"), "{page}");
    assert!(page.contains("name=\"next\" value=\"/app\""), "{page}");
    assert!(page.contains("value=\"Admin@Example.com\""), "{page}");
    // Both asks were written alike (one request row each, by a hash of the
    // address: no address is kept), so neither answer takes longer.
    let hashes: Vec<String> = {
        let db = app.db();
        let mut st = db
            .prepare("SELECT address_hash FROM signin_requests ORDER BY rowid")
            .unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let sha = |e: &str| hex::encode(<sha2::Sha256 as sha2::Digest>::digest(e.as_bytes()));
    assert_eq!(
        hashes,
        [sha("admin@example.com"), sha("nobody@example.com")]
    );
    // An address without an account is held back like one with: asked
    // again at once, nothing more is recorded.
    let r = ask_for_link(&app, &app.base, "nobody@example.com").await;
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], done);
    assert_eq!(app.count_rows("signin_requests"), 2);

    // Asked again at once: nothing more is made or sent.
    let r = ask_for_link(&app, &app.base, admin).await;
    assert_eq!(r.headers()["location"], done);
    assert_eq!(links_and_mails(&app, admin), (1, 1));
    // Not an address: the form says so (422); another site's form: refused.
    let r = ask_for_link(&app, &app.base, "nope").await;
    assert_eq!(r.status(), 422);
    let html = r.text().await.unwrap();
    assert!(html.contains("That is not an e-mail address"), "{html}");
    // Announced as an alert, tied to the field, the typed text kept, and
    // the page titled by what happened.
    assert!(
        html.contains(r#"id="signin-notice" role="alert""#),
        "{html}"
    );
    assert!(
        html.contains(r#"value="nope" aria-invalid="true" aria-describedby="signin-notice""#),
        "{html}"
    );
    assert!(
        html.contains("<title>Sign in: That is not an e-mail address"),
        "{html}"
    );
    let r = ask_for_link(&app, "https://evil.example", admin).await;
    assert_eq!(r.status(), 403);
    assert_eq!(links_and_mails(&app, admin), (1, 1));

    // The link signs in once, and goes where the person was going.
    let browser = crate::helpers::browser_client();
    let confirm = browser.get(&link).send().await.unwrap();
    assert_eq!(confirm.status(), 200);
    assert!(
        confirm
            .text()
            .await
            .unwrap()
            .contains("value=\"/app/runs\"")
    );
    let post_to = link.split('?').next().unwrap();
    let r = browser
        .post(post_to)
        .header("origin", &app.base)
        .form(&[("next", "/app/runs")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/app/runs");
    let me = browser
        .get(format!("{}/v1/auth/session", app.base))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(me["data"]["user"]["email"], admin, "{me}");
    let again = crate::helpers::browser_client()
        .post(post_to)
        .header("origin", &app.base)
        .form(&[("next", "/app")])
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 410);

    // Sent, its bodies (the link) are erased from the outbox.
    let id: String = app
        .db()
        .query_row(
            "SELECT id FROM mail_outbox WHERE kind = 'signin'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let mut last = (String::new(), None, None, 0);
    for _ in 0..250 {
        last = stored(&app, &id);
        if last.0 == "sent" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(last, ("sent".to_owned(), None, None, 1));

    // A minute later another may be asked for; it lapses after 15 minutes.
    let clock = &app.state.services.clock;
    clock.advance(time::Duration::seconds(61));
    ask_for_link(&app, &app.base, admin).await;
    assert_eq!(links_and_mails(&app, admin), (2, 2));
    let got = sink.wait_for(admin, 2).await;
    let text = got[1]["text"].as_str().unwrap().replace("\r\n", "\n");
    let second = text
        .lines()
        .find(|l| l.contains("/app/signin/link/"))
        .unwrap()
        .trim()
        .to_owned();
    assert_ne!(second, link);
    clock.advance(time::Duration::minutes(16));
    let r = crate::helpers::browser_client()
        .get(&second)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 410);
    assert!(
        r.text()
            .await
            .unwrap()
            .contains("Ask for a new one by e-mail below")
    );

    // At most five in 15 minutes, however spaced.
    for _ in 0..6 {
        clock.advance(time::Duration::seconds(61));
        ask_for_link(&app, &app.base, admin).await;
    }
    assert_eq!(links_and_mails(&app, admin).1, 2 + 5);
    // At most ten in a day: after the window, five more would pass, but
    // three already went in this day's earlier windows.
    clock.advance(time::Duration::minutes(16));
    for _ in 0..6 {
        clock.advance(time::Duration::seconds(61));
        ask_for_link(&app, &app.base, admin).await;
    }
    assert_eq!(links_and_mails(&app, admin).1, 10);
    // A `next` holding another link's secret is not written into the mail.
    clock.advance(time::Duration::days(1));
    let r = crate::helpers::browser_client()
        .post(format!("{}/app/signin/email", app.base))
        .header("origin", &app.base)
        .form(&[
            ("email", admin),
            ("next", "/app/invitations/Jd8xRk2vQm9sT4wY7zB1"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.headers()["location"],
        "/app/signin?done=link_mailed&next=%2Fapp"
    );
    let got = sink.wait_for(admin, 11).await;
    let text = got[10]["text"].as_str().unwrap();
    assert!(!text.contains("Jd8xRk2vQm9sT4wY7zB1"), "{text}");
}

/// (status, attempts, last_error) of the only sign-in mail, from the file.
fn signin_mail(app: &TestApp) -> (String, i64, Option<String>) {
    app.db()
        .query_row(
            "SELECT status, attempts, last_error FROM mail_outbox WHERE kind = 'signin'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap()
}

async fn signin_mail_where(
    app: &TestApp,
    pred: impl Fn(&(String, i64, Option<String>)) -> bool,
) -> (String, i64, Option<String>) {
    let mut last = signin_mail(app);
    for _ in 0..500 {
        if pred(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        last = signin_mail(app);
    }
    panic!("the sign-in mail never got there: {last:?}");
}

/// A mailed link lives 15 minutes: its mail is not retried past that, nor
/// sent when its turn comes after it (an outage, a restart), but failed
/// with the reason and its bodies erased.
#[tokio::test]
async fn a_mailed_link_is_not_delivered_once_dead() {
    let sink = SmtpSink::start();
    sink.script(&[451]).await;
    let app = app_mailing_links(sink.port).await;
    let clock = &app.state.services.clock;
    ask_for_link(&app, &app.base, "admin@example.com").await;
    let m = signin_mail_where(&app, |m| m.1 == 1).await;
    assert_eq!(m.0, "pending");
    // Its retry falls due after the link died.
    clock.advance(time::Duration::minutes(16));
    let m = signin_mail_where(&app, |m| m.0 == "failed").await;
    assert_eq!(m.1, 1, "no second attempt");
    let e = m.2.as_deref().unwrap();
    assert!(
        e.contains("lives 15 minutes, and would be dead by its next attempt"),
        "{m:?}"
    );
    assert!(
        e.contains("; the last attempt: SMTP 451"),
        "the earlier error stays: {e}"
    );
    let id: String = app
        .db()
        .query_row(
            "SELECT id FROM mail_outbox WHERE kind = 'signin'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let (_, text, html, _) = stored(&app, &id);
    assert!(
        text.is_none() && html.is_none(),
        "the dead link is erased too"
    );
    assert!(sink.to("admin@example.com").await.is_empty());

    // Refused four times in a row: the fifth attempt would come after 42
    // minutes, so the fourth failure gives it up.
    let sink = SmtpSink::start();
    sink.script(&[451, 451, 451, 451]).await;
    let app = app_mailing_links(sink.port).await;
    let clock = &app.state.services.clock;
    ask_for_link(&app, &app.base, "admin@example.com").await;
    for (n, wait) in [(1, 31), (2, 121), (3, 601)] {
        signin_mail_where(&app, |m| m.1 == n).await;
        clock.advance(time::Duration::seconds(wait));
    }
    let m = signin_mail_where(&app, |m| m.0 == "failed").await;
    assert_eq!(m.1, 4);
    let e = m.2.unwrap();
    assert!(e.contains("lives 15 minutes") && e.contains("451"), "{e}");
}

#[tokio::test]
async fn without_smtp_or_email_links_the_signin_page_offers_no_mailed_link() {
    // With [smtp] but not `email_links = true`: off, as without [smtp].
    let sink = SmtpSink::start();
    let app = app_with_smtp(sink.port).await;
    let r = ask_for_link(&app, &app.base, "admin@example.com").await;
    assert_eq!(r.status(), 404);
    let r = ask_for_link(&app, "https://evil.example", "admin@example.com").await;
    assert_eq!(r.status(), 404, "off is off, whatever the origin");
    assert_eq!(app.count_rows("mail_outbox"), 0);
    let app = TestApp::spawn().await;
    let page = anonymous_page(format!("{}/app/signin", app.base)).await;
    assert!(!page.contains("email-link-form"));
    let links = app.count_rows("signin_links");
    let r = ask_for_link(&app, &app.base, "admin@example.com").await;
    assert_eq!(r.status(), 404);
    assert!(
        r.text()
            .await
            .unwrap()
            .contains("does not mail sign-in links")
    );
    assert_eq!(app.count_rows("signin_links"), links);
    assert_eq!(app.count_rows("mail_outbox"), 0);
}
