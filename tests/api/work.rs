//! Working on an Action with several people: claim (and its race), assignment,
//! snooze and its return by the clock, comments with mentions, the history,
//! the unchanged binding, closed Actions, and separation of duties.

use hds::domain::access::Role;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Actor, TestApp, python, two_options};

fn at(a: &Value, what: &str) -> String {
    format!("/v1/actions/{}/{what}", a["id"].as_str().unwrap())
}

fn id_of(who: &Actor) -> Value {
    json!(who.person().id)
}

async fn read(who: &Actor, a: &Value) -> Value {
    who.get::<Value>(&format!("/v1/actions/{}", a["id"].as_str().unwrap()), 200)
        .await["data"]
        .clone()
}

fn kinds(detail: &Value) -> Vec<String> {
    detail["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

fn binding(a: &Value) -> (Value, Value) {
    (a["action_version"].clone(), a["fingerprint"].clone())
}

#[tokio::test]
async fn two_reviewers_race_to_claim_and_exactly_one_wins() {
    let app = TestApp::spawn().await;
    let (r1, r2) = (app.member(Role::Reviewer), app.member(Role::Reviewer));
    for round in 0..5 {
        let a = app
            .create_action(two_options(&format!("Race {round}")))
            .await;
        let path = at(&a, "claim");
        let (x, y) = tokio::join!(
            r1.call(Method::POST, &path, None, &[]),
            r2.call(Method::POST, &path, None, &[])
        );
        let (won, lost, winner) = match (x.status.as_u16(), y.status.as_u16()) {
            (200, 409) => (x, y, &r1),
            (409, 200) => (y, x, &r2),
            other => panic!("one 200 and one 409, got {other:?}: {} {}", x.body, y.body),
        };
        assert_eq!(won.body["data"]["assignee"]["user_id"], id_of(winner));
        let err = lost.error(409, "ACTION_ALREADY_CLAIMED");
        assert_eq!(err["details"]["assignee"]["user_id"], id_of(winner));
        assert_eq!(err["details"]["assignee"]["email"], winner.person().email);
        assert!(err["details"]["assignee"].get("name").is_some());
        // Claiming one's own claim again: 200, nothing new in the history.
        let again = winner.call(Method::POST, &path, None, &[]).await;
        again.ok(200);
        assert_eq!(again.body["idempotent_replay"], true);
        let detail: Value = winner
            .get(&format!("/v1/actions/{}", a["id"].as_str().unwrap()), 200)
            .await;
        assert_eq!(kinds(&detail["data"]), ["created", "claimed"]);
    }
}

#[tokio::test]
async fn assignment_follows_the_roles_and_never_touches_the_binding() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let (r1, r2, viewer, outsider) = (
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
        app.member(Role::Viewer),
        app.outsider(),
    );
    let a = app.create_action(two_options("Rotate the TLS keys")).await;
    let before = binding(&a);
    assert_eq!(a["assignee"], Value::Null);
    assert_eq!(a["comment_count"], 0);
    assert_eq!(a["requested_by"], Value::Null);
    let (claim, assign) = (at(&a, "claim"), at(&a, "assignment"));

    // Viewers and outsiders claim nothing; nothing is written.
    let e = viewer.post_err(&claim, json!(null), 403, "FORBIDDEN").await;
    assert_eq!(e["details"]["required_role"], "reviewer");
    outsider
        .post_err(&claim, json!(null), 404, "ACTION_NOT_FOUND")
        .await;
    viewer
        .patch_err(
            &assign,
            json!({"assignee_user_id": viewer.person().id}),
            403,
            "FORBIDDEN",
        )
        .await;
    outsider
        .patch_err(
            &assign,
            json!({"assignee_user_id": null}),
            404,
            "ACTION_NOT_FOUND",
        )
        .await;

    // A reviewer assigns an unheld Action to a colleague …
    let out: Value = r1
        .patch(
            &assign,
            json!({"assignee_email": r2.person().email.to_uppercase()}),
            200,
        )
        .await;
    assert_eq!(out["data"]["assignee"]["user_id"], id_of(&r2));
    assert_eq!(out["data"]["assignee"]["email"], r2.person().email);
    // … but does not take it from them: that is for owners and admins.
    let e = r1
        .patch_err(
            &assign,
            json!({"assignee_user_id": r1.person().id}),
            403,
            "FORBIDDEN",
        )
        .await;
    assert_eq!(e["details"]["required_role"], "admin");
    r1.post_err(&claim, json!(null), 409, "ACTION_ALREADY_CLAIMED")
        .await;

    // The assignee must be a member who may decide it; each refusal names the field.
    let e = admin
        .patch_err(
            &assign,
            json!({"assignee_user_id": viewer.person().id}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "assignee_user_id");
    assert!(
        e["message"].as_str().unwrap().contains("viewer")
            || e["details"]["errors"][0]["message"]
                .as_str()
                .unwrap()
                .contains("viewer"),
        "{e}"
    );
    let e = admin
        .patch_err(
            &assign,
            json!({"assignee_email": outsider.person().email}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "assignee_email");
    let e = admin
        .patch_err(
            &assign,
            json!({"assignee_user_id": r1.person().id, "assignee_email": r2.person().email}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "assignee_email");
    for bad in [
        json!({"assignee": "x"}),
        json!({"assignee_user_id": 7}),
        json!({"assignee_user_id": ""}),
        json!([]),
    ] {
        admin.patch_err(&assign, bad, 422, "VALIDATION_ERROR").await;
    }
    let raw = admin
        .raw(Method::PATCH, &assign, "{\"assignee_user_id\": ")
        .await;
    assert_eq!(raw.status, 422, "{}", raw.body);
    assert_eq!(read(&admin, &a).await["assignee"]["user_id"], id_of(&r2));

    // The admin reassigns; the inbox scopes follow.
    let out: Value = admin
        .patch(&assign, json!({"assignee_user_id": r1.person().id}), 200)
        .await;
    assert_eq!(out["data"]["assignee"]["user_id"], id_of(&r1));
    assert_eq!(out["data"]["assignee_user_id"], id_of(&r1));
    let mine: Value = r1.get("/v1/me/actions?scope=mine", 200).await;
    assert_eq!(mine["data"][0]["id"], a["id"]);
    let theirs: Value = r2.get("/v1/me/actions?scope=mine", 200).await;
    assert_eq!(theirs["data"], json!([]));
    let unassigned: Value = r1.get("/v1/me/actions?scope=unassigned", 200).await;
    assert_eq!(unassigned["data"], json!([]));
    // Null unassigns.
    let out: Value = admin
        .patch(
            &assign,
            json!({"assignee_user_id": null, "assignee_email": null}),
            200,
        )
        .await;
    assert_eq!(out["data"]["assignee"], Value::Null);
    let unassigned: Value = r1.get("/v1/me/actions?scope=unassigned", 200).await;
    assert_eq!(unassigned["data"][0]["id"], a["id"]);

    // A restricted Action: only its listed reviewers may hold it.
    let mut body = two_options("Restricted");
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([r1.person().id]);
    let b = app.create_action(body).await;
    let e = admin
        .patch_err(
            &at(&b, "assignment"),
            json!({"assignee_user_id": r2.person().id}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "assignee_user_id");
    r2.post_err(&at(&b, "claim"), json!(null), 404, "ACTION_NOT_FOUND")
        .await;
    r1.post::<Value>(&at(&b, "claim"), json!(null), 200).await;

    // History names each change; the binding never moved.
    let detail: Value = admin
        .get(&format!("/v1/actions/{}", a["id"].as_str().unwrap()), 200)
        .await;
    assert_eq!(
        kinds(&detail["data"]),
        ["created", "assigned", "assigned", "assigned"]
    );
    let assigned = &detail["data"]["history"][1];
    assert_eq!(
        assigned["actor"],
        json!({"type": "user", "id": r1.person().id})
    );
    assert_eq!(assigned["data"]["assignee_user_id"], id_of(&r2));
    assert_eq!(binding(&detail["data"]), before);
}

#[tokio::test]
async fn a_create_time_assignee_holds_the_action_until_an_admin_reassigns_it() {
    let app = TestApp::spawn().await;
    let (admin, r1, r2) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );
    let mut body = two_options("Assigned by the Source");
    body["assignee_email"] = json!(r1.person().email);
    let a = app.create_action(body).await;
    let now = read(&admin, &a).await;
    assert_eq!(now["assignee"]["user_id"], id_of(&r1));
    assert_eq!(now["assignee"]["email"], r1.person().email);
    let e = r2
        .post_err(&at(&a, "claim"), json!(null), 409, "ACTION_ALREADY_CLAIMED")
        .await;
    assert_eq!(e["details"]["assignee"]["user_id"], id_of(&r1));
    // The named person claims what is theirs: their id is now recorded.
    let out: Value = r1.post(&at(&a, "claim"), json!(null), 200).await;
    assert_eq!(out["data"]["assignee"]["user_id"], id_of(&r1));
    let out: Value = admin
        .patch(
            &at(&a, "assignment"),
            json!({"assignee_user_id": r2.person().id}),
            200,
        )
        .await;
    assert_eq!(out["data"]["assignee_email"], r2.person().email);
    let mine: Value = r1.get("/v1/me/actions?scope=mine", 200).await;
    assert_eq!(
        mine["data"],
        json!([]),
        "the old assignee_email no longer counts"
    );
}

/// An Action is made only when someone can decide it: an assignee who
/// could not hold it (no one else could claim it), a list with no one who
/// may decide, or a quorum the listed voters cannot reach is refused at
/// create, naming the field, and nothing is written.
#[tokio::test]
async fn a_create_that_no_one_could_decide_is_refused_naming_the_field() {
    let app = TestApp::spawn().await;
    let (admin, r1, viewer) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Viewer),
    );
    let (r1_email, viewer_email) = (r1.person().email.clone(), viewer.person().email.clone());
    let restricted = |list: Value| {
        let mut b = two_options("Rotate the root key");
        b["visibility"] = json!("restricted");
        b["reviewer_emails"] = list;
        b
    };
    let with = |mut b: Value, extra: Value| {
        b.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        b
    };
    let refused = |body: Value, field: &'static str, words: &'static str| {
        let app = &app;
        async move {
            let e = app
                .source()
                .post_err("/v1/actions", body.clone(), 422, "VALIDATION_ERROR")
                .await;
            let named = e["details"]["errors"][0].clone();
            assert_eq!(named["field"], field, "{body}: {e}");
            assert!(
                named["message"].as_str().unwrap().contains(words),
                "{body}: {e}"
            );
        }
    };
    let actions_before = app.count_rows("actions");
    // A viewer reads but may not hold an Action.
    refused(
        with(two_options("x"), json!({"assignee_email": viewer_email})),
        "assignee_email",
        "is a viewer",
    )
    .await;
    // Not listed on a restricted Action.
    refused(
        with(
            restricted(json!([r1_email])),
            json!({"assignee_user_id": admin.person().id}),
        ),
        "assignee_user_id",
        "not one of this Action's listed reviewers",
    )
    .await;
    // The person it is requested by.
    refused(
        with(
            two_options("x"),
            json!({"assignee_email": r1_email, "requested_by_email": r1_email}),
        ),
        "assignee_email",
        "requested this Action",
    )
    .await;
    // Two different people.
    refused(
        with(
            two_options("x"),
            json!({"assignee_email": r1_email, "assignee_user_id": admin.person().id}),
        ),
        "assignee_email",
        "two different people",
    )
    .await;
    // A list of a viewer and a mistyped address; a list of the requester alone.
    refused(
        restricted(json!([viewer_email, "r1@exmaple.com"])),
        "reviewer_emails[1]",
        "is not a member of this workspace",
    )
    .await;
    refused(
        restricted(json!([viewer_email])),
        "reviewer_emails",
        "no one listed may decide",
    )
    .await;
    refused(
        with(
            restricted(json!([r1_email])),
            json!({"requested_by_email": r1_email}),
        ),
        "reviewer_emails",
        "no one listed may decide",
    )
    .await;
    // Three approvals from two who may vote (the third listed is the requester).
    refused(
        with(
            restricted(json!([r1_email, "admin@example.com", viewer_email])),
            json!({"approval_policy": {"required_approvals": 3}}),
        ),
        "approval_policy.required_approvals",
        "only 2 of the listed reviewers may vote",
    )
    .await;
    // Two approvals and two rejections from two voters: one of each would
    // leave it open with no one left to vote; three rejections never come.
    refused(
        with(
            restricted(json!([r1_email, "admin@example.com", viewer_email])),
            json!({"approval_policy": {"required_approvals": 2, "reject_threshold": 2}}),
        ),
        "approval_policy.reject_threshold",
        "(1 approval and 1 rejection): with 2 voters and 2 approvals required, reject_threshold may be at most 1",
    )
    .await;
    refused(
        with(
            restricted(json!([r1_email, "admin@example.com", viewer_email])),
            json!({"approval_policy": {"required_approvals": 1, "reject_threshold": 3}}),
        ),
        "approval_policy.reject_threshold",
        "3 rejections are needed to reject but only 2 of the listed reviewers may vote",
    )
    .await;
    refused(
        with(
            restricted(json!([r1_email, "admin@example.com"])),
            json!({"approval_policy": {"required_approvals": 0}}),
        ),
        "approval_policy.required_approvals",
        "required_approvals must be at least 1",
    )
    .await;
    assert_eq!(app.count_rows("actions"), actions_before, "nothing written");
    // Listed viewers may still read it beside someone who decides; the
    // quorum the voters can reach is accepted, and so is its assignee.
    let ok = with(
        restricted(json!([r1_email, "ADMIN@example.com", viewer_email])),
        json!({"approval_policy": {"required_approvals": 2}, "assignee_email": r1_email}),
    );
    let a = app.create_action(ok).await;
    assert_eq!(a["assignee_email"], r1_email.as_str());
    let seen = read(&viewer, &a).await;
    assert_eq!(seen["id"], a["id"]);
    // A retry matched by dedupe_key is answered with the open Action, even
    // when its assignee may no longer hold one.
    let keyed = with(
        two_options("Renew the certificate"),
        json!({"dedupe_key": "cert-1", "assignee_email": r1_email}),
    );
    let first = app.create_action(keyed.clone()).await;
    let _: Value = admin
        .patch(
            &format!("/v1/workspaces/members/{}", r1.person().id),
            json!({"role": "viewer"}),
            200,
        )
        .await;
    let again: Value = app.source().post("/v1/actions", keyed, 200).await;
    assert_eq!(again["data"]["id"], first["id"]);
    // Likewise when its run has ended since (its open Actions stay open).
    let run: Value = app
        .source()
        .post("/v1/runs", json!({"name": "nightly"}), 201)
        .await;
    let rid = run["data"]["id"].as_str().unwrap().to_owned();
    let in_run = with(
        two_options("Rotate the backup key"),
        json!({"dedupe_key": "backup-1", "run_id": rid}),
    );
    let first = app.create_action(in_run.clone()).await;
    let _: Value = admin
        .post(&format!("/v1/runs/{rid}/cancel"), json!({}), 200)
        .await;
    let again: Value = app.source().post("/v1/actions", in_run, 200).await;
    assert_eq!(again["data"]["id"], first["id"]);
}

#[tokio::test]
async fn a_snoozed_action_leaves_the_inbox_and_comes_back_by_itself() {
    let app = TestApp::spawn().await;
    let (r1, viewer) = (app.member(Role::Reviewer), app.member(Role::Viewer));
    let a = app.create_action(two_options("Renew the domain")).await;
    let before = binding(&a);
    let snooze = at(&a, "snooze");
    let clock = &app.state.services.clock;
    let in_an_hour = hds::domain::time::format(clock.now() + time::Duration::hours(1));

    // Bad input: each refusal names `until`; nothing is written.
    let too_far = hds::domain::time::format(clock.now() + time::Duration::days(31));
    let past = hds::domain::time::format(clock.now() - time::Duration::minutes(1));
    for bad in [
        json!(past),
        json!(too_far),
        json!("tomorrow"),
        json!("2026-13-01T00:00:00Z"),
        json!(5),
    ] {
        let e = r1
            .post_err(&snooze, json!({"until": bad}), 422, "VALIDATION_ERROR")
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], "until", "{e}");
    }
    r1.post_err(&snooze, json!({}), 422, "VALIDATION_ERROR")
        .await;
    r1.post_err(
        &snooze,
        json!({"until": null, "why": 1}),
        422,
        "VALIDATION_ERROR",
    )
    .await;
    let e = viewer
        .post_err(&snooze, json!({"until": in_an_hour}), 403, "FORBIDDEN")
        .await;
    assert_eq!(e["details"]["required_role"], "reviewer");
    // Not past the Action's expiry: it would expire out of everyone's sight.
    let mut expiring = two_options("Expires in two hours");
    let two_hours = hds::domain::time::format(clock.now() + time::Duration::hours(2));
    expiring["expires_at"] = json!(two_hours);
    let x = app.create_action(expiring).await;
    let in_three_hours = hds::domain::time::format(clock.now() + time::Duration::hours(3));
    let e = r1
        .post_err(
            &at(&x, "snooze"),
            json!({"until": in_three_hours}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "until", "{e}");
    assert_eq!(e["details"]["expires_at"], two_hours.as_str(), "{e}");
    assert!(e["message"].as_str().unwrap().contains("expires at"), "{e}");
    let ok: Value = r1
        .post(&at(&x, "snooze"), json!({"until": in_an_hour}), 200)
        .await;
    assert_eq!(ok["data"]["snoozed_until"], in_an_hour);
    let now = read(&r1, &a).await;
    assert_eq!(now["snoozed_until"], Value::Null);
    assert_eq!(
        kinds(
            &r1.get::<Value>(&format!("/v1/actions/{}", a["id"].as_str().unwrap()), 200)
                .await["data"]
        ),
        ["created"]
    );

    let out: Value = r1.post(&snooze, json!({"until": in_an_hour}), 200).await;
    assert_eq!(out["data"]["snoozed_until"], in_an_hour);
    assert_eq!(out["data"]["status"], "open");
    let open: Value = r1.get("/v1/me/actions", 200).await;
    assert_eq!(open["data"], json!([]));
    let snoozed: Value = r1.get("/v1/me/actions?status=snoozed", 200).await;
    assert_eq!(snoozed["data"][0]["id"], a["id"]);
    let page = app.browser(r1.person()).await.page("/app").await;
    assert!(
        !page.contains("Renew the domain"),
        "the dashboard inbox hides it too"
    );

    // The clock passes the time: it is back, in the API and the dashboard.
    clock.advance(time::Duration::minutes(61));
    let open: Value = r1.get("/v1/me/actions", 200).await;
    assert_eq!(open["data"][0]["id"], a["id"]);
    let snoozed: Value = r1.get("/v1/me/actions?status=snoozed", 200).await;
    assert_eq!(snoozed["data"], json!([]));
    let page = app.browser(r1.person()).await.page("/app").await;
    assert!(page.contains("Renew the domain"));

    // Snooze again, then un-snooze with null.
    let later = hds::domain::time::format(clock.now() + time::Duration::days(30));
    r1.post::<Value>(&snooze, json!({"until": later}), 200)
        .await;
    let out: Value = r1.post(&snooze, json!({"until": null}), 200).await;
    assert_eq!(out["data"]["snoozed_until"], Value::Null);
    let detail: Value = r1
        .get(&format!("/v1/actions/{}", a["id"].as_str().unwrap()), 200)
        .await;
    assert_eq!(
        kinds(&detail["data"]),
        ["created", "snoozed", "snoozed", "snoozed"]
    );
    assert_eq!(detail["data"]["history"][3]["data"], json!({"until": null}));
    assert_eq!(binding(&detail["data"]), before);
}

#[tokio::test]
async fn comments_are_threaded_with_mentions_on_open_and_closed_actions() {
    let app = TestApp::spawn().await;
    let (r1, r2, viewer, outsider) = (
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
        app.member(Role::Viewer),
        app.outsider(),
    );
    let a = app
        .create_action(two_options("Merge the release branch"))
        .await;
    let before = binding(&a);
    let comments = at(&a, "comments");

    let body = format!(
        "Looks fine to me. @{} can you check **CI**? cc @nobody@example.org and @{}",
        r2.person().email.to_uppercase(),
        outsider.person().email
    );
    // `{data}`, as every other create of the user API answers.
    let made: Value = r1.post(&comments, json!({"body": body}), 201).await;
    assert_eq!(made.as_object().unwrap().len(), 1, "{made}");
    let c = made["data"].clone();
    assert_eq!(c["object"], "comment", "{made}");
    assert!(c["id"].as_str().unwrap().starts_with("cmt_"), "{c}");
    assert_eq!(c["action_id"], a["id"]);
    assert_eq!(c["author"]["user_id"], id_of(&r1));
    assert_eq!(c["author"]["email"], r1.person().email.as_str());
    let listed: Value = r1.get(&comments, 200).await;
    assert_eq!(listed["data"][0]["author"], c["author"]);
    assert_eq!(c["body"], body);
    assert!(c["created_at"].is_string());

    // Bad input: the error names `body`; nothing is written.
    for bad in [
        json!({"body": ""}),
        json!({"body": " \n\t "}),
        json!({"body": "x".repeat(10_001)}),
        json!({"body": 5}),
        json!({}),
        json!({"body": "hi", "author": "me"}),
    ] {
        r1.post_err(&comments, bad, 422, "VALIDATION_ERROR").await;
    }
    assert_eq!(app.count_rows("action_comments"), 1);
    r1.post::<Value>(&comments, json!({"body": "y".repeat(10_000)}), 201)
        .await;

    // Viewers read the thread but do not write; other workspaces see nothing.
    let e = viewer
        .post_err(&comments, json!({"body": "me too"}), 403, "FORBIDDEN")
        .await;
    assert_eq!(e["details"]["required_role"], "reviewer");
    let list: Value = viewer.get(&comments, 200).await;
    assert_eq!(list["object"], "list");
    assert_eq!(list["data"].as_array().unwrap().len(), 2);
    assert_eq!(list["data"][0], c, "oldest first, as it was answered");
    outsider.get_err(&comments, 404, "ACTION_NOT_FOUND").await;
    outsider
        .post_err(&comments, json!({"body": "hello"}), 404, "ACTION_NOT_FOUND")
        .await;
    assert_eq!(app.count_rows("action_comments"), 2);

    // Closed: claim, assignment and snooze are refused; comments are not.
    let decided = app.decide(&a, json!({"option_id": "approve"})).await;
    decided.ok(200);
    r2.post_err(&at(&a, "claim"), json!(null), 409, "ACTION_NOT_OPEN")
        .await;
    app.admin()
        .patch_err(
            &at(&a, "assignment"),
            json!({"assignee_user_id": r2.person().id}),
            409,
            "ACTION_NOT_OPEN",
        )
        .await;
    r2.post_err(
        &at(&a, "snooze"),
        json!({"until": null}),
        409,
        "ACTION_NOT_OPEN",
    )
    .await;
    let late: Value = r2.post(&comments, json!({"body": "Shipped."}), 201).await;
    assert_eq!(late["data"]["author"]["user_id"], id_of(&r2));

    let detail: Value = r1
        .get(&format!("/v1/actions/{}", a["id"].as_str().unwrap()), 200)
        .await;
    let d = &detail["data"];
    assert_eq!(d["comment_count"], 3);
    assert_eq!(
        kinds(d),
        ["created", "commented", "commented", "resolved", "commented"]
    );
    // Only members count as mentions.
    assert_eq!(
        d["history"][1]["data"],
        json!({"comment_id": c["id"], "mentions": [r2.person().id]})
    );
    assert_eq!(binding(d), before);
    assert_eq!(d["receipt"]["payload"]["fingerprint"], before.1);
}

#[tokio::test]
async fn the_requester_may_not_decide_or_vote_on_their_own_request() {
    let app = TestApp::spawn().await;
    let (admin, r1, r2) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );

    // Bad requesters are refused on create, naming the field: an address
    // with a stray space would match no member, and so let that member
    // decide their own request.
    let spaced = format!(" {}", r1.person().email);
    for (field, value) in [
        ("requested_by_email", json!("not-an-address")),
        ("requested_by_email", json!(spaced)),
        ("requested_by_email", json!("r1@example.com\n")),
        ("assignee_email", json!("r1 @example.com")),
    ] {
        let mut bad = two_options("x");
        bad[field] = value.clone();
        let r = app.post("/v1/actions", &app.live_key(), bad).await;
        assert_eq!(
            r.error(422, "VALIDATION_ERROR")["details"]["errors"][0]["field"],
            field,
            "{value}"
        );
    }
    let mut bad = two_options("x");
    bad["visibility"] = json!("restricted");
    bad["reviewer_emails"] = json!([format!("{} ", r2.person().email)]);
    let r = app.post("/v1/actions", &app.live_key(), bad).await;
    assert_eq!(
        r.error(422, "VALIDATION_ERROR")["details"]["errors"][0]["field"],
        "reviewer_emails"
    );
    let mut bad = two_options("x");
    bad["requested_by_user_id"] = json!("usr_nobody");
    let r = app.post("/v1/actions", &app.live_key(), bad).await;
    assert_eq!(
        r.error(422, "VALIDATION_ERROR")["details"]["errors"][0]["field"],
        "requested_by_user_id"
    );
    // One requester: an id and an address of two people are refused; of
    // the same person (in any case) accepted.
    let mut two = two_options("x");
    two["requested_by_user_id"] = json!(id_of(&r1));
    two["requested_by_email"] = json!(r2.person().email);
    let r = app.post("/v1/actions", &app.live_key(), two.clone()).await;
    let e = r.error(422, "VALIDATION_ERROR");
    assert_eq!(
        e["details"]["errors"][0]["field"], "requested_by_email",
        "{e}"
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("two different people"),
        "{e}"
    );
    two["requested_by_email"] = json!(r1.person().email.to_uppercase());
    let same = app.create_action(two).await;
    assert_eq!(same["requested_by"]["user_id"], id_of(&r1), "{same}");

    let mut body = two_options("Give r1 production access");
    body["requested_by_email"] = json!(r1.person().email.to_uppercase());
    let a = app.create_action(body).await;
    let now = read(&admin, &a).await;
    assert_eq!(now["requested_by"]["user_id"], id_of(&r1));
    assert_eq!(now["requested_by"]["email"], r1.person().email);
    let decision = json!({"action_version": a["action_version"], "fingerprint": a["fingerprint"], "option_id": "approve"});
    r1.post_err(
        &at(&a, "decision"),
        decision.clone(),
        403,
        "SELF_APPROVAL_FORBIDDEN",
    )
    .await;
    r1.post_err(
        &at(&a, "claim"),
        json!(null),
        403,
        "SELF_APPROVAL_FORBIDDEN",
    )
    .await;
    let e = admin
        .patch_err(
            &at(&a, "assignment"),
            json!({"assignee_user_id": r1.person().id}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "assignee_user_id");
    // They still comment on it; the dashboard offers them no decision.
    r1.post::<Value>(&at(&a, "comments"), json!({"body": "Please."}), 201)
        .await;
    let page = app
        .browser(r1.person())
        .await
        .page(&format!("/app/actions/{}", a["id"].as_str().unwrap()))
        .await;
    assert!(
        !page.contains("/decide\""),
        "no decision form for the requester"
    );
    assert!(
        page.contains("You asked for this decision, so someone else makes it"),
        "the page says why: {page}"
    );
    assert_eq!(read(&admin, &a).await["status"], "open");

    // Someone else decides; the receipt names the requester without an address.
    let done: Value = r2.post(&at(&a, "decision"), decision, 200).await;
    let claims = &done["data"]["receipt"]["payload"];
    assert_eq!(claims["requested_by"]["user_id"], id_of(&r1));
    let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(
        r1.person().email.as_bytes(),
    ));
    assert_eq!(claims["requested_by"]["email_sha256"], digest);
    // PyJWT verifies it and sees the same claim.
    let jwks = app.get("/v1/receipts/keys", "unused").await;
    let out = python(
        "verify_receipt.py",
        &json!({"jwks": jwks.body, "receipts": [done["data"]["receipt"]["jws"]]}),
    );
    let line: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(line["requested_by"]["user_id"], id_of(&r1));

    // Under an approval policy the requester may not vote …
    let mut body = two_options("Approve r1's expense");
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([r1.person().id, r2.person().id]);
    body["approval_policy"] = json!({"required_approvals": 1});
    body["requested_by_user_id"] = json!(r1.person().id);
    let b = app.create_action(body.clone()).await;
    // Its page names who it is restricted to, and tells the requester why
    // they are offered no vote.
    let path = format!("/app/actions/{}", b["id"].as_str().unwrap());
    let page = app.browser(r2.person()).await.page(&path).await;
    assert!(
        page.contains(&format!(
            "<dd id=\"listed-reviewers\">{}, {}</dd>",
            r1.person().email,
            r2.person().email
        )),
        "{page}"
    );
    let page = app.browser(r1.person()).await.page(&path).await;
    assert!(page.contains("You asked for this decision"), "{page}");
    let vote = json!({"vote": "approve", "action_version": b["action_version"], "fingerprint": b["fingerprint"]});
    r1.post_err(
        &at(&b, "votes"),
        vote.clone(),
        403,
        "SELF_APPROVAL_FORBIDDEN",
    )
    .await;
    assert_eq!(app.count_rows("action_votes"), 0);
    // … unless the policy allows it.
    body["title"] = json!("Approve r1's lunch");
    body["approval_policy"]["allow_self_approval"] = json!(true);
    let c = app.create_action(body).await;
    let vote = json!({"vote": "approve", "action_version": c["action_version"], "fingerprint": c["fingerprint"]});
    let out: Value = r1.post(&at(&c, "votes"), vote, 200).await;
    assert_eq!(out["data"]["status"], "resolved");
}

