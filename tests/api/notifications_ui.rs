//! Notifications in the dashboard (guide: "Notifications in the dashboard"):
//! the header's bell, the notifications page with its mark-read forms, the
//! preferences page and the workspace policy page, through cookie sessions
//! of people with different roles.

use hds::domain::access::Role;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Actor, TestApp, two_options};

/// The header's bell: its badge and its words.
fn bell(html: &str) -> (String, String) {
    let start = html.find("id=\"nav-bell\"").expect("a bell in the header");
    let end = html[start..].find("</a>").unwrap() + start;
    let b = &html[start..end];
    let count = b.split("id=\"nav-bell-count\"").nth(1).unwrap();
    let count = count[count.find('>').unwrap() + 1..count.find('<').unwrap()].to_owned();
    let label = b.split("id=\"nav-bell-label\"").nth(1).unwrap();
    let label = label[label.find('>').unwrap() + 1..label.find('<').unwrap()].to_owned();
    (count, label)
}

async fn unread(who: &Actor) -> i64 {
    let s: Value = who.get("/v1/notifications/summary", 200).await;
    s["unread"].as_i64().unwrap()
}

/// An Action assigned by the admin to `to`: `to` hears `action.assigned`,
/// every reviewer hears `action.new`.
async fn assigned_action(app: &TestApp, title: &str, to: &Actor) -> String {
    let a = app.create_action(two_options(title)).await;
    let id = a["id"].as_str().unwrap().to_owned();
    let _: Value = app
        .admin()
        .patch(
            &format!("/v1/actions/{id}/assignment"),
            json!({"assignee_user_id": to.person().id}),
            200,
        )
        .await;
    id
}

async fn form(who: &Actor, path: &str, fields: &[(&str, &str)]) -> reqwest::Response {
    let base = who.url("");
    let mut all = vec![("_csrf", who.csrf())];
    all.extend_from_slice(fields);
    who.post_form(path, Some(&base), &all).await
}

#[tokio::test]
async fn the_bell_counts_unread_and_the_page_lists_only_the_persons_own_notifications() {
    let app = TestApp::spawn().await;
    let ann = app.member(Role::Reviewer);
    let bob = app.member(Role::Reviewer);
    let action = assigned_action(&app, "Rotate the keys", &ann).await;
    let ann_b = app.browser(ann.person()).await;
    let bob_b = app.browser(bob.person()).await;

    let ann_unread = unread(&ann).await;
    assert_eq!(ann_unread, 2, "action.new and action.assigned");
    assert_eq!(unread(&bob).await, 1, "action.new only");

    // The bell is on every page, with the server's count.
    for path in ["/app", "/app/sources", "/app/account", "/app/notifications"] {
        let html = ann_b.page(path).await;
        assert_eq!(
            bell(&html),
            ("2".to_owned(), "2 unread notifications".to_owned()),
            "{path}"
        );
        assert!(
            html.contains("href=\"/app/notifications\""),
            "{path}: the bell links to the page"
        );
    }
    let html = bob_b.page("/app").await;
    assert_eq!(bell(&html).1, "1 unread notification");

    // The page: newest first, kind labels, unread markers; only Ann's.
    let page = ann_b.page("/app/notifications").await;
    let assigned = page
        .find("Assigned to you: Rotate the keys")
        .expect("the assignment");
    let new = page.find("New: Rotate the keys").expect("the broadcast");
    assert!(assigned < new, "newest first: {page}");
    assert!(page.contains(">Assigned</span>"), "{page}");
    assert!(page.contains(">New Action</span>"), "{page}");
    assert_eq!(page.matches("notif is-unread").count(), 2, "{page}");
    assert!(page.contains(">Mark all read</button>"), "{page}");
    let bobs = bob_b.page("/app/notifications").await;
    assert!(!bobs.contains("Assigned to you"), "not Bob's: {bobs}");
    assert!(bobs.contains("New: Rotate the keys"), "{bobs}");

    // The Unread tab and paging keep to the person's rows.
    let unread_tab = ann_b.page("/app/notifications?unread=1").await;
    assert_eq!(unread_tab.matches("class=\"notif ").count(), 2);
    let list: Value = ann.get("/v1/notifications", 200).await;
    let newest = list["data"][0]["id"].as_str().unwrap();
    for name in ["starting_after", "before"] {
        let older = ann_b
            .page(&format!("/app/notifications?{name}={newest}"))
            .await;
        assert!(!older.contains("Assigned to you"), "{older}");
        assert!(older.contains("New: Rotate the keys"), "{older}");
        assert!(older.contains("Back to the newest"), "{older}");
    }
    assert!(action.starts_with("act_"));
}

