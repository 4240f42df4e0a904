//! Workspaces and members (guide: "Workspaces and members"): the active
//! workspace per session or token, isolation between workspaces, the role
//! matrix, the last owner, and bad input on every route.

use hds::domain::access::Role;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Actor, TestApp, two_options};

/// Adds `who` to `workspace` with `role`, straight in the store: invitations
/// (another route) are how the product does it.
fn join(app: &TestApp, workspace: &str, who: &Actor, role: Role) {
    let conn = hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap();
    hds::store::workspaces::add_member(&conn, workspace, &who.person().id, role, &app.now())
        .unwrap();
}

fn ids(list: &Value, key: &str) -> Vec<String> {
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v[key].as_str().unwrap().to_owned())
        .collect()
}

fn member_path(who: &Actor) -> String {
    format!("/v1/workspaces/members/{}", who.person().id)
}

async fn role_of(app: &TestApp, who: &Actor) -> Option<String> {
    let list: Value = app.admin().get("/v1/workspaces/members", 200).await;
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["user_id"] == who.person().id.as_str())
        .map(|m| m["role"].as_str().unwrap().to_owned())
}

/// The workspace `who` acts on now.
async fn active_of(who: &Actor) -> String {
    let list: Value = who.get("/v1/workspaces", 200).await;
    let active: Vec<&Value> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["active"] == true)
        .collect();
    assert_eq!(active.len(), 1, "{list}");
    active[0]["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn each_session_and_token_selects_its_own_workspace_and_sees_only_its_data() {
    let app = TestApp::spawn().await;
    let owner = app.admin();
    let a_list: Value = owner.get("/v1/workspaces", 200).await;
    assert_eq!(a_list["object"], "list");
    assert_eq!(a_list["has_more"], false);
    let a = &a_list["data"][0];
    assert_eq!(a_list["data"].as_array().unwrap().len(), 1);
    assert_eq!(
        (a["role"].as_str(), a["active"].as_bool()),
        (Some("owner"), Some(true))
    );
    assert_eq!(a["kind"], "team");
    assert!(a["created_at"].is_string() && a["name"].is_string());
    let ws_a = a["id"].as_str().unwrap().to_owned();

    // Bob owns workspace B, with a Source and an open Action there.
    let bob = app.outsider();
    let ws_b = active_of(&bob).await;
    let made: Value = bob.post("/v1/sources", json!({"name": "B bot"}), 201).await;
    let b_key = made["secrets"]["live_key"].as_str().unwrap();
    let b_action: Value = app
        .bearer(b_key)
        .post("/v1/actions", two_options("In B"), 201)
        .await;
    let a_action = app.create_action(two_options("In A")).await;

    // Bob, a member of B only: 404 on A's members, cannot select A, sees B only.
    let alice = app.member(Role::Reviewer);
    bob.patch_err(
        &member_path(&alice),
        json!({"role": "viewer"}),
        404,
        "MEMBER_NOT_FOUND",
    )
    .await;
    bob.call(Method::DELETE, &member_path(&alice), None, &[])
        .await
        .error(404, "MEMBER_NOT_FOUND");
    let err = bob
        .post_err(
            "/v1/workspaces/select",
            json!({"workspace_id": ws_a}),
            404,
            "WORKSPACE_NOT_FOUND",
        )
        .await;
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("GET /v1/workspaces")
    );
    let members: Value = bob.get("/v1/workspaces/members", 200).await;
    assert_eq!(ids(&members, "email"), vec![bob.person().email.clone()]);
    bob.get_err(
        &format!("/v1/actions/{}", a_action["id"].as_str().unwrap()),
        404,
        "ACTION_NOT_FOUND",
    )
    .await;
    assert_eq!(active_of(&bob).await, ws_b);

    // Alice: reviewer of A, admin of B. Her token starts on A (oldest membership).
    join(&app, &ws_b, &alice, Role::Admin);
    let hers: Value = alice.get("/v1/workspaces", 200).await;
    assert_eq!(ids(&hers, "id"), vec![ws_a.clone(), ws_b.clone()]);
    assert_eq!(hers["data"][1]["role"], "admin");
    assert_eq!(active_of(&alice).await, ws_a);
    let inbox: Value = alice.get("/v1/me/actions", 200).await;
    assert_eq!(ids(&inbox, "id"), vec![a_action["id"].as_str().unwrap()]);

    // Her browser selects B: that session sees B's inbox and Sources; the token still A.
    let browser = app.browser(alice.person()).await;
    let picked: Value = browser
        .post("/v1/workspaces/select", json!({"workspace_id": ws_b}), 200)
        .await;
    assert_eq!(picked["data"]["id"], ws_b.as_str());
    assert_eq!(
        (
            picked["data"]["active"].as_bool(),
            picked["data"]["role"].as_str()
        ),
        (Some(true), Some("admin"))
    );
    let inbox: Value = browser.get("/v1/me/actions", 200).await;
    assert_eq!(
        ids(&inbox, "id"),
        vec![b_action["data"]["id"].as_str().unwrap()]
    );
    let sources: Value = browser.get("/v1/sources", 200).await;
    assert_eq!(ids(&sources, "name"), vec!["B bot"]);
    let boot: Value = browser.get("/v1/bootstrap", 200).await;
    assert_eq!(boot["data"]["active_workspace"]["id"], ws_b.as_str());
    let members: Value = browser.get("/v1/workspaces/members", 200).await;
    assert_eq!(members["data"].as_array().unwrap().len(), 2);
    assert_eq!(active_of(&alice).await, ws_a);
    let sources: Value = alice.get("/v1/sources", 200).await;
    assert!(!ids(&sources, "name").contains(&"B bot".to_owned()));

    // One Action by id works in any workspace she belongs to, whatever is active.
    let b_id = b_action["data"]["id"].as_str().unwrap();
    let got: Value = alice.get(&format!("/v1/actions/{b_id}"), 200).await;
    let decided: Value = alice
        .post(
            &format!("/v1/actions/{b_id}/decision"),
            json!({"action_version": 1, "fingerprint": got["data"]["fingerprint"], "option_id": "approve"}),
            200,
        )
        .await;
    assert_eq!(decided["data"]["status"], "resolved");

    // Removed from B, her browser falls back to her oldest membership (A).
    bob.call(Method::DELETE, &member_path(&alice), None, &[])
        .await
        .ok(204);
    assert_eq!(active_of(&browser).await, ws_a);
    let sources: Value = browser.get("/v1/sources", 200).await;
    assert!(!ids(&sources, "name").contains(&"B bot".to_owned()));
    browser
        .post_err(
            "/v1/workspaces/select",
            json!({"workspace_id": ws_b}),
            404,
            "WORKSPACE_NOT_FOUND",
        )
        .await;
    let creds = app.count_rows("user_tokens WHERE workspace_id IS NOT NULL");
    assert_eq!(creds, 0);
}

