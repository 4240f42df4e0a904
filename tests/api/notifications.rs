//! Notifications through the real server (guide: "Notifications"): each kind
//! reaches the right people and no one else, read marks, pages, preferences,
//! the workspace policy, the test clock for expiry warnings and snooze
//! returns, and bad input on every route.

use std::time::Duration;

use hds::domain::access::Role;
use serde_json::{Value, json};

use crate::helpers::{Actor, TestApp, two_options};

/// The person's notifications (every page), newest first.
async fn all_of(who: &Actor) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut path = "/v1/notifications?limit=200".to_owned();
    for _ in 0..50 {
        let page: Value = who.get(&path, 200).await;
        assert_eq!(page["object"], "list");
        let data = page["data"].as_array().unwrap().clone();
        out.extend(data.iter().cloned());
        if page["has_more"] != true {
            return out;
        }
        let last = data.last().unwrap()["id"].as_str().unwrap().to_owned();
        path = format!("/v1/notifications?limit=200&starting_after={last}");
    }
    panic!("more than 50 pages");
}

/// (kind, action_id) of each of the person's notifications, newest first.
async fn kinds_of(who: &Actor) -> Vec<(String, Value)> {
    all_of(who)
        .await
        .iter()
        .map(|n| {
            (
                n["kind"].as_str().unwrap().to_owned(),
                n["action_id"].clone(),
            )
        })
        .collect()
}

async fn summary(who: &Actor) -> Value {
    who.get("/v1/notifications/summary", 200).await
}

fn id(a: &Value) -> Value {
    a["id"].clone()
}

/// Waits (bounded) until `who` has a notification of `kind` about `action`.
async fn until_has(who: &Actor, kind: &str, action: &Value) -> Value {
    for _ in 0..250 {
        if let Some(n) = all_of(who)
            .await
            .into_iter()
            .find(|n| n["kind"] == kind && n["action_id"] == action["id"])
        {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "no {kind} notification about {} arrived in 5 s",
        action["id"]
    );
}

#[tokio::test]
async fn a_new_action_reaches_every_member_who_may_decide_and_no_one_else() {
    let app = TestApp::spawn().await;
    let (admin, r1, r2, viewer, outsider) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
        app.member(Role::Viewer),
        app.outsider(),
    );
    let a = app.create_action(two_options("Deploy 42")).await;
    for who in [&admin, &r1, &r2] {
        let got = all_of(who).await;
        assert_eq!(got.len(), 1, "{got:?}");
        let n = &got[0];
        assert_eq!(n["kind"], "action.new");
        assert_eq!(n["object"], "notification");
        assert_eq!(n["action_id"], id(&a));
        assert_eq!(n["title"], "New: Deploy 42");
        assert!(n["body"].as_str().unwrap().contains("asks for a decision"));
        assert_eq!(
            n["url"],
            format!("{}/app/actions/{}", app.base, a["id"].as_str().unwrap())
        );
        assert_eq!(n["read_at"], Value::Null);
        assert!(n["id"].as_str().unwrap().starts_with("ntf_"));
        assert_eq!(n["workspace_id"], a["workspace_id"]);
        let s = summary(who).await;
        assert_eq!(s, json!({"unread": 1, "by_kind": {"action.new": 1}}));
    }
    for who in [&viewer, &outsider] {
        assert!(all_of(who).await.is_empty());
        assert_eq!(summary(who).await, json!({"unread": 0, "by_kind": {}}));
    }
    // A person who joins later hears of what comes after, not the past.
    let late = app.member(Role::Reviewer);
    assert!(all_of(&late).await.is_empty());
    let b = app.create_action(two_options("Deploy 43")).await;
    assert_eq!(kinds_of(&late).await, [("action.new".into(), id(&b))]);
    assert_eq!(
        kinds_of(&r1).await,
        [("action.new".into(), id(&b)), ("action.new".into(), id(&a))]
    );
}

#[tokio::test]
async fn a_restricted_action_reaches_its_listed_reviewers_only() {
    let app = TestApp::spawn().await;
    let (admin, r1, r2) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );
    let mut body = two_options("Payroll");
    body["visibility"] = json!("restricted");
    body["reviewer_emails"] = json!([r1.person().email]);
    let a = app.create_action(body).await;
    assert_eq!(kinds_of(&r1).await, [("action.new".into(), id(&a))]);
    assert!(kinds_of(&r2).await.is_empty());
    // The owner may see it but not decide it unlisted: no "may decide" news.
    assert!(kinds_of(&admin).await.is_empty());
}