#[tokio::test]
async fn the_action_page_offers_only_what_the_api_allows_and_renders_comments_safely() {
    let app = TestApp::spawn().await;
    let (r1, r2, viewer) = (
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
        app.member(Role::Viewer),
    );
    let a = app.create_action(two_options("Open the firewall")).await;
    let path = format!("/app/actions/{}", a["id"].as_str().unwrap());
    let b1 = app.browser(r1.person()).await;
    let html = b1.page(&path).await;
    for id in ["claim-form", "assign-form", "snooze-form", "comment-form"] {
        assert!(html.contains(&format!("id=\"{id}\"")), "{id} offered");
    }
    assert!(
        html.contains(&r2.person().email),
        "r2 is in the assign select"
    );
    assert!(
        !html.contains(&format!("<option value=\"{}\"", viewer.person().id)),
        "viewers are not"
    );
    let seen = b1.page(&path).await;
    assert!(seen.contains("id=\"assignee\">nobody"));
    assert!(html.contains(r#"aria-label="Snooze: 1 hour""#), "{html}");
    // An Action that expires in 30 minutes: no snooze button ends after
    // it (the API would refuse each), so none is offered.
    let mut soon = two_options("Expires soon");
    soon["expires_at"] = json!(hds::domain::time::format(
        app.state.services.clock.now() + ::time::Duration::minutes(30)
    ));
    let soon = app.create_action(soon).await;
    let html = b1
        .page(&format!("/app/actions/{}", soon["id"].as_str().unwrap()))
        .await;
    assert!(!html.contains(r#"id="snooze-form""#), "{html}");
    // One that expires in two hours: an hour's snooze only.
    let mut later = two_options("Expires later");
    later["expires_at"] = json!(hds::domain::time::format(
        app.state.services.clock.now() + ::time::Duration::hours(2)
    ));
    let later = app.create_action(later).await;
    let html = b1
        .page(&format!("/app/actions/{}", later["id"].as_str().unwrap()))
        .await;
    assert!(html.contains(r#"value="1h""#), "{html}");
    assert!(!html.contains(r#"value="week""#), "{html}");

    // Forms post with the session's CSRF token, as the decide form does.
    let origin = b1.url("");
    let origin = origin.trim_end_matches('/');
    let r = b1
        .post_form(
            &format!("{path}/comments"),
            Some(origin),
            &[
                ("_csrf", b1.csrf()),
                (
                    "body",
                    "**ok** then <script>alert(1)</script> and [x](javascript:alert(1))",
                ),
            ],
        )
        .await;
    assert_eq!(r.status(), 303);
    let r = b1
        .post_form(
            &format!("{path}/claim"),
            Some(origin),
            &[("_csrf", b1.csrf())],
        )
        .await;
    assert_eq!(r.status(), 303);
    let r = b1
        .post_form(
            &format!("{path}/snooze"),
            Some(origin),
            &[("_csrf", b1.csrf()), ("preset", "tomorrow")],
        )
        .await;
    assert_eq!(r.status(), 303);
    let r = b1
        .post_form(
            &format!("{path}/comments"),
            Some(origin),
            &[("body", "no token")],
        )
        .await;
    assert_eq!(r.status(), 403);
    let html = b1.page(&path).await;
    assert!(html.contains("id=\"assignee\">you"), "claimed");
    assert!(html.contains("id=\"snoozed-until\""));
    assert!(
        !html.contains("<script>alert(1)</script>"),
        "raw HTML is escaped"
    );
    assert!(html.contains("&lt;script&gt;"));
    assert!(html.contains("<strong>ok</strong>"));
    // No such link; the text is in the author's edit form, escaped.
    assert!(!html.contains("href=\"javascript:"));
    assert!(html.contains("[x](javascript:alert(1))</textarea>"));
    assert!(!html.contains("id=\"claim-form\""), "nothing left to claim");
    assert_eq!(read(&r1, &a).await["comment_count"], 1);

    // A viewer reads the thread and is offered nothing to change.
    let html = app.browser(viewer.person()).await.page(&path).await;
    assert!(html.contains("<strong>ok</strong>"));
    for id in ["claim-form", "assign-form", "snooze-form", "comment-form"] {
        assert!(
            !html.contains(&format!("id=\"{id}\"")),
            "{id} not offered to a viewer"
        );
    }
}

/// An assignment naming no one says what is wrong with the value before
/// sending anyone to invite a person who may already be a member: spaces
/// around it, not an address, not a user id.
#[tokio::test]
async fn an_assignment_that_names_no_one_says_why() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let a = app.create_action(two_options("Whose?")).await;
    let path = format!("/v1/actions/{}/assignment", a["id"].as_str().unwrap());
    for (body, field, words) in [
        (
            json!({"assignee_email": " admin@example.com "}),
            "assignee_email",
            "has spaces around it",
        ),
        (
            json!({"assignee_email": "not-an-email"}),
            "assignee_email",
            "is not an e-mail address",
        ),
        (
            json!({"assignee_user_id": "usr_abc"}),
            "assignee_user_id",
            "is not a user id",
        ),
        (
            json!({"assignee_email": "nobody@example.com"}),
            "assignee_email",
            "invite them first",
        ),
    ] {
        let e = admin
            .patch_err(&path, body.clone(), 422, "VALIDATION_ERROR")
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], field, "{body}: {e}");
        assert!(
            e["message"].as_str().unwrap().contains(words),
            "{body}: {e}"
        );
    }
    let seen = read(&admin, &a).await;
    assert_eq!(seen["assignee"], Value::Null, "nothing written: {seen}");
}

/// An Action names people of its own workspace only: a Source that names
/// someone of another workspace (by e-mail) learns nothing about them, not
/// their id nor their name.
#[tokio::test]
async fn an_action_never_reveals_people_of_another_workspace() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let stranger = app.outsider();
    // As an assignee, someone of another workspace is refused in the same
    // words as an address nobody has.
    let mut body = two_options("Who is this?");
    for email in [stranger.person().email.as_str(), "nobody@example.com"] {
        body["assignee_email"] = json!(email);
        let e = app
            .source()
            .post_err("/v1/actions", body.clone(), 422, "VALIDATION_ERROR")
            .await;
        assert_eq!(
            e["message"],
            format!(
                "`{email}` is not a member of this workspace: invite them first, or leave the Action unassigned for anyone who may decide it to claim"
            )
        );
    }
    body.as_object_mut().unwrap().remove("assignee_email");
    body["requested_by_email"] = json!(stranger.person().email);
    let a = app.create_action(body).await;
    let seen = read(&admin, &a).await;
    let who = &seen["requested_by"];
    assert_eq!(who["user_id"], Value::Null, "{seen}");
    assert_eq!(who["name"], Value::Null, "{seen}");
    assert_eq!(who["email"], stranger.person().email);
    let by_source: Value = app
        .source()
        .get(
            &format!("/v1/source/actions/{}", a["id"].as_str().unwrap()),
            200,
        )
        .await;
    assert_eq!(by_source["data"]["requested_by"]["user_id"], Value::Null);
}

/// What the work routes may change on an Action, read back as `who` sees it:
/// the history's kinds, assignee, snooze, comment count and binding.
async fn state_of(who: &Actor, a: &Value) -> Value {
    let d = read(who, a).await;
    json!({
        "history": kinds(&d),
        "assignee": d["assignee"],
        "snoozed_until": d["snoozed_until"],
        "comment_count": d["comment_count"],
        "binding": [d["action_version"], d["fingerprint"]],
        "status": d["status"],
    })
}

#[tokio::test]
async fn bad_input_on_every_work_route_says_what_to_fix_and_writes_nothing() {
    let app = TestApp::spawn().await;
    let (admin, r1, viewer, outsider) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Viewer),
        app.outsider(),
    );
    let a = app.create_action(two_options("Resize the volume")).await;
    let before = state_of(&admin, &a).await;
    let events = app.count_rows("action_events");
    let clock = &app.state.services.clock;

    // Unknown Actions: one 404 for every route, saying the id is not visible.
    for (method, what, body) in [
        (Method::POST, "claim", None),
        (
            Method::PATCH,
            "assignment",
            Some(json!({"assignee_user_id": null})),
        ),
        (Method::POST, "snooze", Some(json!({"until": null}))),
        (Method::GET, "comments", None),
        (Method::POST, "comments", Some(json!({"body": "hello"}))),
    ] {
        let r = r1
            .call(
                method.clone(),
                &format!("/v1/actions/act_nope/{what}"),
                body.as_ref(),
                &[],
            )
            .await;
        let e = r.error(404, "ACTION_NOT_FOUND");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("no Action with that id"),
            "{method} {what}: {e}"
        );
    }

    // Assignment: each refusal names the field and what is wrong with it.
    let assign = at(&a, "assignment");
    let in_an_hour = hds::domain::time::format(clock.now() + time::Duration::hours(1));
    for (body, field, says) in [
        (
            json!({"assignee_user_id": "usr_01AAAAAAAAAAAAAAAAAAAAAAAA"}),
            "assignee_user_id",
            "`usr_01AAAAAAAAAAAAAAAAAAAAAAAA` is not a member of this workspace",
        ),
        (
            json!({"assignee_email": "nobody@example.com"}),
            "assignee_email",
            "is not a member of this workspace",
        ),
        (
            json!({"assignee_email": outsider.person().email}),
            "assignee_email",
            "is not a member of this workspace",
        ),
        (
            json!({"assignee_user_id": viewer.person().id}),
            "assignee_user_id",
            "is a viewer and may not decide Actions",
        ),
        (
            json!({"assignee_user_id": r1.person().id, "assignee_email": admin.person().email}),
            "assignee_email",
            "two different people; give one",
        ),
        (
            json!({"assignee_user_id": ""}),
            "assignee_user_id",
            "1-254 characters",
        ),
        (
            json!({"assignee_email": "x".repeat(255)}),
            "assignee_email",
            "1-254 characters",
        ),
        (
            json!({"assignee": r1.person().id}),
            "assignee",
            "unknown field",
        ),
        (json!({"assignee_user_id": 7}), "assignee_user_id", ""),
    ] {
        let e = admin
            .patch_err(&assign, body.clone(), 422, "VALIDATION_ERROR")
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], field, "{body}: {e}");
        assert!(e["message"].as_str().unwrap().contains(says), "{body}: {e}");
    }

    // Snooze: `until` is required (null un-snoozes), in the future, within 30 days.
    let snooze = at(&a, "snooze");
    let past = hds::domain::time::format(clock.now() - time::Duration::seconds(1));
    let too_far = hds::domain::time::format(
        clock.now() + time::Duration::days(30) + time::Duration::seconds(1),
    );
    for (body, says) in [
        (
            json!({"until": past}),
            "must be in the future; send null to un-snooze",
        ),
        (json!({"until": too_far}), "at most 30 days ahead"),
        (json!({"until": "2026-11-24 09:00"}), "RFC 3339"),
        (json!({"until": "2026-11-24T09:00:00"}), "with an offset"),
        (json!({}), "missing field `until`"),
        (json!({"until": in_an_hour, "note": "x"}), "unknown field"),
    ] {
        let e = r1
            .post_err(&snooze, body.clone(), 422, "VALIDATION_ERROR")
            .await;
        assert!(
            e.to_string().contains("until") || e.to_string().contains("note"),
            "{body}: {e}"
        );
        assert!(e.to_string().contains(says), "{body}: {e}");
        if body == json!({}) {
            // The missing member is the field named, not the body.
            assert_eq!(e["details"]["errors"][0]["field"], "until", "{e}");
        }
    }
    let r = r1
        .raw(
            Method::POST,
            &snooze,
            &format!(r#"{{"until":null,"until":"{in_an_hour}"}}"#),
        )
        .await;
    r.error(422, "VALIDATION_ERROR");

    // Comments: not empty, not only blanks, at most 10,000 characters, no NUL.
    let comments = at(&a, "comments");
    for (body, says) in [
        (json!({"body": ""}), "must not be empty or only blanks"),
        (
            json!({"body": "\u{b}\u{c} \r\n"}),
            "must not be empty or only blanks",
        ),
        // Invisible characters are blanks too (they render as nothing).
        (
            json!({"body": "\u{200b}\u{a0}\u{feff}\u{3000}"}),
            "must not be empty or only blanks",
        ),
        (
            json!({"body": "\u{ad}\u{2800}\u{3164}"}),
            "must not be empty or only blanks",
        ),
        (
            json!({"body": "é".repeat(10_001)}),
            "body is 10001 characters; the limit is 10000",
        ),
        (json!({"body": "a\u{0}b"}), "NUL"),
        (
            json!({"body": "looks \u{202e}devorppa"}),
            "direction control",
        ),
        (json!({"body": ["x"]}), "body"),
    ] {
        let e = r1
            .post_err(&comments, body.clone(), 422, "VALIDATION_ERROR")
            .await;
        assert!(e.to_string().contains(says), "{says}: {e}");
    }
    let r = r1
        .raw(Method::POST, &comments, r#"{"body":"a","body":"b"}"#)
        .await;
    r.error(422, "VALIDATION_ERROR");
    let r = r1.raw(Method::POST, &comments, "not json").await;
    r.error(422, "VALIDATION_ERROR");

    // Without a person: no credential, or a Source key.
    for who in [app.anonymous(), app.source()] {
        let r = who.call(Method::POST, &at(&a, "claim"), None, &[]).await;
        assert_eq!(r.status, 401, "{}", r.body);
        let r = who
            .call(Method::POST, &comments, Some(&json!({"body": "hi"})), &[])
            .await;
        assert_eq!(r.status, 401, "{}", r.body);
    }

    // The dashboard's forms refuse the same way, on the page.
    let b1 = app.browser(r1.person()).await;
    let page = format!("/app/actions/{}", a["id"].as_str().unwrap());
    for (path, form, status, says) in [
        (
            "snooze",
            vec![("preset", "forever")],
            422,
            "choose one of the snooze buttons",
        ),
        ("snooze", vec![], 422, "choose one of the snooze buttons"),
        (
            "comments",
            vec![("body", "  \r\n ")],
            422,
            "must not be empty",
        ),
        ("comments", vec![("body", "a\u{0}b")], 422, "NUL"),
        (
            "assign",
            vec![("assignee_user_id", viewer.person().id.as_str())],
            422,
            "is a viewer",
        ),
        (
            "assign",
            vec![("assignee_user_id", "usr_01AAAAAAAAAAAAAAAAAAAAAAAA")],
            422,
            "is not a member",
        ),
    ] {
        let mut fields = vec![("_csrf", b1.csrf())];
        fields.extend(form.iter().copied());
        let r = b1
            .post_form(&format!("{page}/{path}"), Some(&app.base), &fields)
            .await;
        assert_eq!(r.status(), status, "{path} {form:?}");
        let html = r.text().await.unwrap();
        assert!(
            html.contains("Not done:") && html.contains(says),
            "{path} {form:?}: {html}"
        );
    }
    let r = b1
        .post_form(
            "/app/actions/act_nope/claim",
            Some(&app.base),
            &[("_csrf", b1.csrf())],
        )
        .await;
    assert_eq!(r.status(), 404);

    assert_eq!(state_of(&admin, &a).await, before);
    assert_eq!(app.count_rows("action_events"), events);
    assert_eq!(app.count_rows("action_comments"), 0);
}

#[tokio::test]
async fn cancelled_and_expired_actions_refuse_claim_assign_and_snooze_but_take_comments() {
    let app = TestApp::spawn().await;
    let (admin, r1) = (app.admin(), app.member(Role::Reviewer));
    let clock = &app.state.services.clock;
    let cancelled = app.create_action(two_options("Called off")).await;
    let _: Value = app
        .source()
        .post(&at(&cancelled, "cancel"), json!({}), 200)
        .await;
    // Claimed and snoozed while open, then its deadline passes.
    let mut body = two_options("Nobody got to it");
    body["expires_at"] = json!(hds::domain::time::format(
        clock.now() + time::Duration::hours(1)
    ));
    let expired = app.create_action(body).await;
    let _: Value = r1.post(&at(&expired, "claim"), json!(null), 200).await;
    let soon = hds::domain::time::format(clock.now() + time::Duration::minutes(30));
    let _: Value = r1
        .post(&at(&expired, "snooze"), json!({"until": soon}), 200)
        .await;
    let poll = app.held_poll(expired["id"].as_str().unwrap()).await;
    clock.advance(time::Duration::minutes(61));
    assert_eq!(TestApp::answer(poll).await["status"], "expired");

    let later = hds::domain::time::format(clock.now() + time::Duration::hours(1));
    for (a, status) in [(&cancelled, "cancelled"), (&expired, "expired")] {
        let before = state_of(&admin, a).await;
        assert_eq!(before["status"], status);
        // Even the person who holds it cannot claim it again: it is closed.
        for who in [&r1, &admin] {
            let e = who
                .post_err(&at(a, "claim"), json!(null), 409, "ACTION_NOT_OPEN")
                .await;
            assert_eq!(e["details"]["status"], status);
            assert!(
                e["message"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("is {status}; only open Actions")),
                "{e}"
            );
        }
        for body in [
            json!({"assignee_user_id": r1.person().id}),
            json!({"assignee_user_id": admin.person().id}),
            json!({"assignee_user_id": null}),
        ] {
            admin
                .patch_err(&at(a, "assignment"), body, 409, "ACTION_NOT_OPEN")
                .await;
        }
        for until in [json!(later), json!(null)] {
            r1.post_err(
                &at(a, "snooze"),
                json!({"until": until}),
                409,
                "ACTION_NOT_OPEN",
            )
            .await;
        }
        assert_eq!(
            state_of(&admin, a).await,
            before,
            "{status}: nothing written"
        );

        // The dashboard says why on the page; its comment form still works.
        let b1 = app.browser(r1.person()).await;
        let page = format!("/app/actions/{}", a["id"].as_str().unwrap());
        let r = b1
            .post_form(
                &format!("{page}/claim"),
                Some(&app.base),
                &[("_csrf", b1.csrf())],
            )
            .await;
        assert_eq!(r.status(), 409);
        assert!(
            r.text()
                .await
                .unwrap()
                .contains("only open Actions accept this")
        );
        let r = b1
            .post_form(
                &format!("{page}/comments"),
                Some(&app.base),
                &[("_csrf", b1.csrf()), ("body", "Too late, noted.")],
            )
            .await;
        assert_eq!(r.status(), 303);
        let c: Value = admin
            .post(&at(a, "comments"), json!({"body": "Agreed."}), 201)
            .await;
        assert_eq!(c["data"]["author"]["user_id"], id_of(&admin));

        let after = state_of(&admin, a).await;
        assert_eq!(after["comment_count"], 2);
        assert_eq!(after["binding"], before["binding"]);
        assert_eq!(after["assignee"], before["assignee"]);
        let mut kinds = before["history"].as_array().unwrap().clone();
        kinds.extend([json!("commented"), json!("commented")]);
        assert_eq!(after["history"], json!(kinds));
    }
}

#[tokio::test]
async fn a_decision_bound_before_claim_assign_snooze_and_comment_is_still_current() {
    let app = TestApp::spawn().await;
    let (admin, r1, r2) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );
    let a = app.create_action(two_options("Promote the canary")).await;
    let bound = binding(&a);
    let in_a_day =
        hds::domain::time::format(app.state.services.clock.now() + time::Duration::days(1));
    let steps: Vec<Value> = vec![
        r1.post(&at(&a, "claim"), json!(null), 200).await,
        admin
            .patch(
                &at(&a, "assignment"),
                json!({"assignee_user_id": r2.person().id}),
                200,
            )
            .await,
        r2.post(&at(&a, "snooze"), json!({"until": in_a_day}), 200)
            .await,
        r2.post(&at(&a, "snooze"), json!({"until": null}), 200)
            .await,
        admin
            .patch(
                &at(&a, "assignment"),
                json!({"assignee_user_id": null}),
                200,
            )
            .await,
        r2.post(&at(&a, "claim"), json!(null), 200).await,
    ];
    for s in &steps {
        assert_eq!(binding(&s["data"]), bound, "{s}");
    }
    let _: Value = r1
        .post(
            &at(&a, "comments"),
            json!({"body": "Canary is green."}),
            201,
        )
        .await;
    // The Source sees the same binding.
    let src: Value = app
        .source()
        .get(
            &format!("/v1/source/actions/{}", a["id"].as_str().unwrap()),
            200,
        )
        .await;
    assert_eq!(binding(&src["data"]), bound);
    // A decision bound to what r2 read at the start is not stale.
    let done: Value = r2
        .post(
            &at(&a, "decision"),
            json!({"action_version": bound.0, "fingerprint": bound.1, "option_id": "approve"}),
            200,
        )
        .await;
    assert_eq!(done["data"]["status"], "resolved");
    assert_eq!(
        done["data"]["receipt"]["payload"]["action_version"],
        bound.0
    );
    assert_eq!(done["data"]["receipt"]["payload"]["fingerprint"], bound.1);
    assert_eq!(
        kinds(&read(&admin, &a).await),
        [
            "created",
            "claimed",
            "assigned",
            "snoozed",
            "snoozed",
            "assigned",
            "claimed",
            "commented",
            "resolved"
        ]
    );
}