/// A notice outlives the state it announced: "New: …" about an Action
/// decided since says so, in the API (`action_status`) and on the page
/// (a "Decided", "Cancelled" or "Expired" badge), so no one opens it to
/// find the work done.
#[tokio::test]
async fn a_notice_says_where_its_action_stands_now() {
    let app = TestApp::spawn().await;
    let ann = app.member(Role::Reviewer);
    let decided = app.create_action(two_options("Ship 7")).await;
    let cancelled = app.create_action(two_options("Ship 8")).await;
    let open = app.create_action(two_options("Ship 9")).await;
    let body = json!({"action_version": decided["action_version"], "fingerprint": decided["fingerprint"], "option_id": "approve"});
    app.admin()
        .post::<Value>(
            &format!("/v1/actions/{}/decision", decided["id"].as_str().unwrap()),
            body,
            200,
        )
        .await;
    app.source()
        .post::<Value>(
            &format!("/v1/actions/{}/cancel", cancelled["id"].as_str().unwrap()),
            json!({}),
            200,
        )
        .await;

    let list: Value = ann.get("/v1/notifications", 200).await;
    let status_of = |a: &Value| {
        list["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["action_id"] == a["id"] && n["kind"] == "action.new")
            .map(|n| n["action_status"].clone())
            .unwrap_or_else(|| panic!("no notice about {}: {list}", a["id"]))
    };
    assert_eq!(status_of(&decided), "resolved");
    assert_eq!(status_of(&cancelled), "cancelled");
    assert_eq!(status_of(&open), "open");
    assert_eq!(list["data"].as_array().unwrap().len(), 3, "{list}");
    // Marking one read answers it with the same status.
    let notice = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["action_id"] == decided["id"])
        .unwrap();
    let read: Value = ann
        .post(
            &format!("/v1/notifications/{}/read", notice["id"].as_str().unwrap()),
            json!({}),
            200,
        )
        .await;
    assert_eq!(read["data"]["action_status"], "resolved", "{read}");
    assert_ne!(read["data"]["read_at"], Value::Null, "{read}");

    let page = app
        .browser(ann.person())
        .await
        .page("/app/notifications")
        .await;
    let row = |title: &str| {
        let at = page
            .find(title)
            .unwrap_or_else(|| panic!("{title}: {page}"));
        let end = page[at..].find("</li>").unwrap() + at;
        page[at..end].to_owned()
    };
    assert!(row("New: Ship 7").contains(">Decided</span>"), "{page}");
    assert!(row("New: Ship 8").contains(">Cancelled</span>"), "{page}");
    let still_open = row("New: Ship 9");
    assert!(
        !still_open.contains(">Decided</span>") && !still_open.contains(">Cancelled</span>"),
        "{still_open}"
    );
}