#[tokio::test]
async fn anyone_signed_in_creates_a_team_workspace_they_own() {
    let app = TestApp::spawn().await;
    let viewer = app.member(Role::Viewer);
    let made: Value = viewer
        .post("/v1/workspaces", json!({"name": "  Side project  "}), 201)
        .await;
    let w = &made["data"];
    assert_eq!(
        (w["name"].as_str(), w["kind"].as_str(), w["role"].as_str()),
        (Some("Side project"), Some("team"), Some("owner"))
    );
    // Creating does not select it.
    assert_eq!(w["active"], false);
    let all: Value = viewer.get("/v1/workspaces", 200).await;
    assert_eq!(all["data"].as_array().unwrap().len(), 2);
    assert_eq!(all["data"][1]["id"], w["id"]);
    let _: Value = viewer
        .post(
            "/v1/workspaces/select",
            json!({"workspace_id": w["id"]}),
            200,
        )
        .await;
    let members: Value = viewer.get("/v1/workspaces/members", 200).await;
    assert_eq!(ids(&members, "email"), vec![viewer.person().email.clone()]);
    assert_eq!(members["data"][0]["role"], "owner");
    assert!(members["data"][0]["joined_at"].is_string());
    // Now an owner there: Sources may be created in it.
    let _: Value = viewer
        .post("/v1/sources", json!({"name": "side bot"}), 201)
        .await;
    app.anonymous()
        .post_err("/v1/workspaces", json!({"name": "x"}), 401, "AUTH_REQUIRED")
        .await;
}

#[tokio::test]
async fn the_role_matrix_decides_who_changes_and_removes_whom() {
    let app = TestApp::spawn().await;
    let owner = app.admin();
    let admin = app.member(Role::Admin);
    let reviewer = app.member(Role::Reviewer);
    let viewer = app.member(Role::Viewer);
    let target = app.member(Role::Viewer);

    // Everyone may read the list.
    for who in [&owner, &admin, &reviewer, &viewer] {
        let list: Value = who.get("/v1/workspaces/members", 200).await;
        assert_eq!(list["data"].as_array().unwrap().len(), 5);
        assert_eq!(list["data"][0]["role"], "owner");
    }

    // Reviewers and viewers manage no one: 403, required_role admin.
    for who in [&reviewer, &viewer] {
        let e = who
            .patch_err(
                &member_path(&target),
                json!({"role": "reviewer"}),
                403,
                "FORBIDDEN",
            )
            .await;
        assert_eq!(e["details"]["required_role"], "admin");
        let r = who
            .call(Method::DELETE, &member_path(&target), None, &[])
            .await;
        assert_eq!(
            r.error(403, "FORBIDDEN")["details"]["required_role"],
            "admin"
        );
        let e = who
            .patch_err(
                &member_path(who),
                json!({"role": "owner"}),
                403,
                "FORBIDDEN",
            )
            .await;
        assert_eq!(e["details"]["required_role"], "admin");
    }
    assert_eq!(role_of(&app, &target).await.as_deref(), Some("viewer"));

    // Admins manage everyone but owners, and never grant owner.
    let e = admin
        .patch_err(
            &member_path(&owner),
            json!({"role": "admin"}),
            403,
            "FORBIDDEN",
        )
        .await;
    assert_eq!(e["details"]["required_role"], "owner");
    let r = admin
        .call(Method::DELETE, &member_path(&owner), None, &[])
        .await;
    assert_eq!(
        r.error(403, "FORBIDDEN")["details"]["required_role"],
        "owner"
    );
    let e = admin
        .patch_err(
            &member_path(&target),
            json!({"role": "owner"}),
            403,
            "FORBIDDEN",
        )
        .await;
    assert_eq!(e["details"]["required_role"], "owner");
    let e = admin
        .patch_err(
            &member_path(&admin),
            json!({"role": "owner"}),
            403,
            "FORBIDDEN",
        )
        .await;
    assert_eq!(e["details"]["required_role"], "owner");
    let changed: Value = admin
        .patch(&member_path(&target), json!({"role": "reviewer"}), 200)
        .await;
    assert_eq!(changed["data"]["role"], "reviewer");
    assert_eq!(changed["data"]["email"], target.person().email.as_str());
    assert_eq!(changed["data"]["user_id"], target.person().id.as_str());
    let changed: Value = admin
        .patch(&member_path(&target), json!({"role": "admin"}), 200)
        .await;
    assert_eq!(changed["data"]["role"], "admin");
    // The same role again: 200, nothing changes.
    let same: Value = admin
        .patch(&member_path(&target), json!({"role": "admin"}), 200)
        .await;
    assert_eq!(same["data"]["role"], "admin");
    admin
        .call(Method::DELETE, &member_path(&viewer), None, &[])
        .await
        .ok(204);
    assert_eq!(role_of(&app, &viewer).await, None);
    admin
        .call(Method::DELETE, &member_path(&viewer), None, &[])
        .await
        .error(404, "MEMBER_NOT_FOUND");
    // The removed viewer belongs to no workspace now.
    let theirs: Value = viewer.get("/v1/workspaces", 200).await;
    assert_eq!(theirs["data"], json!([]));
    viewer
        .get_err("/v1/workspaces/members", 404, "WORKSPACE_NOT_FOUND")
        .await;

    // Owners grant and remove owner.
    let up: Value = owner
        .patch(&member_path(&reviewer), json!({"role": "owner"}), 200)
        .await;
    assert_eq!(up["data"]["role"], "owner");
    let e = admin
        .patch_err(
            &member_path(&reviewer),
            json!({"role": "viewer"}),
            403,
            "FORBIDDEN",
        )
        .await;
    assert_eq!(e["details"]["required_role"], "owner");
    let down: Value = owner
        .patch(&member_path(&reviewer), json!({"role": "viewer"}), 200)
        .await;
    assert_eq!(down["data"]["role"], "viewer");
    owner
        .call(Method::DELETE, &member_path(&target), None, &[])
        .await
        .ok(204);
    // An admin demoted mid-way loses the power at once.
    let _: Value = owner
        .patch(&member_path(&admin), json!({"role": "reviewer"}), 200)
        .await;
    admin
        .patch_err(
            &member_path(&reviewer),
            json!({"role": "admin"}),
            403,
            "FORBIDDEN",
        )
        .await;
    assert_eq!(role_of(&app, &reviewer).await.as_deref(), Some("viewer"));
    // Unknown ids.
    owner
        .patch_err(
            "/v1/workspaces/members/usr_nobody",
            json!({"role": "viewer"}),
            404,
            "MEMBER_NOT_FOUND",
        )
        .await;
    owner
        .call(
            Method::DELETE,
            "/v1/workspaces/members/usr_nobody",
            None,
            &[],
        )
        .await
        .error(404, "MEMBER_NOT_FOUND");
}