/// The last history entry of an Action.
async fn last_event(who: &Actor, a: &Value) -> Value {
    let detail = read(who, a).await;
    detail["history"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn a_removed_or_demoted_member_no_longer_holds_open_actions() {
    let app = TestApp::spawn().await;
    let (admin, r1, r2, r3) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );
    let claimed = app.create_action(two_options("Claimed by r1")).await;
    r1.post::<Value>(&at(&claimed, "claim"), json!(null), 200)
        .await;
    let mut body = two_options("Named for r1 by e-mail");
    body["assignee_email"] = json!(r1.person().email.to_uppercase());
    let named = app.create_action(body).await;
    let closed = app.create_action(two_options("Decided by r1")).await;
    r1.post::<Value>(&at(&closed, "claim"), json!(null), 200)
        .await;
    let decision = json!({"action_version": closed["action_version"], "fingerprint": closed["fingerprint"], "option_id": "approve"});
    r1.post::<Value>(&at(&closed, "decision"), decision, 200)
        .await;
    let others = app.create_action(two_options("Claimed by r2")).await;
    r2.post::<Value>(&at(&others, "claim"), json!(null), 200)
        .await;
    let kept = app.create_action(two_options("Claimed by r3")).await;
    r3.post::<Value>(&at(&kept, "claim"), json!(null), 200)
        .await;
    let before = binding(&read(&admin, &claimed).await);
    let closed_before = read(&admin, &closed).await;

    // Removed: the open Actions r1 held, by id or by e-mail, are released in
    // the removal's transaction, each with an event naming why.
    let member = |who: &Actor| format!("/v1/workspaces/members/{}", who.person().id);
    let r = admin.call(Method::DELETE, &member(&r1), None, &[]).await;
    assert_eq!(r.status, 204, "{}", r.body);
    for a in [&claimed, &named] {
        let now = read(&admin, a).await;
        assert!(now["assignee"].is_null(), "{now}");
        assert!(
            now["assignee_user_id"].is_null() && now["assignee_email"].is_null(),
            "{now}"
        );
        let last = last_event(&admin, a).await;
        assert_eq!(last["type"], "assigned");
        assert_eq!(
            last["actor"],
            json!({"type": "user", "id": admin.person().id})
        );
        assert_eq!(
            last["data"],
            json!({"assignee_user_id": null, "previous_user_id": r1.person().id, "reason": "member removed"})
        );
    }
    assert_eq!(binding(&read(&admin, &claimed).await), before);
    let unassigned: Value = admin.get("/v1/me/actions?scope=unassigned", 200).await;
    let ids: Vec<&Value> = unassigned["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["id"])
        .collect();
    assert!(
        ids.contains(&&claimed["id"]) && ids.contains(&&named["id"]),
        "{unassigned}"
    );
    // A closed Action keeps its history as it was; others keep theirs.
    assert_eq!(read(&admin, &closed).await, closed_before);
    assert_eq!(
        read(&admin, &others).await["assignee"]["user_id"],
        id_of(&r2)
    );

    // Demoted to viewer, who decides nothing: released likewise. Promoted
    // to admin, who still may decide: kept, nothing recorded.
    let r: Value = admin
        .patch(&member(&r2), json!({"role": "viewer"}), 200)
        .await;
    assert_eq!(r["data"]["role"], "viewer");
    assert!(read(&admin, &others).await["assignee"].is_null());
    let last = last_event(&admin, &others).await;
    assert_eq!(last["data"]["reason"], "role changed to viewer");
    assert_eq!(last["data"]["previous_user_id"], id_of(&r2));
    admin
        .patch::<Value>(&member(&r3), json!({"role": "admin"}), 200)
        .await;
    let now = read(&admin, &kept).await;
    assert_eq!(now["assignee"]["user_id"], id_of(&r3));
    assert_eq!(kinds(&now), ["created", "claimed"]);
    let mine: Value = r3.get("/v1/me/actions?scope=mine", 200).await;
    assert_eq!(mine["data"][0]["id"], kept["id"]);
}

#[tokio::test]
async fn the_create_answer_and_its_replays_name_people_as_get_does() {
    let app = TestApp::spawn().await;
    let (admin, r1, r2) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );
    let mut body = two_options("Named people");
    body["assignee_email"] = json!(r1.person().email.to_uppercase());
    body["requested_by_user_id"] = json!(r2.person().id);
    body["dedupe_key"] = json!("people-1");
    let key = app.live_key();
    let headers = [("idempotency-key", "create-people-1")];
    let first = app
        .call(
            Method::POST,
            "/v1/actions",
            Some(&key),
            Some(&body),
            &headers,
        )
        .await;
    first.ok(201);
    let created = first.body["data"].clone();
    let id = created["id"].as_str().unwrap();
    let as_user = read(&admin, &created).await;
    let as_source = app
        .get(&format!("/v1/source/actions/{id}"), &key)
        .await
        .body["data"]
        .clone();
    for field in [
        "assignee",
        "requested_by",
        "comment_count",
        "assignee_email",
        "assignee_user_id",
    ] {
        assert_eq!(
            created[field], as_user[field],
            "{field}: {created} vs {as_user}"
        );
        assert_eq!(
            created[field], as_source[field],
            "{field}: {created} vs {as_source}"
        );
    }
    assert_eq!(created["assignee"]["user_id"], id_of(&r1));
    assert_eq!(created["assignee"]["email"], r1.person().email);
    assert!(created["assignee"].get("name").is_some(), "{created}");
    assert_eq!(created["requested_by"]["email"], r2.person().email);

    // The keyed replay answers the stored text; the dedupe match reads it.
    let again = app
        .call(
            Method::POST,
            "/v1/actions",
            Some(&key),
            Some(&body),
            &headers,
        )
        .await;
    again.ok(201);
    assert_eq!(again.body["data"], created);
    let deduped = app.post("/v1/actions", &key, body.clone()).await;
    deduped.ok(200);
    assert_eq!(deduped.body["idempotent_replay"], true);
    for field in ["assignee", "requested_by", "comment_count"] {
        assert_eq!(deduped.body["data"][field], created[field], "{field}");
    }
}

/// The inbox completes a whole page's people and comment counts at once
/// (`store::work::annotate`, two queries per page); each row says what the
/// Action's own GET says.
#[tokio::test]
async fn an_inbox_page_names_every_rows_people_as_each_get_does() {
    let app = TestApp::spawn().await;
    let (admin, r1, r2) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );
    let outsider = app.outsider();
    for i in 0..12 {
        let mut body = two_options(&format!("Row {i}"));
        match i % 4 {
            0 => body["assignee_user_id"] = json!(r1.person().id),
            1 => body["assignee_email"] = json!(r2.person().email.to_uppercase()),
            2 => body["requested_by_email"] = json!(outsider.person().email),
            _ => body["requested_by_user_id"] = json!(r2.person().id),
        }
        let a = app.create_action(body).await;
        for n in 0..(i % 3) {
            admin
                .post::<Value>(
                    &at(&a, "comments"),
                    json!({"body": format!("note {n}")}),
                    201,
                )
                .await;
        }
    }
    let page: Value = admin.get("/v1/me/actions?limit=50", 200).await;
    let rows = page["data"].as_array().unwrap();
    assert_eq!(rows.len(), 12);
    for row in rows {
        let one = read(&admin, row).await;
        for field in ["assignee", "requested_by", "comment_count"] {
            assert_eq!(row[field], one[field], "{field} of {}", row["title"]);
        }
    }
    // Named by e-mail in capitals: completed to the member, id included.
    let by_email: Vec<&Value> = rows
        .iter()
        .filter(|r| r["assignee_email"] == r2.person().email.to_uppercase())
        .collect();
    assert_eq!(by_email.len(), 3);
    for r in by_email {
        assert_eq!(r["assignee"]["user_id"], id_of(&r2), "{r}");
    }
    // Someone of another workspace stays as sent: no name, no id.
    let foreign = rows
        .iter()
        .find(|r| r["requested_by"]["email"] == outsider.person().email)
        .unwrap();
    assert!(foreign["requested_by"]["user_id"].is_null(), "{foreign}");
}