/// A notice about an Action its reader may no longer see (an admin,
/// mentioned on a restricted Action, made a reviewer not listed on it)
/// stays, but says nothing more of that Action: `action_status` is null.
#[tokio::test]
async fn a_notice_tells_the_status_only_while_its_reader_may_see_the_action() {
    let app = TestApp::spawn().await;
    let (ann, listed) = (app.member(Role::Admin), app.member(Role::Reviewer));
    let mut body = two_options("Rotate the root key");
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([listed.person().id]);
    let a = app.create_action(body).await;
    listed
        .post::<Value>(
            &format!("/v1/actions/{}/comments", a["id"].as_str().unwrap()),
            json!({"body": format!("@{} can you look?", ann.person().email)}),
            201,
        )
        .await;
    let mention = |l: &Value| {
        l["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["kind"] == "action.mentioned")
            .cloned()
            .unwrap_or_else(|| panic!("{l}"))
    };
    let before: Value = ann.get("/v1/notifications", 200).await;
    assert_eq!(mention(&before)["action_status"], "open");
    app.admin()
        .patch::<Value>(
            &format!("/v1/workspaces/members/{}", ann.person().id),
            json!({"role": "reviewer"}),
            200,
        )
        .await;
    let after: Value = ann.get("/v1/notifications", 200).await;
    let n = mention(&after);
    assert_eq!(n["action_status"], Value::Null, "{n}");
    assert_eq!(n["action_id"], a["id"]);
}

#[tokio::test]
async fn marking_read_opens_the_action_and_read_all_empties_the_bell_and_forms_need_the_token() {
    let app = TestApp::spawn().await;
    let ann = app.member(Role::Reviewer);
    let bob = app.member(Role::Reviewer);
    let action = assigned_action(&app, "Drop the table", &ann).await;
    let ann_b = app.browser(ann.person()).await;
    let list: Value = ann.get("/v1/notifications", 200).await;
    let assigned = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["kind"] == "action.assigned")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Without the token, or from another site: refused, nothing read.
    let base = ann_b.url("");
    for (origin, fields) in [
        (Some(base.as_str()), vec![]),
        (Some(base.as_str()), vec![("_csrf", "forged")]),
        (Some("https://evil.example"), vec![("_csrf", ann_b.csrf())]),
    ] {
        for path in [
            format!("/app/notifications/{assigned}/read"),
            "/app/notifications/read-all".to_owned(),
        ] {
            let r = ann_b.post_form(&path, origin, &fields).await;
            assert_eq!(r.status(), StatusCode::FORBIDDEN, "{path} {origin:?}");
            let html = r.text().await.unwrap();
            assert!(html.contains("CSRF_FAILED"), "{html}");
        }
    }
    assert_eq!(unread(&ann).await, 2, "nothing was marked read");

    // Someone else's notification: not found, and still unread for Ann.
    let bob_b = app.browser(bob.person()).await;
    let r = form(&bob_b, &format!("/app/notifications/{assigned}/read"), &[]).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert!(r.text().await.unwrap().contains("NOTIFICATION_NOT_FOUND"));
    assert_eq!(unread(&ann).await, 2);

    // Clicking the item: read, and on to its Action's page.
    let r = form(&ann_b, &format!("/app/notifications/{assigned}/read"), &[]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], format!("/app/actions/{action}"));
    assert_eq!(unread(&ann).await, 1);
    let html = ann_b.page("/app").await;
    assert_eq!(bell(&html).1, "1 unread notification");

    // Mark all read: the bell empties (its badge hidden), Bob's stay.
    let r = form(&ann_b, "/app/notifications/read-all", &[]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/app/notifications?done=read-all");
    assert_eq!(unread(&ann).await, 0);
    assert_eq!(unread(&bob).await, 1);
    let page = ann_b.page("/app/notifications?done=read-all").await;
    assert_eq!(
        bell(&page),
        ("0".to_owned(), "No unread notifications".to_owned())
    );
    assert!(page.contains("id=\"nav-bell-count\" aria-hidden=\"true\" hidden"));
    assert!(page.contains("All notifications marked read."), "{page}");
    assert!(!page.contains("notif is-unread"), "{page}");
    assert!(!page.contains(">Mark all read</button>"), "{page}");
}