#[tokio::test]
async fn the_assignee_hears_assigned_once_and_the_requester_nothing() {
    let app = TestApp::spawn().await;
    let (admin, r1, r2, r3) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );
    let mut body = two_options("Refund");
    body["assignee_email"] = json!(r1.person().email);
    body["requested_by_email"] = json!(r3.person().email);
    let a = app.create_action(body).await;
    let got = all_of(&r1).await;
    assert_eq!(got.len(), 1, "assigned, not also new: {got:?}");
    assert_eq!(got[0]["kind"], "action.assigned");
    assert_eq!(got[0]["title"], "Assigned to you: Refund");
    assert!(
        kinds_of(&r3).await.is_empty(),
        "the requester may not decide"
    );
    assert_eq!(kinds_of(&r2).await, [("action.new".into(), id(&a))]);
    assert_eq!(summary(&r3).await["unread"], 0);

    // Reassigned by the owner: r2 hears it; the owner who did it does not.
    let before_admin = all_of(&admin).await.len();
    admin
        .patch::<Value>(
            &format!("/v1/actions/{}/assignment", a["id"].as_str().unwrap()),
            json!({"assignee_user_id": r2.person().id}),
            200,
        )
        .await;
    let n = &all_of(&r2).await[0];
    assert_eq!(n["kind"], "action.assigned");
    assert!(
        n["body"]
            .as_str()
            .unwrap()
            .contains("assigned this Action to you")
    );
    assert_eq!(all_of(&admin).await.len(), before_admin);
    // Claiming it oneself tells no one.
    let b = app.create_action(two_options("Claim me")).await;
    let before = all_of(&r1).await.len();
    r1.post::<Value>(
        &format!("/v1/actions/{}/claim", b["id"].as_str().unwrap()),
        json!({}),
        200,
    )
    .await;
    assert_eq!(all_of(&r1).await.len(), before, "a claim tells no one");

    // An Action a test key made is marked so, for the assignee and the team.
    let mut body = two_options("Smoke test deploy");
    body["assignee_email"] = json!(r1.person().email);
    app.source_test()
        .post::<Value>("/v1/actions", body, 201)
        .await;
    let titles: Vec<String> = all_of(&r1)
        .await
        .iter()
        .map(|n| n["title"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        titles.contains(&"Assigned to you: [test] Smoke test deploy".to_owned()),
        "{titles:?}"
    );
    let titles: Vec<String> = all_of(&r2)
        .await
        .iter()
        .map(|n| n["title"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        titles.contains(&"New: [test] Smoke test deploy".to_owned()),
        "{titles:?}"
    );
}

#[tokio::test]
async fn comments_tell_the_mentioned_and_the_people_involved() {
    let app = TestApp::spawn().await;
    let (r1, r2, r3, viewer) = (
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
        app.member(Role::Viewer),
    );
    let a = app.create_action(two_options("Rotate keys")).await;
    let comments = format!("/v1/actions/{}/comments", a["id"].as_str().unwrap());
    // r1 claims it; r2 comments mentioning the viewer and r3.
    r1.post::<Value>(
        &format!("/v1/actions/{}/claim", a["id"].as_str().unwrap()),
        json!({}),
        200,
    )
    .await;
    r2.post::<Value>(
        &comments,
        json!({"body": format!("@{} @{} please look: **CI** is [red](https://ci.example.com/7)", r3.person().email, viewer.person().email)}),
        201,
    )
    .await;
    let k = |v: &[(String, Value)]| v.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    assert_eq!(k(&kinds_of(&r3).await), ["action.mentioned", "action.new"]);
    let m = &all_of(&r3).await[0];
    assert!(
        m["title"]
            .as_str()
            .unwrap()
            .contains("mentioned you on Rotate keys")
    );
    // Quoted as words: no Markdown in a notification.
    assert!(
        m["body"]
            .as_str()
            .unwrap()
            .ends_with("please look: CI is red"),
        "{m}"
    );
    // A viewer may read the Action: a mention reaches them too.
    assert_eq!(k(&kinds_of(&viewer).await), ["action.mentioned"]);
    // The holder hears of the comment; the author hears nothing.
    assert_eq!(k(&kinds_of(&r1).await), ["action.commented", "action.new"]);
    assert_eq!(k(&kinds_of(&r2).await), ["action.new"]);
    // r3 answers: r2 (who commented) and r1 (who holds it) hear of it, r3 not.
    r3.post::<Value>(&comments, json!({"body": "done"}), 201)
        .await;
    assert_eq!(k(&kinds_of(&r2).await), ["action.commented", "action.new"]);
    assert_eq!(
        k(&kinds_of(&r1).await),
        ["action.commented", "action.commented", "action.new"]
    );
    assert_eq!(k(&kinds_of(&r3).await), ["action.mentioned", "action.new"]);
}

#[tokio::test]
async fn expiry_warnings_and_snooze_returns_follow_the_test_clock() {
    let app = TestApp::spawn().await;
    let (admin, r1, r2) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );
    let clock = app.state.services.clock.clone();
    let in_hours = |h: i64| {
        let t = clock.now() + time::Duration::hours(h);
        hds::domain::time::format(t)
    };
    // Assigned to r1, expires in 2 h; the policy warns 60 min before.
    let mut body = two_options("Expiring");
    body["assignee_email"] = json!(r1.person().email);
    body["expires_at"] = json!(in_hours(2));
    let a = app.create_action(body).await;
    // Unassigned, expires in 3 h: warned to the owners and admins.
    let mut body = two_options("Nobody holds me");
    body["expires_at"] = json!(in_hours(3));
    let b = app.create_action(body).await;
    // r2 snoozes b for 30 minutes.
    r2.post::<Value>(
        &format!("/v1/actions/{}/snooze", b["id"].as_str().unwrap()),
        json!({"until": hds::domain::time::format(clock.now() + time::Duration::minutes(30))}),
        200,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !kinds_of(&r1)
            .await
            .iter()
            .any(|(k, _)| k == "action.expiring")
    );

    clock.advance(time::Duration::minutes(31));
    let back = until_has(&r2, "action.returned", &b).await;
    assert_eq!(back["title"], "Back from snooze: Nobody holds me");
    assert!(
        !kinds_of(&r1)
            .await
            .iter()
            .any(|(k, _)| k == "action.returned")
    );

    clock.advance(time::Duration::minutes(30));
    let warn = until_has(&r1, "action.expiring", &a).await;
    assert!(warn["title"].as_str().unwrap().starts_with("Expires in "));
    assert!(warn["title"].as_str().unwrap().ends_with("min: Expiring"));
    // r2 does not hold it; the owner hears of b only when its window opens.
    assert!(
        !kinds_of(&r2)
            .await
            .iter()
            .any(|(k, _)| k == "action.expiring")
    );
    assert!(
        !kinds_of(&admin)
            .await
            .iter()
            .any(|(k, _)| k == "action.expiring")
    );
    clock.advance(time::Duration::minutes(60));
    until_has(&admin, "action.expiring", &b).await;
    // Once only: the next passes add none.
    clock.advance(time::Duration::minutes(1));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let warned = kinds_of(&r1)
        .await
        .iter()
        .filter(|(k, _)| k == "action.expiring")
        .count();
    assert_eq!(warned, 1);
}

