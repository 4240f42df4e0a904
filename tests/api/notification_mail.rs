//! Notifications by e-mail against a real SMTP server on loopback
//! (tests/py/smtp_sink.py, aiosmtpd): the mail and its link, an opt-out
//! that stops the mail and keeps the in-app item, a mandatory kind that
//! overrides it, the digest as one mail, a new Action's mails, and an
//! outage that is retried. (Retries, the log and kill -9 of the outbox
//! itself: tests/api/mail.rs and tests/cli.rs.)

use std::time::Duration;

use hds::domain::access::Role;
use serde_json::{Value, json};

use crate::helpers::{Actor, TestApp, two_options};
use crate::smtp::{SmtpSink, free_port};

async fn app_with_smtp(port: u16) -> TestApp {
    TestApp::spawn_with(|c| c.smtp = Some(SmtpSink::config(port))).await
}

/// The workspace's mail log (owner's view): `(to, kind, subject, status)`.
async fn log(owner: &Actor) -> Vec<(String, String, String, String)> {
    let page: Value = owner.get("/v1/workspaces/emails?limit=200", 200).await;
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let s = |k: &str| m[k].as_str().unwrap_or_default().to_owned();
            (s("to"), s("kind"), s("subject"), s("status"))
        })
        .collect()
}

async fn assign(owner: &Actor, a: &Value, to: &Actor) {
    owner
        .patch::<Value>(
            &format!("/v1/actions/{}/assignment", a["id"].as_str().unwrap()),
            json!({"assignee_user_id": to.person().id}),
            200,
        )
        .await;
}

async fn in_app(who: &Actor) -> Vec<Value> {
    let page: Value = who.get("/v1/notifications?limit=200", 200).await;
    page["data"].as_array().unwrap().clone()
}

#[tokio::test]
async fn an_assignment_is_mailed_with_its_link_and_an_opt_out_keeps_only_the_dashboard() {
    let sink = SmtpSink::start();
    let app = app_with_smtp(sink.port).await;
    let (owner, r1) = (app.admin(), app.member(Role::Reviewer));
    let to = r1.person().email.clone();
    let a = app.create_action(two_options("Ship 1.4")).await;
    assign(&owner, &a, &r1).await;
    let got = sink.wait_for(&to, 1).await;
    let m = &got[0];
    assert_eq!(m["subject"], "Assigned to you: Ship 1.4");
    let link = format!("{}/app/actions/{}", app.base, a["id"].as_str().unwrap());
    let text = m["text"].as_str().unwrap().replace("\r\n", "\n");
    assert!(text.contains(&link), "{text}");
    assert!(text.contains("assigned this Action to you"), "{text}");
    // The settings link names the workspace the mail is about, and is a
    // link in HTML.
    let ws = app.creds["workspace_id"].as_str().unwrap();
    let settings = format!("{}/app/settings/notifications?workspace={ws}", app.base);
    assert!(
        text.contains(&format!("Choose what reaches you:\n{settings}\n")),
        "{text}"
    );
    let html = m["html"].as_str().unwrap();
    assert!(html.contains(&format!("href=\"{link}\"")), "{html}");
    assert!(html.contains(&format!("<a href=\"{settings}\"")), "{html}");
    // `action.new` is not e-mailed by default: the one mail is the assignment.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(sink.to(&to).await.len(), 1);

    // Opted out of e-mail for assignments: the next one is in the dashboard only.
    r1.patch::<Value>(
        "/v1/notification-preferences",
        json!({"events": {"action.assigned": {"email": false}}}),
        200,
    )
    .await;
    let b = app.create_action(two_options("Ship 1.5")).await;
    assign(&owner, &b, &r1).await;
    let shown = in_app(&r1).await;
    assert_eq!(shown[0]["kind"], "action.assigned");
    assert_eq!(shown[0]["action_id"], b["id"]);
    // The mail log is written with the notification: none for it.
    let to_r1: Vec<_> = log(&owner)
        .await
        .into_iter()
        .filter(|m| m.0 == to)
        .collect();
    assert_eq!(to_r1.len(), 1, "{to_r1:?}");

    // Mandatory now: mailed despite the opt-out.
    owner
        .patch::<Value>(
            "/v1/workspaces/notification-policy",
            json!({"mandatory": ["action.assigned"]}),
            200,
        )
        .await;
    let c = app.create_action(two_options("Ship 1.6")).await;
    assign(&owner, &c, &r1).await;
    let got = sink.wait_for(&to, 2).await;
    assert!(
        got.iter()
            .any(|m| m["subject"] == "Assigned to you: Ship 1.6")
    );
    assert!(
        !got.iter()
            .any(|m| m["subject"] == "Assigned to you: Ship 1.5")
    );

    // The workspace turns e-mail off: nothing is mailed, even mandatory kinds.
    owner
        .patch::<Value>(
            "/v1/workspaces/notification-policy",
            json!({"email_enabled": false}),
            200,
        )
        .await;
    let d = app.create_action(two_options("Ship 1.7")).await;
    assign(&owner, &d, &r1).await;
    assert_eq!(in_app(&r1).await[0]["action_id"], d["id"]);
    let to_r1 = log(&owner).await.into_iter().filter(|m| m.0 == to).count();
    assert_eq!(to_r1, 2);
}