#[tokio::test]
async fn the_preferences_form_saves_and_a_mandatory_kind_cannot_be_switched_off() {
    let app = TestApp::spawn().await;
    let ann = app.member(Role::Reviewer);
    let ann_b = app.browser(ann.person()).await;

    let html = ann_b.page("/app/settings/notifications").await;
    assert!(
        html.contains(r#"in <strong id="settings-workspace">Test</strong>"#),
        "names the workspace: {html}"
    );
    // A mail's settings link names its workspace: another of hers is
    // offered to switch to; hers, or one that is not hers, changes nothing.
    let side: Value = ann
        .post("/v1/workspaces", serde_json::json!({"name": "Side"}), 201)
        .await;
    let side_id = side["data"]["id"].as_str().unwrap();
    let other = ann_b
        .page(&format!("/app/settings/notifications?workspace={side_id}"))
        .await;
    assert!(other.contains(r#"id="settings-other""#), "{other}");
    assert!(other.contains("Switch to Side"), "{other}");
    assert!(other.contains(&format!(r#"name="workspace_id" value="{side_id}""#)));
    let active = app.creds["workspace_id"].as_str().unwrap();
    for q in [active, "ws_unknown"] {
        let same = ann_b
            .page(&format!("/app/settings/notifications?workspace={q}"))
            .await;
        assert!(!same.contains(r#"id="settings-other""#), "{q}");
    }
    assert!(
        html.contains("this server sends no e-mail; notifications appear here only")
            || html.contains("This server sends no e-mail; notifications appear here only"),
        "no SMTP in tests: {html}"
    );
    assert_eq!(html.matches("name=\"in_app\"").count(), 12, "every kind");
    assert!(!html.contains("Required by your workspace"));

    // Save: e-mail off, a daily digest, in-app for every kind but action.new,
    // e-mail for mentions only.
    let mut fields: Vec<(&str, &str)> = vec![("email_digest", "daily")];
    for k in hds::domain::notification::Kind::NAMES {
        if k != "action.new" {
            fields.push(("in_app", k));
        }
    }
    fields.push(("email_kind", "action.mentioned"));
    let r = form(&ann_b, "/app/settings/notifications", &fields).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        r.headers()["location"],
        "/app/settings/notifications?done=saved"
    );
    let p: Value = ann.get("/v1/notification-preferences", 200).await;
    assert_eq!(p["email"], false);
    assert_eq!(p["email_digest"], "daily");
    assert_eq!(
        p["events"]["action.new"],
        json!({"in_app": false, "email": false})
    );
    assert_eq!(
        p["events"]["action.mentioned"],
        json!({"in_app": true, "email": true})
    );
    assert_eq!(
        p["events"]["action.assigned"],
        json!({"in_app": true, "email": false})
    );
    let html = ann_b.page("/app/settings/notifications?done=saved").await;
    assert!(html.contains("Notification settings saved."));
    assert!(html.contains("value=\"daily\" checked"), "{html}");

    // A bad digest: refused by name, nothing saved.
    let r = form(
        &ann_b,
        "/app/settings/notifications",
        &[("email_digest", "weekly")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        r.text()
            .await
            .unwrap()
            .contains("Not saved: choose how often")
    );
    let same: Value = ann.get("/v1/notification-preferences", 200).await;
    assert_eq!(same, p);

    // The admin makes assignments mandatory: shown ticked, disabled, with the note.
    let _: Value = app
        .admin()
        .patch(
            "/v1/workspaces/notification-policy",
            json!({"mandatory": ["action.assigned"]}),
            200,
        )
        .await;
    let html = ann_b.page("/app/settings/notifications").await;
    assert!(html.contains("Required by your workspace"), "{html}");
    assert!(
        html.contains("value=\"action.assigned\" aria-label=\"An Action is assigned to me: in the dashboard\" checked disabled"),
        "{html}"
    );
    // A page from before the policy that unticks a box she had ticked
    // (assignments in the dashboard), and changes the digest: refused,
    // nothing saved, the kind named by its label; what she typed stays on
    // the page, the kind now locked, so saving again keeps the rest.
    let unticked: Vec<(&str, &str)> = fields
        .iter()
        .copied()
        .filter(|f| *f != ("in_app", "action.assigned"))
        .map(|f| {
            if f.0 == "email_digest" {
                ("email_digest", "hourly")
            } else {
                f
            }
        })
        .collect();
    let r = form(&ann_b, "/app/settings/notifications", &unticked).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let html = r.text().await.unwrap();
    assert!(
        html.contains("Not saved: “An Action is assigned to me” became mandatory in this workspace after this page was loaded"),
        "{html}"
    );
    assert!(
        html.contains("value=\"hourly\" checked"),
        "typed digest kept: {html}"
    );
    assert!(
        html.contains("value=\"action.assigned\" aria-label=\"An Action is assigned to me: in the dashboard\" checked disabled"),
        "{html}"
    );
    let same: Value = ann.get("/v1/notification-preferences", 200).await;
    assert_eq!(same["events"], p["events"]);
    assert_eq!(same["email_digest"], "daily");
    // Saved again from that page (the locked kind named mandatory): the
    // digest she typed is kept, her own choice for the kind too.
    let mut again = unticked.clone();
    again.push(("mandatory", "action.assigned"));
    let r = form(&ann_b, "/app/settings/notifications", &again).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let saved: Value = ann.get("/v1/notification-preferences", 200).await;
    assert_eq!(saved["email_digest"], "hourly");
    assert_eq!(
        saved["events"]["action.assigned"],
        p["events"]["action.assigned"]
    );
    let _: Value = ann
        .patch(
            "/v1/notification-preferences",
            json!({"email_digest": "daily"}),
            200,
        )
        .await;
    // Her own "no e-mail for assignments", sent back unchanged, switches
    // nothing off: saved, and kept as her choice.
    let r = form(&ann_b, "/app/settings/notifications", &fields).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    // So is the API's own answer sent straight back.
    let mut back = ann.get::<Value>("/v1/notification-preferences", 200).await;
    let events = back["events"].clone();
    back.as_object_mut()
        .unwrap()
        .retain(|k, _| k == "email" || k == "email_digest" || k == "events");
    back["events"] = events;
    let _: Value = ann.patch("/v1/notification-preferences", back, 200).await;
    // The page as rendered now names the locked kind instead of sending its
    // boxes: saved, her own choice for it left as it was.
    let html = ann_b.page("/app/settings/notifications").await;
    assert!(
        html.contains(r#"<input type="hidden" name="mandatory" value="action.assigned">"#),
        "{html}"
    );
    let mut now: Vec<(&str, &str)> = unticked.clone();
    now.push(("mandatory", "action.assigned"));
    now.push(("email", "on"));
    let r = form(&ann_b, "/app/settings/notifications", &now).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let p: Value = ann.get("/v1/notification-preferences", 200).await;
    assert_eq!(p["email"], true);
    assert_eq!(
        p["events"]["action.assigned"],
        json!({"in_app": true, "email": false}),
        "her choice, for when the policy lets go"
    );
    // The policy lets go: her "no e-mail" applies again.
    let _: Value = app
        .admin()
        .patch(
            "/v1/workspaces/notification-policy",
            json!({"mandatory": []}),
            200,
        )
        .await;
    let p: Value = ann.get("/v1/notification-preferences", 200).await;
    assert_eq!(p["mandatory"], json!([]));
    assert_eq!(
        p["events"]["action.assigned"],
        json!({"in_app": true, "email": false})
    );
}

/// The settings forms name the workspace they showed: after a switch to
/// another workspace (in another tab, say), an old form saves nothing into
/// the workspace now active, and says so.
#[tokio::test]
async fn a_settings_form_from_before_a_workspace_switch_saves_nothing() {
    let app = TestApp::spawn().await;
    let ann = app.member(Role::Reviewer);
    let ann_b = app.browser(ann.person()).await;
    let first = app.creds["workspace_id"].as_str().unwrap().to_owned();
    let html = ann_b.page("/app/settings/notifications").await;
    assert!(
        html.contains(&format!(
            r#"<input type="hidden" name="workspace_id" value="{first}">"#
        )),
        "{html}"
    );
    let side: Value = ann
        .post("/v1/workspaces", json!({"name": "Side"}), 201)
        .await;
    let side_id = side["data"]["id"].as_str().unwrap();
    let r = form(
        &ann_b,
        "/app/workspaces/select",
        &[("workspace_id", side_id)],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let before: Value = ann_b.get("/v1/notification-preferences", 200).await;
    assert_eq!(before["workspace_id"], side_id);
    // The old page's form: e-mail off, no digest, nothing ticked.
    let r = form(
        &ann_b,
        "/app/settings/notifications",
        &[("workspace_id", &first), ("email_digest", "off")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = r.text().await.unwrap();
    assert!(
        html.contains("Not saved: this page was for another workspace"),
        "{html}"
    );
    let after: Value = ann_b.get("/v1/notification-preferences", 200).await;
    assert_eq!(after, before, "nothing saved into Side");
    // The policy form likewise (she owns Side).
    let r = form(
        &ann_b,
        "/app/settings/notification-policy",
        &[
            ("workspace_id", &first),
            ("new_action", "none"),
            ("expiry_warning_minutes", "5"),
        ],
    )
    .await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let policy: Value = ann_b.get("/v1/workspaces/notification-policy", 200).await;
    assert_eq!(policy["new_action"], "all_reviewers");
    // The page shown then holds Side's stored policy, not what was typed
    // for the other workspace: saving it again changes nothing.
    let html = r.text().await.unwrap();
    assert!(html.contains(r#"value="all_reviewers" checked"#), "{html}");
    assert!(html.contains(r#"value="60""#), "{html}");
    // The form of the workspace now active saves.
    let r = form(
        &ann_b,
        "/app/settings/notifications",
        &[("workspace_id", side_id), ("email_digest", "off")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn the_policy_form_is_refused_for_a_reviewer_and_saves_for_an_admin_with_field_errors() {
    let app = TestApp::spawn().await;
    let reviewer = app.member(Role::Reviewer);
    let admin = app.member(Role::Admin);
    let rev_b = app.browser(reviewer.person()).await;
    let adm_b = app.browser(admin.person()).await;
    let before: Value = admin.get("/v1/workspaces/notification-policy", 200).await;

    // A reviewer reads the policy, without a form to send.
    let html = rev_b.page("/app/settings/notification-policy").await;
    assert!(
        html.contains("Only owners and admins change the policy"),
        "{html}"
    );
    assert!(!html.contains("Save policy"), "{html}");
    // The policy speaks of the members, not of the reader.
    assert!(html.contains("An Action is assigned to a member"), "{html}");
    assert!(!html.contains("assigned to me"), "{html}");
    assert!(
        html.contains("<fieldset class=\"plain\" disabled>"),
        "{html}"
    );
    let fields = [
        ("new_action", "assigned_only"),
        ("expiry_warning_minutes", "30"),
        ("mandatory", "action.assigned"),
    ];
    let r = form(&rev_b, "/app/settings/notification-policy", &fields).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(r.text().await.unwrap().contains("FORBIDDEN"));
    let now: Value = admin.get("/v1/workspaces/notification-policy", 200).await;
    assert_eq!(now, before, "nothing saved");

    // An admin: 2000 minutes is refused by the field, the form kept as entered.
    let html = adm_b.page("/app/settings/notification-policy").await;
    assert!(html.contains("Save policy"), "{html}");
    let bad = [
        ("new_action", "assigned_only"),
        ("expiry_warning_minutes", "2000"),
        ("mandatory", "action.mentioned"),
    ];
    let r = form(&adm_b, "/app/settings/notification-policy", &bad).await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = r.text().await.unwrap();
    assert!(
        html.contains("<p class=\"field-error\" id=\"expiry-minutes-error\">expiry_warning_minutes must be 0-1440 (0 turns the warning off); got 2000</p>"),
        "{html}"
    );
    assert!(html.contains("value=\"2000\""), "{html}");
    assert!(html.contains("aria-invalid=\"true\""), "{html}");
    assert!(html.contains("value=\"assigned_only\" checked"), "{html}");
    assert!(
        html.contains("value=\"action.mentioned\" checked"),
        "{html}"
    );
    // Not a number, or an unknown choice: refused in words.
    for (fields, says) in [
        (
            vec![("new_action", "none"), ("expiry_warning_minutes", "soon")],
            "enter a whole number of minutes",
        ),
        (
            vec![("new_action", "everyone"), ("expiry_warning_minutes", "5")],
            "choose who hears of a new Action",
        ),
        (
            vec![
                ("new_action", "none"),
                ("expiry_warning_minutes", "5"),
                ("mandatory", "action.everything"),
            ],
            "choose who hears of a new Action, and only the listed kinds",
        ),
    ] {
        let r = form(&adm_b, "/app/settings/notification-policy", &fields).await;
        assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY, "{fields:?}");
        let html = r.text().await.unwrap();
        assert!(html.contains(says), "{fields:?}: {html}");
    }
    let now: Value = admin.get("/v1/workspaces/notification-policy", 200).await;
    assert_eq!(now, before, "nothing saved");

    // Saved.
    let r = form(&adm_b, "/app/settings/notification-policy", &fields).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        r.headers()["location"],
        "/app/settings/notification-policy?done=saved"
    );
    let now: Value = admin.get("/v1/workspaces/notification-policy", 200).await;
    assert_eq!(now["new_action"], "assigned_only");
    assert_eq!(now["expiry_warning_minutes"], 30);
    assert_eq!(now["email_enabled"], false, "the box was not ticked");
    assert_eq!(now["mandatory"], json!(["action.assigned"]));
    let html = adm_b
        .page("/app/settings/notification-policy?done=saved")
        .await;
    assert!(html.contains("Notification policy saved."));
    // The account page links both settings pages.
    let account = adm_b.page("/app/account").await;
    assert!(account.contains("href=\"/app/settings/notifications\""));
    assert!(account.contains("href=\"/app/settings/notification-policy\""));
}

#[tokio::test]
async fn the_pages_send_a_signed_out_browser_to_sign_in() {
    let app = TestApp::spawn().await;
    let http = crate::helpers::browser_client();
    for path in [
        "/app/notifications",
        "/app/settings/notifications",
        "/app/settings/notification-policy",
    ] {
        let r = http
            .get(format!("{}{path}", app.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SEE_OTHER, "{path}");
        let to = r.headers()["location"].to_str().unwrap();
        assert!(to.starts_with("/app/signin?next="), "{path}: {to}");
    }
}

#[tokio::test]
async fn the_bell_counts_up_live_in_chromium_and_mark_all_read_brings_it_to_zero() {
    let app = TestApp::spawn().await;
    // One unread before the page opens.
    app.create_action(two_options("Renew the certificate"))
        .await;
    let link = app.signin_link("admin@example.com").await;
    let key = app.live_key();
    let env = [
        ("BASE_URL", app.base.as_str()),
        ("LINK", link.as_str()),
        ("SOURCE_KEY", key.as_str()),
    ];
    let r = crate::helpers::run_node(
        "browser-bell.mjs",
        &env,
        std::time::Duration::from_secs(90),
        Some(&app),
    )
    .await;
    assert_eq!(r["ok"], true, "{}", r["error"].as_str().unwrap_or_default());
    assert_eq!(r["csp_violations"], json!([]));
    assert_eq!(r["script_errors"], json!([]));
    assert_eq!(
        r["start"],
        json!({"count": "1", "label": "1 unread notification", "hidden": false})
    );
    assert_eq!(
        r["inbox"],
        json!({"count": "2", "label": "2 unread notifications", "hidden": false})
    );
    assert_eq!(r["inbox_same_document"], true, "no reload");
    assert_eq!(
        r["inbox_streams"], 1,
        "the inbox and the bell share one stream"
    );
    assert_eq!(r["on_sources"]["count"], "2");
    assert_eq!(r["sources"]["count"], "3");
    assert_eq!(r["sources"]["label"], "3 unread notifications");
    assert_eq!(r["sources_same_document"], true);
    assert_eq!(r["sources_streams"], 1);
    assert_eq!(r["listed_unread"], 3);
    assert_eq!(
        r["after"],
        json!({"count": "0", "label": "No unread notifications", "hidden": true})
    );
    assert_eq!(r["unread_after"], 0);
}