/// Holds the writer thread inside a job until `release` fires, then runs
/// `then` there, ahead of every job queued meanwhile. Answers once the
/// writer holds.
async fn hold_writer(
    app: &TestApp,
    then: impl FnOnce(&rusqlite::Connection) + Send + 'static,
) -> (std::sync::mpsc::Sender<()>, tokio::task::JoinHandle<()>) {
    let (release, wait) = std::sync::mpsc::channel::<()>();
    let (holding, held) = tokio::sync::oneshot::channel::<()>();
    let db = app.state.services.db.clone();
    let job = tokio::spawn(async move {
        db.write(move |c| {
            let _ = holding.send(());
            let _ = wait.recv();
            then(c);
            Ok(())
        })
        .await
        .unwrap();
    });
    held.await.unwrap();
    (release, job)
}

/// Work routes decide with the caller's role as it is inside their write,
/// not as it was at authentication. Deterministically: the writer is held,
/// the request authenticates (as a reviewer) and queues its write, then a
/// demotion to viewer (or a removal) commits ahead of it; the write must
/// see it. With the role read at authentication, each of these was 200/201.
#[tokio::test]
async fn a_demotion_or_removal_committed_while_a_write_waits_refuses_it() {
    let app = TestApp::spawn().await;
    let ws = {
        let conn = hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap();
        conn.query_row("SELECT id FROM workspaces", [], |r| r.get::<_, String>(0))
            .unwrap()
    };
    let cases: [(&str, bool, u16); 6] = [
        ("claim", false, 403),
        ("comments", false, 403),
        ("snooze", false, 403),
        ("decision", false, 403),
        ("claim", true, 404),
        ("decision", true, 404),
    ];
    for (route, removed, status) in cases {
        let who = app.member(Role::Reviewer);
        let a = app
            .create_action(two_options(&format!("{route} {removed}")))
            .await;
        let in_an_hour =
            hds::domain::time::format(app.state.services.clock.now() + time::Duration::hours(1));
        let body = match route {
            "comments" => json!({"body": "on it"}),
            "snooze" => json!({"until": in_an_hour}),
            "decision" => json!({
                "action_version": a["action_version"],
                "fingerprint": a["fingerprint"],
                "option_id": "approve"
            }),
            _ => json!({}),
        };
        let (ws, uid) = (ws.clone(), who.person().id.clone());
        let (release, held) = hold_writer(&app, move |c| {
            if removed {
                hds::store::workspaces::remove_member(c, &ws, &uid, "2026-11-27T00:00:00.000Z")
                    .unwrap();
            } else {
                hds::store::workspaces::set_role(c, &ws, &uid, Role::Viewer).unwrap();
            }
        })
        .await;
        let path = at(&a, route);
        let request = tokio::spawn(async move {
            let r = who.call(Method::POST, &path, Some(&body), &[]).await;
            (r.status.as_u16(), r.body)
        });
        // The request has authenticated and its write is queued.
        let db = &app.state.services.db;
        let waited = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            while db.queue_depth() < 1 {
                tokio::task::yield_now().await;
            }
        })
        .await;
        assert!(waited.is_ok(), "{route}: the write was never queued");
        release.send(()).unwrap();
        held.await.unwrap();
        let (got, answer) = request.await.unwrap();
        assert_eq!(got, status, "{route} (removed: {removed}): {answer}");
        let detail: Value = app
            .admin()
            .get(&format!("/v1/actions/{}", a["id"].as_str().unwrap()), 200)
            .await;
        assert_eq!(
            kinds(&detail["data"]),
            ["created"],
            "{route}: nothing written"
        );
        assert_eq!(detail["data"]["status"], "open");
    }
}

