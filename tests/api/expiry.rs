//! What time does, proven without waiting: each test moves the server's clock
//! (`hds::clock::Clock::advance`) past a deadline; background passes run at
//! once, and long polls answer when the Action closes.

use serde_json::json;

use crate::helpers::{TestApp, two_options};

/// Creates an Action that expires in an hour with the given `on_expire`.
async fn expiring(app: &TestApp, on_expire: serde_json::Value) -> String {
    let clock = &app.state.services.clock;
    let mut body = two_options("Nobody answers this");
    body["expires_at"] = json!(hds::domain::time::format(
        clock.now() + time::Duration::hours(1)
    ));
    body["on_expire"] = on_expire;
    app.create_action(body).await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn past_the_deadline_actions_expire_or_cancel_and_their_long_polls_answer() {
    let app = TestApp::spawn().await;
    let expires = expiring(&app, json!({"action": "expire"})).await;
    let cancels = expiring(&app, json!({"action": "cancel"})).await;
    // The Source waits on both before the deadline.
    let poll_e = app.held_poll(&expires).await;
    let poll_c = app.held_poll(&cancels).await;
    // Before the deadline nothing happens, however often the pass runs.
    let clock = &app.state.services.clock;
    clock.advance(time::Duration::minutes(59));
    let r = app
        .get(&format!("/v1/actions/{expires}"), &app.live_key())
        .await;
    assert_eq!(r.ok(200)["data"]["status"], "open");
    assert!(!poll_e.is_finished() && !poll_c.is_finished());
    // Past it, the expiry pass runs at once and its commit wakes both polls.
    clock.advance(time::Duration::minutes(2));
    let e = TestApp::answer(poll_e).await;
    let c = TestApp::answer(poll_c).await;
    assert_eq!(e["status"], "expired");
    assert_eq!(c["status"], "cancelled");
    assert!(e["receipt"].is_null(), "expiry decides nothing");
    // Each closing is in the history, by the system, with its reason.
    for (id, kind) in [(&expires, "expired"), (&cancels, "cancelled")] {
        let r = app.get(&format!("/v1/actions/{id}"), &app.live_key()).await;
        let last = r.ok(200)["data"]["history"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(last["type"], kind);
        assert_eq!(last["actor"]["type"], "system");
        assert_eq!(last["data"]["reason"], "expired");
    }
}

#[tokio::test]
async fn a_signin_link_stops_working_after_24_hours() {
    let app = TestApp::spawn().await;
    let link = hds::service::signin::create_link(&app.state.services, "admin@example.com")
        .await
        .unwrap();
    let path = link.strip_prefix(&app.base).unwrap().to_owned();
    let open = |p: String| {
        let app = &app;
        async move {
            app.http
                .get(format!("{}{p}", app.base))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(open(path.clone()).await, 200);
    app.state.services.clock.advance(time::Duration::hours(23));
    assert_eq!(open(path.clone()).await, 200);
    app.state.services.clock.advance(time::Duration::hours(2));
    assert_eq!(open(path).await, 410, "an expired link is gone");
}

/// Every receipt names the requester from one source, the Action as read
/// back with its people completed from the members: a receipt issued by the
/// expiry pass (`on_expire: resolve`) names them as a person's decision does.
#[tokio::test]
async fn an_expiry_receipt_names_the_requester_as_a_decision_receipt_does() {
    let app = TestApp::spawn().await;
    let requester = app.member(hds::domain::access::Role::Reviewer);
    let clock = &app.state.services.clock;
    let mut body = two_options("Requested by a member, in capitals");
    body["requested_by_email"] = json!(requester.person().email.to_uppercase());
    let decided = app.create_action(body.clone()).await;
    body["expires_at"] = json!(hds::domain::time::format(
        clock.now() + time::Duration::hours(1)
    ));
    body["on_expire"] = json!({"action": "resolve", "option_id": "reject"});
    let expiring = app.create_action(body).await;
    let id = expiring["id"].as_str().unwrap().to_owned();

    let decision = json!({"action_version": decided["action_version"], "fingerprint": decided["fingerprint"], "option_id": "approve"});
    let done: serde_json::Value = app
        .admin()
        .post(
            &format!("/v1/actions/{}/decision", decided["id"].as_str().unwrap()),
            decision,
            200,
        )
        .await;
    let by_person = done["data"]["receipt"]["payload"]["requested_by"].clone();

    let poll = app.held_poll(&id).await;
    clock.advance(time::Duration::minutes(61));
    let expired = TestApp::answer(poll).await;
    assert_eq!(expired["status"], "resolved");
    assert_eq!(expired["resolution_option_id"], "reject");
    let by_expiry = expired["receipt"]["payload"]["requested_by"].clone();
    assert_eq!(by_expiry["user_id"], json!(requester.person().id));
    assert_eq!(by_expiry, by_person);
    // The receipt as stored says the same as the one answered.
    let read = app.get(&format!("/v1/actions/{id}"), &app.live_key()).await;
    assert_eq!(
        read.ok(200)["data"]["receipt"]["payload"]["requested_by"],
        by_person
    );
}

/// Past its deadline an Action takes no decision, resolve, cancel or
/// change, even in the moment before the expiry pass closes it: each is
/// refused with `ACTION_NOT_OPEN` naming the status `on_expire` gives it,
/// and every Action ends as `on_expire` says. The requests are sent
/// together with the pass (the clock moves, which starts it), so without
/// the deadline check some decisions would land first.
#[tokio::test]
async fn nothing_lands_after_the_deadline_even_before_the_pass_closes_it() {
    let app = TestApp::spawn().await;
    let clock = &app.state.services.clock;
    let mut actions = Vec::new();
    for i in 0..12 {
        let mut body = two_options(&format!("Rotate key {i}"));
        body["expires_at"] = json!(hds::domain::time::format(
            clock.now() + time::Duration::minutes(10)
        ));
        body["on_expire"] = json!({"action": "resolve", "option_id": "reject"});
        actions.push(app.create_action(body).await);
    }
    clock.advance(time::Duration::minutes(11));
    let answers = futures::future::join_all(actions.iter().enumerate().map(|(i, a)| {
        let id = a["id"].as_str().unwrap().to_owned();
        let binding =
            json!({"action_version": a["action_version"], "fingerprint": a["fingerprint"]});
        let app = &app;
        async move {
            match i % 4 {
                0 | 1 => app.decide(a, json!({"option_id": "approve"})).await,
                2 => {
                    let mut body = binding;
                    body["option_id"] = json!("approve");
                    app.post(&format!("/v1/actions/{id}/resolve"), &app.live_key(), body)
                        .await
                }
                _ => {
                    app.patch(
                        &format!("/v1/actions/{id}"),
                        &app.live_key(),
                        json!({"title": "Rotate it later"}),
                    )
                    .await
                }
            }
        }
    }))
    .await;
    for r in &answers {
        let e = r.error(409, "ACTION_NOT_OPEN");
        assert_eq!(e["details"]["status"], "resolved", "{e}");
    }
    // A long poll answers once the pass has closed each (at once if it has).
    for a in &actions {
        let id = a["id"].as_str().unwrap();
        let r = app
            .get(
                &format!("/v1/source/actions/{id}?wait_seconds=10"),
                &app.live_key(),
            )
            .await;
        let d = r.ok(200)["data"].clone();
        assert_eq!(d["status"], "resolved", "{d}");
        assert_eq!(d["resolution_option_id"], "reject");
        assert_eq!(d["resolved_by"]["type"], "system");
        assert_eq!(d["title"], a["title"], "no change landed");
    }
}
