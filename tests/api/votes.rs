//! Approval policies: listed reviewers vote; the quorum resolves with a receipt.

use hds::domain::access::Role;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{TestApp, two_options};

fn vote(a: &Value, v: &str) -> Value {
    json!({"vote": v, "action_version": a["action_version"], "fingerprint": a["fingerprint"]})
}

fn votes_of(a: &Value) -> String {
    format!("/v1/actions/{}/votes", a["id"].as_str().unwrap())
}

#[tokio::test]
async fn two_approvals_resolve_with_the_first_option_and_a_receipt_listing_the_votes() {
    let app = TestApp::spawn().await;
    let (admin, bob, carol) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );
    let mut body = two_options("Drop the staging database");
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([admin.person().id, bob.person().id]);
    body["approval_policy"] = json!({"required_approvals": 2});
    let a = app.create_action(body).await;
    let path = votes_of(&a);

    // Before voting, the page offers the vote with a reason box.
    let page_of = format!("/app/actions/{}", a["id"].as_str().unwrap());
    let admin_b = app.browser(admin.person()).await;
    let html = admin_b.page(&page_of).await;
    assert!(html.contains(r#"id="decide-reason""#), "{html}");
    let first: Value = admin.post(&path, vote(&a, "approve"), 200).await;
    assert_eq!(first["data"]["status"], "open");
    // After it, the vote is shown, and no reason box without a button.
    let html = admin_b.page(&page_of).await;
    assert!(html.contains("You voted to approve."), "{html}");
    assert!(!html.contains(r#"id="decide-reason""#), "{html}");
    assert_eq!(
        first["tally"],
        json!({"approvals": 1, "rejections": 0, "required_approvals": 2, "reject_threshold": 1})
    );
    let again = admin
        .call(
            Method::POST,
            &path,
            Some(&vote(&a, "approve")),
            &[("idempotency-key", "v1")],
        )
        .await;
    assert_eq!(again.ok(200)["idempotent_replay"], true);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    admin
        .post_err(&path, vote(&a, "reject"), 409, "VOTE_ALREADY_CAST")
        .await;
    // The same vote with a reason it was not cast with is not a retry: it
    // is refused, and the vote keeps what it was cast with.
    let mut reasoned = vote(&a, "approve");
    reasoned["reason"] = json!("on second thought");
    let e = admin
        .post_err(&path, reasoned, 409, "VOTE_ALREADY_CAST")
        .await;
    assert!(e["message"].as_str().unwrap().contains("no reason"), "{e}");
    let cast: Value = admin.get(&path, 200).await;
    assert!(
        !cast.to_string().contains("on second thought"),
        "the refused reason was kept: {cast}"
    );
    // Not listed: the restricted Action is invisible to Carol.
    carol
        .post_err(&path, vote(&a, "approve"), 404, "ACTION_NOT_FOUND")
        .await;
    let maybe = json!({"vote": "maybe", "action_version": 1, "fingerprint": a["fingerprint"]});
    bob.post_err(&path, maybe, 422, "VALIDATION_ERROR").await;

    let mut with_reason = vote(&a, "approve");
    with_reason["reason"] = json!("checked the backup");
    let done: Value = bob.post(&path, with_reason.clone(), 200).await;
    // The same vote with the same reason is a retry, after it resolved too;
    // with another reason, or none, it is refused and says why.
    let again: Value = bob.post(&path, with_reason.clone(), 200).await;
    assert_eq!(again["idempotent_replay"], true, "{again}");
    assert_eq!(again["data"]["status"], done["data"]["status"]);
    for other in [json!("changed my mind"), Value::Null] {
        let mut body = with_reason.clone();
        body["reason"] = other;
        let e = bob.post_err(&path, body, 409, "VOTE_ALREADY_CAST").await;
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("with another reason"),
            "{e}"
        );
    }
    let d = &done["data"];
    assert_eq!(d["status"], "resolved");
    assert_eq!(d["resolution_option_id"], "approve");
    assert_eq!(d["resolution_reason"], "2 approvals, 0 rejections");
    assert_eq!(
        d["resolved_by"],
        json!({"type": "system", "id": "approval_policy"})
    );
    let votes = d["receipt"]["payload"]["decision"]["votes"]
        .as_array()
        .unwrap();
    assert_eq!(votes.len(), 2);
    // Each vote's reason is bound by its hash; one without a reason has none.
    use sha2::Digest;
    let bobs = votes
        .iter()
        .find(|v| v["user_id"] == bob.person().id.as_str())
        .unwrap();
    assert_eq!(
        bobs["reason_sha256"],
        hex::encode(sha2::Sha256::digest(b"checked the backup"))
    );
    let admins = votes
        .iter()
        .find(|v| v["user_id"] == admin.person().id.as_str())
        .unwrap();
    assert!(admins.get("reason_sha256").is_none(), "{admins}");
    // The team reads why: the reason is in the history and on the page.
    let id = a["id"].as_str().unwrap();
    let h: Value = admin.get(&format!("/v1/actions/{id}"), 200).await;
    let cast: Vec<Value> = h["data"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "vote_cast")
        .map(|e| e["data"].clone())
        .collect();
    assert_eq!(
        cast,
        [
            json!({"vote": "approve"}),
            json!({"vote": "approve", "reason": "checked the backup"})
        ]
    );
    let page = app
        .browser(admin.person())
        .await
        .page(&format!("/app/actions/{id}"))
        .await;
    assert!(page.contains("checked the backup"), "{page}");
    // Admins see restricted Actions, but only listed reviewers vote.
    app.member(Role::Admin)
        .post_err(&path, vote(&a, "approve"), 403, "FORBIDDEN")
        .await;
}

#[tokio::test]
async fn one_rejection_resolves_a_boolean_action_as_false() {
    let app = TestApp::spawn().await;
    let a = app
        .create_action(json!({"title": "Grant prod access", "interaction": {"type": "boolean"}, "visibility": "restricted",
            "reviewer_emails": ["admin@example.com"], "approval_policy": {"required_approvals": 1}}))
        .await;
    let r: Value = app
        .admin()
        .post(&votes_of(&a), vote(&a, "reject"), 200)
        .await;
    assert_eq!(r["data"]["status"], "resolved");
    assert_eq!(r["data"]["response"], json!({"value": false}));
}

#[tokio::test]
async fn votes_need_a_policy_and_the_current_binding() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let plain = app.create_action(two_options("No policy")).await;
    admin
        .post_err(
            &votes_of(&plain),
            vote(&plain, "approve"),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    let mut body = two_options("Policy");
    body["visibility"] = json!("restricted");
    body["reviewer_emails"] = json!(["admin@example.com"]);
    body["approval_policy"] = json!({"required_approvals": 1});
    let a = app.create_action(body).await;
    let mut stale = vote(&a, "approve");
    stale["action_version"] = json!(7);
    admin
        .post_err(&votes_of(&a), stale, 409, "ACTION_CHANGED")
        .await;
}

/// A vote stands for its option: rejecting where the reject option needs a
/// reason needs one on the vote, and the Action stays open without it.
#[tokio::test]
async fn a_vote_for_an_option_that_needs_a_reason_carries_one() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let mut body = two_options("Wire the payment");
    body["options"][1]["reason_required"] = json!(true);
    body["visibility"] = json!("restricted");
    body["reviewer_emails"] = json!(["admin@example.com"]);
    body["approval_policy"] = json!({"required_approvals": 1});
    let a = app.create_action(body).await;
    let e = admin
        .post_err(&votes_of(&a), vote(&a, "reject"), 422, "VALIDATION_ERROR")
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "reason", "{e}");
    assert_eq!(e["details"]["option_id"], "reject", "{e}");
    assert_eq!(
        e["message"],
        "a vote to reject stands for \"Reject\", which needs a reason: say why you vote so"
    );
    let id = a["id"].as_str().unwrap();
    let still: Value = admin.get(&format!("/v1/actions/{id}"), 200).await;
    assert_eq!(still["data"]["status"], "open");
    let mut with = vote(&a, "reject");
    with["reason"] = json!("The IBAN does not match the invoice.");
    let done: Value = admin.post(&votes_of(&a), with, 200).await;
    assert_eq!(done["data"]["status"], "resolved", "{done}");
    assert_eq!(done["data"]["resolution_option_id"], "reject");
}