#[tokio::test]
async fn the_last_owner_can_be_neither_demoted_nor_removed_even_concurrently() {
    let app = TestApp::spawn().await;
    let owner = app.admin();
    let e = owner
        .patch_err(
            &member_path(&owner),
            json!({"role": "admin"}),
            409,
            "LAST_OWNER",
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("last owner"), "{e}");
    owner
        .call(Method::DELETE, &member_path(&owner), None, &[])
        .await
        .error(409, "LAST_OWNER");
    assert_eq!(role_of(&app, &owner).await.as_deref(), Some("owner"));

    let second = app.member(Role::Admin);
    let (to_admin, to_reviewer, to_viewer) = (
        json!({"role": "admin"}),
        json!({"role": "reviewer"}),
        json!({"role": "viewer"}),
    );
    let (owner_path, second_path) = (member_path(&owner), member_path(&second));
    for round in 0..6 {
        let _: Value = owner
            .patch(&second_path, json!({"role": "owner"}), 200)
            .await;
        // Both owners step down at once (or remove each other): one must stay.
        let (r1, r2) = if round % 2 == 0 {
            tokio::join!(
                owner.call(Method::PATCH, &owner_path, Some(&to_admin), &[]),
                second.call(Method::PATCH, &second_path, Some(&to_reviewer), &[]),
            )
        } else {
            tokio::join!(
                owner.call(Method::DELETE, &second_path, None, &[]),
                second.call(Method::PATCH, &owner_path, Some(&to_viewer), &[]),
            )
        };
        let statuses = [r1.status.as_u16(), r2.status.as_u16()];
        let ok = statuses.iter().filter(|s| **s == 200 || **s == 204).count();
        assert_eq!(ok, 1, "round {round}: {statuses:?} {} {}", r1.body, r2.body);
        let refused = if r1.status.is_success() { &r2 } else { &r1 };
        // The loser is refused as the last owner, or lost the power to act first.
        let code = refused.body["error"]["code"].as_str().unwrap();
        assert!(
            [
                "LAST_OWNER",
                "FORBIDDEN",
                "MEMBER_NOT_FOUND",
                "WORKSPACE_NOT_FOUND"
            ]
            .contains(&code),
            "{code}"
        );
        let owners = app.count_rows("memberships WHERE role = 'owner' AND workspace_id = (SELECT id FROM workspaces ORDER BY created_at LIMIT 1)");
        assert_eq!(owners, 1, "round {round}");
        // Put things back: the init owner owns, `second` is an admin member.
        let conn = hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap();
        let ws = hds::store::workspaces::oldest(&conn).unwrap().unwrap();
        conn.execute(
            "DELETE FROM memberships WHERE workspace_id = ?1 AND user_id IN (?2, ?3)",
            [&ws, &owner.person().id, &second.person().id],
        )
        .unwrap();
        hds::store::workspaces::add_member(&conn, &ws, &owner.person().id, Role::Owner, &app.now())
            .unwrap();
        hds::store::workspaces::add_member(
            &conn,
            &ws,
            &second.person().id,
            Role::Admin,
            &app.now(),
        )
        .unwrap();
    }
}