/// Source writes, likewise: an admin demoted (or removed) while their
/// create, rename, rotation or revocation waits for the writer is refused,
/// and the Source is as it was.
#[tokio::test]
async fn a_source_change_waiting_while_its_admin_is_demoted_is_refused() {
    let app = TestApp::spawn().await;
    let ws = {
        let conn = hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap();
        conn.query_row("SELECT id FROM workspaces", [], |r| r.get::<_, String>(0))
            .unwrap()
    };
    let src: Value = app
        .admin()
        .post("/v1/sources", json!({"name": "Deploy bot"}), 201)
        .await;
    let id = src["data"]["id"].as_str().unwrap().to_owned();
    let cases: [(Method, String, Value, bool); 4] = [
        (
            Method::POST,
            "/v1/sources".into(),
            json!({"name": "New bot"}),
            false,
        ),
        (
            Method::PATCH,
            format!("/v1/sources/{id}"),
            json!({"name": "Renamed"}),
            false,
        ),
        (
            Method::POST,
            format!("/v1/sources/{id}/keys/rotate"),
            json!({}),
            false,
        ),
        (
            Method::DELETE,
            format!("/v1/sources/{id}"),
            Value::Null,
            true,
        ),
    ];
    for (method, path, body, removed) in cases {
        let who = app.member(Role::Admin);
        let (ws, uid) = (ws.clone(), who.person().id.clone());
        let (release, held) = hold_writer(&app, move |c| {
            if removed {
                hds::store::workspaces::remove_member(c, &ws, &uid, "2026-11-27T00:00:00.000Z")
                    .unwrap();
            } else {
                hds::store::workspaces::set_role(c, &ws, &uid, Role::Reviewer).unwrap();
            }
        })
        .await;
        let (p, m) = (path.clone(), method.clone());
        let request = tokio::spawn(async move {
            let body = (!body.is_null()).then_some(body);
            let r = who.call(m, &p, body.as_ref(), &[]).await;
            (r.status.as_u16(), r.body)
        });
        let db = &app.state.services.db;
        let waited = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            while db.queue_depth() < 1 {
                tokio::task::yield_now().await;
            }
        })
        .await;
        assert!(
            waited.is_ok(),
            "{method} {path}: the write was never queued"
        );
        release.send(()).unwrap();
        held.await.unwrap();
        let (got, answer) = request.await.unwrap();
        assert_eq!(got, 403, "{method} {path}: {answer}");
        assert_eq!(answer["error"]["code"], "FORBIDDEN", "{answer}");
    }
    // Nothing changed: one Source, its name and keys as they were.
    let listed: Value = app.admin().get("/v1/sources", 200).await;
    let names: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"Deploy bot") && !names.contains(&"New bot") && !names.contains(&"Renamed"),
        "{listed}"
    );
    // The key was neither rotated nor revoked: it still authenticates.
    let key = src["secrets"]["live_key"].as_str().unwrap();
    let r = app.get("/v1/source/actions/act_none", key).await;
    r.error(404, "ACTION_NOT_FOUND");
}