#[tokio::test]
async fn approval_policy_requires_votes() {
    let app = TestApp::spawn().await;
    let mut body = two_options("Drop the staging database");
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([app.creds["user_id"]]);
    body["approval_policy"] = json!({"required_approvals": 1});
    let a = app.create_action(body).await;
    assert_eq!(
        a["approval_policy"],
        json!({"required_approvals": 1, "allow_self_approval": false})
    );
    app.decide(&a, json!({"option_id": "approve"}))
        .await
        .error(409, "APPROVAL_VOTE_REQUIRED");
    // A policy on a non-restricted Action is refused.
    let mut bad = two_options("x");
    bad["approval_policy"] = json!({"required_approvals": 1});
    app.source()
        .post_err("/v1/actions", bad, 422, "VALIDATION_ERROR")
        .await;
}

/// A vote counts for the version it was cast on: after a material PATCH the
/// earlier approvals no longer count toward the quorum, a retry of an
/// earlier vote is refused as stale, and each reviewer votes again on what
/// they now see; the receipt lists only the votes on the decided version.
#[tokio::test]
async fn a_material_change_starts_a_new_count() {
    let app = TestApp::spawn().await;
    let (admin, bob) = (app.admin(), app.member(Role::Reviewer));
    let mut body = two_options("Deploy build 42");
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([admin.person().id, bob.person().id]);
    body["approval_policy"] = json!({"required_approvals": 2});
    let v1 = app.create_action(body).await;
    let path = votes_of(&v1);
    let first: Value = admin.post(&path, vote(&v1, "approve"), 200).await;
    assert_eq!(first["tally"]["approvals"], 1);

    let id = v1["id"].as_str().unwrap();
    let v2: Value = app
        .source()
        .patch(
            &format!("/v1/actions/{id}"),
            json!({"title": "Deploy build 43 and drop the users table"}),
            200,
        )
        .await;
    let v2 = &v2["data"];
    assert_eq!(v2["action_version"], 2);

    // Bob approves what he sees: one approval on version 2, not two.
    let bobs: Value = bob.post(&path, vote(v2, "approve"), 200).await;
    assert_eq!(bobs["data"]["status"], "open");
    assert_eq!(
        bobs["tally"],
        json!({"approvals": 1, "rejections": 0, "required_approvals": 2, "reject_threshold": 1})
    );
    // The admin's retry of the vote on version 1 is stale, not a replay.
    let stale = admin
        .post_err(&path, vote(&v1, "approve"), 409, "ACTION_CHANGED")
        .await;
    assert_eq!(stale["details"]["action_version"], 2);
    // Votes are final per version: Bob cannot turn his around.
    bob.post_err(&path, vote(v2, "reject"), 409, "VOTE_ALREADY_CAST")
        .await;
    // The admin votes again on version 2, which reaches the quorum.
    let done: Value = admin.post(&path, vote(v2, "approve"), 200).await;
    let d = &done["data"];
    assert_eq!(d["status"], "resolved");
    assert_eq!(d["resolution_reason"], "2 approvals, 0 rejections");
    let payload = &d["receipt"]["payload"];
    assert_eq!(payload["action_version"], 2);
    let listed = payload["decision"]["votes"].as_array().unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    // Both votes of the admin stay on record (the export lists them with
    // their versions).
    let export: Value = admin.get("/v1/account/export", 200).await;
    let versions: Vec<i64> = export["votes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["action_version"].as_i64().unwrap())
        .collect();
    assert_eq!(versions, [1, 2]);
}

/// A vote counts while its voter may still vote: one removed from the
/// workspace or made a viewer since counts toward no quorum and is left out
/// of the receipt (the history still says it was cast).
#[tokio::test]
async fn a_vote_of_someone_removed_or_demoted_since_no_longer_counts() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let (v1, v2, v3) = (
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );
    let mut body = two_options("Rotate the root credentials");
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([
        admin.person().id,
        v1.person().id,
        v2.person().id,
        v3.person().id
    ]);
    body["approval_policy"] = json!({"required_approvals": 2});
    let a = app.create_action(body).await;
    let path = votes_of(&a);
    let member =
        |who: &crate::helpers::Actor| format!("/v1/workspaces/members/{}", who.person().id);

    let _: Value = v1.post(&path, vote(&a, "approve"), 200).await;
    let r = admin.call(Method::DELETE, &member(&v1), None, &[]).await;
    assert_eq!(r.status, 204);
    let r: Value = v2.post(&path, vote(&a, "approve"), 200).await;
    assert_eq!(r["data"]["status"], "open", "{r}");
    assert_eq!(r["tally"]["approvals"], 1, "{r}");

    let _: Value = admin
        .patch(&member(&v2), json!({"role": "viewer"}), 200)
        .await;
    let r: Value = v3.post(&path, vote(&a, "approve"), 200).await;
    assert_eq!(r["data"]["status"], "open", "{r}");
    assert_eq!(r["tally"]["approvals"], 1, "{r}");

    let done: Value = admin.post(&path, vote(&a, "approve"), 200).await;
    let d = &done["data"];
    assert_eq!(d["status"], "resolved", "{done}");
    assert_eq!(d["resolution_reason"], "2 approvals, 0 rejections");
    // The receipt lists every vote cast on the version; those that no
    // longer count say so.
    let votes = d["receipt"]["payload"]["decision"]["votes"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(votes.len(), 4, "{votes:?}");
    let of = |who: &crate::helpers::Actor| {
        votes
            .iter()
            .find(|v| v["user_id"] == who.person().id.as_str())
            .cloned()
            .unwrap()
    };
    assert_eq!(of(&v1)["counted"], false);
    assert_eq!(of(&v2)["counted"], false);
    assert!(of(&v3).get("counted").is_none(), "{votes:?}");
    assert!(of(&admin).get("counted").is_none(), "{votes:?}");
}

/// A rejection stands whatever becomes of its voter (fail closed): taking
/// a rejecting reviewer's role away, collecting approvals, and giving it
/// back cannot erase their no.
#[tokio::test]
async fn a_rejection_counts_even_after_its_voter_is_demoted() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let (no, yes1, yes2) = (
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );
    let mut body = two_options("Ship without the review");
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([no.person().id, yes1.person().id, yes2.person().id]);
    body["approval_policy"] = json!({"required_approvals": 2, "reject_threshold": 2});
    let a = app.create_action(body).await;
    let path = votes_of(&a);
    let member = format!("/v1/workspaces/members/{}", no.person().id);

    let r: Value = no.post(&path, vote(&a, "reject"), 200).await;
    assert_eq!(r["tally"]["rejections"], 1, "{r}");
    let _: Value = admin.patch(&member, json!({"role": "viewer"}), 200).await;
    let r: Value = yes1.post(&path, vote(&a, "approve"), 200).await;
    assert_eq!(r["tally"]["rejections"], 1, "{r}");
    let done: Value = yes2.post(&path, vote(&a, "approve"), 200).await;
    let d = &done["data"];
    assert_eq!(d["status"], "resolved", "{done}");
    assert_eq!(d["resolution_reason"], "2 approvals, 1 rejection", "{done}");
    let votes = d["receipt"]["payload"]["decision"]["votes"]
        .as_array()
        .unwrap();
    assert_eq!(votes.len(), 3, "{votes:?}");
    assert!(
        votes.iter().all(|v| v.get("counted").is_none()),
        "{votes:?}"
    );
}

