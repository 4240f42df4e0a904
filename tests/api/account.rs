//! The account export holds everything about a person and no secret; deleting
//! an account kills every credential at once, erases e-mail and name, keeps
//! decisions and receipts byte-identical, and refuses the last owner of a
//! workspace with other members.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Actor, TestApp, python, two_options};
use hds::domain::access::Role;

/// `who` decides a new Action; returns it as decided.
async fn decided_by(app: &TestApp, who: &Actor, title: &str) -> Value {
    let a = app.create_action(two_options(title)).await;
    let id = a["id"].as_str().unwrap();
    let body = json!({"action_version": a["action_version"], "fingerprint": a["fingerprint"], "option_id": "approve", "reason": "fine"});
    let out: Value = who
        .post(&format!("/v1/actions/{id}/decision"), body, 200)
        .await;
    out["data"].clone()
}

fn no_secrets(text: &str) {
    for needle in [
        "svc_",
        "whsec_",
        "token_hash",
        "key_hash",
        "pkce",
        "binding_hash",
    ] {
        assert!(!text.contains(needle), "export contains {needle}: {text}");
    }
    // No 64-hex-character run (a SHA-256 in hex) anywhere.
    let mut run = 0;
    for ch in text.chars() {
        run = if ch.is_ascii_hexdigit() { run + 1 } else { 0 };
        assert!(run < 64, "export contains a 64-hex string: {text}");
    }
}

#[tokio::test]
async fn export_lists_what_the_person_did_and_no_secret() {
    let app = TestApp::spawn().await;
    let reviewer = app.member(Role::Reviewer);
    let a = decided_by(&app, &reviewer, "deploy").await;
    let id = a["id"].as_str().unwrap();
    let b = app.create_action(two_options("second")).await;
    let bid = b["id"].as_str().unwrap();
    let _: Value = reviewer
        .post(
            &format!("/v1/actions/{bid}/comments"),
            json!({"body": "looking"}),
            201,
        )
        .await;
    // Work, a control pressed, a question asked, a usage event.
    let _: Value = reviewer
        .post(&format!("/v1/actions/{bid}/claim"), json!({}), 200)
        .await;
    let c = app
        .create_action(json!({
            "title": "third",
            "options": [{"id": "approve", "label": "Approve"}, {"id": "reject", "label": "Reject"}],
            "callback_url": "https://hooks.example.com/hds",
            "context_request_mode": "callback",
            "controls": [{"key": "logs", "label": "Fetch logs", "kind": "callback"}]
        }))
        .await;
    let cid = c["id"].as_str().unwrap();
    let binding = json!({"action_version": c["action_version"], "fingerprint": c["fingerprint"]});
    let _: Value = reviewer
        .post(
            &format!("/v1/actions/{cid}/controls/logs/invoke"),
            binding,
            202,
        )
        .await;
    let _: Value = reviewer
        .post(
            &format!("/v1/actions/{cid}/context-requests"),
            json!({"question": "Which team?"}),
            201,
        )
        .await;
    let _: Value = reviewer
        .post(
            "/v1/analytics/events",
            json!({"name": "inbox.filter_changed", "properties": {"tab": "mine"}}),
            200,
        )
        .await;

    let r = reviewer
        .call(Method::GET, "/v1/account/export", None, &[])
        .await;
    r.ok(200);
    let who = &reviewer.person().id;
    assert_eq!(
        r.headers["content-disposition"],
        format!("attachment; filename=\"hds-account-{who}.json\"").as_str()
    );
    let e = &r.body;
    assert_eq!(e["object"], "account_export");
    assert_eq!(e["profile"]["id"], who.as_str());
    assert_eq!(e["profile"]["email"], reviewer.person().email.as_str());
    assert_eq!(e["memberships"][0]["role"], "reviewer");
    assert!(e["memberships"][0]["workspace_name"].is_string());
    let cred = &e["credentials"][0];
    assert_eq!(cred["kind"], "api");
    assert!(
        cred.get("token_hash").is_none() && cred.get("token").is_none(),
        "{cred}"
    );
    assert_eq!(e["decisions"][0]["action_id"], id);
    assert_eq!(e["decisions"][0]["option_id"], "approve");
    assert_eq!(e["decisions"][0]["receipt_id"], a["receipt"]["id"]);
    assert_eq!(e["comments"][0]["body"], "looking");
    assert_eq!(e["comments"][0]["action_id"], bid);
    assert_eq!(e["work"][0]["kind"], "claimed", "{}", e["work"]);
    assert_eq!(e["work"][0]["action_id"], bid);
    assert_eq!(e["control_requests"][0]["control_key"], "logs");
    assert_eq!(e["control_requests"][0]["action_id"], cid);
    assert_eq!(e["context_requests"][0]["question"], "Which team?");
    assert_eq!(e["context_requests"][0]["status"], "open");
    assert_eq!(e["usage_events"][0]["name"], "inbox.filter_changed");
    assert_eq!(e["usage_events"][0]["properties"], json!({"tab": "mine"}));
    for k in [
        "identities",
        "votes",
        "notifications",
        "notification_preferences",
        "invitations_sent",
    ] {
        assert!(e[k].is_array(), "{k}: {e}");
    }
    no_secrets(&e.to_string());

    // Without a credential: 401, as every user route.
    app.anonymous()
        .get_err("/v1/account/export", 401, "AUTH_REQUIRED")
        .await;
}