/// A snooze that changes nothing writes nothing: the same time again, or
/// un-snoozing an Action that is not snoozed (never, or its time passed).
/// The answer is a repeated claim's: 200, `idempotent_replay: true`.
#[tokio::test]
async fn a_snooze_that_changes_nothing_records_nothing() {
    let app = TestApp::spawn().await;
    let r1 = app.member(Role::Reviewer);
    let a = app.create_action(two_options("Rotate the certs")).await;
    let snooze = at(&a, "snooze");
    let clock = &app.state.services.clock;

    // Not snoozed: un-snoozing is a no-op.
    clock.advance(time::Duration::seconds(5));
    let out: Value = r1.post(&snooze, json!({"until": null}), 200).await;
    assert_eq!(out["idempotent_replay"], true, "{out}");
    assert_eq!(out["data"]["updated_at"], a["updated_at"]);
    assert_eq!(out["data"]["snoozed_until"], Value::Null);

    let until = hds::domain::time::format(clock.now() + time::Duration::hours(1));
    let first: Value = r1.post(&snooze, json!({"until": until}), 200).await;
    assert_eq!(first["idempotent_replay"], false);
    // The same time again, written with another offset.
    clock.advance(time::Duration::seconds(5));
    let same = hds::domain::time::parse(&until)
        .unwrap()
        .to_offset(time::macros::offset!(+2))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let again: Value = r1.post(&snooze, json!({"until": same}), 200).await;
    assert_eq!(again["idempotent_replay"], true, "{again}");
    assert_eq!(again["data"]["updated_at"], first["data"]["updated_at"]);
    assert_eq!(again["data"]["snoozed_until"], until);

    // Its time passes: it is back, so un-snoozing changes nothing either.
    clock.advance(time::Duration::minutes(61));
    let back: Value = r1.post(&snooze, json!({"until": null}), 200).await;
    assert_eq!(back["idempotent_replay"], true, "{back}");
    assert_eq!(back["data"]["updated_at"], first["data"]["updated_at"]);

    let detail: Value = r1
        .get(&format!("/v1/actions/{}", a["id"].as_str().unwrap()), 200)
        .await;
    assert_eq!(kinds(&detail["data"]), ["created", "snoozed"]);
}