/// A member whose address SMTP cannot take (a doubled dot, kept from an
/// invitation) still gets the notification in the dashboard; the mail is in
/// the e-mail log as failed, saying why, instead of nowhere.
#[tokio::test]
async fn a_notification_to_an_address_smtp_cannot_take_is_logged_as_failed() {
    let sink = SmtpSink::start();
    let app = app_with_smtp(sink.port).await;
    let owner = app.admin();
    let odd = app.member_as(Role::Reviewer, "x..y@example.com");
    let a = app.create_action(two_options("Ship 1.4")).await;
    assign(&owner, &a, &odd).await;
    assert_eq!(in_app(&odd).await[0]["action_id"], a["id"]);
    let page: Value = owner.get("/v1/workspaces/emails?limit=200", 200).await;
    let m = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["to"] == "x..y@example.com")
        .unwrap_or_else(|| panic!("not in the log: {page}"))
        .clone();
    assert_eq!(m["status"], "failed", "{m}");
    assert_eq!(m["subject"], "Assigned to you: Ship 1.4", "{m}");
    let why = m["last_error"].as_str().unwrap_or_default();
    assert!(why.contains("a doubled dot"), "{m}");
    assert!(sink.to("x..y@example.com").await.is_empty());
}

#[tokio::test]
async fn a_digest_gathers_the_hours_notifications_into_one_mail() {
    let sink = SmtpSink::start();
    let app = app_with_smtp(sink.port).await;
    let (owner, r1, r2) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );
    let to = r1.person().email.clone();
    r1.patch::<Value>(
        "/v1/notification-preferences",
        json!({"email_digest": "hourly", "events": {"action.commented": {"email": true}}}),
        200,
    )
    .await;
    let a = app.create_action(two_options("Migrate the database")).await;
    let b = app
        .create_action(two_options("Rotate the certificate"))
        .await;
    assign(&owner, &a, &r1).await;
    assign(&owner, &b, &r1).await;
    let comments = format!("/v1/actions/{}/comments", a["id"].as_str().unwrap());
    r2.post::<Value>(
        &comments,
        json!({"body": format!("@{to} can you check the lock timeout?")}),
        201,
    )
    .await;
    // Four notifications (2 assigned, 1 mentioned; the comment mentions
    // r1, so no separate `commented`), none mailed yet.
    assert_eq!(
        in_app(&r1)
            .await
            .iter()
            .filter(|n| n["kind"] != "action.new")
            .count(),
        3
    );
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(sink.to(&to).await.is_empty());
    assert!(log(&owner).await.iter().all(|m| m.0 != to));

    // The hour ends: one mail with all three.
    app.state
        .services
        .clock
        .advance(time::Duration::minutes(61));
    let got = sink.wait_for(&to, 1).await;
    assert_eq!(got.len(), 1);
    let m = &got[0];
    assert_eq!(m["subject"], "3 notifications in Test");
    // A digest holds no mandatory kind: unsubscribing would stop it.
    assert!(
        m["list_unsubscribe"]
            .as_str()
            .is_some_and(|h| h.contains("/app/unsubscribe/")),
        "{m}"
    );
    assert_eq!(m["list_unsubscribe_post"], "List-Unsubscribe=One-Click");
    let text = m["text"].as_str().unwrap().replace("\r\n", "\n");
    for title in [
        "Assigned to you: Migrate the database",
        "Assigned to you: Rotate the certificate",
        "mentioned you on Migrate the database",
    ] {
        assert!(text.contains(title), "{title} in {text}");
    }
    assert!(text.contains(&format!(
        "{}/app/actions/{}",
        app.base,
        a["id"].as_str().unwrap()
    )));
    assert!(text.contains(&format!("{}/app/notifications", app.base)));
    // Nothing more is mailed at the next hour: the items went with the digest.
    app.state
        .services
        .clock
        .advance(time::Duration::minutes(61));
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(sink.to(&to).await.len(), 1);
    let digests: Vec<_> = log(&owner)
        .await
        .into_iter()
        .filter(|m| m.0 == to)
        .collect();
    assert_eq!(digests.len(), 1);
    assert_eq!(digests[0].1, "digest");

    // Held, then its kind made mandatory: the digest carries it anyway, and
    // so offers no unsubscribe link, which would not stop it.
    let c = app.create_action(two_options("Renew the domain")).await;
    assign(&owner, &c, &r1).await;
    owner
        .patch::<Value>(
            "/v1/workspaces/notification-policy",
            json!({"mandatory": ["action.assigned"]}),
            200,
        )
        .await;
    app.state
        .services
        .clock
        .advance(time::Duration::minutes(61));
    let got = sink.wait_for(&to, 2).await;
    let held = got
        .iter()
        .find(|m| {
            m["text"]
                .as_str()
                .is_some_and(|t| t.contains("Renew the domain"))
        })
        .unwrap_or_else(|| panic!("{got:?}"));
    assert_eq!(held["list_unsubscribe"], Value::Null, "{held}");
}