/// A Source moving `expires_at` to or before a snooze's end ends the snooze
/// (it would expire out of everyone's sight, which a snooze may not do): the
/// Action is back in the open list at once, its history says why, and whoever
/// snoozed it hears `action.returned`. A deadline after the snooze keeps it.
#[tokio::test]
async fn a_deadline_moved_before_a_snooze_ends_the_snooze() {
    let app = TestApp::spawn().await;
    let r1 = app.member(Role::Reviewer);
    let clock = app.state.services.clock.clone();
    let in_minutes = |m: i64| hds::domain::time::format(clock.now() + time::Duration::minutes(m));
    let mut body = two_options("Rotate the certificate");
    body["expires_at"] = json!(in_minutes(240));
    let a = app.create_action(body).await;
    let id = a["id"].as_str().unwrap();
    let path = format!("/v1/actions/{id}");
    let until = in_minutes(120);
    r1.post::<Value>(&format!("{path}/snooze"), json!({"until": until}), 200)
        .await;

    // A later deadline, still after the snooze: nothing about the snooze changes.
    let moved: Value = app
        .source()
        .patch(&path, json!({"expires_at": in_minutes(180)}), 200)
        .await;
    assert_eq!(moved["data"]["snoozed_until"], until.as_str());
    let snoozed: Value = r1.get("/v1/me/actions?status=snoozed", 200).await;
    assert_eq!(snoozed["data"][0]["id"], id);

    // A deadline before the snooze's end: back in the inbox now.
    let deadline = in_minutes(60);
    let moved: Value = app
        .source()
        .patch(&path, json!({"expires_at": deadline}), 200)
        .await;
    let at = moved["data"]["updated_at"].as_str().unwrap();
    assert_eq!(moved["data"]["snoozed_until"], at, "{moved}");
    let open: Value = r1.get("/v1/me/actions", 200).await;
    assert_eq!(open["data"][0]["id"], id, "{open}");
    let snoozed: Value = r1.get("/v1/me/actions?status=snoozed", 200).await;
    assert_eq!(snoozed["data"], json!([]));
    let detail: Value = r1.get(&path, 200).await;
    let history = detail["data"]["history"].as_array().unwrap();
    let last = history.last().unwrap();
    assert_eq!(last["type"], "snoozed", "{last}");
    assert_eq!(last["actor"]["type"], "source", "{last}");
    assert_eq!(last["data"]["until"], Value::Null, "{last}");
    assert_eq!(
        last["data"]["reason"],
        format!("the Source moved expires_at to {deadline}, before the snooze's end"),
        "{last}"
    );
    assert_eq!(history[history.len() - 2]["type"], "updated");
    let back = until_has(&r1, "action.returned", &a).await;
    assert_eq!(back["title"], "Back from snooze: Rotate the certificate");
    let page = app
        .browser(r1.person())
        .await
        .page(&format!("/app/actions/{id}"))
        .await;
    assert!(
        page.contains("Back in the inbox: the snooze ended early"),
        "the page's history says why"
    );
}

/// `who`'s `action.closed` notifications about `a`.
async fn closed_about(who: &Actor, a: &Value) -> Vec<Value> {
    all_of(who)
        .await
        .into_iter()
        .filter(|n| n["kind"] == "action.closed" && n["action_id"] == a["id"])
        .collect()
}

/// `who` approves `a`, saying why.
async fn decide(who: &Actor, a: &Value) {
    let body = json!({"action_version": a["action_version"], "fingerprint": a["fingerprint"], "option_id": "approve", "reason": "tests green"});
    let path = format!("/v1/actions/{}/decision", a["id"].as_str().unwrap());
    who.post::<Value>(&path, body, 200).await;
}

/// A material change by the Source: whoever voted on the version before
/// (their vote no longer counts) and the assignee hear `action.changed`;
/// other reviewers do not.
#[tokio::test]
async fn voters_and_the_assignee_hear_that_an_action_changed() {
    let app = TestApp::spawn().await;
    let (ann, bob, carol) = (
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );
    let mut body = two_options("Deploy 49");
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([ann.person().id, bob.person().id, carol.person().id]);
    body["assignee_user_id"] = json!(carol.person().id);
    body["approval_policy"] = json!({"required_approvals": 2});
    let a = app.create_action(body).await;
    let id = a["id"].as_str().unwrap();
    let v = json!({"vote": "approve", "action_version": 1, "fingerprint": a["fingerprint"]});
    ann.post::<Value>(&format!("/v1/actions/{id}/votes"), v, 200)
        .await;
    app.source()
        .patch::<Value>(
            &format!("/v1/actions/{id}"),
            // Priority changes nothing that is asked: not named.
            json!({"title": "Deploy 49 to eu-west", "priority": "high"}),
            200,
        )
        .await;
    async fn changed(who: &Actor, id: &str) -> Vec<Value> {
        all_of(who)
            .await
            .into_iter()
            .filter(|n| n["kind"] == "action.changed" && n["action_id"] == id)
            .collect()
    }
    let got = changed(&ann, id).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["title"], "Changed: Deploy 49 to eu-west");
    let body = got[0]["body"].as_str().unwrap();
    assert!(
        body.ends_with("changed title (version 1 → 2). Your vote to approve on version 1 no longer counts: vote again on what it asks now."),
        "{body}"
    );
    let got = changed(&carol, id).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0]["body"]
            .as_str()
            .unwrap()
            .ends_with("changed title (version 1 → 2). Read it again before you decide."),
        "{got:?}"
    );
    assert!(changed(&bob, id).await.is_empty(), "no vote, not assigned");
}

/// Revoking a Source cancels its open Actions: their requester and
/// assignee hear `action.closed` naming who revoked it; the revoker does not.
#[tokio::test]
async fn revoking_a_source_tells_whom_its_open_actions_were_for() {
    let app = TestApp::spawn().await;
    let (admin, ann, bob) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );
    let (source_id, key) = app.second_source().await;
    let mut body = two_options("Deploy 47");
    body["requested_by_user_id"] = json!(ann.person().id);
    body["assignee_email"] = json!(bob.person().email);
    let a = app.create_action_with(&key, body).await;
    let plain = app.create_action_with(&key, two_options("Deploy 48")).await;
    let r = admin
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/sources/{source_id}"),
            None,
            &[],
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.body);
    for who in [&ann, &bob] {
        let got = closed_about(who, &a).await;
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0]["title"], "Cancelled: Deploy 47");
        assert_eq!(
            got[0]["body"],
            "Admin <admin@example.com> revoked its Source, which cancelled it."
        );
        assert!(closed_about(who, &plain).await.is_empty());
    }
    assert!(closed_about(&admin, &a).await.is_empty());
}