#[tokio::test]
async fn deleting_keeps_receipts_byte_identical_and_kills_the_credential_at_once() {
    let app = TestApp::spawn().await;
    let reviewer = app.member(Role::Reviewer);
    let who = reviewer.person().clone();
    let a = decided_by(&app, &reviewer, "ship it").await;
    let path = format!("/v1/actions/{}", a["id"].as_str().unwrap());
    let before: Value = app.admin().get(&path, 200).await;
    let jws_before = before["data"]["receipt"]["jws"]
        .as_str()
        .unwrap()
        .to_owned();

    // Bad input: nothing written, the credential still works.
    let wrong = reviewer
        .call(
            Method::DELETE,
            "/v1/account",
            Some(&json!({"confirm": "someone@example.com"})),
            &[],
        )
        .await;
    let err = wrong.error(422, "VALIDATION_ERROR");
    assert_eq!(err["details"]["errors"][0]["field"], "confirm");
    assert!(err["message"].as_str().unwrap().contains("e-mail"), "{err}");
    let extra = reviewer
        .call(
            Method::DELETE,
            "/v1/account",
            Some(&json!({"confirm": who.email, "force": true})),
            &[],
        )
        .await;
    extra.error(422, "VALIDATION_ERROR");
    let missing = reviewer
        .call(Method::DELETE, "/v1/account", Some(&json!({})), &[])
        .await;
    missing.error(422, "VALIDATION_ERROR");
    let _: Value = reviewer.get("/v1/account/export", 200).await;

    // Case does not matter.
    let done = reviewer
        .call(
            Method::DELETE,
            "/v1/account",
            Some(&json!({"confirm": who.email.to_uppercase()})),
            &[],
        )
        .await;
    assert_eq!(done.status, 204, "{:?}", done.body);
    reviewer
        .get_err("/v1/account/export", 401, "INVALID_API_KEY")
        .await;

    // Gone from the team; e-mail and name erased; the decision and its receipt unchanged.
    let members: Value = app.admin().get("/v1/workspaces/members", 200).await;
    assert!(!members.to_string().contains(&who.id), "{members}");
    let after: Value = app.admin().get(&path, 200).await;
    assert_eq!(
        after["data"]["receipt"]["jws"].as_str().unwrap(),
        jws_before
    );
    assert_eq!(after["data"]["resolution"], before["data"]["resolution"]);
    let jwks = app.get("/v1/receipts/keys", "unused").await;
    let verified = python(
        "verify_receipt.py",
        &json!({"jwks": jwks.body, "receipts": [jws_before]}),
    );
    let claims: Value = serde_json::from_str(verified.lines().next().unwrap()).unwrap();
    assert_eq!(claims["sub"], a["id"]);
    assert_eq!(
        app.count_rows(&format!(
            "users WHERE email = 'deleted-{}@invalid' AND name IS NULL",
            who.id
        )),
        1
    );
    assert_eq!(
        app.count_rows(&format!(
            "user_tokens WHERE user_id = '{}' AND revoked_at IS NULL",
            who.id
        )),
        0
    );
    assert_eq!(
        app.count_rows(&format!("memberships WHERE user_id = '{}'", who.id)),
        0
    );
    assert_eq!(
        app.count_rows(&format!(
            "action_comments WHERE author_user_id = '{}'",
            who.id
        )),
        0
    );
}

#[tokio::test]
async fn the_last_owner_of_a_team_is_refused_and_a_sole_member_may_go() {
    let app = TestApp::spawn().await;
    let _reviewer = app.member(Role::Reviewer);
    let admin = app.admin();
    let r = admin
        .call(
            Method::DELETE,
            "/v1/account",
            Some(&json!({"confirm": "admin@example.com"})),
            &[],
        )
        .await;
    let err = r.error(409, "LAST_OWNER");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("make another member owner"),
        "{err}"
    );
    assert!(err["details"]["workspace_id"].is_string());
    // Nothing written.
    let _: Value = admin.get("/v1/workspaces/members", 200).await;
    assert_eq!(app.count_rows("users WHERE email = 'admin@example.com'"), 1);

    // The only member of their own workspace: it stays, ownerless.
    let loner = app.outsider();
    deletes_own_account(&loner).await;
    assert_eq!(app.count_rows("workspaces WHERE name = 'Elsewhere'"), 1);
    loner
        .get_err("/v1/workspaces", 401, "INVALID_API_KEY")
        .await;

    // The operator gives it an owner again (`hds workspaces set-owner`).
    let ws: String = app
        .db()
        .query_row(
            "SELECT id FROM workspaces WHERE name = 'Elsewhere'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let dir = || hds::cli::DataDir {
        data_dir: app.data_dir(),
    };
    let set = |ws: &str, email: &str| {
        hds::cli::workspaces::set_owner(&hds::cli::workspaces::SetOwnerArgs {
            workspace_id: ws.to_owned(),
            email: email.to_owned(),
            dir: dir(),
        })
    };
    use hds::cli::workspaces::OwnerSet;
    assert_eq!(
        set(&ws, "heir@example.com").unwrap(),
        OwnerSet::Added { new_person: true }
    );
    assert_eq!(
        set(&ws, "heir@example.com").unwrap(),
        OwnerSet::AlreadyOwner
    );
    let listed =
        hds::cli::workspaces::list(&hds::cli::workspaces::ListArgs { dir: dir() }).unwrap();
    let line = listed.iter().find(|l| l.starts_with(&ws)).unwrap();
    assert!(
        line.contains("1 member\towners: heir@example.com"),
        "{line}"
    );
    // A member of another role is promoted; an unknown workspace or a bad
    // address is an error that says so.
    let admins_ws: String = app
        .db()
        .query_row(
            "SELECT workspace_id FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = 'admin@example.com'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        set(&admins_ws, &_reviewer.person().email).unwrap(),
        OwnerSet::Promoted {
            from: Role::Reviewer
        }
    );
    let theirs: Value = _reviewer.get("/v1/workspaces", 200).await;
    assert_eq!(theirs["data"][0]["role"], "owner", "{theirs}");
    let err = set("ws_nope", "heir@example.com").unwrap_err().to_string();
    assert!(
        err.contains("no workspace `ws_nope`; `hds workspaces list` shows their ids"),
        "{err}"
    );
    let err = set(&ws, "heir @example.com").unwrap_err().to_string();
    assert!(err.contains("not an e-mail address"), "{err}");
}