/// A comment row whose `mentions` column is not a JSON array of ids is a
/// broken database, answered as 500 `INTERNAL_ERROR`, never read as "no
/// mentions" (STYLE: typed results; errors are not turned into defaults).
#[tokio::test]
async fn a_broken_mentions_column_is_an_error_not_an_empty_list() {
    let app = TestApp::spawn().await;
    let r1 = app.member(Role::Reviewer);
    let a = app.create_action(two_options("Check the logs")).await;
    let comments = at(&a, "comments");
    let _: Value = r1
        .post(&comments, json!({"body": "cc @admin@example.com"}), 201)
        .await;
    let listed: Value = r1.get(&comments, 200).await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);

    let conn = hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap();
    for broken in ["not json", "{\"a\": 1}", "[1, 2]"] {
        conn.execute("UPDATE action_comments SET mentions = ?1", [broken])
            .unwrap();
        r1.get_err(&comments, 500, "INTERNAL_ERROR").await;
    }
}

/// An Action stored under the looser e-mail rule of an earlier version
/// (a requester address with a trailing space) stays patchable: the
/// create-only e-mail fields are checked on create, not on every PATCH.
#[tokio::test]
async fn an_action_stored_under_the_older_email_rule_stays_patchable() {
    let app = TestApp::spawn().await;
    let mut body = two_options("Deploy v1");
    body["requested_by_email"] = json!("ana@example.com");
    let a = app.create_action(body).await;
    let id = a["id"].as_str().unwrap();
    let n = app
        .db()
        .execute(
            "UPDATE actions SET spec = json_set(spec, '$.requested_by_email', 'ana@example.com ') WHERE id = ?1",
            [id],
        )
        .unwrap();
    assert_eq!(n, 1);
    let r = app
        .patch(
            &format!("/v1/actions/{id}"),
            &app.live_key(),
            json!({"title": "Deploy v2"}),
        )
        .await;
    assert_eq!(r.ok(200)["data"]["title"], "Deploy v2");
}