/// The person an Action was requested by, and its assignee, hear how it
/// closed (`action.closed`): decided (who chose what, and why), cancelled
/// by the Source, or expired; never the person who closed it.
#[tokio::test]
async fn the_requester_and_the_assignee_hear_how_their_action_closed() {
    let app = TestApp::spawn().await;
    let (admin, ann, bob) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );
    let made = |title: &str, expires_at: Option<String>| {
        let mut body = two_options(title);
        body["requested_by_user_id"] = json!(ann.person().id);
        body["assignee_email"] = json!(bob.person().email);
        if let Some(t) = expires_at {
            body["expires_at"] = json!(t);
        }
        body
    };
    // The owner decides: both hear who chose what and why; the owner nothing.
    let a = app.create_action(made("Deploy 42", None)).await;
    decide(&admin, &a).await;
    for who in [&ann, &bob] {
        let got = closed_about(who, &a).await;
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0]["title"], "Decided: Deploy 42");
        let body = got[0]["body"].as_str().unwrap();
        assert!(
            body.ends_with("chose “Approve”. Reason: tests green"),
            "{body}"
        );
        assert!(
            body.starts_with("Admin <admin@example.com> chose"),
            "the decider's name, never without the address: {body}"
        );
    }
    assert!(closed_about(&admin, &a).await.is_empty());

    // The assignee decides: the requester hears, the assignee does not.
    let b = app.create_action(made("Deploy 43", None)).await;
    decide(&bob, &b).await;
    assert_eq!(closed_about(&ann, &b).await.len(), 1);
    assert!(closed_about(&bob, &b).await.is_empty());

    // The Source cancels.
    let c = app.create_action(made("Deploy 44", None)).await;
    app.source()
        .post::<Value>(
            &format!("/v1/actions/{}/cancel", c["id"].as_str().unwrap()),
            json!({"reason": "superseded"}),
            200,
        )
        .await;
    let got = closed_about(&ann, &c).await;
    assert_eq!(got[0]["title"], "Cancelled: Deploy 44");
    assert_eq!(
        got[0]["body"],
        "The Source cancelled it. Reason: superseded"
    );

    // Nobody decides before the deadline.
    let clock = app.state.services.clock.clone();
    let soon = hds::domain::time::format(clock.now() + time::Duration::minutes(5));
    let d = app.create_action(made("Deploy 45", Some(soon))).await;
    clock.advance(time::Duration::minutes(6));
    let got = until_has(&ann, "action.closed", &d).await;
    assert_eq!(got["title"], "Expired: Deploy 45");
    assert_eq!(got["body"], "Nobody decided it before it expired.");
    assert_eq!(closed_about(&bob, &d).await.len(), 1);

    // An Action that names neither tells no one.
    let e = app.create_action(two_options("Deploy 46")).await;
    decide(&admin, &e).await;
    for who in [&ann, &bob, &admin] {
        assert!(closed_about(who, &e).await.is_empty());
    }

    // A restricted Action: a requester who may not see it hears nothing of
    // it; its listed assignee does.
    let carol = app.member(Role::Reviewer);
    let mut body = made("Pay the invoice", None);
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([bob.person().id, carol.person().id]);
    let f = app.create_action(body).await;
    decide(&carol, &f).await;
    assert!(
        closed_about(&ann, &f).await.is_empty(),
        "unlisted requester"
    );
    assert_eq!(closed_about(&bob, &f).await.len(), 1);

    // A quorum: the approval policy chose, with the tally; the voter whose
    // vote made it (here the assignee) closed it and hears nothing.
    let mut body = made("Drop the staging database", None);
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([ann.person().id, bob.person().id, carol.person().id]);
    body["approval_policy"] = json!({"required_approvals": 2});
    let g = app.create_action(body).await;
    for who in [&carol, &bob] {
        let v = json!({"vote": "approve", "action_version": g["action_version"], "fingerprint": g["fingerprint"]});
        who.post::<Value>(
            &format!("/v1/actions/{}/votes", g["id"].as_str().unwrap()),
            v,
            200,
        )
        .await;
    }
    let got = closed_about(&ann, &g).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        got[0]["body"],
        "The approval policy chose “Approve”. Reason: 2 approvals, 0 rejections"
    );
    assert!(
        closed_about(&bob, &g).await.is_empty(),
        "his vote closed it"
    );

    // An earlier voter did not see it close: the requester who approved
    // first (allowed to) hears how it ended.
    let mut body = made("Rotate the root key", None);
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([ann.person().id, bob.person().id, carol.person().id]);
    body["approval_policy"] = json!({"required_approvals": 2, "allow_self_approval": true});
    let h = app.create_action(body).await;
    for who in [&ann, &carol] {
        let v = json!({"vote": "approve", "action_version": h["action_version"], "fingerprint": h["fingerprint"]});
        who.post::<Value>(
            &format!("/v1/actions/{}/votes", h["id"].as_str().unwrap()),
            v,
            200,
        )
        .await;
    }
    assert_eq!(
        closed_about(&ann, &h).await.len(),
        1,
        "an earlier voter hears"
    );
    assert_eq!(closed_about(&bob, &h).await.len(), 1, "the assignee hears");
}

