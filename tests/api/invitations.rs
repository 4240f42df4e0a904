//! Invitations (guide: "Invitations"): who may invite whom, accepting once
//! (also under concurrent accepts), refusals that write nothing, workspace
//! isolation, the link's page in the dashboard, and the signed-out path in
//! real Chromium.

use std::time::Duration;

use hds::domain::access::Role;
use reqwest::header::{LOCATION, SET_COOKIE};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{Actor, Person, TestApp, browser_client, python, run_node, two_options};

const INVITATIONS: &str = "/v1/workspaces/invitations";
const ACCEPT: &str = "/v1/workspace-invitations/accept";

/// A person with a verified e-mail and a token who belongs to no workspace
/// yet, as a sign-in admitted by an invitation leaves them.
fn newcomer(app: &TestApp, email: &str) -> Actor {
    let conn = hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap();
    let user = hds::store::users::create(&conn, email, None, &app.now()).unwrap();
    let (token, _) =
        hds::store::users::issue_token(&conn, &user.id, "test", None, &app.now()).unwrap();
    let mut actor = app.bearer(&token);
    actor.person = Some(Person {
        id: user.id,
        email: email.to_owned(),
    });
    actor
}

/// Invites `email` as `role` with `by`; returns the invitation and its token.
async fn invite(by: &Actor, email: &str, role: &str) -> (Value, String) {
    let r: Value = by
        .post(INVITATIONS, json!({ "email": email, "role": role }), 201)
        .await;
    let inv = r["data"].clone();
    let url = inv["accept_url"].as_str().unwrap();
    let token = url.rsplit('/').next().unwrap().to_owned();
    (inv, token)
}

fn count(app: &TestApp, sql: &str) -> i64 {
    let conn = rusqlite::Connection::open_with_flags(
        app.data_dir().join("hds.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

async fn listed(by: &Actor) -> Vec<Value> {
    let r: Value = by.get(INVITATIONS, 200).await;
    assert_eq!(r["object"], "list");
    r["data"].as_array().unwrap().clone()
}

fn status_of(list: &[Value], id: &Value) -> String {
    list.iter().find(|i| &i["id"] == id).unwrap()["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn an_admin_invites_a_new_person_who_accepts_and_then_sees_the_workspace_actions() {
    let app = TestApp::spawn().await;
    let admin = app.member(Role::Admin);
    let action = app.create_action(two_options("Ship 2.4")).await;
    let (inv, token) = invite(&admin, "Ana@Example.com", "reviewer").await;

    assert!(inv["id"].as_str().unwrap().starts_with("inv_"), "{inv}");
    assert_eq!(inv["email"], "Ana@Example.com");
    assert_eq!(inv["role"], "reviewer");
    assert_eq!(inv["status"], "pending");
    assert_eq!(inv["invited_by"], admin.person().id.as_str());
    let created = hds::domain::time::parse(inv["created_at"].as_str().unwrap()).unwrap();
    let expires = hds::domain::time::parse(inv["expires_at"].as_str().unwrap()).unwrap();
    assert_eq!(expires - created, time::Duration::days(7));
    let url = inv["accept_url"].as_str().unwrap();
    assert_eq!(url, format!("{}/app/invitations/{token}", app.base));
    // Only the hash is kept; the list never shows the link again.
    assert_eq!(
        count(
            &app,
            &format!("SELECT count(*) FROM invitations WHERE token_hash = '{token}'")
        ),
        0
    );
    let list = listed(&admin).await;
    assert_eq!(list.len(), 1);
    assert!(list[0].get("accept_url").is_none(), "{}", list[0]);

    // The invited person: a different case of the same address.
    let ana = newcomer(&app, "ana@example.com");
    let joined: Value = ana.post(ACCEPT, json!({ "token": token }), 200).await;
    let ws = &joined["data"];
    assert_eq!(ws["role"], "reviewer");
    assert_eq!(ws["kind"], "team");
    assert_eq!(ws["active"], true);
    assert!(ws["id"].as_str().unwrap().starts_with("ws_"));
    assert!(ws["name"].is_string() && ws["created_at"].is_string());

    let inbox: Value = ana.get("/v1/me/actions", 200).await;
    assert_eq!(inbox["data"][0]["id"], action["id"], "{inbox}");
    let one: Value = ana
        .get(
            &format!("/v1/actions/{}", action["id"].as_str().unwrap()),
            200,
        )
        .await;
    assert_eq!(one["data"]["title"], "Ship 2.4");
    assert_eq!(status_of(&listed(&admin).await, &inv["id"]), "accepted");

    // Used: the token works once.
    ana.post_err(
        ACCEPT,
        json!({ "token": token }),
        404,
        "INVITATION_NOT_FOUND",
    )
    .await;
    // Accepted: revoking says the person is a member now.
    let path = format!("{INVITATIONS}/{}", inv["id"].as_str().unwrap());
    let r = admin.call(Method::DELETE, &path, None, &[]).await;
    r.error(409, "ALREADY_MEMBER");
}

#[tokio::test]
async fn a_mismatched_email_is_refused_and_nothing_is_written() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let (inv, token) = invite(&admin, "ana@example.com", "viewer").await;
    let bob = newcomer(&app, "bob@example.com");
    let members = app.count_rows("memberships");

    let e = bob
        .post_err(
            ACCEPT,
            json!({ "token": token }),
            403,
            "INVITATION_EMAIL_MISMATCH",
        )
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("ana@example.com"),
        "{e}"
    );
    assert_eq!(app.count_rows("memberships"), members);
    assert_eq!(status_of(&listed(&admin).await, &inv["id"]), "pending");
    // The right person still can.
    let ana = newcomer(&app, "ana@example.com");
    let _: Value = ana.post(ACCEPT, json!({ "token": token }), 200).await;
}

#[tokio::test]
async fn revoked_expired_and_unknown_tokens_are_not_found() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let ana = newcomer(&app, "ana@example.com");

    // Revoked.
    let (inv, token) = invite(&admin, "ana@example.com", "reviewer").await;
    let path = format!("{INVITATIONS}/{}", inv["id"].as_str().unwrap());
    let revoked: Value = admin.delete(&path, 200).await;
    assert_eq!(revoked["data"]["status"], "revoked");
    assert_eq!(revoked["data"]["id"], inv["id"]);
    let again: Value = admin.delete(&path, 200).await;
    assert_eq!(again["data"]["status"], "revoked");
    ana.post_err(
        ACCEPT,
        json!({ "token": token }),
        404,
        "INVITATION_NOT_FOUND",
    )
    .await;

    // Expired: seven days on the server's clock.
    let (inv, token) = invite(&admin, "ana@example.com", "reviewer").await;
    app.state
        .services
        .clock
        .advance(time::Duration::days(7) + time::Duration::seconds(1));
    assert_eq!(status_of(&listed(&admin).await, &inv["id"]), "expired");
    ana.post_err(
        ACCEPT,
        json!({ "token": token }),
        404,
        "INVITATION_NOT_FOUND",
    )
    .await;

    // Unknown.
    ana.post_err(
        ACCEPT,
        json!({ "token": "Jd8notarealtoken" }),
        404,
        "INVITATION_NOT_FOUND",
    )
    .await;
    let r = admin
        .call(
            Method::DELETE,
            &format!("{INVITATIONS}/inv_nope"),
            None,
            &[],
        )
        .await;
    r.error(404, "INVITATION_NOT_FOUND");
    assert_eq!(app.count_rows("memberships"), 1);
}

#[tokio::test]
async fn a_second_invitation_to_the_same_address_replaces_the_pending_one() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let (first, old) = invite(&admin, "ana@example.com", "viewer").await;
    let (second, new) = invite(&admin, "ANA@example.com", "reviewer").await;
    let list = listed(&admin).await;
    assert_eq!(status_of(&list, &first["id"]), "revoked");
    assert_eq!(status_of(&list, &second["id"]), "pending");
    let ana = newcomer(&app, "ana@example.com");
    ana.post_err(ACCEPT, json!({ "token": old }), 404, "INVITATION_NOT_FOUND")
        .await;
    let joined: Value = ana.post(ACCEPT, json!({ "token": new }), 200).await;
    assert_eq!(joined["data"]["role"], "reviewer");
}