#[tokio::test]
async fn bad_input_on_every_workspace_route_is_refused_and_writes_nothing() {
    let app = TestApp::spawn().await;
    let owner = app.admin();
    let viewer = app.member(Role::Viewer);
    let workspaces = app.count_rows("workspaces");
    let long = "x".repeat(101);
    for (body, field, says) in [
        (json!({"name": ""}), "name", "1-100 characters"),
        (json!({"name": "   "}), "name", "1-100 characters"),
        (
            json!({"name": "\u{200b}\u{feff}"}),
            "name",
            "invisible characters",
        ),
        (json!({"name": long}), "name", "1-100 characters"),
        (json!({"name": "two\nlines"}), "name", "one line"),
        (json!({"name": "tab\there"}), "name", "one line"),
        (
            json!({"name": "nul\u{0}"}),
            "name",
            "NUL characters are not allowed",
        ),
        (json!({"name": "bell\u{7}"}), "name", "one line"),
        (
            json!({"name": "ok", "kind": "personal"}),
            "kind",
            "unknown field",
        ),
        (json!({}), "name", "missing field"),
        (json!({"name": 5}), "name", ""),
    ] {
        let e = owner
            .post_err("/v1/workspaces", body.clone(), 422, "VALIDATION_ERROR")
            .await;
        let text = e.to_string();
        assert!(text.contains(field) && text.contains(says), "{body}: {e}");
    }
    let r = owner
        .raw(Method::POST, "/v1/workspaces", r#"{"name":"a","name":"b"}"#)
        .await;
    r.error(422, "VALIDATION_ERROR");
    assert_eq!(app.count_rows("workspaces"), workspaces);

    let ws = active_of(&owner).await;
    for body in [
        json!({"workspace_id": 5}),
        json!({"workspace_id": ws, "active": true}),
        json!({}),
    ] {
        owner
            .post_err(
                "/v1/workspaces/select",
                body.clone(),
                422,
                "VALIDATION_ERROR",
            )
            .await;
    }
    for unknown in ["ws_nope", "", "ws_\n"] {
        owner
            .post_err(
                "/v1/workspaces/select",
                json!({"workspace_id": unknown}),
                404,
                "WORKSPACE_NOT_FOUND",
            )
            .await;
    }
    assert_eq!(
        app.count_rows("user_tokens WHERE workspace_id IS NOT NULL"),
        0
    );

    let path = member_path(&viewer);
    for (body, says) in [
        (json!({"role": "root"}), "`root` is not a role"),
        (json!({"role": "Owner"}), "is not a role"),
        (json!({"role": ""}), "is not a role"),
        (
            json!({"role": "admin", "workspace_id": ws}),
            "unknown field",
        ),
        (json!({}), "missing field"),
        (json!({"role": null}), "role"),
    ] {
        let e = owner
            .patch_err(&path, body.clone(), 422, "VALIDATION_ERROR")
            .await;
        assert!(e.to_string().contains(says), "{body}: {e}");
    }
    let r = owner
        .raw(Method::PATCH, &path, r#"{"role":"viewer","role":"owner"}"#)
        .await;
    r.error(422, "VALIDATION_ERROR");
    assert_eq!(role_of(&app, &viewer).await.as_deref(), Some("viewer"));
    // A viewer's bad body is refused before their role is looked at: 422.
    viewer
        .patch_err(&path, json!({"role": "root"}), 422, "VALIDATION_ERROR")
        .await;
    app.anonymous()
        .get_err("/v1/workspaces/members", 401, "AUTH_REQUIRED")
        .await;
    assert_eq!(app.count_rows("memberships"), 2);
}

#[tokio::test]
async fn the_dashboard_switches_creates_and_offers_only_allowed_member_changes() {
    let app = TestApp::spawn().await;
    let owner = app.admin();
    let admin = app.member(Role::Admin);
    let reviewer = app.member(Role::Reviewer);
    let browser = app.browser(admin.person()).await;
    let csrf = browser.csrf().to_owned();

    // An admin is offered changes for the reviewer (never owner), none for the owner.
    let page = browser.page("/app/members").await;
    let reviewer_form = format!("/app/members/{}/role", reviewer.person().id);
    let owner_form = format!("/app/members/{}/role", owner.person().id);
    assert!(page.contains(&reviewer_form), "{page}");
    assert!(!page.contains(&owner_form));
    assert!(!page.contains(&format!("/app/members/{}/remove", owner.person().id)));
    assert!(!page.contains(r#"<option value="owner">"#));
    // The sole owner is offered no demotion or removal of themself: the
    // API would refuse it (LAST_OWNER).
    let ob = app.browser(owner.person()).await;
    let own = ob.page("/app/members").await;
    assert!(own.contains(&reviewer_form), "{own}");
    assert!(!own.contains(&owner_form), "{own}");
    assert!(!own.contains(&format!("/app/members/{}/remove", owner.person().id)));
    assert!(
        !page.contains("INVITATIONS"),
        "the marker is a template comment"
    );
    // A reviewer sees the list and no forms.
    let rb = app.browser(reviewer.person()).await;
    let page = rb.page("/app/members").await;
    assert!(page.contains(&owner.person().email) && !page.contains("/role\""));

    // The form changes the role as the API would.
    let r = browser
        .post_form(
            &reviewer_form,
            Some(&app.base),
            &[("_csrf", &csrf), ("role", "viewer")],
        )
        .await;
    assert_eq!(r.status(), 303);
    assert_eq!(role_of(&app, &reviewer).await.as_deref(), Some("viewer"));
    // Granting owner by a crafted form is refused with the API's rule.
    let r = browser
        .post_form(
            &reviewer_form,
            Some(&app.base),
            &[("_csrf", &csrf), ("role", "owner")],
        )
        .await;
    assert_eq!(r.status(), 403);
    assert!(r.text().await.unwrap().contains("only owners"));
    // A removal is confirmed first, but only for someone who may make it:
    // a reviewer, or an admin aiming at the owner, gets the refusal at once.
    let owner_removal = format!("/app/members/{}/remove", owner.person().id);
    let rcsrf = rb.csrf().to_owned();
    for (who, token, status, says) in [
        (
            &rb,
            &rcsrf,
            403,
            "only workspace owners and admins manage members",
        ),
        (&browser, &csrf, 403, "only owners"),
    ] {
        let r = who
            .post_form(&owner_removal, Some(&app.base), &[("_csrf", token)])
            .await;
        assert_eq!(r.status(), status);
        let text = r.text().await.unwrap();
        assert!(!text.contains("Remove this member?"), "{text}");
        assert!(text.contains(says), "{text}");
    }
    let r = browser
        .post_form(
            &format!("/app/members/{}/remove", reviewer.person().id),
            Some(&app.base),
            &[("_csrf", &csrf)],
        )
        .await;
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("Remove this member?"));
    // Without the CSRF token nothing happens.
    let r = browser
        .post_form(&reviewer_form, Some(&app.base), &[("role", "admin")])
        .await;
    assert_eq!(r.status(), 403);
    assert_eq!(role_of(&app, &reviewer).await.as_deref(), Some("viewer"));

    // New workspace: created, owned, and this session switches to it.
    let r = browser
        .post_form(
            "/app/workspaces",
            Some(&app.base),
            &[("_csrf", &csrf), ("name", "Night shift")],
        )
        .await;
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/app/members?done=created");
    let page = browser.page("/app/members?done=created").await;
    assert!(
        page.contains("Night shift") && page.contains("You are owner here"),
        "{page}"
    );
    // Its only member cannot leave, and is told what can be done instead.
    assert!(
        page.contains("You are its only member and owner: invite someone on the"),
        "{page}"
    );
    assert!(!page.contains("make another member owner"), "{page}");
    let r = browser
        .post_form(
            "/app/workspaces",
            Some(&app.base),
            &[("_csrf", &csrf), ("name", "a\u{7}b")],
        )
        .await;
    assert_eq!(r.status(), 422);
    // The refused name comes back in its box, to be corrected.
    let html = r.text().await.unwrap();
    assert!(html.contains("value=\"a\u{7}b\""), "{html}");
    assert_eq!(app.count_rows("workspaces"), 2);
    // The header's switcher lists both and goes back.
    let page = browser.page("/app").await;
    assert!(page.contains(r#"action="/app/workspaces/select""#) && page.contains("Night shift"));
    let ws_a = hds::store::workspaces::oldest(
        &hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap(),
    )
    .unwrap()
    .unwrap();
    let r = browser
        .post_form(
            "/app/workspaces/select",
            Some(&app.base),
            &[("_csrf", &csrf), ("workspace_id", &ws_a)],
        )
        .await;
    assert_eq!(r.status(), 303);
    assert_eq!(active_of(&browser).await, ws_a);
    // `next` leads back to a local page; anything else (another site, a
    // control character that cannot be a header) goes to the inbox.
    for (next, to) in [
        ("/app/runs?status=failed", "/app/runs?status=failed"),
        ("/app\r\nSet-Cookie: x=1", "/app"),
        ("/app/x\u{7f}", "/app"),
        ("//evil.example/app", "/app"),
        ("/app/x/../../v1/account", "/app"),
    ] {
        let r = browser
            .post_form(
                "/app/workspaces/select",
                Some(&app.base),
                &[("_csrf", &csrf), ("workspace_id", &ws_a), ("next", next)],
            )
            .await;
        assert_eq!(r.status(), 303, "{next:?}");
        assert_eq!(r.headers()["location"], to, "{next:?}");
    }
    // The admin's bearer token was never switched.
    assert_eq!(active_of(&admin).await, ws_a);
    let r = browser
        .post_form(
            "/app/workspaces/select",
            Some(&app.base),
            &[("_csrf", &csrf), ("workspace_id", "ws_other")],
        )
        .await;
    assert_eq!(r.status(), 404);
    let page = browser.page("/app/workspaces").await;
    assert!(page.contains("Night shift") && page.contains("Create workspace"));
    // The list starts at the member's own role, not at a role to give.
    let promoted = app.member(Role::Viewer);
    let promoted_form = format!("/app/members/{}/role", promoted.person().id);
    let own = ob.page("/app/members").await;
    assert!(
        own.contains(r#"<option value="" selected disabled>viewer: change to…</option>"#),
        "{own}"
    );
    // An owner making someone an owner is asked first; nothing changes until
    // they confirm.
    let ocsrf = ob.csrf().to_owned();
    let r = ob
        .post_form(
            &promoted_form,
            Some(&app.base),
            &[("_csrf", &ocsrf), ("role", "owner")],
        )
        .await;
    assert_eq!(r.status(), 200);
    let ask = r.text().await.unwrap();
    assert!(ask.contains("Make this member an owner?"), "{ask}");
    assert!(ask.contains(&promoted.person().email), "{ask}");
    assert_eq!(role_of(&app, &promoted).await.as_deref(), Some("viewer"));
    let r = ob
        .post_form(
            &promoted_form,
            Some(&app.base),
            &[("_csrf", &ocsrf), ("role", "owner"), ("confirmed", "yes")],
        )
        .await;
    assert_eq!(r.status(), 303);
    assert_eq!(role_of(&app, &promoted).await.as_deref(), Some("owner"));
}

/// Everything of workspace A a member of workspace B might reach for, in the
/// API and the dashboard: each is 404 (the same answer as an id that does not
/// exist) and nothing of A changes.
#[tokio::test]
async fn a_member_of_another_workspace_reaches_nothing_of_a_in_the_api_or_the_dashboard() {
    let app = TestApp::spawn().await;
    let owner = app.admin();
    let ws_a = active_of(&owner).await;
    let alice = app.member(Role::Reviewer);
    let a = app.create_action(two_options("Only for A's eyes")).await;
    let id = a["id"].as_str().unwrap();
    let _: Value = alice
        .post(
            &format!("/v1/actions/{id}/comments"),
            json!({"body": "A's note"}),
            201,
        )
        .await;
    let inv: Value = owner
        .post(
            "/v1/workspaces/invitations",
            json!({"email": "zed.invited@example.com", "role": "viewer"}),
            201,
        )
        .await;
    let inv_id = inv["data"]["id"].as_str().unwrap();
    let seen_by_a = |a: Value| {
        json!([
            a["data"]["history"],
            a["data"]["assignee"],
            a["data"]["snoozed_until"],
            a["data"]["comment_count"],
            a["data"]["status"]
        ])
    };
    let before = seen_by_a(owner.get(&format!("/v1/actions/{id}"), 200).await);
    let events = app.count_rows("action_events");

    // Bob owns B: the strongest role there, none in A.
    let bob = app.outsider();
    let ws_b = active_of(&bob).await;
    let not_found = bob
        .get_err("/v1/actions/act_doesnotexist", 404, "ACTION_NOT_FOUND")
        .await;
    let soon = hds::domain::time::format(app.state.services.clock.now() + time::Duration::hours(1));
    for (method, path, body) in [
        (Method::GET, format!("/v1/actions/{id}"), None),
        (Method::GET, format!("/v1/actions/{id}/comments"), None),
        (
            Method::POST,
            format!("/v1/actions/{id}/comments"),
            Some(json!({"body": "hi"})),
        ),
        (Method::POST, format!("/v1/actions/{id}/claim"), None),
        (
            Method::PATCH,
            format!("/v1/actions/{id}/assignment"),
            Some(json!({"assignee_user_id": bob.person().id})),
        ),
        (
            Method::PATCH,
            format!("/v1/actions/{id}/assignment"),
            Some(json!({"assignee_user_id": null})),
        ),
        (
            Method::POST,
            format!("/v1/actions/{id}/snooze"),
            Some(json!({"until": soon})),
        ),
        (
            Method::POST,
            format!("/v1/actions/{id}/snooze"),
            Some(json!({"until": null})),
        ),
        (
            Method::POST,
            format!("/v1/actions/{id}/decision"),
            Some(
                json!({"action_version": 1, "fingerprint": a["fingerprint"], "option_id": "approve"}),
            ),
        ),
    ] {
        let r = bob.call(method.clone(), &path, body.as_ref(), &[]).await;
        let e = r.error(404, "ACTION_NOT_FOUND");
        assert_eq!(e["message"], not_found["message"], "{method} {path}");
        assert_eq!(e["details"], json!({}), "{method} {path}: nothing about A");
    }
    // No filter of the inbox lets A's Actions through.
    for q in [
        "environment=all&status=all",
        "scope=all&status=all&environment=all",
        "routing=unassigned&environment=all",
        "search=eyes&status=all",
        "status=snoozed",
    ] {
        let list: Value = bob.get(&format!("/v1/me/actions?{q}"), 200).await;
        assert_eq!(list["data"], json!([]), "{q}");
    }
    let theirs: Value = bob.get("/v1/workspaces/invitations", 200).await;
    assert_eq!(theirs["data"], json!([]));

    // The dashboard: the same 404s, and no trace of A on B's pages.
    let browser = app.browser(bob.person()).await;
    let csrf = browser.csrf().to_owned();
    let r = browser
        .http()
        .get(browser.url(&format!("/app/actions/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let alice_id = alice.person().id.clone();
    for (path, form) in [
        (format!("/app/actions/{id}/claim"), vec![]),
        (
            format!("/app/actions/{id}/assign"),
            vec![("assignee_user_id", bob.person().id.as_str())],
        ),
        (format!("/app/actions/{id}/snooze"), vec![("preset", "1h")]),
        (format!("/app/actions/{id}/comments"), vec![("body", "hi")]),
        (
            format!("/app/actions/{id}/decide"),
            vec![("option_id", "approve"), ("action_version", "1")],
        ),
        (
            format!("/app/members/{alice_id}/role"),
            vec![("role", "viewer")],
        ),
        (format!("/app/members/{alice_id}/remove"), vec![]),
        (format!("/app/invitations/{inv_id}/revoke"), vec![]),
        (
            "/app/workspaces/select".to_owned(),
            vec![("workspace_id", ws_a.as_str())],
        ),
    ] {
        let mut fields = vec![("_csrf", csrf.as_str())];
        fields.extend(form.iter().copied());
        let r = browser.post_form(&path, Some(&app.base), &fields).await;
        assert_eq!(r.status(), 404, "{path}");
        let html = r.text().await.unwrap();
        assert!(
            !html.contains("Only for A's eyes") && !html.contains(&alice.person().email),
            "{path}"
        );
    }
    for page in [
        "/app",
        "/app/members",
        "/app/invitations",
        "/app/workspaces",
    ] {
        let html = browser.page(page).await;
        for secret in [
            "Only for A's eyes",
            alice.person().email.as_str(),
            "zed.invited@example.com",
            ws_a.as_str(),
        ] {
            assert!(!html.contains(secret), "{page} shows {secret}");
        }
    }
    assert_eq!(active_of(&browser).await, ws_b);
    assert_eq!(active_of(&bob).await, ws_b);

    // Nothing of A moved.
    assert_eq!(
        seen_by_a(owner.get(&format!("/v1/actions/{id}"), 200).await),
        before
    );
    assert_eq!(app.count_rows("action_events"), events);
    assert_eq!(app.count_rows("action_comments"), 1);
    assert_eq!(role_of(&app, &alice).await.as_deref(), Some("reviewer"));
    let list: Value = owner.get("/v1/workspaces/invitations", 200).await;
    assert_eq!(list["data"][0]["status"], "pending");
}

/// Leaving A is the same as never having been in it: a person removed from A
/// who stays in B reaches none of A's Actions, comments or members.
#[tokio::test]
async fn a_person_removed_from_a_workspace_loses_its_actions_at_once() {
    let app = TestApp::spawn().await;
    let owner = app.admin();
    let carol = app.member(Role::Reviewer);
    let bob = app.outsider();
    join(&app, &active_of(&bob).await, &carol, Role::Reviewer);
    let a = app.create_action(two_options("Before she left")).await;
    let id = a["id"].as_str().unwrap();
    let _: Value = carol.get(&format!("/v1/actions/{id}/comments"), 200).await;
    let browser = app.browser(carol.person()).await;
    assert!(
        browser
            .page(&format!("/app/actions/{id}"))
            .await
            .contains("Before she left")
    );

    owner
        .call(Method::DELETE, &member_path(&carol), None, &[])
        .await
        .ok(204);
    for (method, path, body) in [
        (Method::GET, format!("/v1/actions/{id}"), None),
        (Method::GET, format!("/v1/actions/{id}/comments"), None),
        (
            Method::POST,
            format!("/v1/actions/{id}/comments"),
            Some(json!({"body": "still here?"})),
        ),
        (Method::POST, format!("/v1/actions/{id}/claim"), None),
    ] {
        for who in [&carol, &browser] {
            who.call(method.clone(), &path, body.as_ref(), &[])
                .await
                .error(404, "ACTION_NOT_FOUND");
        }
    }
    let r = browser
        .http()
        .get(browser.url(&format!("/app/actions/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // Both of her credentials now act on B, the one workspace she has left.
    let members: Value = carol.get("/v1/workspaces/members", 200).await;
    assert!(
        !members.to_string().contains(&owner.person().email),
        "{members}"
    );
    let inbox: Value = browser
        .get("/v1/me/actions?environment=all&status=all", 200)
        .await;
    assert_eq!(inbox["data"], json!([]));
    assert_eq!(app.count_rows("action_comments"), 0);
    assert_eq!(app.count_rows("action_events WHERE kind != 'created'"), 0);
}

/// A person removed from their last workspace has no inbox: `/app` sends
/// them to the Workspaces page, which says so and offers to create one
/// (it was a 403 page whose only link led back to itself).
#[tokio::test]
async fn a_person_in_no_workspace_is_sent_to_the_workspaces_page() {
    let app = TestApp::spawn().await;
    let reviewer = app.member(Role::Reviewer);
    let browser = app.browser(reviewer.person()).await;
    let r = app
        .admin()
        .call(Method::DELETE, &member_path(&reviewer), None, &[])
        .await;
    assert_eq!(r.status, 204);
    let r = browser
        .http()
        .get(browser.url("/app"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/app/workspaces");
    let page = browser.page("/app/workspaces").await;
    assert!(page.contains("You belong to no workspace yet"), "{page}");
    assert!(
        page.contains("Sign out") || page.contains("signout"),
        "{page}"
    );
    // The header offers no empty workspace switcher, only the link.
    assert!(!page.contains(r#"name="workspace_id""#), "{page}");
    assert!(page.contains(r#"class="small switcher-link""#), "{page}");
    // Their account page leads to Workspaces, not to a workspace's pages.
    let account = browser.page("/app/account").await;
    assert!(
        account.contains(r#"id="account-no-workspace""#),
        "{account}"
    );
    assert!(!account.contains(r#"href="/app/billing""#), "{account}");
    // The API lists nothing, and has no Action to continue a page after.
    let none: serde_json::Value = reviewer.get("/v1/me/actions", 200).await;
    assert_eq!(none["data"], json!([]));
    let action = app
        .create_action(crate::helpers::two_options("Not theirs"))
        .await;
    let e = reviewer
        .get_err(
            &format!(
                "/v1/me/actions?starting_after={}",
                action["id"].as_str().unwrap()
            ),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "starting_after");
    // Every route of the active workspace answers alike: 404, naming the way out.
    for path in [
        "/v1/sources",
        "/v1/workspaces/members",
        "/v1/billing",
        "/v1/runs",
    ] {
        let e = reviewer.get_err(path, 404, "WORKSPACE_NOT_FOUND").await;
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("POST /v1/workspaces"),
            "{path}: {e}"
        );
    }
    reviewer
        .post_err(
            "/v1/sources",
            json!({"name": "x"}),
            404,
            "WORKSPACE_NOT_FOUND",
        )
        .await;
}

/// On every JSON body, unknown fields are reported together before any
/// wrong type (guide: "Errors"), whatever their order: serde alone stops at
/// the first problem in key order.
#[tokio::test]
async fn unknown_fields_are_all_reported_before_a_wrong_type() {
    let app = TestApp::spawn().await;
    let owner = app.admin();
    let action = app
        .create_action(crate::helpers::two_options("Typed"))
        .await;
    let id = action["id"].as_str().unwrap();
    for (path, body) in [
        (
            "/v1/workspaces/invitations".to_owned(),
            json!({"role": 5, "zz": 1, "aa": 2}),
        ),
        (
            "/v1/analytics/events".to_owned(),
            json!({"aa": 1, "properties": 5, "zz": 2}),
        ),
        (
            "/v1/workspaces".to_owned(),
            json!({"name": 5, "aa": 1, "zz": 2}),
        ),
        (
            format!("/v1/actions/{id}/snooze"),
            json!({"until": 5, "aa": 1, "zz": 2}),
        ),
        (
            format!("/v1/actions/{id}/decision"),
            json!({"action_version": "one", "aa": 1, "zz": 2}),
        ),
    ] {
        let e = owner
            .post_err(&path, body.clone(), 422, "VALIDATION_ERROR")
            .await;
        let fields: Vec<&str> = e["details"]["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["field"].as_str().unwrap())
            .collect();
        assert_eq!(fields, ["aa", "zz"], "{path}: {e}");
        let said = e["details"]["errors"][0]["message"].as_str().unwrap();
        assert!(
            said.starts_with("unknown field `aa`; the fields are "),
            "{path}: {said}"
        );
        assert_eq!(e["details"]["errors"][1]["message"], "unknown field `zz`");
    }
    let e = owner
        .post_err(
            "/v1/workspaces/invitations",
            json!({"colour": 1}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(
        e["message"],
        "unknown field `colour`; the fields are email, role"
    );
    // Many unknown keys: twenty named, the rest counted, so the answer
    // stays small whatever the body holds.
    let many: serde_json::Map<String, serde_json::Value> =
        (0..25).map(|i| (format!("k{i:02}"), json!(1))).collect();
    let e = owner
        .post_err("/v1/workspaces", json!(many), 422, "VALIDATION_ERROR")
        .await;
    let listed = e["details"]["errors"].as_array().unwrap();
    assert_eq!(listed.len(), 21);
    assert_eq!(listed[20]["field"], "body");
    assert_eq!(listed[20]["message"], "and 5 more unknown fields");
    assert_eq!(
        e["message"], "25 problems with the request; see details.errors",
        "the message counts every key, not the entries"
    );
    assert_eq!(app.count_rows("invitations"), 0);
    assert_eq!(app.count_rows("workspaces"), 1);
}

/// Any member may leave (remove themselves), whatever their role; the last
/// owner may not until another member is owner. The dashboard offers it on
/// the Members page, behind a confirmation, then shows the Workspaces page.
#[tokio::test]
async fn any_member_may_leave_but_the_last_owner() {
    let app = TestApp::spawn().await;
    let owner = app.admin();
    for role in [Role::Viewer, Role::Reviewer, Role::Admin] {
        let who = app.member(role);
        let r = who
            .call(Method::DELETE, &member_path(&who), None, &[])
            .await;
        assert_eq!(r.status, 204, "{role:?}: {}", r.body);
        assert_eq!(role_of(&app, &who).await, None, "{role:?}");
        let list: Value = who.get("/v1/workspaces", 200).await;
        assert_eq!(list["data"], json!([]), "{role:?}");
    }
    // The last owner stays, told what to do.
    let r = owner
        .call(Method::DELETE, &member_path(&owner), None, &[])
        .await;
    let e = r.error(409, "LAST_OWNER");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("you are the workspace's last owner"),
        "{e}"
    );
    // With a second owner, an owner leaves too.
    let second = app.member(Role::Admin);
    let _: Value = owner
        .patch(&member_path(&second), json!({"role": "owner"}), 200)
        .await;
    let r = second
        .call(Method::DELETE, &member_path(&second), None, &[])
        .await;
    assert_eq!(r.status, 204, "{}", r.body);

    // The dashboard: a viewer sees "Leave", is asked, and lands on Workspaces.
    let viewer = app.member(Role::Viewer);
    let browser = app.browser(viewer.person()).await;
    let page = browser.page("/app/members").await;
    assert!(page.contains(r#"id="leave-workspace""#), "{page}");
    // The owner, with the viewer still there, is told to pass ownership on.
    let page = app.browser(owner.person()).await.page("/app/members").await;
    assert!(
        page.contains("You are its last owner: make another member owner before you leave."),
        "{page}"
    );
    let path = format!("/app/members/{}/remove", viewer.person().id);
    let r = browser
        .post_form(&path, Some(&app.base), &[("_csrf", browser.csrf())])
        .await;
    assert_eq!(r.status(), 200);
    let asked = r.text().await.unwrap();
    assert!(asked.contains("Leave this workspace?"), "{asked}");
    assert_eq!(role_of(&app, &viewer).await.as_deref(), Some("viewer"));
    let r = browser
        .post_form(
            &path,
            Some(&app.base),
            &[("_csrf", browser.csrf()), ("confirmed", "yes")],
        )
        .await;
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/app/workspaces?done=left");
    assert_eq!(role_of(&app, &viewer).await, None);
    let page = browser.page("/app/workspaces?done=left").await;
    assert!(page.contains("You left the workspace"), "{page}");
    // The last owner is told why there is no button.
    let page = app.browser(owner.person()).await.page("/app/members").await;
    assert!(!page.contains(r#"id="leave-workspace""#), "{page}");
    assert!(page.contains("You are its only member and owner"), "{page}");
}

/// Open pages hear of what their reader may see, and of nothing else: an
/// Action created in another workspace does not move a person's view (so
/// not even the timing of a refresh tells them of its activity), one in
/// their own does, and so does a change to their own notices alone.
#[tokio::test]
async fn a_page_is_told_of_changes_in_its_readers_workspaces_only() {
    let app = TestApp::spawn().await;
    let owner = app.admin();
    let bob = app.outsider();
    let made: Value = bob.post("/v1/sources", json!({"name": "B bot"}), 201).await;
    let b_source = app.bearer(made["secrets"]["live_key"].as_str().unwrap());
    let ann_page = app.browser(owner.person()).await;
    let bob_page = app.browser(bob.person()).await;
    let (ann_before, bob_before) = (ann_page.change_view().await, bob_page.change_view().await);

    // Ann's page waits for a change from the view it holds.
    let held = {
        let req = ann_page
            .http()
            .get(ann_page.url("/app/events"))
            .header("last-event-id", &ann_before);
        tokio::spawn(async move { req.send().await.unwrap().text().await.unwrap() })
    };
    let _: Value = b_source.post("/v1/actions", two_options("In B"), 201).await;
    let bob_after = bob_page.change_view().await;
    assert_ne!(bob_after, bob_before, "B's owner is told");
    assert_eq!(ann_page.change_view().await, ann_before, "A's owner is not");
    assert!(!held.is_finished(), "the held stream answered B's change");

    // Bob's own notices move his view alone.
    let _: Value = bob.post("/v1/notifications/read-all", json!({}), 200).await;
    assert_ne!(bob_page.change_view().await, bob_after);
    assert_eq!(ann_page.change_view().await, ann_before);

    // A change in Ann's workspace answers her held stream with her new view.
    app.create_action(two_options("In A")).await;
    let text = tokio::time::timeout(std::time::Duration::from_secs(10), held)
        .await
        .expect("the held stream answers a change in Ann's workspace")
        .unwrap();
    let now = ann_page.change_view().await;
    assert_ne!(now, ann_before);
    assert!(
        text.contains(&format!("id: {now}\n")),
        "{text} (view {now})"
    );
}