#[tokio::test]
async fn a_failed_outcome_and_a_finished_control_reach_who_acted() {
    let app = TestApp::spawn().await;
    let (admin, r1) = (app.admin(), app.member(Role::Reviewer));
    let a = app
        .create_action(json!({
            "title": "Restart",
            "options": [{"id": "approve", "label": "Approve"}, {"id": "reject", "label": "Reject"}],
            "callback_url": "https://hooks.example.com/hds",
            "controls": [{"key": "logs", "label": "Fetch logs", "kind": "callback"}]
        }))
        .await;
    let cr: Value = r1
        .post(
            &format!(
                "/v1/actions/{}/controls/logs/invoke",
                a["id"].as_str().unwrap()
            ),
            json!({"action_version": a["action_version"], "fingerprint": a["fingerprint"]}),
            202,
        )
        .await;
    let result = format!(
        "/v1/source/control-requests/{}/result",
        cr["data"]["id"].as_str().unwrap()
    );
    let src = app.source();
    src.post::<Value>(&result, json!({"status": "running"}), 200)
        .await;
    assert!(
        !kinds_of(&r1)
            .await
            .iter()
            .any(|(k, _)| k == "control_request.finished")
    );
    src.post::<Value>(
        &result,
        json!({"status": "failed", "message": "worker 3 is gone"}),
        200,
    )
    .await;
    let n = &all_of(&r1).await[0];
    assert_eq!(n["kind"], "control_request.finished");
    assert_eq!(n["title"], "Fetch logs failed: Restart");
    assert_eq!(n["body"], "worker 3 is gone");
    assert!(
        !kinds_of(&admin)
            .await
            .iter()
            .any(|(k, _)| k == "control_request.finished")
    );

    // The owner decides; the Source reports a failed outcome: the owner hears it.
    app.decide(&a, json!({"option_id": "approve"}))
        .await
        .ok(200);
    let report = json!({"status": "failed", "duration_ms": 10, "rollback": true,
        "action_version": a["action_version"], "fingerprint": a["fingerprint"], "message": "exit 3"});
    app.post(
        &format!("/v1/actions/{}/outcome", a["id"].as_str().unwrap()),
        &app.live_key(),
        report,
    )
    .await
    .ok(201);
    let n = &all_of(&admin).await[0];
    assert_eq!(n["kind"], "outcome.failed");
    assert_eq!(n["body"], "exit 3");
    assert!(
        !kinds_of(&r1)
            .await
            .iter()
            .any(|(k, _)| k == "outcome.failed")
    );
}

#[tokio::test]
async fn read_marks_pages_and_unread_only() {
    let app = TestApp::spawn().await;
    let (r1, r2) = (app.member(Role::Reviewer), app.member(Role::Reviewer));
    let mut made = Vec::new();
    for i in 0..5 {
        made.push(app.create_action(two_options(&format!("A{i}"))).await);
    }
    let admin = app.admin();
    admin
        .patch::<Value>(
            &format!("/v1/actions/{}/assignment", made[0]["id"].as_str().unwrap()),
            json!({"assignee_user_id": r1.person().id}),
            200,
        )
        .await;
    // 5 new + 1 assigned, newest first, in pages of 2.
    let mut seen = Vec::new();
    let mut path = "/v1/notifications?limit=2".to_owned();
    loop {
        let page: Value = r1.get(&path, 200).await;
        let data = page["data"].as_array().unwrap();
        assert!(data.len() <= 2);
        seen.extend(data.iter().map(|n| n["id"].as_str().unwrap().to_owned()));
        if page["has_more"] == false {
            break;
        }
        path = format!(
            "/v1/notifications?limit=2&starting_after={}",
            seen.last().unwrap()
        );
    }
    assert_eq!(seen.len(), 6);
    // `before`, the cursor's older name, pages alike.
    let by_old_name: Value = r1
        .get(
            &format!("/v1/notifications?limit=2&before={}", seen[1]),
            200,
        )
        .await;
    let ids: Vec<&str> = by_old_name["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [seen[2].as_str(), seen[3].as_str()]);
    // Both names at once, or a cursor that is not a notification id: 422
    // naming the parameter, and what it should be.
    let both = r1
        .get_err(
            &format!(
                "/v1/notifications?starting_after={}&before={}",
                seen[0], seen[1]
            ),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(both["details"]["errors"][0]["field"], "before");
    for bad in [
        "act_01JD8XQ0000000000000000000",
        "ntf_x",
        "ntf_90000000000000000000000000",
    ] {
        let e = r1
            .get_err(
                &format!("/v1/notifications?starting_after={bad}"),
                422,
                "VALIDATION_ERROR",
            )
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], "starting_after");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("a notification id (ntf_"),
            "{e}"
        );
    }
    // A notification id of the right shape that is not the caller's (none
    // at all here): 422, not a page that starts anywhere.
    let unknown = hds::domain::ids::new_id("ntf");
    let e = r1
        .get_err(
            &format!("/v1/notifications?starting_after={unknown}"),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "starting_after");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("is not one of your notifications"),
        "{e}"
    );
    // Sent by its older name, the refusal names that one.
    let e = r1
        .get_err(
            &format!("/v1/notifications?before={unknown}"),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "before", "{e}");
    // One older than what housekeeping keeps may name a row removed since:
    // a position, not an error.
    let old: Value = r1
        .get(
            "/v1/notifications?starting_after=ntf_01JD8XQ0000000000000000000",
            200,
        )
        .await;
    assert_eq!(old["data"], json!([]), "{old}");
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.reverse();
    assert_eq!(seen, sorted, "newest first");
    assert_eq!(all_of(&r1).await[0]["kind"], "action.assigned");
    assert_eq!(
        summary(&r1).await,
        json!({"unread": 6, "by_kind": {"action.new": 5, "action.assigned": 1}})
    );

    // Read one broadcast and the personal one.
    let read: Value = r1
        .post(
            &format!("/v1/notifications/{}/read", seen[0]),
            json!({}),
            200,
        )
        .await;
    assert_eq!(read["data"]["id"], seen[0].as_str());
    let first_read_at = read["data"]["read_at"].clone();
    assert!(first_read_at.is_string());
    let again: Value = r1
        .post(
            &format!("/v1/notifications/{}/read", seen[0]),
            json!({}),
            200,
        )
        .await;
    assert_eq!(again["data"]["read_at"], first_read_at, "read once");
    r1.post::<Value>(
        &format!("/v1/notifications/{}/read", seen[3]),
        json!({}),
        200,
    )
    .await;
    assert_eq!(summary(&r1).await["unread"], 4);
    let unread: Value = r1.get("/v1/notifications?unread_only=true", 200).await;
    let ids: Vec<&str> = unread["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [&seen[1], &seen[2], &seen[4], &seen[5]]);
    // r2 cannot read r1's own: 404. (An `action.new` has one id for all who
    // hear of it; each reads their own copy.)
    r2.post_err(
        &format!("/v1/notifications/{}/read", seen[0]),
        json!({}),
        404,
        "NOTIFICATION_NOT_FOUND",
    )
    .await;
    r2.post_err(
        "/v1/notifications/ntf_nope/read",
        json!({}),
        404,
        "NOTIFICATION_NOT_FOUND",
    )
    .await;
    // A crafted long id is not echoed back whole (64 characters, then …).
    let long = format!("ntf_{}", "a".repeat(20_000));
    let e = r2
        .post_err(
            &format!("/v1/notifications/{long}/read"),
            json!({}),
            404,
            "NOTIFICATION_NOT_FOUND",
        )
        .await;
    let said = e["message"].as_str().unwrap();
    assert!(said.len() < 400 && said.contains("aaaa…"), "{said}");
    assert_eq!(summary(&r1).await["unread"], 4);
    // r2 reading its own copy of a broadcast leaves r1's unread.
    let r2_first = all_of(&r2).await[0]["id"].as_str().unwrap().to_owned();
    r2.post::<Value>(
        &format!("/v1/notifications/{r2_first}/read"),
        json!({}),
        200,
    )
    .await;
    assert_eq!(summary(&r1).await["unread"], 4);

    let all: Value = r1.post("/v1/notifications/read-all", json!({}), 200).await;
    assert_eq!(all, json!({"marked_read": 4, "unread": 0}));
    assert_eq!(summary(&r1).await, json!({"unread": 0, "by_kind": {}}));
    let none: Value = r1.get("/v1/notifications?unread_only=true", 200).await;
    assert_eq!(none["data"], json!([]));
    assert!(all_of(&r1).await.iter().all(|n| n["read_at"].is_string()));
    // Something new after read-all is unread again.
    app.create_action(two_options("After")).await;
    assert_eq!(
        summary(&r1).await,
        json!({"unread": 1, "by_kind": {"action.new": 1}})
    );
    assert_eq!(summary(&r2).await["unread"], 5);
}