#[tokio::test]
async fn members_cannot_be_invited_or_accept_again() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let reviewer = app.member(Role::Reviewer);
    let e = admin
        .post_err(
            INVITATIONS,
            json!({ "email": reviewer.person().email.to_uppercase(), "role": "admin" }),
            409,
            "ALREADY_MEMBER",
        )
        .await;
    assert_eq!(e["details"]["user_id"], reviewer.person().id.as_str());
    assert_eq!(app.count_rows("invitations"), 0);

    // Invited, then added some other way before accepting.
    let (_, token) = invite(&admin, "ana@example.com", "viewer").await;
    let ana = newcomer(&app, "ana@example.com");
    let conn = hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap();
    let ws = hds::store::workspaces::oldest(&conn).unwrap().unwrap();
    hds::store::workspaces::add_member(&conn, &ws, &ana.person().id, Role::Viewer, &app.now())
        .unwrap();
    ana.post_err(ACCEPT, json!({ "token": token }), 409, "ALREADY_MEMBER")
        .await;
}

#[tokio::test]
async fn only_owners_and_admins_invite_and_only_owners_invite_owners() {
    let app = TestApp::spawn().await;
    let owner = app.admin();
    let admin = app.member(Role::Admin);
    for role in [Role::Reviewer, Role::Viewer] {
        let who = app.member(role);
        let e = who
            .post_err(
                INVITATIONS,
                json!({ "email": "x@example.com", "role": "viewer" }),
                403,
                "FORBIDDEN",
            )
            .await;
        assert_eq!(e["details"]["required_role"], "admin", "{role}");
        let e = who.get_err(INVITATIONS, 403, "FORBIDDEN").await;
        assert_eq!(e["details"]["required_role"], "admin");
    }
    let e = admin
        .post_err(
            INVITATIONS,
            json!({ "email": "boss@example.com", "role": "owner" }),
            403,
            "FORBIDDEN",
        )
        .await;
    assert_eq!(e["details"]["required_role"], "owner");
    assert_eq!(app.count_rows("invitations"), 0);
    for role in ["admin", "reviewer", "viewer"] {
        invite(&admin, &format!("{role}-by-admin@example.com"), role).await;
    }
    let (boss, _) = invite(&owner, "boss@example.com", "owner").await;
    assert_eq!(boss["role"], "owner");
    // An admin cannot revoke what they could not have offered.
    let path = format!("{INVITATIONS}/{}", boss["id"].as_str().unwrap());
    let r = admin.call(Method::DELETE, &path, None, &[]).await;
    let e = r.error(403, "FORBIDDEN");
    assert_eq!(e["details"]["required_role"], "owner");
    assert!(
        e["message"].as_str().unwrap().contains("revoke"),
        "the refusal names the revoke: {e}"
    );
    // Nor does their page offer it; it offers the ones they made.
    let page = app
        .browser(admin.person())
        .await
        .page("/app/invitations")
        .await;
    let boss_id = boss["id"].as_str().unwrap();
    assert!(
        !page.contains(&format!("/app/invitations/{boss_id}/revoke")),
        "{page}"
    );
    let theirs = listed(&owner).await;
    let by_admin = theirs
        .iter()
        .find(|i| i["email"] == "viewer-by-admin@example.com")
        .unwrap();
    let their_id = by_admin["id"].as_str().unwrap();
    assert!(
        page.contains(&format!("/app/invitations/{their_id}/revoke")),
        "{page}"
    );
    let reviewer = app.member(Role::Reviewer);
    let r = reviewer.call(Method::DELETE, &path, None, &[]).await;
    r.error(403, "FORBIDDEN");
    assert_eq!(status_of(&listed(&owner).await, &boss["id"]), "pending");
    // Nor replace it by inviting the address again, in any role; the
    // owner's invitation stays, and nothing is written.
    let before = app.count_rows("invitations");
    for role in ["viewer", "admin"] {
        let e = admin
            .post_err(
                INVITATIONS,
                json!({ "email": "Boss@example.com", "role": role }),
                403,
                "FORBIDDEN",
            )
            .await;
        assert_eq!(e["details"]["required_role"], "owner", "{e}");
        assert!(
            e["message"].as_str().unwrap().contains("Boss@example.com"),
            "{e}"
        );
    }
    // The dashboard's invite form is refused the same way, on the page.
    let browser = app.browser(admin.person()).await;
    let r = browser
        .post_form(
            "/app/invitations",
            Some(&app.base),
            &[
                ("_csrf", browser.csrf()),
                ("email", "boss@example.com"),
                ("role", "viewer"),
            ],
        )
        .await;
    assert_eq!(r.status(), 403);
    let html = r.text().await.unwrap();
    assert!(
        html.contains("has a pending invitation to become owner"),
        "{html}"
    );
    // The form comes back as entered, to correct rather than retype.
    assert!(html.contains(r#"value="boss@example.com""#), "{html}");
    assert!(
        html.contains(r#"<option value="viewer" selected>"#),
        "{html}"
    );
    assert_eq!(app.count_rows("invitations"), before);
    assert_eq!(status_of(&listed(&owner).await, &boss["id"]), "pending");
    // An owner may.
    let (again, _) = invite(&owner, "boss@example.com", "admin").await;
    assert_eq!(again["role"], "admin");
    assert_eq!(status_of(&listed(&owner).await, &boss["id"]), "revoked");
}

#[tokio::test]
async fn another_workspace_sees_none_of_these_invitations() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let (inv, _) = invite(&admin, "ana@example.com", "viewer").await;
    let outsider = app.outsider();
    assert!(listed(&outsider).await.is_empty());
    let path = format!("{INVITATIONS}/{}", inv["id"].as_str().unwrap());
    let r = outsider.call(Method::DELETE, &path, None, &[]).await;
    r.error(404, "INVITATION_NOT_FOUND");
    assert_eq!(status_of(&listed(&admin).await, &inv["id"]), "pending");
}

#[tokio::test]
async fn concurrent_accepts_of_one_token_succeed_exactly_once() {
    let app = TestApp::spawn().await;
    let (_, token) = invite(&app.admin(), "ana@example.com", "reviewer").await;
    let ana = newcomer(&app, "ana@example.com");
    let members = app.count_rows("memberships");
    let url = ana.url(ACCEPT);
    let bearer = ana.token().to_owned();
    let tries = (0..8).map(|_| {
        let (http, url, bearer, token) =
            (app.http.clone(), url.clone(), bearer.clone(), token.clone());
        tokio::spawn(async move {
            let r = http
                .post(url)
                .bearer_auth(bearer)
                .json(&json!({ "token": token }))
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let body: Value = r.json().await.unwrap();
            (status, body)
        })
    });
    let results: Vec<(u16, Value)> = futures_join(tries).await;
    let ok = results.iter().filter(|(s, _)| *s == 200).count();
    assert_eq!(ok, 1, "{results:?}");
    for (s, body) in results.iter().filter(|(s, _)| *s != 200) {
        assert_eq!(*s, 404, "{body}");
        assert_eq!(body["error"]["code"], "INVITATION_NOT_FOUND");
    }
    assert_eq!(app.count_rows("memberships"), members + 1);
}

async fn futures_join<T: Send + 'static>(
    handles: impl Iterator<Item = tokio::task::JoinHandle<T>>,
) -> Vec<T> {
    let mut out = Vec::new();
    for h in handles.collect::<Vec<_>>() {
        out.push(h.await.unwrap());
    }
    out
}

#[tokio::test]
async fn bad_input_on_every_invitation_route_is_refused_and_writes_nothing() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    for (body, field) in [
        (json!({ "role": "viewer" }), "email"),
        (json!({ "email": "ana@example.com" }), "role"),
        (
            json!({ "email": "not-an-address", "role": "viewer" }),
            "email",
        ),
        (
            json!({ "email": "ana@localhost", "role": "viewer" }),
            "email",
        ),
        (
            json!({ "email": "a b@example.com", "role": "viewer" }),
            "email",
        ),
        // Addresses no relay takes from hds: an invitation could never arrive.
        (
            json!({ "email": "dave@[127.0.0.1]", "role": "viewer" }),
            "email",
        ),
        (
            json!({ "email": "a,b@example.com", "role": "viewer" }),
            "email",
        ),
        (
            json!({ "email": "ana\u{0}@example.com", "role": "viewer" }),
            "email",
        ),
        (
            json!({ "email": "ana@example.com", "role": "root" }),
            "role",
        ),
        (
            json!({ "email": "ana@example.com", "role": "viewer", "extra": 1 }),
            "extra",
        ),
    ] {
        let e = admin
            .post_err(INVITATIONS, body.clone(), 422, "VALIDATION_ERROR")
            .await;
        assert!(e.to_string().contains(field), "{body}: {e}");
    }
    let r = admin
        .raw(
            Method::POST,
            INVITATIONS,
            r#"{"email":"a@example.com","email":"b@example.com","role":"viewer"}"#,
        )
        .await;
    r.error(422, "VALIDATION_ERROR");
    let r = admin.raw(Method::POST, INVITATIONS, "[]").await;
    r.error(422, "VALIDATION_ERROR");
    assert_eq!(app.count_rows("invitations"), 0);

    let ana = newcomer(&app, "ana@example.com");
    for body in [
        json!({}),
        json!({ "token": "" }),
        json!({ "token": 42 }),
        json!({ "token": "x", "workspace_id": "ws_1" }),
    ] {
        ana.post_err(ACCEPT, body, 422, "VALIDATION_ERROR").await;
    }
    // Signed out, or with a Source key: no person to add.
    app.anonymous()
        .post_err(ACCEPT, json!({ "token": "x" }), 401, "AUTH_REQUIRED")
        .await;
    app.source()
        .post_err(ACCEPT, json!({ "token": "x" }), 401, "INVALID_API_KEY")
        .await;
    app.anonymous()
        .get_err(INVITATIONS, 401, "AUTH_REQUIRED")
        .await;
    let r = admin
        .call(Method::DELETE, &format!("{INVITATIONS}/%00"), None, &[])
        .await;
    assert!(r.status.is_client_error(), "{}", r.body);
    assert_eq!(app.count_rows("memberships"), 1);
}