/// A comment's author edits it (newly mentioned members are told; the
/// thread says "edited"; the same body again is a replay); its author or
/// an owner or admin deletes it; anyone else is refused; the history
/// keeps both acts; the dashboard offers the same.
#[tokio::test]
async fn comments_are_edited_by_their_author_and_deleted_by_author_or_admin() {
    let app = TestApp::spawn().await;
    let (admin, r1, r2, viewer) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
        app.member(Role::Viewer),
    );
    let a = app
        .create_action(two_options("Renew the TLS certificate"))
        .await;
    let comments = at(&a, "comments");
    let made: Value = r1
        .post(&comments, json!({"body": "Expires Friday."}), 201)
        .await;
    assert_eq!(made["data"]["edited_at"], Value::Null);
    let cid = made["data"]["id"].as_str().unwrap();
    let one = format!("{comments}/{cid}");

    // Only the author edits; bad bodies are refused as on create.
    r2.patch_err(&one, json!({"body": "mine now"}), 403, "FORBIDDEN")
        .await;
    admin
        .patch_err(&one, json!({"body": "mine now"}), 403, "FORBIDDEN")
        .await;
    let e = r1
        .patch_err(&one, json!({"body": "  "}), 422, "VALIDATION_ERROR")
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "body");
    r1.patch_err(
        &format!("{comments}/cmt_01JD8XQ0000000000000000000"),
        json!({"body": "x"}),
        404,
        "COMMENT_NOT_FOUND",
    )
    .await;

    let body = format!("Expires Friday; @{} can you renew it?", r2.person().email);
    let edited: Value = r1.patch(&one, json!({"body": body}), 200).await;
    assert_eq!(edited["idempotent_replay"], false);
    assert_eq!(edited["data"]["body"], body.as_str());
    let at_edit = edited["data"]["edited_at"].as_str().unwrap().to_owned();
    let again = r1
        .call(Method::PATCH, &one, Some(&json!({"body": body})), &[])
        .await;
    assert_eq!(again.ok(200)["idempotent_replay"], true);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.body["data"]["edited_at"], at_edit.as_str());
    let listed: Value = viewer.get(&comments, 200).await;
    assert_eq!(listed["data"][0]["body"], body.as_str());
    // Newly mentioned: told once, as by a new comment.
    let mut told = false;
    for _ in 0..250 {
        let n: Value = r2.get("/v1/notifications", 200).await;
        told = n["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["kind"] == "action.mentioned" && n["action_id"] == a["id"]);
        if told {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(told, "the newly mentioned member hears of it");

    // The dashboard shows "edited" and, to its author, the forms.
    let page = format!("/app/actions/{}", a["id"].as_str().unwrap());
    let b1 = app.browser(r1.person()).await;
    let html = b1.page(&page).await;
    assert!(html.contains(&format!("action=\"{page}/comments/{cid}/edit\"")));
    assert!(html.contains(&format!("action=\"{page}/comments/{cid}/delete\"")));
    assert!(html.contains(">edited</span>"));
    let html2 = app.browser(r2.person()).await.page(&page).await;
    assert!(!html2.contains(&format!("{cid}/edit")) && !html2.contains(&format!("{cid}/delete")));
    let origin = b1.url("");
    let origin = origin.trim_end_matches('/');
    let r = b1
        .post_form(
            &format!("{page}/comments/{cid}/edit"),
            Some(origin),
            &[("_csrf", b1.csrf()), ("body", "Renewed by hand.")],
        )
        .await;
    assert_eq!(r.status(), 303);
    assert_eq!(
        r.headers()["location"].to_str().unwrap(),
        format!("{page}?done=comment_edited")
    );
    let listed: Value = viewer.get(&comments, 200).await;
    assert_eq!(listed["data"][0]["body"], "Renewed by hand.");
    // Another site's form edits nothing.
    let r = b1
        .post_form(
            &format!("{page}/comments/{cid}/edit"),
            Some("https://evil.example"),
            &[("_csrf", b1.csrf()), ("body", "hijacked")],
        )
        .await;
    assert_eq!(r.status(), 403);
    // A refused edit shows the page again with its form open, holding what
    // was typed; a refused new comment keeps its text in the box; an edit
    // of a comment deleted meanwhile lands in the new comment's box.
    let long = format!("Typed with care {}", "x".repeat(10_000));
    let r = b1
        .post_form(
            &format!("{page}/comments/{cid}/edit"),
            Some(origin),
            &[("_csrf", b1.csrf()), ("body", &long)],
        )
        .await;
    assert_eq!(r.status(), 422);
    let html = r.text().await.unwrap();
    assert!(html.contains("Not done: the comment is 10016 characters; the limit is 10000"));
    assert!(html.contains("<details class=\"comment-edit\" open>"));
    assert!(html.contains(&format!(">{long}</textarea>")));
    let r = b1
        .post_form(
            &format!("{page}/comments"),
            Some(origin),
            &[("_csrf", b1.csrf()), ("body", &long)],
        )
        .await;
    assert_eq!(r.status(), 422);
    let html = r.text().await.unwrap();
    // The box is marked and described by the refusal, said beside it.
    assert!(html.contains(&format!(
        "id=\"comment-body\" rows=\"3\" maxlength=\"10000\" required aria-invalid=\"true\" aria-describedby=\"comment-error\">{long}</textarea>"
    )));
    assert!(html.contains(
        "<p class=\"field-error\" id=\"comment-error\">Not done: the comment is 10016 characters"
    ));
    assert!(!html.contains("comment-edit\" open"));
    let gone: Value = r1
        .post(&comments, json!({"body": "About to go"}), 201)
        .await;
    let gone_id = gone["data"]["id"].as_str().unwrap().to_owned();
    r1.delete::<Value>(&format!("{comments}/{gone_id}"), 204)
        .await;
    let r = b1
        .post_form(
            &format!("{page}/comments/{gone_id}/edit"),
            Some(origin),
            &[("_csrf", b1.csrf()), ("body", "Still worth saying")],
        )
        .await;
    assert_eq!(r.status(), 404);
    let html = r.text().await.unwrap();
    assert!(html.contains("required>Still worth saying</textarea>"));
    assert!(html.contains("id=\"comment-body\""));
    assert_eq!(
        viewer.get::<Value>(&comments, 200).await["data"][0]["body"],
        "Renewed by hand."
    );
    // The notice quotes the comment as it now reads; mentioning r2 again
    // (removed by the last edit) is no news.
    let mentions_of_r2 = || async {
        let n: Value = r2.get("/v1/notifications", 200).await;
        n["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["kind"] == "action.mentioned" && n["action_id"] == a["id"])
            .cloned()
            .collect::<Vec<Value>>()
    };
    let told = mentions_of_r2().await;
    assert_eq!(told.len(), 1);
    assert_eq!(told[0]["body"], "Renewed by hand.");
    let again = format!("Renewed by hand. @{} FYI", r2.person().email);
    r1.patch::<Value>(&one, json!({"body": again}), 200).await;
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert_eq!(mentions_of_r2().await.len(), 1, "told once");
    // A comment id of another Action is not found through this one.
    let b = app.create_action(two_options("Another")).await;
    r1.patch_err(
        &format!("{}/{cid}", at(&b, "comments")),
        json!({"body": "x"}),
        404,
        "COMMENT_NOT_FOUND",
    )
    .await;

    // Deleting: not another reviewer, nor a viewer; the author or an admin may.
    for who in [&r2, &viewer] {
        who.call(Method::DELETE, &one, None, &[])
            .await
            .error(403, "FORBIDDEN");
    }
    let theirs: Value = r2.post(&comments, json!({"body": "Off topic."}), 201).await;
    let theirs = format!("{comments}/{}", theirs["data"]["id"].as_str().unwrap());
    let _: Value = admin.delete(&theirs, 204).await;
    let r = b1
        .post_form(
            &format!("{page}/comments/{cid}/delete"),
            Some(origin),
            &[("_csrf", b1.csrf())],
        )
        .await;
    assert_eq!(r.status(), 303);
    admin
        .call(Method::DELETE, &one, None, &[])
        .await
        .error(404, "COMMENT_NOT_FOUND");
    let listed: Value = viewer.get(&comments, 200).await;
    assert_eq!(listed["data"], json!([]));
    let told = mentions_of_r2().await;
    assert_eq!(told[0]["body"], "(This comment was deleted.)", "{told:?}");
    let detail: Value = r1
        .get(&format!("/v1/actions/{}", a["id"].as_str().unwrap()), 200)
        .await;
    assert_eq!(
        kinds(&detail["data"]),
        [
            "created",
            "commented",
            "comment_edited",
            "comment_edited",
            // Posted and deleted to show a refused edit of a comment gone.
            "commented",
            "comment_deleted",
            "comment_edited",
            "commented",
            "comment_deleted",
            "comment_deleted"
        ]
    );
    let h = &detail["data"]["history"];
    assert_eq!(h[2]["data"]["mentions"], json!([r2.person().id]));
    assert_eq!(
        h[6]["data"]["mentions"],
        json!([]),
        "r2 was mentioned before"
    );
    assert_eq!(h[8]["actor"]["id"], admin.person().id.as_str());
    assert_eq!(h[9]["data"]["comment_id"], cid);
    let html = b1.page(&page).await;
    assert!(html.contains("deleted a comment"), "the history says so");
    assert!(!html.contains("Renewed by hand."));
}