/// Deciding or voting on an Action marks what told the person of it read
/// (an assignment, a mention); notices about other Actions stay unread.
#[tokio::test]
async fn deciding_or_voting_reads_the_notices_about_that_action() {
    let app = TestApp::spawn().await;
    let (admin, r1) = (app.admin(), app.member(Role::Reviewer));
    let prefs = "/v1/notification-preferences";
    let _: Value = r1
        .patch(
            prefs,
            json!({"events": {"action.new": {"in_app": false}}}),
            200,
        )
        .await;
    let (a, b) = (
        app.create_action(two_options("Rotate the keys")).await,
        app.create_action(two_options("Renew the domain")).await,
    );
    for x in [&a, &b] {
        let _: Value = admin
            .patch(
                &format!("/v1/actions/{}/assignment", x["id"].as_str().unwrap()),
                json!({"assignee_user_id": r1.person().id}),
                200,
            )
            .await;
        until_has(&r1, "action.assigned", x).await;
    }
    assert_eq!(summary(&r1).await["unread"], 2);
    let decision =
        json!({"action_version": 1, "fingerprint": a["fingerprint"], "option_id": "approve"});
    let _: Value = r1
        .post(
            &format!("/v1/actions/{}/decision", a["id"].as_str().unwrap()),
            decision,
            200,
        )
        .await;
    assert_eq!(summary(&r1).await["unread"], 1, "b's stays unread");
    let mine = all_of(&r1).await;
    let about = |x: &Value| {
        mine.iter()
            .find(|n| n["action_id"] == x["id"] && n["kind"] == "action.assigned")
            .unwrap()["read_at"]
            .clone()
    };
    assert!(!about(&a).is_null() && about(&b).is_null(), "{mine:?}");
    // A vote does the same for a mention.
    let mut body = two_options("Drop the staging database");
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([admin.person().id, r1.person().id]);
    body["approval_policy"] = json!({"required_approvals": 2});
    let v = app.create_action(body).await;
    let _: Value = admin
        .post(
            &format!("/v1/actions/{}/comments", v["id"].as_str().unwrap()),
            json!({"body": format!("@{} please look", r1.person().email)}),
            201,
        )
        .await;
    until_has(&r1, "action.mentioned", &v).await;
    assert_eq!(summary(&r1).await["unread"], 2);
    let vote = json!({"vote": "approve", "action_version": 1, "fingerprint": v["fingerprint"]});
    let _: Value = r1
        .post(
            &format!("/v1/actions/{}/votes", v["id"].as_str().unwrap()),
            vote,
            200,
        )
        .await;
    assert_eq!(summary(&r1).await["unread"], 1);
}

/// New Actions made while a person did not hear of them (`action.new`
/// off) do not come back as unread when they do again (unmuted, or the
/// policy making it mandatory): those are marked read, none removed, and
/// the unread ones from before the mute stay unread. A viewer promoted
/// hears of those made from then on.
#[tokio::test]
async fn new_actions_made_while_muted_stay_unheard_when_unmuted() {
    let app = TestApp::spawn().await;
    let (r1, r2, viewer) = (
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
        app.member(Role::Viewer),
    );
    let before = app.create_action(two_options("Before muting")).await;
    until_has(&r1, "action.new", &before).await;
    let prefs = "/v1/notification-preferences";
    let mute = json!({"events": {"action.new": {"in_app": false}}});
    for who in [&r1, &r2] {
        let _: Value = who.patch(prefs, mute.clone(), 200).await;
    }
    for i in 0..3 {
        app.create_action(two_options(&format!("While muted {i}")))
            .await;
    }
    assert_eq!(summary(&r1).await["unread"], 0);
    let _: Value = r1
        .patch(
            prefs,
            json!({"events": {"action.new": {"in_app": true}}}),
            200,
        )
        .await;
    assert_eq!(summary(&r1).await["unread"], 1, "only the one from before");
    let listed = all_of(&r1).await;
    assert_eq!(listed.len(), 4, "none removed: {listed:?}");
    let unread: Vec<&Value> = listed.iter().filter(|n| n["read_at"].is_null()).collect();
    assert_eq!(unread.len(), 1, "{listed:?}");
    assert_eq!(unread[0]["action_id"], before["id"]);
    // The policy making the kind mandatory: the same for r2.
    let _: Value = app
        .admin()
        .patch(
            "/v1/workspaces/notification-policy",
            json!({"mandatory": ["action.new"]}),
            200,
        )
        .await;
    assert_eq!(summary(&r2).await["unread"], 1);
    // Promoted from viewer: the Actions made before were never theirs.
    let _: Value = app
        .admin()
        .patch(
            &format!("/v1/workspaces/members/{}", viewer.person().id),
            json!({"role": "reviewer"}),
            200,
        )
        .await;
    assert_eq!(summary(&viewer).await["unread"], 0);
    // What comes next, all three hear of.
    let next = app.create_action(two_options("After")).await;
    for (who, unread) in [(&r1, 2), (&r2, 2), (&viewer, 1)] {
        until_has(who, "action.new", &next).await;
        assert_eq!(summary(who).await["unread"], unread);
    }
}