#[tokio::test]
async fn the_link_page_does_not_use_the_link_and_signs_in_by_it_when_no_provider_is_configured() {
    let app = TestApp::spawn().await;
    let action = app.create_action(two_options("Ship 2.5")).await;
    let (_, token) = invite(&app.admin(), "ana@example.com", "reviewer").await;
    let link = format!("{}/app/invitations/{token}", app.base);
    let http = browser_client();
    for _ in 0..2 {
        let page = http.get(&link).send().await.unwrap();
        assert_eq!(page.status(), 200);
        let html = page.text().await.unwrap();
        assert!(html.contains("Sign in and join"), "{html}");
        assert!(html.contains("admin@example.com"), "{html}");
    }
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM users WHERE email = 'ana@example.com'"
        ),
        0
    );

    // Another site cannot post it on a visitor's behalf.
    let forged = http
        .post(&link)
        .header("origin", "https://evil.example")
        .form(&[("x", "y")])
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM users WHERE email = 'ana@example.com'"
        ),
        0
    );

    let done = http
        .post(&link)
        .header("origin", &app.base)
        .form(&[("x", "y")])
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 303, "{:?}", done.text().await);
    assert_eq!(done.headers()[LOCATION], "/app");
    assert!(
        done.headers()
            .get_all(SET_COOKIE)
            .iter()
            .any(|c| c.to_str().unwrap().starts_with("service_session="))
    );
    let s: Value = http
        .get(format!("{}/v1/auth/session", app.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(s["data"]["user"]["email"], "ana@example.com", "{s}");
    let inbox: Value = http
        .get(format!("{}/v1/me/actions", app.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(inbox["data"][0]["id"], action["id"], "{inbox}");

    // Used: the page says so, and posting again does nothing.
    let gone = http.get(&link).send().await.unwrap();
    assert_eq!(gone.status(), 404);
    let again = browser_client()
        .post(&link)
        .header("origin", &app.base)
        .form(&[("x", "y")])
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 404);
}

/// Whoever creates an invitation holds its link too: the link alone never
/// signs anyone in as a person who already has an account (they sign in
/// first, then accept).
#[tokio::test]
async fn an_invitation_link_never_signs_in_as_an_existing_account() {
    let app = TestApp::spawn().await;
    let existing = app.outsider();
    let (_, token) = invite(&app.admin(), &existing.person().email, "reviewer").await;
    let link = format!("{}/app/invitations/{token}", app.base);
    let sessions = app.count_rows("user_tokens");
    // The page says so before anyone presses a button that would be refused.
    let shown = crate::helpers::browser_client()
        .get(&link)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(shown.contains("id=\"accept-refused\""), "{shown}");
    assert!(
        shown.contains("this address already has an account: sign in first"),
        "{shown}"
    );
    assert!(!shown.contains("id=\"accept\""), "no button: {shown}");
    let page = crate::helpers::refused_signed_out(&app, &link, 401).await;
    assert!(page.contains("sign in first"), "{page}");
    assert_eq!(
        app.count_rows("user_tokens"),
        sessions,
        "no session was made"
    );
    let pending = count(
        &app,
        "SELECT count(*) FROM invitations WHERE accepted_by IS NULL",
    );
    assert_eq!(pending, 1, "the invitation is still open");
    // Signed in as themselves, the person accepts with the same link.
    let joined: Value = existing
        .post(
            "/v1/workspace-invitations/accept",
            serde_json::json!({ "token": token }),
            200,
        )
        .await;
    assert_eq!(joined["data"]["role"], "reviewer", "{joined}");
}

#[tokio::test]
async fn signed_in_the_link_page_accepts_with_the_form_token_and_selects_the_workspace() {
    let app = TestApp::spawn().await;
    // The owner of a newer workspace invites the init admin, whose oldest
    // workspace stays their default until something selects another.
    let elsewhere = app.outsider();
    let (inv, token) = invite(&elsewhere, "admin@example.com", "viewer").await;
    let browser = app.browser(app.admin().person()).await;
    let path = format!("/app/invitations/{token}");
    let html = browser.page(&path).await;
    assert!(html.contains("Accept and join"), "{html}");
    assert!(html.contains(elsewhere.person().email.as_str()), "{html}");

    // Without the form token: refused, nothing written.
    let members = app.count_rows("memberships");
    let r = browser.post_form(&path, Some(&app.base), &[]).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(app.count_rows("memberships"), members);
    let r = browser
        .post_form(&path, Some(&app.base), &[("_csrf", browser.csrf())])
        .await;
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()[LOCATION], "/app");
    assert_eq!(app.count_rows("memberships"), members + 1);
    let me: Value = browser.get("/v1/bootstrap", 200).await;
    let joined = &me["data"]["active_workspace"];
    assert_eq!(joined["name"], "Elsewhere", "{me}");
    assert_eq!(joined["role"], "viewer", "{me}");
    assert_eq!(status_of(&listed(&elsewhere).await, &inv["id"]), "accepted");
    // The bearer token of the same person still acts on its own default.
    let api: Value = app.admin().get("/v1/bootstrap", 200).await;
    assert_eq!(api["data"]["active_workspace"]["name"], "Test");
}

/// POST-redirect-GET on the Invitations page: inviting redirects to the
/// page, which shows the link once (and it opens the invitation); a reload
/// shows a notice, no link, and invites no one again.
#[tokio::test]
async fn the_invitations_page_shows_the_link_once_a_reload_invites_no_one_and_revokes() {
    let app = TestApp::spawn().await;
    let admin = app.browser(app.admin().person()).await;
    let html = admin.page("/app/invitations").await;
    assert!(html.contains("Create invitation"), "{html}");
    let r = admin
        .post_form(
            "/app/invitations",
            Some(&app.base),
            &[
                ("_csrf", admin.csrf()),
                ("email", " ana@example.com "),
                ("role", "reviewer"),
            ],
        )
        .await;
    assert_eq!(r.status(), 303);
    let to = r.headers()[LOCATION].to_str().unwrap().to_owned();
    assert_eq!(to, "/app/invitations?done=created");
    assert_eq!(app.count_rows("invitations"), 1);
    let html = admin.page(&to).await;
    let prefix = format!("{}/app/invitations/", app.base);
    let start = html.find(&prefix).expect("the link, shown once");
    let link = html[start..].split('<').next().unwrap().to_owned();
    assert!(html.contains("data-copy=\"invitation-link\""), "{html}");
    // The link opens the invitation (opening it never uses it).
    let opened = admin.page(&link[app.base.len()..]).await;
    assert!(opened.contains("ana@example.com"), "{opened}");

    let again = admin.page(&to).await;
    assert!(!again.contains(&prefix), "shown once: {again}");
    assert!(again.contains("id=\"shown-once\""), "{again}");
    assert_eq!(
        app.count_rows("invitations"),
        1,
        "the reload invited no one"
    );
    assert_eq!(listed(&app.admin()).await[0]["status"], "pending");
    let plain = admin.page("/app/invitations").await;
    assert!(!plain.contains(&prefix) && !plain.contains("shown-once"));
    let list = listed(&app.admin()).await;
    let id = list[0]["id"].as_str().unwrap();
    // Asked first, naming the address; revoked once confirmed.
    let r = admin
        .post_form(
            &format!("/app/invitations/{id}/revoke"),
            Some(&app.base),
            &[("_csrf", admin.csrf())],
        )
        .await;
    assert_eq!(r.status(), 200);
    let asked = r.text().await.unwrap();
    let email = list[0]["email"].as_str().unwrap();
    assert!(
        asked.contains(&format!("Revoke the invitation of {email}?")),
        "{asked}"
    );
    assert_eq!(listed(&app.admin()).await[0]["status"], "pending");
    let r = admin
        .post_form(
            &format!("/app/invitations/{id}/revoke"),
            Some(&app.base),
            &[("_csrf", admin.csrf()), ("confirmed", "yes")],
        )
        .await;
    assert_eq!(r.status(), 303);
    assert_eq!(listed(&app.admin()).await[0]["status"], "revoked");

    // A bad address is explained on the page, nothing written.
    let r = admin
        .post_form(
            "/app/invitations",
            Some(&app.base),
            &[
                ("_csrf", admin.csrf()),
                ("email", "nope"),
                ("role", "viewer"),
            ],
        )
        .await;
    assert_eq!(r.status(), 422);
    assert!(r.text().await.unwrap().contains("e-mail address"));
    assert_eq!(app.count_rows("invitations"), 1);

    // A reviewer sees no form.
    let reviewer = app.member(Role::Reviewer);
    let rb = app.browser(reviewer.person()).await;
    let html = rb.page("/app/invitations").await;
    assert!(!html.contains("Create invitation"));
    assert!(html.contains("Only workspace owners and admins invite people"));
}

/// The issue's browser acceptance: invite a person, open the accept link in a
/// fresh browser, sign in by it, claim an Action, comment, and decide; then
/// everything the browser did is read back through the API.
#[tokio::test]
async fn in_chromium_an_invited_person_signs_in_by_the_link_claims_comments_and_decides() {
    let app = TestApp::spawn().await;
    let link = app.signin_link("admin@example.com").await;
    let env = [
        ("BASE_URL", app.base.as_str()),
        ("LINK", link.as_str()),
        ("SOURCE_KEY", &app.live_key()),
        ("INVITEE", "newcomer@example.com"),
    ];
    let r = run_node(
        "browser-invite.mjs",
        &env,
        Duration::from_secs(120),
        Some(&app),
    )
    .await;
    assert_eq!(r["ok"], true, "{}", r["error"].as_str().unwrap_or_default());
    assert_eq!(r["csp_violations"], json!([]));
    assert_eq!(r["script_errors"], json!([]));
    assert_eq!(r["link_prefix"], format!("{}/app/invitations/", app.base));
    assert_eq!(r["copy_button"], true);
    assert_eq!(
        r["reloaded"],
        json!({"links": 0, "notice": true, "rows": 1}),
        "a reload shows the link no more and invites no one"
    );
    assert_eq!(r["offered"]["role"], "reviewer");
    assert_eq!(r["signed_in_as"], "newcomer@example.com");
    assert_eq!(r["again_status"], 404);
    assert_eq!(r["admin_status"], "accepted");

    // What the page showed along the way.
    assert_eq!(r["assignee_before"], "nobody");
    assert_eq!(r["assignee_after"], "you");
    assert_eq!(r["claim_offered_after"], 0);
    let c = &r["comment"];
    assert_eq!(c["count"], 1, "{c}");
    assert!(c["author"].as_str().unwrap().starts_with("you"), "{c}");
    let html = c["html"].as_str().unwrap();
    assert!(html.contains("<strong>staging</strong>"), "{html}");
    assert!(
        !html.contains("<img") && !html.contains("<script"),
        "raw HTML is escaped: {html}"
    );
    assert!(html.contains("&lt;script&gt;"), "{html}");
    assert!(c["text"].as_str().unwrap().contains("<img src=x"), "{c}");
    assert_eq!(
        (c["injected"].as_u64(), c["pwned"].as_bool()),
        (Some(0), Some(false))
    );
    // Claim and comment left the binding as the Source made it.
    assert_eq!(r["shown_version"], "1");
    assert_eq!(r["shown_fingerprint"], r["fingerprint"]);
    let d = &r["decided"];
    assert_eq!(d["status"], "resolved", "{d}");
    assert_eq!(d["verified"], true);
    assert!(d["by"].as_str().unwrap().contains("by you"), "{d}");
    assert_eq!(
        d["comment_form"], 1,
        "comments stay open on a closed Action"
    );

    // Read back through the API, as the admin who invited them.
    let admin = app.admin();
    let members: Value = admin.get("/v1/workspaces/members", 200).await;
    let invitee = members["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["email"] == "newcomer@example.com")
        .unwrap_or_else(|| panic!("the invitee is a member: {members}"));
    assert_eq!(invitee["role"], "reviewer");
    let who = invitee["user_id"].clone();
    let id = r["action_id"].as_str().unwrap();
    let a: Value = admin.get(&format!("/v1/actions/{id}"), 200).await;
    let a = &a["data"];
    assert_eq!(a["status"], "resolved");
    assert_eq!(a["assignee"]["user_id"], who, "{a}");
    assert_eq!(a["assignee"]["email"], "newcomer@example.com");
    assert_eq!(a["comment_count"], 1);
    assert_eq!(a["action_version"], 1);
    assert_eq!(a["fingerprint"], r["fingerprint"]);
    let history: Vec<(&str, &Value)> = a["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["type"].as_str().unwrap(), &e["actor"]))
        .collect();
    let by_invitee = json!({"type": "user", "id": who});
    assert_eq!(
        history,
        [
            ("created", &json!({"type": "source", "id": a["source_id"]})),
            ("claimed", &by_invitee),
            ("commented", &by_invitee),
            ("resolved", &by_invitee),
        ],
        "{a}"
    );
    let comments: Value = admin.get(&format!("/v1/actions/{id}/comments"), 200).await;
    let list = comments["data"].as_array().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["author"]["user_id"], who);
    assert!(
        list[0]["body"]
            .as_str()
            .unwrap()
            .starts_with("Rotated in **staging** first.")
    );
    assert_eq!(a["history"][2]["data"]["comment_id"], list[0]["id"]);

    // The receipt names the invitee, in the payload the API shows and in the
    // signed claims PyJWT verifies.
    let receipt = &a["receipt"];
    assert_eq!(receipt["payload"]["decided_by"], by_invitee, "{receipt}");
    assert_eq!(receipt["payload"]["decision"]["option_id"], "approve");
    assert_eq!(receipt["payload"]["fingerprint"], r["fingerprint"]);
    let jws = receipt["jws"].as_str().unwrap();
    let jwks = app.get("/v1/receipts/keys", "unused").await;
    let out = python(
        "verify_receipt.py",
        &json!({"jwks": jwks.body, "receipts": [jws]}),
    );
    let line: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(line["sub"], id);
    let claims = jws.split('.').nth(1).unwrap();
    let claims: Value = serde_json::from_slice(
        &base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, claims).unwrap(),
    )
    .unwrap();
    assert_eq!(claims["decided_by"], by_invitee);
}

#[tokio::test]
async fn the_link_page_and_accepting_spend_the_client_address_budget() {
    let app = TestApp::spawn_with(|c| {
        c.anonymous_rate_limit = 1;
        c.anonymous_burst = 2;
    })
    .await;
    let (_, token) = invite(&app.admin(), "ana@example.com", "viewer").await;
    let http = browser_client();
    let link = format!("{}/app/invitations/{token}", app.base);
    assert_eq!(http.get(&link).send().await.unwrap().status(), 200);
    let ana = newcomer(&app, "ana@example.com");
    ana.post_err(
        ACCEPT,
        json!({ "token": "wrong" }),
        404,
        "INVITATION_NOT_FOUND",
    )
    .await;
    let e = ana
        .post_err(ACCEPT, json!({ "token": token }), 429, "RATE_LIMITED")
        .await;
    assert_eq!(e["details"]["scope"], "address");
    assert_eq!(http.get(&link).send().await.unwrap().status(), 429);
    assert_eq!(app.count_rows("memberships"), 1);
}

/// The refusals of the invitation routes tell the person what to do next,
/// and none of them writes anything.
#[tokio::test]
async fn invitation_refusals_say_what_to_do_and_write_nothing() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let reviewer = app.member(Role::Reviewer);
    let (inv, token) = invite(&admin, "ana@example.com", "viewer").await;
    let (invitations, members) = (app.count_rows("invitations"), app.count_rows("memberships"));

    let says = |e: &Value, what: &str| {
        assert!(e["message"].as_str().unwrap().contains(what), "{what}: {e}");
    };
    let e = admin
        .post_err(
            INVITATIONS,
            json!({"email": "ana at example.com", "role": "viewer"}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    says(&e, "`ana at example.com` is not one e-mail address");
    let e = admin
        .post_err(
            INVITATIONS,
            json!({"email": reviewer.person().email, "role": "admin"}),
            409,
            "ALREADY_MEMBER",
        )
        .await;
    says(&e, "change their role on the members page instead");
    let e = reviewer
        .post_err(
            INVITATIONS,
            json!({"email": "zoe@example.com", "role": "viewer"}),
            403,
            "FORBIDDEN",
        )
        .await;
    says(&e, "owners and admins");

    let zoe = newcomer(&app, "zoe@example.com");
    for bad in ["", &"x".repeat(201)] {
        let e = zoe
            .post_err(ACCEPT, json!({"token": bad}), 422, "VALIDATION_ERROR")
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], "token", "{e}");
        says(&e, "after /app/invitations/ in the invitation link");
    }
    let e = zoe
        .post_err(
            ACCEPT,
            json!({"token": "x".repeat(200)}),
            404,
            "INVITATION_NOT_FOUND",
        )
        .await;
    says(&e, "ask whoever invited you for a new one");
    let e = zoe
        .post_err(
            ACCEPT,
            json!({"token": token}),
            403,
            "INVITATION_EMAIL_MISMATCH",
        )
        .await;
    says(&e, "sign in with the invited address");
    assert!(
        !e.to_string().contains(&token),
        "the token is not echoed: {e}"
    );
    let r = admin
        .call(
            Method::DELETE,
            &format!("{INVITATIONS}/inv_nope"),
            None,
            &[],
        )
        .await;
    says(r.error(404, "INVITATION_NOT_FOUND"), "in this workspace");

    assert_eq!(app.count_rows("invitations"), invitations);
    assert_eq!(app.count_rows("memberships"), members);
    assert_eq!(status_of(&listed(&admin).await, &inv["id"]), "pending");
}