/// A refusal says what stands in the way: a viewer's role
/// (`required_role: "reviewer"`), or, for an owner or admin, that only the
/// listed reviewers work on this Action (`listed: false`, no role would
/// help), alike for voting, deciding and claiming.
#[tokio::test]
async fn a_refusal_names_the_role_or_the_listing_that_is_missing() {
    let app = TestApp::spawn().await;
    let viewer = app.member(Role::Viewer);
    let admin = app.member(Role::Admin);
    let reviewer = app.member(Role::Reviewer);
    let mut body = two_options("Open the firewall");
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([viewer.person().id, reviewer.person().id]);
    body["approval_policy"] = json!({"required_approvals": 1});
    let a = app.create_action(body).await;
    let id = a["id"].as_str().unwrap();
    let claim = format!("/v1/actions/{id}/claim");

    let e = viewer
        .post_err(&votes_of(&a), vote(&a, "approve"), 403, "FORBIDDEN")
        .await;
    assert_eq!(e["details"]["required_role"], "reviewer", "{e}");
    let e = viewer.post_err(&claim, json!({}), 403, "FORBIDDEN").await;
    assert_eq!(e["details"]["required_role"], "reviewer", "{e}");

    let e = admin
        .post_err(&votes_of(&a), vote(&a, "approve"), 403, "FORBIDDEN")
        .await;
    assert_eq!(e["details"], json!({"listed": false}), "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("only the reviewers listed"),
        "{e}"
    );
    let e = admin.post_err(&claim, json!({}), 403, "FORBIDDEN").await;
    assert_eq!(e["details"], json!({"listed": false}), "{e}");
    let decide = json!({"option_id": "approve", "action_version": a["action_version"], "fingerprint": a["fingerprint"]});
    let e = admin
        .post_err(
            &format!("/v1/actions/{id}/decision"),
            decide,
            403,
            "FORBIDDEN",
        )
        .await;
    assert_eq!(e["details"], json!({"listed": false}), "{e}");
}