#[tokio::test]
async fn preferences_silence_a_kind_unless_the_policy_makes_it_mandatory() {
    let app = TestApp::spawn().await;
    let (admin, r1) = (app.admin(), app.member(Role::Reviewer));
    let prefs: Value = r1.get("/v1/notification-preferences", 200).await;
    assert_eq!(prefs["email"], true);
    assert_eq!(prefs["email_digest"], "off");
    assert_eq!(prefs["mandatory"], json!([]));
    assert_eq!(prefs["email_configured"], false);
    assert_eq!(prefs["events"].as_object().unwrap().len(), 12);
    assert_eq!(
        prefs["events"]["action.assigned"],
        json!({"in_app": true, "email": true})
    );
    assert_eq!(
        prefs["events"]["action.new"],
        json!({"in_app": true, "email": false})
    );

    let saved: Value = r1
        .patch(
            "/v1/notification-preferences",
            json!({"email_digest": "daily", "events": {"action.assigned": {"in_app": false}, "action.new": {"in_app": false}}}),
            200,
        )
        .await;
    assert_eq!(saved["email_digest"], "daily");
    assert_eq!(
        saved["events"]["action.assigned"],
        json!({"in_app": false, "email": true})
    );
    assert_eq!(
        r1.get::<Value>("/v1/notification-preferences", 200).await,
        saved
    );
    let assign = |a: &Value| format!("/v1/actions/{}/assignment", a["id"].as_str().unwrap());
    let a = app.create_action(two_options("Quiet")).await;
    admin
        .patch::<Value>(
            &assign(&a),
            json!({"assignee_user_id": r1.person().id}),
            200,
        )
        .await;
    assert!(all_of(&r1).await.is_empty(), "both kinds are off in-app");
    assert_eq!(summary(&r1).await["unread"], 0);

    // The owner makes `action.assigned` mandatory: it arrives despite the opt-out,
    // and r1 can no longer switch it off.
    let policy: Value = admin
        .patch(
            "/v1/workspaces/notification-policy",
            json!({"mandatory": ["action.assigned", "action.assigned"]}),
            200,
        )
        .await;
    assert_eq!(policy["mandatory"], json!(["action.assigned"]));
    let b = app.create_action(two_options("Loud")).await;
    admin
        .patch::<Value>(
            &assign(&b),
            json!({"assignee_user_id": r1.person().id}),
            200,
        )
        .await;
    assert_eq!(kinds_of(&r1).await, [("action.assigned".into(), id(&b))]);
    let err = r1
        .patch_err(
            "/v1/notification-preferences",
            json!({"email": false, "events": {"action.assigned": {"email": false}}}),
            409,
            "NOTIFICATION_MANDATORY",
        )
        .await;
    assert_eq!(
        err["details"]["errors"][0]["field"],
        "events.action.assigned.email"
    );
    assert_eq!(
        err["details"]["errors"][0]["code"],
        "NOTIFICATION_MANDATORY"
    );
    // Nothing of the refused body was written.
    assert_eq!(
        r1.get::<Value>("/v1/notification-preferences", 200).await["email"],
        true
    );
    let shown: Value = r1.get("/v1/notification-preferences", 200).await;
    assert_eq!(shown["mandatory"], json!(["action.assigned"]));
    // `events` keeps their own choice (off in the dashboard), which comes
    // back if the policy lets go; `mandatory` says it reaches them anyway.
    assert_eq!(
        shown["events"]["action.assigned"]["in_app"], false,
        "{shown}"
    );
    // Objects only: an array where one belongs is refused at any depth,
    // naming where, and nothing is saved (serde would read it by position).
    for (body, field) in [
        (
            json!({"events": {"action.new": [false, false]}}),
            "events.action.new",
        ),
        (json!({"events": [{"email": false}]}), "events"),
    ] {
        let e = r1
            .patch_err(
                "/v1/notification-preferences",
                body.clone(),
                422,
                "VALIDATION_ERROR",
            )
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], field, "{body}: {e}");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("expected an object"),
            "{e}"
        );
    }
    assert_eq!(
        r1.get::<Value>("/v1/notification-preferences", 200).await,
        shown
    );
}

#[tokio::test]
async fn the_policy_decides_who_hears_of_new_actions_and_only_managers_set_it() {
    let app = TestApp::spawn().await;
    let (admin, r1, r2) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );
    let default: Value = r1.get("/v1/workspaces/notification-policy", 200).await;
    assert_eq!(default["new_action"], "all_reviewers");
    assert_eq!(default["email_enabled"], true);
    assert_eq!(default["expiry_warning_minutes"], 60);
    assert_eq!(default["mandatory"], json!([]));
    let err = r1
        .patch_err(
            "/v1/workspaces/notification-policy",
            json!({"new_action": "none"}),
            403,
            "FORBIDDEN",
        )
        .await;
    assert_eq!(err["details"]["required_role"], "admin");

    let set: Value = admin
        .patch(
            "/v1/workspaces/notification-policy",
            json!({"new_action": "assigned_only", "expiry_warning_minutes": 15}),
            200,
        )
        .await;
    assert_eq!(set["new_action"], "assigned_only");
    assert_eq!(set["expiry_warning_minutes"], 15);
    assert_eq!(set["email_enabled"], true, "left out, left alone");
    // A whole number written with a fraction or an exponent is that number,
    // as on every other route.
    for (sent, read) in [(json!(15.0), 15), (json!(1.5e1), 15)] {
        let again: Value = admin
            .patch(
                "/v1/workspaces/notification-policy",
                json!({"expiry_warning_minutes": sent}),
                200,
            )
            .await;
        assert_eq!(again["expiry_warning_minutes"], read);
    }
    let mut body = two_options("Only for r1");
    body["assignee_user_id"] = json!(r1.person().id);
    let a = app.create_action(body).await;
    app.create_action(two_options("Nobody's")).await;
    assert_eq!(kinds_of(&r1).await, [("action.assigned".into(), id(&a))]);
    assert!(kinds_of(&r2).await.is_empty());

    admin
        .patch::<Value>(
            "/v1/workspaces/notification-policy",
            json!({"new_action": "none"}),
            200,
        )
        .await;
    app.create_action(two_options("Silent")).await;
    assert!(kinds_of(&r2).await.is_empty());
    // `none` is not `assigned_only`: the assignee of a new Action is not
    // told either…
    let mut body = two_options("Assigned, silently");
    body["assignee_user_id"] = json!(r1.person().id);
    let silent = app.create_action(body).await;
    assert_eq!(kinds_of(&r1).await, [("action.assigned".into(), id(&a))]);
    // …while an assignment made later still is.
    let _: Value = admin
        .patch(
            &format!("/v1/actions/{}/assignment", silent["id"].as_str().unwrap()),
            json!({"assignee_user_id": r2.person().id}),
            200,
        )
        .await;
    assert_eq!(
        kinds_of(&r2).await,
        [("action.assigned".into(), id(&silent))]
    );
}