#[tokio::test]
async fn a_new_action_is_mailed_to_those_who_asked_for_it() {
    let sink = SmtpSink::start();
    let app = app_with_smtp(sink.port).await;
    let (owner, r1, r2, viewer) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
        app.member(Role::Viewer),
    );
    for who in [&r1, &viewer] {
        who.patch::<Value>(
            "/v1/notification-preferences",
            json!({"events": {"action.new": {"email": true}}}),
            200,
        )
        .await;
    }
    let a = app.create_action(two_options("Approve the budget")).await;
    let got = sink.wait_for(&r1.person().email, 1).await;
    assert_eq!(got[0]["subject"], "New: Approve the budget");
    let text = got[0]["text"].as_str().unwrap().replace("\r\n", "\n");
    assert!(text.contains(&format!(
        "{}/app/actions/{}",
        app.base,
        a["id"].as_str().unwrap()
    )));
    // r2 kept the default (no e-mail for new Actions); the viewer may not decide.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let log = log(&owner).await;
    assert!(log.iter().all(|m| m.0 != r2.person().email), "{log:?}");
    assert!(log.iter().all(|m| m.0 != viewer.person().email), "{log:?}");
    assert_eq!(log.iter().filter(|m| m.0 == r1.person().email).count(), 1);
}

#[tokio::test]
async fn a_notification_mail_waits_out_an_smtp_outage() {
    let port = free_port();
    let app = app_with_smtp(port).await;
    let (owner, r1) = (app.admin(), app.member(Role::Reviewer));
    let to = r1.person().email.clone();
    let a = app.create_action(two_options("During the outage")).await;
    assign(&owner, &a, &r1).await;
    // The first attempt finds no server: still pending, with the error.
    let mut pending = false;
    for _ in 0..500 {
        let page: Value = owner.get("/v1/workspaces/emails?limit=200", 200).await;
        if page["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["to"] == to.as_str() && m["attempts"] == 1 && m["status"] == "pending")
        {
            pending = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        pending,
        "the first attempt was recorded as failed and pending"
    );
    let sink = SmtpSink::start_on(port);
    app.state
        .services
        .clock
        .advance(time::Duration::seconds(31));
    let got = sink.wait_for(&to, 1).await;
    assert_eq!(got[0]["subject"], "Assigned to you: During the outage");
}

/// The time of `who`'s digest timer in the test workspace, if one is set.
fn digest_due(app: &TestApp, who: &Actor) -> Option<String> {
    let c = hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap();
    c.query_row(
        "SELECT due_at FROM notification_timers WHERE kind = 'digest' AND subject LIKE ?1",
        [format!("{} %", who.person().id)],
        |r| r.get(0),
    )
    .ok()
}

/// A held digest follows a change of preferences: daily to hourly moves it
/// to the next full hour instead of 08:00 UTC, and e-mail switched off
/// before it falls due mails none of it (it stays in the app).
#[tokio::test]
async fn a_held_digest_follows_a_change_of_preferences() {
    let sink = SmtpSink::start();
    let app = app_with_smtp(sink.port).await;
    let (owner, r1) = (app.admin(), app.member(Role::Reviewer));
    let to = r1.person().email.clone();
    r1.patch::<Value>(
        "/v1/notification-preferences",
        json!({"email_digest": "daily"}),
        200,
    )
    .await;
    let a = app.create_action(two_options("Renew the domain")).await;
    assign(&owner, &a, &r1).await;
    let daily = digest_due(&app, &r1).expect("a digest is held");
    assert!(daily.ends_with("T08:00:00.000Z"), "{daily}");

    r1.patch::<Value>(
        "/v1/notification-preferences",
        json!({"email_digest": "hourly"}),
        200,
    )
    .await;
    let hourly = digest_due(&app, &r1).expect("still held");
    let now = app.now();
    assert!(
        hourly.ends_with(":00:00.000Z") && hourly > now,
        "{hourly} after {now}"
    );
    assert_eq!(hourly[..13], {
        let next = app.state.services.clock.now() + time::Duration::hours(1);
        hds::domain::time::format(next)[..13].to_owned()
    });
    app.state
        .services
        .clock
        .advance(time::Duration::minutes(61));
    let got = sink.wait_for(&to, 1).await;
    assert_eq!(got[0]["subject"], "1 notification in Test");

    // Held again, then e-mail off before the hour ends: nothing more is
    // mailed, and the notification is still in the app.
    let b = app
        .create_action(two_options("Rotate the backups key"))
        .await;
    assign(&owner, &b, &r1).await;
    assert!(digest_due(&app, &r1).is_some());
    r1.patch::<Value>("/v1/notification-preferences", json!({"email": false}), 200)
        .await;
    app.state
        .services
        .clock
        .advance(time::Duration::minutes(61));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(sink.to(&to).await.len(), 1, "no second digest");
    assert!(digest_due(&app, &r1).is_none(), "the digest was taken");
    assert!(
        in_app(&r1).await.iter().any(|n| n["title"]
            .as_str()
            .unwrap_or("")
            .contains("Rotate the backups key")),
        "still in the app"
    );
}

/// A member removed while a notification mail waits (SMTP down) never gets
/// it: the mail fails unsent, with why, and its body is erased.
#[tokio::test]
async fn a_removed_member_gets_no_mail_that_was_still_waiting() {
    let port = free_port();
    let app = app_with_smtp(port).await;
    let (owner, r1) = (app.admin(), app.member(Role::Reviewer));
    let to = r1.person().email.clone();
    let a = app.create_action(two_options("Layoffs list")).await;
    assign(&owner, &a, &r1).await;
    // Tried once against the closed port: waiting for its retry.
    let waiting = || async {
        log(&owner)
            .await
            .into_iter()
            .filter(|m| m.0 == to && m.1 == "notification")
            .collect::<Vec<_>>()
    };
    for _ in 0..100 {
        if !waiting().await.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(waiting().await[0].3, "pending");

    owner
        .delete::<Value>(&format!("/v1/workspaces/members/{}", r1.person().id), 204)
        .await;
    let page: Value = owner.get("/v1/workspaces/emails?limit=200", 200).await;
    let m = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["to"] == to.as_str())
        .unwrap()
        .clone();
    assert_eq!(m["status"], "failed", "{m}");
    assert_eq!(
        m["last_error"],
        "the person left the workspace before this mail went out"
    );
    // The server comes back and the retry falls due: nothing arrives.
    let sink = SmtpSink::start_on(port);
    app.state
        .services
        .clock
        .advance(time::Duration::minutes(10));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(sink.to(&to).await.is_empty());
    let c = hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap();
    let bodies: i64 = c
        .query_row(
            "SELECT count(*) FROM mail_outbox WHERE text_body IS NOT NULL AND user_id = ?1",
            [&r1.person().id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(bodies, 0, "the body is erased");
}

/// A notification mail carries its one-click unsubscribe link (RFC 2369
/// `List-Unsubscribe`, RFC 8058 `List-Unsubscribe-Post`). Opening the link
/// changes nothing; the provider's POST (no cookie, no CSRF token) turns
/// the person's e-mail from that workspace off: later notifications stay in
/// the dashboard only. A changed or cut link, or one of a person no longer
/// a member, does nothing.
#[tokio::test]
async fn the_unsubscribe_link_stops_a_persons_mail_in_one_click() {
    let sink = SmtpSink::start();
    let app = app_with_smtp(sink.port).await;
    let (owner, r1) = (app.admin(), app.member(Role::Reviewer));
    let to = r1.person().email.clone();
    let a = app.create_action(two_options("Ship 2.0")).await;
    assign(&owner, &a, &r1).await;
    let m = sink.wait_for(&to, 1).await[0].clone();
    let header = m["list_unsubscribe"]
        .as_str()
        .expect("a List-Unsubscribe header");
    let prefix = format!("<{}/app/unsubscribe/", app.base);
    assert!(
        header.starts_with(&prefix) && header.ends_with('>'),
        "{header}"
    );
    assert_eq!(m["list_unsubscribe_post"], "List-Unsubscribe=One-Click");
    let url = header
        .trim_start_matches('<')
        .trim_end_matches('>')
        .to_owned();
    let token = url.rsplit('/').next().unwrap().to_owned();
    assert!(
        token.starts_with(&format!("{}.", r1.person().id)),
        "{token}"
    );

    // Any client, no cookie: the page says what it stops, and stops nothing.
    let anon = reqwest::Client::new();
    let page = anon.get(&url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(
        html.contains(&format!(
            "Stop notification e-mail to <strong>{to}</strong>"
        )),
        "{html}"
    );
    assert!(html.contains("id=\"unsubscribe\""), "{html}");
    assert!(email_on(&r1).await);

    // A link changed or cut short: 404, nothing changed.
    let last = token.chars().last().unwrap();
    let flipped = format!(
        "{}{}",
        &token[..token.len() - 1],
        if last == 'A' { 'B' } else { 'A' }
    );
    let other = token.replacen(&r1.person().id, &owner.person().id, 1);
    for bad in [
        flipped.as_str(),
        &token[..token.len() - 3],
        other.as_str(),
        "x",
    ] {
        let at = format!("{}/app/unsubscribe/{bad}", app.base);
        for r in [
            anon.get(&at).send().await.unwrap(),
            anon.post(&at)
                .body("List-Unsubscribe=One-Click")
                .send()
                .await
                .unwrap(),
        ] {
            assert_eq!(r.status(), 404, "{bad}");
            let body = r.text().await.unwrap();
            assert!(
                body.contains("this unsubscribe link is not valid"),
                "{body}"
            );
        }
    }
    assert!(email_on(&r1).await);
    assert!(email_on(&owner).await);

    // The provider's one-click POST, as RFC 8058 writes it.
    let r = anon
        .post(&url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let html = r.text().await.unwrap();
    assert!(html.contains("id=\"unsubscribed\""), "{html}");
    assert!(!email_on(&r1).await);
    // Again: the same answer, nothing more to do; the page says it is off.
    let again = anon.post(&url).send().await.unwrap();
    assert_eq!(again.status(), 200);
    let html = anon.get(&url).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("id=\"already-off\""), "{html}");

    // The next assignment reaches the dashboard, and no mail is written.
    let b = app.create_action(two_options("Ship 2.1")).await;
    assign(&owner, &b, &r1).await;
    assert_eq!(in_app(&r1).await[0]["action_id"], b["id"]);
    let to_r1 = log(&owner).await.into_iter().filter(|m| m.0 == to).count();
    assert_eq!(to_r1, 1, "only the first mail");

    // A kind the workspace makes mandatory is mailed anyway, and so says
    // nothing of unsubscribing: its mail carries no link.
    owner
        .patch::<Value>(
            "/v1/workspaces/notification-policy",
            json!({"mandatory": ["action.assigned"]}),
            200,
        )
        .await;
    let c = app.create_action(two_options("Ship 2.2")).await;
    assign(&owner, &c, &r1).await;
    let got = sink.wait_for(&to, 2).await;
    let mandatory = got
        .iter()
        .find(|m| m["subject"] == "Assigned to you: Ship 2.2")
        .expect("the mandatory mail");
    assert_eq!(mandatory["list_unsubscribe"], Value::Null, "{mandatory}");
    assert_eq!(mandatory["list_unsubscribe_post"], Value::Null);

    // Removed from the workspace, the link no longer applies.
    owner
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/workspaces/members/{}", r1.person().id),
            None,
            &[],
        )
        .await;
    let gone = anon.get(&url).send().await.unwrap();
    assert_eq!(gone.status(), 404);
}

/// Whether `who` gets e-mail from their active workspace (the master switch).
async fn email_on(who: &Actor) -> bool {
    let p: Value = who.get("/v1/notification-preferences", 200).await;
    p["email"].as_bool().unwrap_or_else(|| panic!("{p}"))
}

/// Valid unsubscribe links spend nothing of the address's budget (a mail
/// provider sends every recipient's one-click POST from a few addresses);
/// refused ones do, and once it is used up the address gets 429, valid
/// links included, until it refills.
#[tokio::test]
async fn refused_unsubscribe_links_count_against_the_address_and_valid_ones_do_not() {
    let app = TestApp::spawn_with(|c| {
        c.anonymous_rate_limit = 1;
        c.anonymous_burst = 3;
    })
    .await;
    let r1 = app.member(Role::Reviewer);
    let url = format!(
        "{}{}",
        app.base,
        app.unsubscribe_path(&r1.person().id).await
    );
    let token = url.rsplit('/').next().unwrap().to_owned();
    let anon = reqwest::Client::new();
    for _ in 0..6 {
        assert_eq!(anon.get(&url).send().await.unwrap().status(), 200);
        assert_eq!(anon.post(&url).send().await.unwrap().status(), 200);
    }
    // Genuine but no longer applying (the person left): 404, and still
    // nothing spent, however many a provider sends.
    let r2 = app.member(Role::Reviewer);
    let left = format!(
        "{}{}",
        app.base,
        app.unsubscribe_path(&r2.person().id).await
    );
    app.admin()
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/workspaces/members/{}", r2.person().id),
            None,
            &[],
        )
        .await;
    for _ in 0..6 {
        assert_eq!(anon.post(&left).send().await.unwrap().status(), 404);
    }
    let last = if token.ends_with('A') { 'B' } else { 'A' };
    let forged = format!(
        "{}/app/unsubscribe/{}{last}",
        app.base,
        &token[..token.len() - 1]
    );
    for _ in 0..3 {
        assert_eq!(anon.post(&forged).send().await.unwrap().status(), 404);
    }
    let limited = anon.post(&forged).send().await.unwrap();
    assert_eq!(limited.status(), 429);
    assert!(limited.headers().contains_key("retry-after"));
    assert_eq!(anon.get(&url).send().await.unwrap().status(), 429);
}