#[tokio::test]
async fn the_account_page_offers_the_export_and_deletes_with_confirmation() {
    let app = TestApp::spawn().await;
    let reviewer = app.member(Role::Reviewer);
    let browser = app.browser(reviewer.person()).await;
    let html = browser.page("/app/account").await;
    assert!(html.contains("href=\"/v1/account/export\""), "{html}");
    assert!(html.contains("action=\"/app/account/delete\""), "{html}");
    let export = browser
        .http()
        .get(browser.url("/v1/account/export"))
        .send()
        .await
        .unwrap();
    assert_eq!(export.status(), 200);

    let base = browser.url("");
    let origin = base.trim_end_matches('/');
    let email = reviewer.person().email.clone();
    // No tick: refused, nothing written.
    let r = browser
        .post_form(
            "/app/account/delete",
            Some(origin),
            &[("_csrf", browser.csrf()), ("confirm", &email)],
        )
        .await;
    assert_eq!(r.status(), 422);
    let page = r.text().await.unwrap();
    assert!(page.contains("cannot be undone"));
    // The address typed is kept, to tick the box and send again.
    assert!(
        page.contains(&format!(
            "name=\"confirm\" required autocomplete=\"off\" value=\"{email}\""
        )),
        "{page}"
    );
    // Wrong address: refused.
    let r = browser
        .post_form(
            "/app/account/delete",
            Some(origin),
            &[
                ("_csrf", browser.csrf()),
                ("confirm", "x@example.com"),
                ("understood", "yes"),
            ],
        )
        .await;
    assert_eq!(r.status(), 422);
    // No address: the form's words, not the API's.
    let r = browser
        .post_form(
            "/app/account/delete",
            Some(origin),
            &[
                ("_csrf", browser.csrf()),
                ("confirm", " "),
                ("understood", "yes"),
            ],
        )
        .await;
    assert_eq!(r.status(), 422);
    let page = r.text().await.unwrap();
    assert!(page.contains("type your own e-mail address"), "{page}");
    assert!(!page.contains("send {"), "{page}");
    // No CSRF token: refused.
    let r = browser
        .post_form(
            "/app/account/delete",
            Some(origin),
            &[("confirm", &email), ("understood", "yes")],
        )
        .await;
    assert_eq!(r.status(), 403);
    let _: Value = reviewer.get("/v1/account/export", 200).await;

    let r = browser
        .post_form(
            "/app/account/delete",
            Some(origin),
            &[
                ("_csrf", browser.csrf()),
                ("confirm", &email),
                ("understood", "yes"),
            ],
        )
        .await;
    assert_eq!(r.status(), 303);
    let to = r.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(to, "/app/signin?done=account_deleted");
    let page = reqwest::get(format!("{}{to}", app.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("Your account is deleted"), "{page}");
    // Both the browser session and the API token are dead.
    reviewer
        .get_err("/v1/account/export", 401, "INVALID_API_KEY")
        .await;
    let r = browser
        .http()
        .get(browser.url("/v1/auth/session"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
}

/// The API token's `last_used_at` in the export, read with a cookie session
/// (which records its own use, not the token's).
async fn token_last_used(browser: &Actor) -> Option<String> {
    let r = browser
        .call(Method::GET, "/v1/account/export", None, &[])
        .await;
    let creds = r.ok(200)["credentials"].as_array().unwrap().clone();
    let token = creds.iter().find(|c| c["kind"] == "api").unwrap();
    token["last_used_at"].as_str().map(str::to_owned)
}

/// "Last used" is recorded on a credential's first use (it used to wait until
/// the credential was older than the refresh interval, so a new token said
/// "—" after use), then refreshed at most every five minutes.
#[tokio::test]
async fn a_token_records_last_used_on_its_first_use_and_then_every_five_minutes() {
    let app = TestApp::spawn().await;
    let reviewer = app.member(Role::Reviewer);
    let browser = app.browser(reviewer.person()).await;
    let tokens_card = |page: String| page[page.find("id=\"tokens-h\"").unwrap()..].to_owned();
    let before = tokens_card(browser.page("/app/account").await);
    assert!(
        before.contains("<span class=\"muted\">—</span>"),
        "{before}"
    );
    assert_eq!(token_last_used(&browser).await, None);

    let _: Value = reviewer.get("/v1/me/actions", 200).await;

    let first = token_last_used(&browser)
        .await
        .expect("recorded on first use");
    let after = tokens_card(browser.page("/app/account").await);
    assert!(!after.contains('—'), "{after}");
    // Created and last used, both "just now".
    assert_eq!(after.matches(">just now</time>").count(), 2, "{after}");
    // The cookie session records its own first use too.
    let r = browser
        .call(Method::GET, "/v1/account/export", None, &[])
        .await;
    let creds = r.ok(200)["credentials"].as_array().unwrap().clone();
    let session = creds.iter().find(|c| c["kind"] == "session").unwrap();
    assert!(session["last_used_at"].is_string(), "{session}");

    // Within five minutes a use writes nothing; after them it does.
    let clock = app.state.services.clock.clone();
    clock.advance(time::Duration::minutes(2));
    let _: Value = reviewer.get("/v1/me/actions", 200).await;
    assert_eq!(
        token_last_used(&browser).await.as_deref(),
        Some(first.as_str())
    );
    clock.advance(time::Duration::minutes(4));
    let _: Value = reviewer.get("/v1/me/actions", 200).await;
    let later = token_last_used(&browser).await.unwrap();
    assert!(later > first, "{later} after {first}");
}

/// The text of the element with `id` in a page, up to its first tag.
fn text_of<'a>(html: &'a str, id: &str) -> Option<&'a str> {
    let start = html.find(&format!("id=\"{id}\">"))? + id.len() + 6;
    html[start..].split('<').next()
}

/// How many API tokens `user_id` holds, read from the database.
fn api_tokens_of(app: &TestApp, user_id: &str) -> i64 {
    let conn = rusqlite::Connection::open_with_flags(
        app.data_dir().join("hds.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let sql = "SELECT count(*) FROM user_tokens WHERE user_id = ?1 AND kind = 'api'";
    conn.query_row(sql, [user_id], |r| r.get(0)).unwrap()
}

/// POST-redirect-GET on the Account page: creating an API token redirects to
/// the page, which shows the token once (and it works); a reload shows a
/// notice, no token, and creates none. A refused form writes nothing.
#[tokio::test]
async fn the_account_page_shows_a_new_api_token_once_and_a_reload_creates_nothing() {
    let app = TestApp::spawn().await;
    let reviewer = app.member(Role::Reviewer);
    let me = reviewer.person().id.clone();
    let browser = app.browser(reviewer.person()).await;
    let origin = app.base.as_str();
    let before = api_tokens_of(&app, &me);

    let r = browser
        .post_form(
            "/app/account/tokens",
            Some(origin),
            &[
                ("_csrf", browser.csrf()),
                ("name", "laptop CLI"),
                ("expires_in_days", "30"),
            ],
        )
        .await;
    assert_eq!(r.status(), 303);
    let to = r.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(to, "/app/account?done=created");
    assert_eq!(api_tokens_of(&app, &me), before + 1);

    let shown = browser.page(&to).await;
    assert!(shown.contains("API token “laptop CLI” created"), "{shown}");
    let token = text_of(&shown, "new-token-value")
        .expect("the new token")
        .to_owned();
    assert!(token.starts_with("svc_usr_"), "{token}");
    let s: Value = app.bearer(&token).get("/v1/auth/session", 200).await;
    assert_eq!(s["data"]["kind"], "api", "{s}");
    assert_eq!(s["data"]["name"], "laptop CLI", "{s}");
    assert_eq!(s["data"]["user"]["id"], me.as_str(), "{s}");

    let again = browser.page(&to).await;
    assert!(!again.contains(&token), "shown once: {again}");
    assert!(!again.contains("new-token-value"), "{again}");
    assert!(again.contains("id=\"shown-once\""), "{again}");
    assert_eq!(api_tokens_of(&app, &me), before + 1, "the reload made none");
    // The plain page says nothing of it.
    assert!(!browser.page("/app/account").await.contains("shown-once"));

    // A refused form answers on the page itself and writes nothing.
    let r = browser
        .post_form(
            "/app/account/tokens",
            Some(origin),
            &[
                ("_csrf", browser.csrf()),
                ("name", "too long"),
                ("expires_in_days", "soon"),
            ],
        )
        .await;
    assert_eq!(r.status(), 422);
    let page = r.text().await.unwrap();
    assert!(
        page.contains("whole number of days between 1 and 366"),
        "{page}"
    );
    // What was typed is kept, to be corrected.
    assert!(page.contains("value=\"too long\""), "{page}");
    assert!(page.contains("value=\"soon\""), "{page}");
    assert_eq!(api_tokens_of(&app, &me), before + 1);
    // A negative number is a whole number: the range is what is wrong.
    for days in ["-1", "0", "367"] {
        let r = browser
            .post_form(
                "/app/account/tokens",
                Some(origin),
                &[
                    ("_csrf", browser.csrf()),
                    ("name", "cli"),
                    ("expires_in_days", days),
                ],
            )
            .await;
        assert_eq!(r.status(), 422, "{days}");
        let page = r.text().await.unwrap();
        assert!(page.contains("between 1 and 366"), "{days}: {page}");
    }
    assert_eq!(api_tokens_of(&app, &me), before + 1);
    // A name is one line: no line break, no direction override.
    for name in ["line1\nline2", "evil \u{202e}nimda"] {
        let r = browser
            .post_form(
                "/app/account/tokens",
                Some(origin),
                &[
                    ("_csrf", browser.csrf()),
                    ("name", name),
                    ("expires_in_days", ""),
                ],
            )
            .await;
        assert_eq!(r.status(), 422, "{name:?}");
        assert!(r.text().await.unwrap().contains("one line"), "{name:?}");
    }
    // A name of only invisible characters names nothing.
    let r = browser
        .post_form(
            "/app/account/tokens",
            Some(origin),
            &[
                ("_csrf", browser.csrf()),
                ("name", "\u{200b}\u{3164}"),
                ("expires_in_days", ""),
            ],
        )
        .await;
    assert_eq!(r.status(), 422);
    assert!(r.text().await.unwrap().contains("give the token a name"));
    assert_eq!(api_tokens_of(&app, &me), before + 1);
}

/// A deleted account's address is gone from what others were told: the
/// notification "x@… commented on …" now names a deleted account.
#[tokio::test]
async fn a_deleted_account_leaves_no_address_in_others_notifications() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let leaver = app.member(Role::Reviewer);
    let email = leaver.person().email.clone();
    let a = app.create_action(two_options("Rotate the keys")).await;
    let path = format!("/v1/actions/{}/comments", a["id"].as_str().unwrap());
    let _: Value = admin
        .post(&path, json!({"body": "who takes this?"}), 201)
        .await;
    let _: Value = leaver
        .post(&path, json!({"body": "done on my side"}), 201)
        .await;
    let before: Value = admin.get("/v1/notifications", 200).await;
    assert!(before.to_string().contains(&email), "{before}");
    deletes_own_account(&leaver).await;
    let after: Value = admin.get("/v1/notifications", 200).await;
    let text = after.to_string();
    assert!(!text.contains(&email), "{text}");
    assert!(
        text.contains("a deleted account commented on Rotate the keys"),
        "{text}"
    );
}

/// Leaving a workspace (here: being removed) before deleting the account
/// changes nothing: that workspace's notices, run timelines and closed
/// Actions lose the address too, and a later account with the same address
/// inherits nothing there.
#[tokio::test]
async fn a_deleted_account_is_scrubbed_from_workspaces_it_left_before() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let email = "kim@example.com";
    let kim = app.member_as(Role::Admin, email);
    let kim_id = kim.person().id.clone();
    // A closed Action assigned to her by address; a mention; a run she cancelled.
    let mut body = two_options("Rotate the keys");
    body["assignee_email"] = json!(email);
    let a: Value = app.source().post("/v1/actions", body, 201).await;
    let id = a["data"]["id"].as_str().unwrap().to_owned();
    let decision = json!({"action_version": 1, "fingerprint": a["data"]["fingerprint"], "option_id": "approve"});
    let _: Value = kim
        .post(&format!("/v1/actions/{id}/decision"), decision, 200)
        .await;
    let _: Value = kim
        .post(
            &format!("/v1/actions/{id}/comments"),
            json!({"body": "@admin@example.com have a look"}),
            201,
        )
        .await;
    let run: Value = app
        .source()
        .post("/v1/runs", json!({"name": "nightly import"}), 201)
        .await;
    let rid = run["data"]["id"].as_str().unwrap().to_owned();
    let _: Value = kim
        .post(
            &format!("/v1/runs/{rid}/cancel"),
            json!({"reason": "stuck"}),
            200,
        )
        .await;
    let seen: Value = admin.get("/v1/notifications", 200).await;
    assert!(seen.to_string().contains(email), "{seen}");
    // Removed, then she deletes her account.
    let _: Value = admin
        .delete(&format!("/v1/workspaces/members/{kim_id}"), 204)
        .await;
    deletes_own_account(&kim).await;
    let seen: Value = admin.get("/v1/notifications", 200).await;
    assert!(!seen.to_string().contains(email), "{seen}");
    assert!(
        seen.to_string().contains("a deleted account mentioned you"),
        "{seen}"
    );
    let got: Value = admin.get(&format!("/v1/runs/{rid}"), 200).await;
    assert_eq!(
        got["data"]["error"],
        "Cancelled by a deleted account: stuck"
    );
    let got: Value = app.source().get(&format!("/v1/actions/{id}"), 200).await;
    assert_eq!(got["data"]["assignee"]["user_id"], kim_id.as_str(), "{got}");
    assert!(!got.to_string().contains(email), "{got}");
    let newcomer = app.member_as(Role::Reviewer, email);
    let mine: Value = newcomer
        .get("/v1/me/actions?scope=mine&status=all", 200)
        .await;
    assert_eq!(mine["data"], json!([]), "{mine}");
    assert_eq!(
        app.count_rows("former_members"),
        0,
        "forgotten with the account"
    );
}

/// A run an admin cancelled says who on its timeline; once that admin's
/// account is deleted, it says "a deleted account".
#[tokio::test]
async fn a_deleted_account_leaves_no_address_in_run_timelines() {
    let app = TestApp::spawn().await;
    let leaver = app.member(Role::Admin);
    let email = leaver.person().email.clone();
    let run: Value = app
        .source()
        .post("/v1/runs", json!({"name": "nightly"}), 201)
        .await;
    let rid = run["data"]["id"].as_str().unwrap().to_owned();
    let _: Value = leaver
        .post(
            &format!("/v1/runs/{rid}/cancel"),
            json!({"reason": "stuck"}),
            200,
        )
        .await;
    let browser = app.browser(app.admin().person()).await;
    let page = browser.page(&format!("/app/runs/{rid}")).await;
    assert!(
        page.contains(&format!("Cancelled by {email}: stuck")),
        "{page}"
    );
    deletes_own_account(&leaver).await;
    let page = browser.page(&format!("/app/runs/{rid}")).await;
    assert!(!page.contains(&email), "{page}");
    assert!(
        page.contains("Cancelled by a deleted account: stuck"),
        "{page}"
    );
    // The run's `error` says the same, without the address.
    let got: Value = app.admin().get(&format!("/v1/runs/{rid}"), 200).await;
    assert_eq!(
        got["data"]["error"],
        "Cancelled by a deleted account: stuck"
    );
}

/// The Actions assigned to a deleted account (by address or by id) keep
/// pointing at that account, not at its address: they show the placeholder
/// through the API and "a deleted account" in the dashboard, and a new
/// account with the same address inherits none of them.
#[tokio::test]
async fn a_deleted_accounts_assignments_pass_to_nobody_with_its_address() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    // One Action names the person's address (in another case), one their id.
    let email = "later.leaver@example.com";
    let leaver = app.member_as(Role::Reviewer, email);
    let by_address =
        assigned_and_decided(&app, json!({"assignee_email": email.to_uppercase()})).await;
    let uid = leaver.person().id.clone();
    let by_id = assigned_and_decided(&app, json!({"assignee_user_id": uid})).await;
    let ids = [by_address, by_id];
    let mine: Value = leaver
        .get("/v1/me/actions?scope=mine&status=all", 200)
        .await;
    assert_eq!(mine["data"].as_array().unwrap().len(), 2, "{mine}");
    let fingerprints: Vec<Value> = {
        let mut out = Vec::new();
        for id in &ids {
            let a: Value = app.source().get(&format!("/v1/actions/{id}"), 200).await;
            out.push(a["data"]["fingerprint"].clone());
        }
        out
    };

    deletes_own_account(&leaver).await;
    let placeholder = format!("deleted-{uid}@invalid");
    for (id, fingerprint) in ids.iter().zip(&fingerprints) {
        let a: Value = app.source().get(&format!("/v1/actions/{id}"), 200).await;
        let assignee = &a["data"]["assignee"];
        assert_eq!(assignee["user_id"], uid.as_str(), "{a}");
        // The placeholder, or nothing where the address came from the account.
        if let Some(shown) = assignee["email"].as_str() {
            assert!(shown.eq_ignore_ascii_case(&placeholder), "{a}");
        }
        assert!(
            !a.to_string().to_lowercase().contains(&email.to_lowercase()),
            "{a}"
        );
        assert_eq!(&a["data"]["fingerprint"], fingerprint, "content unchanged");
    }
    let page = app
        .browser(admin.person())
        .await
        .page(&format!("/app/actions/{}", ids[0]))
        .await;
    assert!(page.contains("a deleted account"), "{page}");
    assert!(!page.contains("deleted-usr_"), "{page}");
    // So does the inbox's row.
    let inbox = app
        .browser(admin.person())
        .await
        .page("/app?status=resolved")
        .await;
    assert!(
        inbox.contains("<span>Assigned to a deleted account</span>"),
        "{inbox}"
    );
    assert!(!inbox.contains("deleted-usr_"), "{inbox}");

    // Someone later given the same address starts with nothing assigned.
    let newcomer = app.member_as(Role::Reviewer, email);
    assert_ne!(newcomer.person().id, uid);
    let mine: Value = newcomer
        .get("/v1/me/actions?scope=mine&status=all", 200)
        .await;
    assert_eq!(mine["data"], json!([]), "{mine}");
}