/// An approval withdrawn by a demotion stays withdrawn on that version when
/// the voter gets their role back: no role change can make a quorum that
/// no vote resolved (found racing role changes against votes).
#[tokio::test]
async fn a_withdrawn_approval_stays_withdrawn_when_the_role_comes_back() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let (r0, r1, r2) = (
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );
    let mut body = two_options("Merge the hotfix");
    body["visibility"] = json!("restricted");
    body["reviewer_user_ids"] = json!([r0.person().id, r1.person().id, r2.person().id]);
    body["approval_policy"] = json!({"required_approvals": 2});
    let a = app.create_action(body).await;
    let path = votes_of(&a);
    let member = format!("/v1/workspaces/members/{}", r0.person().id);

    let _: Value = r0.post(&path, vote(&a, "approve"), 200).await;
    let _: Value = admin.patch(&member, json!({"role": "viewer"}), 200).await;
    let r: Value = r1.post(&path, vote(&a, "approve"), 200).await;
    assert_eq!(r["tally"]["approvals"], 1, "{r}");
    let _: Value = admin.patch(&member, json!({"role": "reviewer"}), 200).await;
    // Back as a reviewer: their approval still does not count, and their
    // retry says so; the tally never shows a quorum that is not resolved.
    let r: Value = r0.post(&path, vote(&a, "approve"), 200).await;
    assert_eq!(r["idempotent_replay"], true, "{r}");
    assert_eq!(r["data"]["status"], "open", "{r}");
    assert_eq!(r["tally"]["approvals"], 1, "{r}");
    // Their page says why, and offers no vote they could not cast.
    let page = app
        .browser(r0.person())
        .await
        .page(&format!("/app/actions/{}", a["id"].as_str().unwrap()))
        .await;
    assert!(page.contains("Your approval was withdrawn"), "{page}");
    assert!(!page.contains(r#"name="vote" value="reject""#), "{page}");
    // Everyone who sees it reads the votes and which count; the page's
    // history marks the withdrawn one too.
    let id = a["id"].as_str().unwrap();
    let list: Value = admin.get(&format!("/v1/actions/{id}/votes"), 200).await;
    let d = &list["data"];
    assert_eq!(d["action_version"], 1);
    assert_eq!(
        d["tally"],
        json!({"approvals": 1, "rejections": 0, "required_approvals": 2, "reject_threshold": 1})
    );
    let cast: Vec<(Value, Value)> = d["votes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["user_id"].clone(), v["counted"].clone()))
        .collect();
    assert_eq!(
        cast,
        [
            (json!(r0.person().id), json!(false)),
            (json!(r1.person().id), json!(true))
        ]
    );
    assert_eq!(d["votes"][1]["email"], r1.person().email.as_str());
    assert_eq!(d["votes"][1]["vote"], "approve");
    let admins_page = app
        .browser(admin.person())
        .await
        .page(&format!("/app/actions/{id}"))
        .await;
    assert!(
        admins_page.contains("(withdrawn: they may no longer vote"),
        "{admins_page}"
    );
    app.outsider()
        .get_err(&format!("/v1/actions/{id}/votes"), 404, "ACTION_NOT_FOUND")
        .await;
    let done: Value = r2.post(&path, vote(&a, "approve"), 200).await;
    let d = &done["data"];
    assert_eq!(d["status"], "resolved", "{done}");
    assert_eq!(d["resolution_option_id"], "approve", "{done}");
    let votes = d["receipt"]["payload"]["decision"]["votes"]
        .as_array()
        .unwrap();
    let r0s = votes
        .iter()
        .find(|v| v["user_id"] == r0.person().id.as_str())
        .unwrap();
    assert_eq!(r0s["counted"], false, "{votes:?}");
}

/// `scope=needs_my_vote`: the open Actions under an approval policy that
/// list the caller, on whose current version they have not voted, and that
/// are not their own request; a material change asks again; viewers and
/// other statuses list none; the dashboard's filter offers it.
#[tokio::test]
async fn the_inbox_lists_what_awaits_my_vote() {
    let app = TestApp::spawn().await;
    let (admin, bob, carol) = (
        app.admin(),
        app.member(Role::Reviewer),
        app.member(Role::Reviewer),
    );
    let quorum = |title: &str, listed: Vec<&str>| {
        let mut body = two_options(title);
        body["visibility"] = json!("restricted");
        body["reviewer_user_ids"] = json!(listed);
        body["approval_policy"] = json!({"required_approvals": 2});
        body
    };
    let (bob_id, carol_id, admin_id) = (
        bob.person().id.clone(),
        carol.person().id.clone(),
        admin.person().id.clone(),
    );
    let both = app
        .create_action(quorum("Drop the old bucket", vec![&bob_id, &carol_id]))
        .await;
    let mut urgent = quorum("Rotate the root key", vec![&bob_id, &admin_id]);
    urgent["priority"] = json!("urgent");
    let urgent = app.create_action(urgent).await;
    // Listed by e-mail, and requested by Carol: not hers to vote on.
    let mut by_email = quorum("Carol's own request", vec![]);
    body_reviewers_by_email(
        &mut by_email,
        &[
            &bob.person().email,
            &carol.person().email,
            &admin.person().email,
        ],
    );
    by_email["requested_by_user_id"] = json!(carol_id);
    let own = app.create_action(by_email).await;
    // Not under a policy, and not restricted: decided outright, never listed.
    app.create_action(two_options("Plain")).await;

    let ids = |v: &Value| -> Vec<String> {
        v["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let id = |a: &Value| a["id"].as_str().unwrap().to_owned();
    const Q: &str = "/v1/me/actions?scope=needs_my_vote";
    // Most pressing first, as the open list.
    assert_eq!(
        ids(&bob.get(Q, 200).await),
        [id(&urgent), id(&both), id(&own)]
    );
    assert_eq!(ids(&carol.get(Q, 200).await), [id(&both)]);

    // Voted: no longer awaiting Bob; a material change asks him again.
    bob.post::<Value>(&votes_of(&both), vote(&both, "approve"), 200)
        .await;
    assert_eq!(ids(&bob.get(Q, 200).await), [id(&urgent), id(&own)]);
    let changed = app
        .patch(
            &format!("/v1/actions/{}", id(&both)),
            &app.live_key(),
            json!({"title": "Drop the old bucket (and its logs)"}),
        )
        .await;
    let changed = changed.ok(200)["data"].clone();
    assert_eq!(changed["action_version"], 2);
    assert_eq!(
        ids(&bob.get(Q, 200).await),
        [id(&urgent), id(&both), id(&own)]
    );
    // Resolved by the quorum: awaits no one.
    bob.post::<Value>(&votes_of(&both), vote(&changed, "approve"), 200)
        .await;
    carol
        .post::<Value>(&votes_of(&both), vote(&changed, "approve"), 200)
        .await;
    assert_eq!(ids(&carol.get(Q, 200).await), Vec::<String>::new());
    // Other statuses and environments take the scope without error.
    for q in [
        "&status=resolved",
        "&status=all",
        "&status=snoozed",
        "&environment=all",
    ] {
        let page: Value = bob.get(&format!("{Q}{q}"), 200).await;
        assert!(page["data"].is_array(), "{q}: {page}");
    }
    let resolved: Value = bob.get(&format!("{Q}&status=resolved"), 200).await;
    assert_eq!(resolved["data"], json!([]));
    // Self-approval allowed: the requester's own request awaits them too.
    let mut mine = quorum("Carol may approve her own", vec![&bob_id, &carol_id]);
    mine["requested_by_user_id"] = json!(carol_id);
    mine["approval_policy"]["allow_self_approval"] = json!(true);
    let mine = app.create_action(mine).await;
    assert_eq!(ids(&carol.get(Q, 200).await), [id(&mine)]);
    // Snoozed: in the snoozed list, not the open one.
    let until =
        hds::domain::time::format(app.state.services.clock.now() + time::Duration::hours(1));
    carol
        .post::<Value>(
            &format!("/v1/actions/{}/snooze", id(&mine)),
            json!({"until": until}),
            200,
        )
        .await;
    assert_eq!(ids(&carol.get(Q, 200).await), Vec::<String>::new());
    assert_eq!(
        ids(&carol.get(&format!("{Q}&status=snoozed"), 200).await),
        [id(&mine)]
    );
    // A viewer votes on nothing.
    let viewer = app.member(Role::Viewer);
    assert_eq!(ids(&viewer.get(Q, 200).await), Vec::<String>::new());

    // The dashboard's filter offers it and lists the same.
    let page = app
        .browser(bob.person())
        .await
        .page("/app?scope=needs_my_vote")
        .await;
    assert!(
        page.contains("<option value=\"needs_my_vote\" selected>Awaiting my vote</option>"),
        "the filter shows what is chosen"
    );
    assert!(page.contains("Rotate the root key"));
    assert!(page.contains("own request"));
    assert!(!page.contains("Drop the old bucket"));
    assert!(!page.contains(">Plain<"));
}

fn body_reviewers_by_email(body: &mut Value, emails: &[&str]) {
    body.as_object_mut().unwrap().remove("reviewer_user_ids");
    body["reviewer_emails"] = json!(emails);
}