#[tokio::test]
async fn bad_input_gets_the_precise_code_and_writes_nothing() {
    let app = TestApp::spawn().await;
    let (admin, r1) = (app.admin(), app.member(Role::Reviewer));
    app.create_action(two_options("One")).await;
    for q in [
        "limit=0",
        "limit=201",
        "limit=ten",
        "unread_only=maybe",
        "colour=red",
    ] {
        let e = r1
            .get_err(&format!("/v1/notifications?{q}"), 422, "VALIDATION_ERROR")
            .await;
        assert!(
            !e["details"]["errors"].as_array().unwrap().is_empty(),
            "{q}"
        );
    }
    let prefs_before: Value = r1.get("/v1/notification-preferences", 200).await;
    for body in [
        json!({"email": "yes"}),
        json!({"email_digest": "weekly"}),
        json!({"events": {"action.unknown": {"email": false}}}),
        json!({"events": {"action.new": {"sms": true}}}),
        json!({"events": {"action.new": {"email": 1}}}),
        json!({"colour": "red"}),
        json!([]),
    ] {
        let e = r1
            .patch_err(
                "/v1/notification-preferences",
                body.clone(),
                422,
                "VALIDATION_ERROR",
            )
            .await;
        assert!(
            !e["details"]["errors"].as_array().unwrap().is_empty(),
            "{body}"
        );
    }
    assert_eq!(
        r1.get::<Value>("/v1/notification-preferences", 200).await,
        prefs_before
    );
    let policy_before: Value = admin.get("/v1/workspaces/notification-policy", 200).await;
    for body in [
        json!({"expiry_warning_minutes": 1441}),
        json!({"expiry_warning_minutes": -1}),
        json!({"new_action": "everyone"}),
        json!({"mandatory": ["action.bogus"]}),
        json!({"mandatory": "action.new"}),
        json!({"email_enabled": null, "extra": 1}),
    ] {
        let e = admin
            .patch_err(
                "/v1/workspaces/notification-policy",
                body.clone(),
                422,
                "VALIDATION_ERROR",
            )
            .await;
        assert!(
            !e["details"]["errors"].as_array().unwrap().is_empty(),
            "{body}"
        );
    }
    let e = admin
        .patch_err(
            "/v1/workspaces/notification-policy",
            json!({"expiry_warning_minutes": 2000}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "expiry_warning_minutes");
    assert!(e["message"].as_str().unwrap().contains("0-1440"));
    assert_eq!(
        admin
            .get::<Value>("/v1/workspaces/notification-policy", 200)
            .await,
        policy_before
    );
    // Without a credential, or with a Source key: refused.
    app.anonymous()
        .get_err("/v1/notifications", 401, "AUTH_REQUIRED")
        .await;
    let src = app.source();
    let r = src
        .raw(reqwest::Method::GET, "/v1/notifications/summary", "")
        .await;
    assert_eq!(r.status.as_u16(), 401, "{}", r.body);
    assert_eq!(summary(&r1).await["unread"], 1);
}

#[tokio::test]
async fn a_removed_member_keeps_nothing_of_the_workspace() {
    let app = TestApp::spawn().await;
    let (admin, r1) = (app.admin(), app.member(Role::Reviewer));
    let a = app.create_action(two_options("Secret project")).await;
    admin
        .patch::<Value>(
            &format!("/v1/actions/{}/assignment", a["id"].as_str().unwrap()),
            json!({"assignee_user_id": r1.person().id}),
            200,
        )
        .await;
    assert_eq!(summary(&r1).await["unread"], 2);
    admin
        .delete::<Value>(&format!("/v1/workspaces/members/{}", r1.person().id), 204)
        .await;
    // No longer a member: their token still signs them in, and shows nothing.
    assert!(all_of(&r1).await.is_empty());
    assert_eq!(summary(&r1).await, json!({"unread": 0, "by_kind": {}}));
}

#[tokio::test]
async fn a_viewer_made_reviewer_hears_of_what_comes_after_not_of_the_viewer_days() {
    let app = TestApp::spawn().await;
    let (admin, r1) = (app.admin(), app.member(Role::Reviewer));
    let role = format!("/v1/workspaces/members/{}", r1.person().id);
    admin
        .patch::<Value>(&role, json!({"role": "viewer"}), 200)
        .await;
    app.create_action(two_options("While a viewer 1")).await;
    app.create_action(two_options("While a viewer 2")).await;
    admin
        .patch::<Value>(&role, json!({"role": "reviewer"}), 200)
        .await;
    assert!(all_of(&r1).await.is_empty());
    assert_eq!(summary(&r1).await["unread"], 0);
    let a = app.create_action(two_options("As a reviewer")).await;
    assert_eq!(kinds_of(&r1).await, [("action.new".into(), id(&a))]);
    assert_eq!(summary(&r1).await["unread"], 1);
}