/// A new Action with these assignee fields, decided by the owner: its id.
async fn assigned_and_decided(app: &TestApp, assignee: Value) -> String {
    let mut body = two_options("Rotate the keys");
    body.as_object_mut()
        .unwrap()
        .extend(assignee.as_object().unwrap().clone());
    let a: Value = app.source().post("/v1/actions", body, 201).await;
    let a = &a["data"];
    let id = a["id"].as_str().unwrap().to_owned();
    let decision = json!({"action_version": a["action_version"], "fingerprint": a["fingerprint"], "option_id": "approve"});
    let _: Value = app
        .admin()
        .post(&format!("/v1/actions/{id}/decision"), decision, 200)
        .await;
    id
}

/// `DELETE /v1/account` confirmed with the person's own address: 204.
async fn deletes_own_account(who: &Actor) {
    let email = who.person().email.clone();
    let r = who
        .call(
            Method::DELETE,
            "/v1/account",
            Some(&json!({"confirm": email})),
            &[],
        )
        .await;
    assert_eq!(r.status, 204, "{:?}", r.body);
}

/// However many sessions ended (each app sign-in makes one), the account
/// page lists every working API token and the working sessions, and "Sign
/// out everywhere else" ends every other session at once, tokens kept.
#[tokio::test]
async fn the_account_page_lists_what_works_and_signs_out_everywhere_else() {
    let app = TestApp::spawn().await;
    let reviewer = app.member(Role::Reviewer);
    let uid = reviewer.person().id.clone();
    let browser = app.browser(reviewer.person()).await;
    let other = app.browser(reviewer.person()).await;
    // 250 sessions that ended (revoked, expired, idle), all newer than the
    // API token the person made first.
    {
        let c = hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap();
        let (_, token_id) = hds::store::users::issue_token(
            &c,
            &uid,
            "deploy bot",
            None,
            "2020-01-01T00:00:00.000Z",
        )
        .unwrap();
        assert!(token_id.starts_with("tok_"), "{token_id}");
        let now = app.now();
        for i in 0..250 {
            let (_, id) = hds::store::users::issue_token(&c, &uid, "app", None, &now).unwrap();
            let end = match i % 3 {
                0 => {
                    "UPDATE user_tokens SET kind = 'session', revoked_at = created_at WHERE id = ?1"
                }
                1 => {
                    "UPDATE user_tokens SET kind = 'session', expires_at = '2021-01-01T00:00:00.000Z' WHERE id = ?1"
                }
                _ => {
                    "UPDATE user_tokens SET kind = 'session', last_used_at = '2021-01-01T00:00:00.000Z', created_at = '2021-01-01T00:00:00.000Z' WHERE id = ?1"
                }
            };
            c.execute(end, [&id]).unwrap();
        }
    }
    let html = browser.page("/app/account").await;
    assert!(
        html.contains("deploy bot"),
        "the old token is listed: {html}"
    );
    assert_eq!(
        html.matches("/revoke\"").count(),
        2 + 1 + 1,
        "two sessions, the test's token, the bot: {html}"
    );
    assert!(html.contains("id=\"end-other-sessions\""), "{html}");
    // Both tables become cards on a phone, each value under its name.
    assert_eq!(
        html.matches("<table class=\"list stack\">").count(),
        2,
        "{html}"
    );
    assert!(html.contains("<td data-label=\"Last used\">"), "{html}");

    let base = browser.url("");
    let origin = base.trim_end_matches('/');
    let r = browser
        .post_form("/app/account/sessions/end-others", Some(origin), &[])
        .await;
    assert_eq!(r.status(), 403, "needs the form token");
    // Asked first (nothing ended yet), then done.
    let r = browser
        .post_form(
            "/app/account/sessions/end-others",
            Some(origin),
            &[("_csrf", browser.csrf())],
        )
        .await;
    assert_eq!(r.status(), 200);
    let asked = r.text().await.unwrap();
    assert!(asked.contains("Sign out everywhere else?"), "{asked}");
    assert!(asked.contains(r#"name="confirmed" value="yes""#), "{asked}");
    let r = other
        .http()
        .get(other.url("/v1/auth/session"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "not signed out by the question");
    let r = browser
        .post_form(
            "/app/account/sessions/end-others",
            Some(origin),
            &[("_csrf", browser.csrf()), ("confirmed", "yes")],
        )
        .await;
    assert_eq!(r.status(), 303);
    let html = browser.page("/app/account?done=signed_out_elsewhere").await;
    assert!(html.contains("Signed out everywhere else"), "{html}");
    assert!(
        !html.contains("id=\"end-other-sessions\""),
        "one session left: {html}"
    );
    // The other browser is signed out; the API token still works.
    let r = other
        .http()
        .get(other.url("/v1/auth/session"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let _: Value = reviewer.get("/v1/account/export", 200).await;

    // Revoking a token asks first, naming it; confirmed, the token stops.
    let (bot_secret, bot_id) = {
        let c = hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap();
        hds::store::users::issue_token(&c, &uid, "ci runner", None, &app.now()).unwrap()
    };
    let revoke = format!("/app/account/credentials/{bot_id}/revoke");
    let r = browser
        .post_form(&revoke, Some(origin), &[("_csrf", browser.csrf())])
        .await;
    assert_eq!(r.status(), 200);
    let asked = r.text().await.unwrap();
    assert!(asked.contains("Revoke the token “ci runner”?"), "{asked}");
    let works = |status: u16| {
        let (http, url, secret) = (
            browser.http().clone(),
            browser.url("/v1/account"),
            bot_secret.clone(),
        );
        async move {
            let r = http.get(url).bearer_auth(secret).send().await.unwrap();
            assert_eq!(r.status(), status);
        }
    };
    works(200).await;
    let r = browser
        .post_form(
            &revoke,
            Some(origin),
            &[("_csrf", browser.csrf()), ("confirmed", "yes")],
        )
        .await;
    assert_eq!(r.status(), 303);
    works(401).await;

    // Another person's token: no question naming it, the plain refusal,
    // and it keeps working.
    let other_person = app.member(Role::Viewer);
    let (theirs, their_id) = {
        let c = hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap();
        let oid = other_person.person().id.clone();
        hds::store::users::issue_token(&c, &oid, "their secret bot", None, &app.now()).unwrap()
    };
    let r = browser
        .post_form(
            &format!("/app/account/credentials/{their_id}/revoke"),
            Some(origin),
            &[("_csrf", browser.csrf())],
        )
        .await;
    assert_eq!(r.status(), 404);
    let html = r.text().await.unwrap();
    assert!(!html.contains("their secret bot"), "{html}");
    let r = browser
        .http()
        .get(browser.url("/v1/account"))
        .bearer_auth(&theirs)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

/// A person names themselves (`PATCH /v1/account`, or the Account page):
/// others then see the name beside their address; null or an empty form
/// field clears it; a bad name is refused naming the field and changes
/// nothing.
#[tokio::test]
async fn a_person_sets_and_clears_their_name() {
    let app = TestApp::spawn().await;
    let ann = app.member(Role::Reviewer);
    let me: Value = ann.get("/v1/account", 200).await;
    assert_eq!(me["object"], "account");
    assert_eq!(me["id"], ann.person().id.as_str());
    assert_eq!(me["email"], ann.person().email.as_str());
    assert_eq!(me["name"], Value::Null);

    let me: Value = ann
        .patch("/v1/account", json!({"name": "  Ann Lee "}), 200)
        .await;
    assert_eq!(me["name"], "Ann Lee");
    // Unchanged by an empty body; refused with the field, changing nothing.
    let me: Value = ann.patch("/v1/account", json!({}), 200).await;
    assert_eq!(me["name"], "Ann Lee");
    for bad in [
        json!({"name": ""}),
        json!({"name": "x".repeat(101)}),
        json!({"name": "a\nb"}),
        json!({"name": 7}),
    ] {
        let e = ann
            .patch_err("/v1/account", bad.clone(), 422, "VALIDATION_ERROR")
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], "name", "{bad}: {e}");
    }
    let e = ann
        .patch_err("/v1/account", json!({"nick": "a"}), 422, "VALIDATION_ERROR")
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "nick", "{e}");
    assert_eq!(
        ann.get::<Value>("/v1/account", 200).await["name"],
        "Ann Lee"
    );

    // Others see it: a comment's author in the Action's history and page.
    let a = app.create_action(two_options("Rotate the keys")).await;
    let id = a["id"].as_str().unwrap();
    let _: Value = ann
        .post(
            &format!("/v1/actions/{id}/comments"),
            json!({"body": "on it"}),
            201,
        )
        .await;
    let page = app
        .browser(app.admin().person())
        .await
        .page(&format!("/app/actions/{id}"))
        .await;
    // Never the chosen name without the address it belongs to.
    let shown = format!("Ann Lee &#60;{}&#62;", ann.person().email);
    assert!(page.contains(&shown), "{page}");

    // null clears it.
    let me: Value = ann.patch("/v1/account", json!({"name": null}), 200).await;
    assert_eq!(me["name"], Value::Null);

    // The Account page: set, refused (the field marked), cleared.
    let browser = app.browser(ann.person()).await;
    let r = browser
        .post_form(
            "/app/account/name",
            Some(&app.base),
            &[("_csrf", browser.csrf()), ("display_name", "Ann B. Lee")],
        )
        .await;
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/app/account?done=named");
    let html = browser.page("/app/account?done=named").await;
    assert!(html.contains(r#"value="Ann B. Lee""#), "{html}");
    let long = "y".repeat(101);
    let r = browser
        .post_form(
            "/app/account/name",
            Some(&app.base),
            &[("_csrf", browser.csrf()), ("display_name", &long)],
        )
        .await;
    assert_eq!(r.status(), 422);
    let html = r.text().await.unwrap();
    let typed = format!(
        r#"name="display_name" maxlength="100" autocomplete="name" value="{long}" aria-invalid="true""#
    );
    assert!(html.contains(&typed), "what was typed, marked: {html}");
    let r = browser
        .post_form(
            "/app/account/name",
            Some(&app.base),
            &[("_csrf", browser.csrf()), ("display_name", " ")],
        )
        .await;
    assert_eq!(r.headers()["location"], "/app/account?done=unnamed");
    assert_eq!(
        ann.get::<Value>("/v1/account", 200).await["name"],
        Value::Null
    );
    // A cookie write without its token is refused.
    let r = browser
        .post_form(
            "/app/account/name",
            Some(&app.base),
            &[("display_name", "Mallory")],
        )
        .await;
    assert_eq!(r.status(), 403);
    assert_eq!(
        ann.get::<Value>("/v1/account", 200).await["name"],
        Value::Null
    );
}

/// A restricted Action lists a reviewer by address; their account is
/// deleted and a new one later gets the same address (recreated, or handed
/// to someone new). The new account is not the person listed: it does not
/// see, list, search, vote on or decide that Action, and is not told of it.
/// An Action created after the new account, listing the address, is theirs.
#[tokio::test]
async fn a_later_account_with_a_deleted_accounts_address_inherits_no_listing() {
    let app = TestApp::spawn().await;
    let email = "ephemeral@example.com";
    let first = app.member_as(Role::Reviewer, email);
    let restricted = |title: &str, approval: bool| {
        let mut b = two_options(title);
        b["visibility"] = json!("restricted");
        b["reviewer_emails"] = json!([email]);
        if approval {
            b["approval_policy"] = json!({"required_approvals": 1});
        }
        b
    };
    let old = app
        .create_action(restricted("Secret yak merger", false))
        .await;
    let old_vote = app.create_action(restricted("Secret yak vote", true)).await;
    let old_id = old["id"].as_str().unwrap();
    let _: Value = first.get(&format!("/v1/actions/{old_id}"), 200).await;
    deletes_own_account(&first).await;

    let second = app.member_as(Role::Reviewer, email);
    assert_ne!(second.person().id, first.person().id);
    for a in [&old, &old_vote] {
        let id = a["id"].as_str().unwrap();
        second
            .get_err(&format!("/v1/actions/{id}"), 404, "ACTION_NOT_FOUND")
            .await;
    }
    let decision = json!({"action_version": old["action_version"], "fingerprint": old["fingerprint"], "option_id": "approve"});
    second
        .post_err(
            &format!("/v1/actions/{old_id}/decision"),
            decision,
            404,
            "ACTION_NOT_FOUND",
        )
        .await;
    let vote_id = old_vote["id"].as_str().unwrap();
    let vote = json!({"action_version": old_vote["action_version"], "fingerprint": old_vote["fingerprint"], "vote": "approve"});
    second
        .post_err(
            &format!("/v1/actions/{vote_id}/votes"),
            vote,
            404,
            "ACTION_NOT_FOUND",
        )
        .await;
    for query in ["status=all", "search=yak&status=all", "scope=needs_my_vote"] {
        let listed: Value = second.get(&format!("/v1/me/actions?{query}"), 200).await;
        assert_eq!(listed["data"], json!([]), "{query}: {listed}");
    }
    let page = app.browser(second.person()).await.page("/app?q=yak").await;
    assert!(!page.contains("Secret yak"), "{page}");
    let told: Value = second.get("/v1/notifications", 200).await;
    assert!(
        !told.to_string().contains("Secret yak"),
        "notified of another account's listing: {told}"
    );

    // Listed after the new account was made: theirs, by the same address.
    let new = app.create_action(restricted("New yak plan", false)).await;
    let new_id = new["id"].as_str().unwrap();
    let _: Value = second.get(&format!("/v1/actions/{new_id}"), 200).await;
    let listed: Value = second
        .get("/v1/me/actions?search=yak&status=all", 200)
        .await;
    let ids: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [new_id]);
}

/// The create lists an address only for an account as old as the Action,
/// as reading it does: an account whose creation time is later than the
/// create's (made while the create waited, or stamped before the clock
/// stepped back, as here) is refused by name, not listed without access.
#[tokio::test]
async fn a_create_refuses_to_list_an_account_newer_than_itself() {
    let app = TestApp::spawn().await;
    let email = "newcomer@example.com";
    let _ = app.member_as(Role::Reviewer, email);
    app.db()
        .execute(
            "UPDATE users SET created_at = '2999-01-01T00:00:00.000Z' WHERE email = ?1",
            [email],
        )
        .unwrap();
    let mut body = two_options("Listed too soon");
    body["visibility"] = json!("restricted");
    body["reviewer_emails"] = json!(["admin@example.com", email]);
    let r = app.post("/v1/actions", &app.live_key(), body).await;
    let e = r.error(422, "VALIDATION_ERROR");
    assert_eq!(
        e["details"]["errors"][0]["field"], "reviewer_emails[1]",
        "{e}"
    );
    assert!(
        e["message"].as_str().unwrap().contains("send it again"),
        "{e}"
    );
    assert_eq!(app.count_rows("actions"), 0);
}