/// API tokens of a person, counted in the store.
fn api_tokens_of(app: &TestApp, user_id: &str) -> i64 {
    count(
        app,
        &format!("SELECT count(*) FROM user_tokens WHERE user_id = '{user_id}' AND kind = 'api'"),
    )
}

/// Whoever invites holds the link too: opening it themselves makes a session
/// as the invited person. That session creates no API token (a token would
/// outlive it), and ends when the person signs in any other way.
#[tokio::test]
async fn a_session_an_invitation_link_opened_creates_no_api_token_and_ends_at_a_real_sign_in() {
    let app = TestApp::spawn().await;
    let admin = app.member(Role::Admin);
    let (_, token) = invite(&admin, "ana@example.com", "reviewer").await;
    let link = format!("{}/app/invitations/{token}", app.base);
    // The inviter opens the link they were shown.
    let held = app.sign_in_with_link(&link).await;
    let ana_id = held.person().id.clone();
    let s: Value = held.get("/v1/auth/session", 200).await;
    assert_eq!(s["data"]["method"], "invitation", "{s}");

    let page = held.page("/app/account").await;
    assert!(
        !page.contains("action=\"/app/account/tokens\""),
        "no token form: {page}"
    );
    assert!(page.contains("id=\"no-tokens\""), "{page}");
    assert!(
        page.contains("sign in with your identity provider or a sign-in link from your operator to create API tokens"),
        "{page}"
    );
    let r = held
        .post_form(
            "/app/account/tokens",
            Some(&app.base),
            &[("_csrf", held.csrf()), ("name", "keep me")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let html = r.text().await.unwrap();
    assert!(
        html.contains("sign in with your identity provider or a sign-in link from your operator to create API tokens"),
        "{html}"
    );
    assert!(!html.contains("new-token-value"), "no token shown: {html}");
    assert_eq!(api_tokens_of(&app, &ana_id), 0, "no token written");

    // Ana signs in with a link from the operator: the invitation session
    // ends in that sign-in's transaction, and her own session makes tokens.
    let ana = app.browser(held.person()).await;
    held.get_err("/v1/auth/session", 401, "AUTH_REQUIRED").await;
    let r = ana
        .post_form(
            "/app/account/tokens",
            Some(&app.base),
            &[("_csrf", ana.csrf()), ("name", "laptop")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(api_tokens_of(&app, &ana_id), 1);
    assert!(
        ana.page("/app/account")
            .await
            .contains("action=\"/app/account/tokens\"")
    );
}

/// Accepting another invitation: never with a session an invitation link
/// opened (its holder may be the first inviter); with any other credential,
/// it ends those sessions in the same transaction.
#[tokio::test]
async fn accepting_another_invitation_ends_the_sessions_invitation_links_opened() {
    let app = TestApp::spawn().await;
    let admin = app.member(Role::Admin);
    let (_, first) = invite(&admin, "ana@example.com", "reviewer").await;
    let held = app
        .sign_in_with_link(&format!("{}/app/invitations/{first}", app.base))
        .await;
    let elsewhere = app.outsider();
    let (inv, second) = invite(&elsewhere, "ana@example.com", "viewer").await;

    // Its page offers no button that would be refused, and says why.
    let page = held.page(&format!("/app/invitations/{second}")).await;
    assert!(page.contains("id=\"accept-refused\""), "{page}");
    assert!(
        page.contains("this session was opened by an invitation link"),
        "{page}"
    );
    assert!(!page.contains("id=\"accept\""), "{page}");
    let members = app.count_rows("memberships");
    let e = held
        .post_err(ACCEPT, json!({ "token": second }), 403, "FORBIDDEN")
        .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("sign in with your identity provider or a sign-in link from your operator"),
        "{e}"
    );
    assert_eq!(app.count_rows("memberships"), members, "nothing written");
    assert_eq!(status_of(&listed(&elsewhere).await, &inv["id"]), "pending");
    held.get::<Value>("/v1/auth/session", 200).await;

    // Ana with a credential of her own (here a token from the operator).
    let conn = hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap();
    let (token, _) =
        hds::store::users::issue_token(&conn, &held.person().id, "ops", None, &app.now()).unwrap();
    let ana = app.bearer(&token);
    let joined: Value = ana.post(ACCEPT, json!({ "token": second }), 200).await;
    assert_eq!(joined["data"]["name"], "Elsewhere", "{joined}");
    held.get_err("/v1/auth/session", 401, "AUTH_REQUIRED").await;
    assert_eq!(
        count(
            &app,
            &format!(
                "SELECT count(*) FROM user_tokens WHERE user_id = '{}' AND method = 'invitation' AND revoked_at IS NULL",
                held.person().id
            )
        ),
        0
    );
}

fn member_path(who: &Actor) -> String {
    format!("/v1/workspaces/members/{}", who.person().id)
}

/// An invitation offers what its inviter may offer, for as long as they may:
/// a role change revokes the pending invitations the new role could not
/// create, a removal all of them, in the change's own transaction.
#[tokio::test]
async fn an_inviters_pending_invitations_end_with_their_right_to_offer_them() {
    let app = TestApp::spawn().await;
    let owner = app.admin();
    let other = app.member(Role::Admin);
    let _: Value = owner
        .patch(&member_path(&other), json!({"role": "owner"}), 200)
        .await;
    let (as_owner, owner_token) = invite(&other, "olga@example.com", "owner").await;
    let (as_reviewer, reviewer_token) = invite(&other, "rui@example.com", "reviewer").await;
    let (kept, _) = invite(&owner, "kim@example.com", "owner").await;

    // Owner → admin: an admin offers no `owner`; the reviewer one stays.
    let _: Value = owner
        .patch(&member_path(&other), json!({"role": "admin"}), 200)
        .await;
    let list = listed(&owner).await;
    assert_eq!(status_of(&list, &as_owner["id"]), "revoked");
    assert_eq!(status_of(&list, &as_reviewer["id"]), "pending");
    let olga = newcomer(&app, "olga@example.com");
    olga.post_err(
        ACCEPT,
        json!({ "token": owner_token }),
        404,
        "INVITATION_NOT_FOUND",
    )
    .await;

    // Removed: whatever they still had pending goes with them.
    let _ = owner
        .call(Method::DELETE, &member_path(&other), None, &[])
        .await
        .ok(204);
    let list = listed(&owner).await;
    assert_eq!(status_of(&list, &as_reviewer["id"]), "revoked");
    assert_eq!(status_of(&list, &kept["id"]), "pending", "others' stay");
    let rui = newcomer(&app, "rui@example.com");
    rui.post_err(
        ACCEPT,
        json!({ "token": reviewer_token }),
        404,
        "INVITATION_NOT_FOUND",
    )
    .await;
    assert_eq!(app.count_rows("memberships"), 1);
}

/// Defence in depth: whatever changed the inviter's role, accepting checks
/// that they may still offer the invitation's role.
#[tokio::test]
async fn accepting_checks_that_the_inviter_still_may_offer_the_role() {
    let app = TestApp::spawn().await;
    let admin = app.member(Role::Admin);
    let (_, token) = invite(&admin, "ana@example.com", "reviewer").await;
    // Demoted behind the service's back (as an older server or a repair
    // by hand could leave it): no revocation ran.
    let conn = hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap();
    let ws: String = conn
        .query_row("SELECT workspace_id FROM invitations", [], |r| r.get(0))
        .unwrap();
    hds::store::workspaces::set_role(&conn, &ws, &admin.person().id, Role::Viewer).unwrap();
    let members = app.count_rows("memberships");

    let ana = newcomer(&app, "ana@example.com");
    let e = ana
        .post_err(
            ACCEPT,
            json!({ "token": token }),
            404,
            "INVITATION_NOT_FOUND",
        )
        .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("may no longer invite"),
        "{e}"
    );
    let page = browser_client()
        .get(format!("{}/app/invitations/{token}", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 404);
    assert_eq!(app.count_rows("memberships"), members, "nothing written");
}

/// Addresses are the same person's when they differ in ASCII case only, as
/// everywhere else (SQLite's NOCASE on `users.email`, the invitation page):
/// `Éva@` and `éva@` are two addresses, so two people.
#[tokio::test]
async fn only_ascii_case_is_ignored_when_matching_the_invited_address() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let (_, token) = invite(&admin, "Éva@Example.com", "reviewer").await;
    let members = app.count_rows("memberships");
    let other = newcomer(&app, "éva@example.com");
    other
        .post_err(
            ACCEPT,
            json!({ "token": token }),
            403,
            "INVITATION_EMAIL_MISMATCH",
        )
        .await;
    assert_eq!(app.count_rows("memberships"), members);
    let eva = newcomer(&app, "Éva@example.COM");
    let joined: Value = eva.post(ACCEPT, json!({ "token": token }), 200).await;
    assert_eq!(joined["data"]["role"], "reviewer");
}

/// The guide served at /v1/docs says what the link's button does for an
/// address that already has an account: 401 `AUTH_REQUIRED`, "sign in
/// first" (as `an_invitation_link_never_signs_in_as_an_existing_account`
/// proves), never "finds the user with that e-mail".
#[tokio::test]
async fn the_guide_documents_the_refusal_of_a_link_for_an_existing_account() {
    let app = TestApp::spawn().await;
    let docs = app.anonymous().get::<Value>("/v1/docs", 200).await;
    let section = docs["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["title"] == "Invitations")
        .expect("an Invitations section")["markdown"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        !section.contains("finds the user with that e-mail"),
        "{section}"
    );
    assert!(
        section.contains("| 401 | `AUTH_REQUIRED` |")
            && section.contains("already has an account")
            && section.contains("sign in first"),
        "{section}"
    );
}

/// The OpenAPI document gives an invitation's `role` and `status` their
/// values, and the routes answer nothing else: every state is listed here.
#[tokio::test]
async fn the_openapi_document_enumerates_invitation_roles_and_statuses() {
    let app = TestApp::spawn().await;
    let doc: Value = app.anonymous().get("/v1/openapi.json", 200).await;
    let schemas = &doc["components"]["schemas"];
    let values = |schema: &str, field: &str| -> Vec<String> {
        let e = &schemas[schema]["properties"][field]["enum"];
        e.as_array()
            .unwrap_or_else(|| panic!("{schema}.{field} has no enum: {}", schemas[schema]))
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    };
    let roles = values("InvitationOut", "role");
    assert_eq!(roles, ["owner", "admin", "reviewer", "viewer"]);
    assert_eq!(values("JoinedWorkspace", "role"), roles);
    let statuses = values("InvitationOut", "status");
    assert_eq!(statuses, ["pending", "accepted", "revoked", "expired"]);

    let admin = app.admin();
    let (accepted, token) = invite(&admin, "ana@example.com", "viewer").await;
    newcomer(&app, "ana@example.com")
        .post::<Value>(ACCEPT, json!({ "token": token }), 200)
        .await;
    let (revoked, _) = invite(&admin, "bo@example.com", "admin").await;
    let _: Value = admin
        .delete(
            &format!("{INVITATIONS}/{}", revoked["id"].as_str().unwrap()),
            200,
        )
        .await;
    let (expired, _) = invite(&admin, "cy@example.com", "owner").await;
    app.state.services.clock.advance(time::Duration::days(8));
    let (pending, _) = invite(&admin, "di@example.com", "reviewer").await;
    let list = listed(&admin).await;
    for (inv, status) in [
        (&accepted, "accepted"),
        (&revoked, "revoked"),
        (&expired, "expired"),
        (&pending, "pending"),
    ] {
        assert_eq!(status_of(&list, &inv["id"]), status);
    }
    for i in &list {
        assert!(statuses.iter().any(|s| i["status"] == s.as_str()), "{i}");
        assert!(roles.iter().any(|r| i["role"] == r.as_str()), "{i}");
    }
}

/// The active workspace of a credential that selected none is the person's
/// oldest membership, not their oldest workspace: joining an older
/// workspace by invitation moves none of their sessions or tokens.
#[tokio::test]
async fn joining_an_older_workspace_leaves_the_active_one_where_it_was() {
    let app = TestApp::spawn().await;
    let admin = app.member(Role::Admin);
    app.create_action(two_options("In the older workspace"))
        .await;
    let ana = newcomer(&app, "ana@example.com");
    let side: Value = ana
        .post("/v1/workspaces", json!({"name": "Ana's own"}), 201)
        .await;
    let side = side["data"]["id"].clone();
    let (_, token) = invite(&admin, "ana@example.com", "reviewer").await;
    let joined: Value = ana.post(ACCEPT, json!({ "token": token }), 200).await;
    assert_eq!(joined["data"]["active"], false, "{joined}");
    let all: Value = ana.get("/v1/workspaces", 200).await;
    let order: Vec<(&Value, &Value)> = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (&w["id"], &w["active"]))
        .collect();
    assert_eq!(
        order,
        [
            (&side, &json!(true)),
            (&joined["data"]["id"], &json!(false))
        ]
    );
    let inbox: Value = ana.get("/v1/me/actions", 200).await;
    assert_eq!(inbox["data"], json!([]), "still Ana's own workspace");
}

/// One person creates at most 100 invitations in 24 hours, across every
/// workspace (each may mail a stranger from this server): the next is 429
/// `RATE_LIMITED` with `Retry-After` and nothing written; a day later the
/// oldest frees a place.
#[tokio::test]
async fn one_person_sends_at_most_a_hundred_invitations_a_day() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    for i in 0..100 {
        invite(&admin, &format!("p{i}@example.com"), "viewer").await;
    }
    let before = count(&app, "SELECT count(*) FROM invitations");
    let r = admin
        .call(
            reqwest::Method::POST,
            INVITATIONS,
            Some(&json!({"email": "p100@example.com", "role": "viewer"})),
            &[],
        )
        .await;
    let e = r.error(429, "RATE_LIMITED").clone();
    assert_eq!(e["details"]["scope"], "invitations", "{e}");
    assert_eq!(e["details"]["limit"], 100);
    let wait: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((86_000..=86_400).contains(&wait), "{wait}");
    assert_eq!(count(&app, "SELECT count(*) FROM invitations"), before);
    // Another workspace of theirs is no way around it.
    let side: Value = admin
        .post("/v1/workspaces", json!({"name": "Side"}), 201)
        .await;
    let _: Value = admin
        .post(
            "/v1/workspaces/select",
            json!({"workspace_id": side["data"]["id"]}),
            200,
        )
        .await;
    admin
        .post_err(
            INVITATIONS,
            json!({"email": "p100@example.com", "role": "viewer"}),
            429,
            "RATE_LIMITED",
        )
        .await;
    app.state
        .services
        .clock
        .advance(time::Duration::hours(24) + time::Duration::seconds(1));
    invite(&admin, "p100@example.com", "viewer").await;
}

/// The "invited you" notice of someone who has an account follows its
/// invitation: replaced by a new invitation, revoked or accepted, it is
/// marked read, so the bell never points at an invitation that is gone.
#[tokio::test]
async fn an_invitation_notice_is_read_once_its_invitation_ends() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let ana = app.outsider();
    let email = ana.person().email.clone();
    let unread = || async {
        let page: Value = ana.get("/v1/notifications?unread_only=true", 200).await;
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["kind"] == "invitation.received")
            .count()
    };
    invite(&admin, &email, "viewer").await;
    assert_eq!(unread().await, 1);
    // The notice leads to the Workspaces page, which lists the invitation
    // and says where its link is.
    let page: Value = ana.get("/v1/notifications", 200).await;
    assert_eq!(
        page["data"][0]["url"],
        format!("{}/app/workspaces", app.base),
        "{page}"
    );
    let ana_b = app.browser(ana.person()).await;
    let html = ana_b.page("/app/workspaces").await;
    assert!(html.contains(r#"id="invited""#), "{html}");
    assert!(
        html.contains("<strong>Test</strong>, as viewer, from "),
        "{html}"
    );
    // No mail server here: hds sent no e-mail, so the page sends Ana to
    // whoever invited her, not to her mailbox.
    assert!(
        html.contains(&format!(
            "hds sent no e-mail for this one: ask {} for the invitation link they were shown.",
            admin.person().email
        )),
        "{html}"
    );
    assert!(!html.contains("invitation e-mail sent to"), "{html}");
    // Invited again (a new role): the old notice is read, the new one not.
    let (_, token) = invite(&admin, &email, "reviewer").await;
    assert_eq!(unread().await, 1);
    let html = ana_b.page("/app/workspaces").await;
    assert!(
        html.contains("<strong>Test</strong>, as reviewer"),
        "{html}"
    );
    assert!(
        !html.contains("as viewer"),
        "the replaced one is gone: {html}"
    );
    // Accepted: read.
    let _: Value = ana
        .post(
            "/v1/workspace-invitations/accept",
            json!({ "token": token }),
            200,
        )
        .await;
    assert_eq!(unread().await, 0);
    let html = ana_b.page("/app/workspaces").await;
    assert!(!html.contains(r#"id="invited""#), "accepted: {html}");

    // Revoked: read.
    let bob = app.outsider();
    let (inv, _) = invite(&admin, &bob.person().email, "viewer").await;
    let bob_unread: Value = bob.get("/v1/notifications/summary", 200).await;
    assert_eq!(
        bob_unread["by_kind"]["invitation.received"], 1,
        "{bob_unread}"
    );
    let _: Value = admin
        .delete(
            &format!("{INVITATIONS}/{}", inv["id"].as_str().unwrap()),
            200,
        )
        .await;
    let bob_unread: Value = bob.get("/v1/notifications/summary", 200).await;
    assert!(
        bob_unread["by_kind"].get("invitation.received").is_none(),
        "{bob_unread}"
    );
}

/// An invitation revoked because whoever sent it may no longer invite (their
/// role changed) ends its notice too, and the invited person's open pages
/// hear of it at once: their header bell is live.
#[tokio::test]
async fn an_invitation_revoked_with_its_inviters_role_wakes_the_invited_persons_pages() {
    let app = TestApp::spawn().await;
    let owner = app.admin();
    let carol = app.member(Role::Admin);
    let bob = app.outsider();
    invite(&carol, &bob.person().email, "viewer").await;
    let summary: Value = bob.get("/v1/notifications/summary", 200).await;
    assert_eq!(summary["by_kind"]["invitation.received"], 1, "{summary}");

    let page = app.browser(bob.person()).await;
    let before = page.change_view().await;
    // Nothing changed yet: a held request would wait, so ask in the
    // background and make the change while it waits.
    let waiting = {
        let url = page.url(&format!("/app/events?since={before}"));
        let req = page.http().get(&url);
        tokio::spawn(async move { req.send().await.unwrap().text().await.unwrap() })
    };
    let _: Value = owner
        .patch(
            &format!("/v1/workspaces/members/{}", carol.person().id),
            json!({ "role": "reviewer" }),
            200,
        )
        .await;
    let text = tokio::time::timeout(std::time::Duration::from_secs(10), waiting)
        .await
        .expect("the held event request answers once the invitation ends")
        .unwrap();
    assert!(text.contains("event: changed"), "{text}");
    let summary: Value = bob.get("/v1/notifications/summary", 200).await;
    assert!(
        summary["by_kind"].get("invitation.received").is_none(),
        "{summary}"
    );
    assert_ne!(page.change_view().await, before);
}
