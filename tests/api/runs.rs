//! Runs (guide: "Runs"; DESIGN §13, SPEC §4.7): every route, each
//! transition and error, scoping, Actions attached with `run_id`, and the
//! `run.failed` notification.

use hds::domain::access::Role;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Actor, TestApp, two_options};

async fn new_run(src: &Actor, body: Value) -> Value {
    let r: Value = src.post("/v1/runs", body, 201).await;
    r["data"].clone()
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_run_goes_from_queued_through_progress_to_succeeded() {
    let app = TestApp::spawn().await;
    let src = app.source();
    let run = new_run(
        &src,
        json!({"name": "nightly import", "total": 10, "metadata": {"job": 7}}),
    )
    .await;
    assert!(id(&run).starts_with("run_"));
    assert_eq!(run["object"], "run");
    assert_eq!(run["status"], "queued");
    assert_eq!(run["environment"], "live");
    assert_eq!(
        run["progress"],
        json!({"completed": null, "total": 10, "message": null})
    );
    assert_eq!(run["metadata"], json!({"job": 7}));
    assert_eq!(run["action_ids"], json!([]));
    assert!(run["started_at"].is_null() && run["completed_at"].is_null());
    let path = format!("/v1/source/runs/{}", id(&run));

    // Counts alone keep it queued; the first `running` sets started_at.
    let r: Value = src
        .patch(&format!("{path}/progress"), json!({"completed": 1}), 200)
        .await;
    assert_eq!(r["data"]["status"], "queued");
    assert!(r["data"]["started_at"].is_null());
    app.state.services.clock.advance(time::Duration::seconds(5));
    let r: Value = src
        .patch(
            &format!("{path}/progress"),
            json!({"status": "running", "completed": 3, "message": "rows 1-300"}),
            200,
        )
        .await;
    let started = r["data"]["started_at"].as_str().unwrap().to_owned();
    assert_eq!(
        r["data"]["progress"],
        json!({"completed": 3, "total": 10, "message": "rows 1-300"})
    );
    // Waiting and back: started_at stays the first start.
    let r: Value = src
        .patch(
            &format!("{path}/progress"),
            json!({"status": "waiting"}),
            200,
        )
        .await;
    assert_eq!(r["data"]["status"], "waiting");
    app.state.services.clock.advance(time::Duration::seconds(5));
    let r: Value = src
        .patch(
            &format!("{path}/progress"),
            json!({"status": "running", "total": 12}),
            200,
        )
        .await;
    assert_eq!(r["data"]["started_at"], started.as_str());
    assert_eq!(r["data"]["progress"]["total"], 12);

    let done: Value = src
        .post(
            &format!("{path}/complete"),
            json!({"status": "succeeded", "result": {"rows": 1200}}),
            200,
        )
        .await;
    assert_eq!(done["data"]["status"], "succeeded");
    assert_eq!(done["data"]["result"], json!({"rows": 1200}));
    assert!(done["data"]["completed_at"].is_string());

    // Source and user reads agree.
    let mine: Value = src.get(&path, 200).await;
    assert_eq!(mine, done);
    let theirs: Value = app
        .admin()
        .get(&format!("/v1/runs/{}", id(&run)), 200)
        .await;
    assert_eq!(theirs, done);
}

#[tokio::test]
async fn a_running_create_sets_started_at_and_the_list_filters_and_pages() {
    let app = TestApp::spawn().await;
    let src = app.source();
    let a = new_run(&src, json!({"name": "a"})).await;
    let b = new_run(&src, json!({"name": "b", "status": "running"})).await;
    assert_eq!(b["status"], "running");
    assert_eq!(b["started_at"], b["created_at"]);
    let c = new_run(&src, json!({"name": "c"})).await;
    let t = new_run(&app.source_test(), json!({"name": "test run"})).await;
    assert_eq!(t["environment"], "test");

    let admin = app.admin();
    let all: Value = admin.get("/v1/runs", 200).await;
    let names: Vec<&str> = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c", "b", "a"], "newest first, live only");
    assert_eq!(all["object"], "list");
    assert_eq!(all["has_more"], false);
    let running: Value = admin.get("/v1/runs?status=running", 200).await;
    assert_eq!(running["data"].as_array().unwrap().len(), 1);
    assert_eq!(running["data"][0]["id"], b["id"]);
    let test: Value = admin.get("/v1/runs?environment=test", 200).await;
    assert_eq!(test["data"][0]["id"], t["id"]);
    assert_eq!(test["data"].as_array().unwrap().len(), 1);
    // Both environments, merged newest first, paged across both.
    let both: Value = admin.get("/v1/runs?environment=all&limit=3", 200).await;
    let names: Vec<&str> = both["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["test run", "c", "b"]);
    assert_eq!(both["has_more"], true);
    let same: Value = admin
        .get("/v1/runs?environment=all&limit=3&starting_after=", 200)
        .await;
    assert_eq!(same, both, "an empty cursor is the first page");
    let rest: Value = admin
        .get(
            &format!(
                "/v1/runs?environment=all&limit=3&starting_after={}",
                id(&both["data"][2])
            ),
            200,
        )
        .await;
    assert_eq!(rest["data"][0]["id"], a["id"]);
    assert_eq!(
        (
            rest["data"].as_array().unwrap().len(),
            rest["has_more"].clone()
        ),
        (1, json!(false))
    );

    let p1: Value = admin.get("/v1/runs?limit=2", 200).await;
    assert_eq!(p1["has_more"], true);
    assert_eq!(p1["data"][0]["id"], c["id"]);
    let p2: Value = admin
        .get(
            &format!("/v1/runs?limit=2&starting_after={}", id(&p1["data"][1])),
            200,
        )
        .await;
    assert_eq!(p2["has_more"], false);
    assert_eq!(p2["data"][0]["id"], a["id"]);
    // A test run is no item of the live list: its id is no cursor there.
    let e = admin
        .get_err(
            &format!("/v1/runs?starting_after={}", id(&t)),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "starting_after", "{e}");

    // Any member reads them; an outsider sees none and cannot open one.
    let viewer = app.member(Role::Viewer);
    let v: Value = viewer.get("/v1/runs", 200).await;
    assert_eq!(v["data"].as_array().unwrap().len(), 3);
    let outsider = app.outsider();
    let o: Value = outsider.get("/v1/runs", 200).await;
    assert_eq!(o["data"], json!([]));
    outsider
        .get_err(&format!("/v1/runs/{}", id(&a)), 404, "RUN_NOT_FOUND")
        .await;
    admin
        .get_err("/v1/runs/run_nope", 404, "RUN_NOT_FOUND")
        .await;
}

#[tokio::test]
async fn list_queries_out_of_range_are_refused() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    for (q, field) in [
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("environment=both", "environment"),
        ("status=done", "status"),
        // A cursor that cannot be a run id (another kind, a short one).
        (
            "starting_after=act_01JD8XQ0000000000000000000",
            "starting_after",
        ),
        ("starting_after=run_x", "starting_after"),
        // A run id of the right shape that is no run of this workspace.
        (
            "starting_after=run_01JD8XQ0000000000000000000",
            "starting_after",
        ),
    ] {
        let e = admin
            .get_err(&format!("/v1/runs?{q}"), 422, "VALIDATION_ERROR")
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], field, "{q}");
    }
    admin
        .get_err("/v1/runs?colour=red", 422, "VALIDATION_ERROR")
        .await;
    // A parameter given twice is named, not the query string (".").
    let e = admin
        .get_err("/v1/runs?limit=5&limit=6", 422, "VALIDATION_ERROR")
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "limit", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("duplicate field `limit`"),
        "{e}"
    );
    // Source keys and no credential are refused.
    app.source()
        .get_err("/v1/runs", 401, "INVALID_API_KEY")
        .await;
    app.anonymous()
        .post_err("/v1/runs", json!({"name": "x"}), 401, "AUTH_REQUIRED")
        .await;
}

#[tokio::test]
async fn bad_create_bodies_are_refused_and_nothing_is_written() {
    let app = TestApp::spawn().await;
    let src = app.source();
    for (body, field) in [
        (json!({}), "name"),
        (json!({"name": "   "}), "name"),
        (json!({"name": "\u{200b}"}), "name"),
        (json!({"name": "two\nlines"}), "name"),
        (json!({"name": "x".repeat(201)}), "name"),
        (json!({"name": "x", "status": "succeeded"}), "status"),
        (json!({"name": "x", "total": -1}), "total"),
        (json!({"name": "x", "total": 1.5}), "total"),
        (
            json!({"name": "x", "metadata": {"big": "y".repeat(33 * 1024)}}),
            "metadata",
        ),
        (json!({"name": "x", "metadata": [1]}), "metadata"),
        (json!({"name": "x", "colour": "red"}), "colour"),
    ] {
        let e = src
            .post_err("/v1/runs", body.clone(), 422, "VALIDATION_ERROR")
            .await;
        let fields: Vec<&str> = e["details"]["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["field"].as_str().unwrap())
            .collect();
        // A missing field is named in the message (`body: missing field …`).
        let named = fields.iter().any(|f| f.starts_with(field))
            || e["message"]
                .as_str()
                .unwrap()
                .contains(&format!("`{field}`"));
        assert!(named, "{body}: {e}");
    }
    // A status outside the list is named and told what to send, as other
    // fixed lists are.
    let e = src
        .post_err(
            "/v1/runs",
            json!({"name": "x", "status": "bogus"}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(
        e["message"],
        "`bogus` is not a value this field takes: use `queued` or `running`"
    );
    // Users cannot create runs.
    app.admin()
        .post_err("/v1/runs", json!({"name": "x"}), 401, "INVALID_API_KEY")
        .await;
    assert_eq!(app.count_rows("runs"), 0);
    assert_eq!(app.count_rows("run_events"), 0);
}

#[tokio::test]
async fn an_idempotency_key_replays_the_create() {
    let app = TestApp::spawn().await;
    let src = app.source();
    let body = json!({"name": "deploy"});
    let first = src
        .call(
            Method::POST,
            "/v1/runs",
            Some(&body),
            &[("idempotency-key", "k1")],
        )
        .await;
    first.ok(201);
    let again = src
        .call(
            Method::POST,
            "/v1/runs",
            Some(&body),
            &[("idempotency-key", "k1")],
        )
        .await;
    again.ok(201);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    // The first answer exactly: a run has no `idempotent_replay` member.
    assert_eq!(again.body, first.body);
    let other = json!({"name": "other"});
    src.call(
        Method::POST,
        "/v1/runs",
        Some(&other),
        &[("idempotency-key", "k1")],
    )
    .await
    .error(409, "IDEMPOTENCY_KEY_REUSED");
    assert_eq!(app.count_rows("runs"), 1);
}

#[tokio::test]
async fn progress_and_complete_refuse_bad_bodies_and_finished_runs() {
    let app = TestApp::spawn().await;
    let src = app.source();
    let run = new_run(&src, json!({"name": "r", "total": 5})).await;
    let path = format!("/v1/source/runs/{}", id(&run));
    for (body, field) in [
        (json!({"completed": 6}), "completed"),
        (json!({"completed": -1}), "completed"),
        (json!({"status": "succeeded"}), "status"),
        (json!({"message": "m".repeat(2001)}), "message"),
        (json!({"message": "step \u{202e}deliaf"}), "message"),
        (json!({"extra": 1}), "extra"),
    ] {
        let e = src
            .patch_err(
                &format!("{path}/progress"),
                body.clone(),
                422,
                "VALIDATION_ERROR",
            )
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], field, "{body}");
    }
    // A total below the count already reported is refused too.
    src.patch::<Value>(&format!("{path}/progress"), json!({"completed": 4}), 200)
        .await;
    let e = src
        .patch_err(
            &format!("{path}/progress"),
            json!({"total": 3}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "total");
    for (body, field) in [
        (json!({"status": "running"}), "status"),
        (
            json!({"status": "failed", "error": "e".repeat(2001)}),
            "error",
        ),
        (
            json!({"status": "failed", "result": {"big": "y".repeat(33 * 1024)}}),
            "result",
        ),
    ] {
        let e = src
            .post_err(
                &format!("{path}/complete"),
                body.clone(),
                422,
                "VALIDATION_ERROR",
            )
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], field, "{body}");
    }
    let e = src
        .post_err(
            &format!("{path}/complete"),
            json!({}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("`status`"), "{e}");
    let r: Value = src.get(&path, 200).await;
    assert_eq!(r["data"]["status"], "queued");
    assert_eq!(r["data"]["progress"]["completed"], 4);

    let body = json!({"status": "cancelled", "error": "stopped by operator"});
    src.post::<Value>(&format!("{path}/complete"), body.clone(), 200)
        .await;
    // The identical completion replays; anything else is refused.
    let again = src
        .call(Method::POST, &format!("{path}/complete"), Some(&body), &[])
        .await;
    again.ok(200);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    let e = src
        .post_err(
            &format!("{path}/complete"),
            json!({"status": "succeeded"}),
            409,
            "RUN_NOT_ACTIVE",
        )
        .await;
    assert_eq!(e["details"]["status"], "cancelled");
    let e = src
        .patch_err(
            &format!("{path}/progress"),
            json!({"completed": 5}),
            409,
            "RUN_NOT_ACTIVE",
        )
        .await;
    assert_eq!(e["details"]["status"], "cancelled");
    let r: Value = src.get(&path, 200).await;
    assert_eq!(r["data"]["progress"]["completed"], 4);
    assert_eq!(r["data"]["error"], "stopped by operator");
}

fn ids_of(list: &Value) -> Vec<String> {
    list["data"].as_array().unwrap().iter().map(id).collect()
}

#[tokio::test]
async fn a_source_lists_its_own_runs_in_its_environment_and_pages_them() {
    let app = TestApp::spawn().await;
    let src = app.source();
    let a = new_run(&src, json!({"name": "a", "status": "running"})).await;
    let b = new_run(&src, json!({"name": "b"})).await;
    let c = new_run(&src, json!({"name": "c", "status": "running"})).await;
    src.post::<Value>(
        &format!("/v1/source/runs/{}/complete", id(&c)),
        json!({"status": "succeeded"}),
        200,
    )
    .await;
    let t = new_run(&app.source_test(), json!({"name": "test run"})).await;
    let (_, other_key) = app.second_source().await;
    let other = app.bearer(&other_key);
    let theirs = new_run(&other, json!({"name": "another Source's"})).await;

    // Its own, in its key's environment, newest first, with what a run is.
    let all: Value = src.get("/v1/source/runs", 200).await;
    assert_eq!(all["object"], "list");
    assert_eq!(all["has_more"], false);
    assert_eq!(ids_of(&all), [id(&c), id(&b), id(&a)]);
    assert_eq!(all["data"][0]["status"], "succeeded");
    assert_eq!(all["data"][2]["name"], "a");
    assert_eq!(all["data"][2]["status"], "running");
    // What a runner reads after a restart: the runs it left running.
    let running: Value = src.get("/v1/source/runs?status=running", 200).await;
    assert_eq!(ids_of(&running), [id(&a)]);
    let queued: Value = src
        .get("/v1/source/runs?status=queued&starting_after=", 200)
        .await;
    assert_eq!(ids_of(&queued), [id(&b)]);
    // The test key sees the test run only; the other Source its own only.
    let test: Value = app.source_test().get("/v1/source/runs", 200).await;
    assert_eq!(ids_of(&test), [id(&t)]);
    let mine: Value = other.get("/v1/source/runs", 200).await;
    assert_eq!(ids_of(&mine), [id(&theirs)]);

    // Pages: `limit`, then `starting_after` the last id.
    let p1: Value = src.get("/v1/source/runs?limit=2", 200).await;
    assert_eq!(
        (ids_of(&p1), p1["has_more"].clone()),
        (vec![id(&c), id(&b)], json!(true))
    );
    let p2: Value = src
        .get(
            &format!("/v1/source/runs?limit=2&starting_after={}", id(&b)),
            200,
        )
        .await;
    assert_eq!(
        (ids_of(&p2), p2["has_more"].clone()),
        (vec![id(&a)], json!(false))
    );

    // A cursor of another Source's run, or of the other environment, is no
    // cursor here: 422 naming it, and nothing of theirs is listed.
    for cursor in [id(&theirs), id(&t), "run_01JD8XQ0000000000000000000".into()] {
        let e = src
            .get_err(
                &format!("/v1/source/runs?starting_after={cursor}"),
                422,
                "VALIDATION_ERROR",
            )
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], "starting_after", "{e}");
        assert!(
            e["details"]["errors"][0]["message"]
                .as_str()
                .unwrap()
                .contains("is not a run of this Source in the live environment (its key's)"),
            "{e}"
        );
    }
    for (q, field) in [
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("status=done", "status"),
        (
            "starting_after=act_01JD8XQ0000000000000000000",
            "starting_after",
        ),
        ("environment=test", "environment"),
    ] {
        let e = src
            .get_err(&format!("/v1/source/runs?{q}"), 422, "VALIDATION_ERROR")
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], field, "{q}: {e}");
    }
    // A person's credential is the other boundary.
    app.admin()
        .get_err("/v1/source/runs", 401, "INVALID_API_KEY")
        .await;
    app.anonymous()
        .get_err("/v1/source/runs", 401, "AUTH_REQUIRED")
        .await;
}

#[tokio::test]
async fn another_sources_or_environments_run_is_not_found() {
    let app = TestApp::spawn().await;
    let run = new_run(&app.source(), json!({"name": "mine"})).await;
    let path = format!("/v1/source/runs/{}", id(&run));
    let (_, other_key) = app.second_source().await;
    let before = app.count_rows("run_events");
    for who in [app.bearer(&other_key), app.source_test()] {
        who.get_err(&path, 404, "RUN_NOT_FOUND").await;
        who.patch_err(
            &format!("{path}/progress"),
            json!({"completed": 1}),
            404,
            "RUN_NOT_FOUND",
        )
        .await;
        who.post_err(
            &format!("{path}/complete"),
            json!({"status": "failed"}),
            404,
            "RUN_NOT_FOUND",
        )
        .await;
    }
    app.source()
        .get_err("/v1/source/runs/run_unknown", 404, "RUN_NOT_FOUND")
        .await;
    let r: Value = app.source().get(&path, 200).await;
    assert_eq!(r["data"]["status"], "queued");
    assert_eq!(app.count_rows("run_events"), before);
}

#[tokio::test]
async fn actions_attach_to_an_active_run_of_the_same_source_only() {
    let app = TestApp::spawn().await;
    let src = app.source();
    let run = new_run(&src, json!({"name": "batch", "status": "running"})).await;
    let mut body = two_options("Ship batch 1?");
    body["run_id"] = json!(id(&run));
    let a: Value = src.post("/v1/actions", body.clone(), 201).await;
    assert_eq!(a["data"]["run_id"], run["id"]);
    let r: Value = src.get(&format!("/v1/source/runs/{}", id(&run)), 200).await;
    assert_eq!(r["data"]["action_ids"], json!([a["data"]["id"]]));
    let shown: Value = app
        .admin()
        .get(
            &format!("/v1/actions/{}", a["data"]["id"].as_str().unwrap()),
            200,
        )
        .await;
    assert_eq!(shown["data"]["run_id"], run["id"]);

    let actions = app.count_rows("actions");
    // Unknown, another Source's, the other environment's: refused, nothing written.
    let (_, other_key) = app.second_source().await;
    let theirs = new_run(&app.bearer(&other_key), json!({"name": "theirs"})).await;
    let test_run = new_run(&app.source_test(), json!({"name": "test"})).await;
    for rid in ["run_unknown".to_owned(), id(&theirs), id(&test_run)] {
        body["run_id"] = json!(rid);
        let e = src
            .post_err("/v1/actions", body.clone(), 422, "VALIDATION_ERROR")
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], "run_id");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("not a run of this Source"),
            "{e}"
        );
    }
    // A finished run takes no more Actions.
    src.post::<Value>(
        &format!("/v1/source/runs/{}/complete", id(&run)),
        json!({"status": "succeeded"}),
        200,
    )
    .await;
    body["run_id"] = json!(id(&run));
    let e = src
        .post_err("/v1/actions", body.clone(), 422, "VALIDATION_ERROR")
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("already succeeded"),
        "{e}"
    );
    // run_id cannot be patched in.
    src.patch_err(
        &format!("/v1/actions/{}", a["data"]["id"].as_str().unwrap()),
        json!({"run_id": id(&run)}),
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(app.count_rows("actions"), actions);
}

#[tokio::test]
async fn a_failed_run_notifies_owners_admins_and_its_open_actions_assignees() {
    let app = TestApp::spawn().await;
    let src = app.source();
    let reviewer = app.member(Role::Reviewer);
    let by_email = app.member(Role::Reviewer);
    let bystander = app.member(Role::Reviewer);
    let admin2 = app.member(Role::Admin);
    let run = new_run(&src, json!({"name": "etl", "status": "running"})).await;
    let mut body = two_options("Retry the load?");
    body["run_id"] = json!(id(&run));
    body["assignee_user_id"] = json!(reviewer.person().id);
    src.post::<Value>("/v1/actions", body, 201).await;
    // An assignee the Source names by e-mail (in another case) hears too.
    let mut body = two_options("Skip the bad partition?");
    body["run_id"] = json!(id(&run));
    body["assignee_email"] = json!(by_email.person().email.to_uppercase());
    src.post::<Value>("/v1/actions", body, 201).await;
    src.post::<Value>(
        &format!("/v1/source/runs/{}/complete", id(&run)),
        json!({"status": "failed", "error": "disk full"}),
        200,
    )
    .await;
    let url = format!("/app/runs/{}", id(&run));
    for who in [app.admin(), admin2, reviewer, by_email] {
        let list: Value = who.get("/v1/notifications", 200).await;
        let n = list["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["kind"] == "run.failed")
            .unwrap_or_else(|| panic!("{:?} heard nothing: {list}", who.person().email));
        assert_eq!(n["title"], "Run failed: etl");
        assert_eq!(n["body"], "disk full");
        assert!(n["url"].as_str().unwrap().ends_with(&url), "{n}");
    }
    let list: Value = bystander.get("/v1/notifications", 200).await;
    assert!(
        !list["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["kind"] == "run.failed")
    );

    // A test run's failure says so, as test Actions do.
    let test_src = app.source_test();
    let run = new_run(&test_src, json!({"name": "smoke", "status": "running"})).await;
    test_src
        .post::<Value>(
            &format!("/v1/source/runs/{}/complete", id(&run)),
            json!({"status": "failed", "error": "x"}),
            200,
        )
        .await;
    let list: Value = app.admin().get("/v1/notifications", 200).await;
    let titles: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["kind"] == "run.failed")
        .map(|n| n["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        ["Run failed: [test] smoke", "Run failed: etl"],
        "{list}"
    );
}

#[tokio::test]
async fn the_runs_pages_show_progress_actions_and_timeline() {
    let app = TestApp::spawn().await;
    let src = app.source();
    let run = new_run(&src, json!({"name": "Backfill <orders>", "total": 4})).await;
    let rid = id(&run);
    src.patch::<Value>(
        &format!("/v1/source/runs/{rid}/progress"),
        json!({"status": "running", "completed": 1, "message": "first batch"}),
        200,
    )
    .await;
    let mut body = two_options("Approve batch 2?");
    body["run_id"] = json!(rid);
    let a: Value = src.post("/v1/actions", body, 201).await;
    new_run(&app.source_test(), json!({"name": "Test-only run"})).await;

    let admin = app.browser(app.admin().person()).await;
    let list = admin.page("/app/runs").await;
    assert!(
        list.contains("Backfill &#60;orders&#62;") && !list.contains("<orders>"),
        "escaped name"
    );
    assert!(list.contains(r#"<progress value="1" max="4""#), "{list}");
    assert!(list.contains("1 of 4"));
    assert!(!list.contains("Test-only run"));
    assert!(
        list.contains(r#"href="/app/runs" aria-current="page""#),
        "Runs is in the header"
    );
    let test_list = admin.page("/app/runs?environment=test").await;
    assert!(test_list.contains("Test-only run"));
    let both = admin.page("/app/runs?environment=all").await;
    assert!(both.contains("Test-only run") && both.contains("Backfill"));
    assert!(
        both.contains(r#"<option value="all" selected>live and test</option>"#),
        "the filter shows what is listed"
    );
    assert!(
        list.contains(r#"href="/app/guide#runs""#),
        "the guide's page, not its JSON"
    );
    let guide = admin.page("/app/guide").await;
    assert!(guide.contains(r#"id="runs""#), "the link's anchor exists");
    let none = admin.page("/app/runs?status=failed").await;
    assert!(!none.contains("Backfill"));
    assert!(none.contains("No failed runs (live)."), "{none}");
    assert!(!none.contains("No runs yet"), "the workspace has runs");

    let page = admin.page(&format!("/app/runs/{rid}")).await;
    assert!(
        page.contains(r#"id="run-progress" value="1" max="4""#),
        "{page}"
    );
    assert!(page.contains("1 of 4 (25%)"));
    assert!(page.contains("first batch"));
    assert!(page.contains(&format!(
        "/app/actions/{}",
        a["data"]["id"].as_str().unwrap()
    )));
    assert!(page.contains("Approve batch 2?"));
    for line in ["Created", "Started"] {
        assert!(page.contains(line), "timeline: {line}");
    }
    let fragment = admin.page(&format!("/app/runs/{rid}/live")).await;
    assert!(fragment.contains(r#"class="run-fragment""#));
    assert!(!fragment.contains("<nav"), "only the live part");

    // Another workspace's person cannot open it.
    let outsider = app.browser(app.outsider().person()).await;
    let r = outsider
        .http()
        .get(outsider.url(&format!("/app/runs/{rid}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn a_runs_progress_bar_moves_live_in_chromium() {
    let app = TestApp::spawn().await;
    let link = app.signin_link("admin@example.com").await;
    let key = app.live_key();
    let env = [
        ("BASE_URL", app.base.as_str()),
        ("LINK", link.as_str()),
        ("SOURCE_KEY", key.as_str()),
    ];
    let r = crate::helpers::run_node(
        "browser-run.mjs",
        &env,
        std::time::Duration::from_secs(90),
        Some(&app),
    )
    .await;
    assert_eq!(r["ok"], true, "{}", r["error"].as_str().unwrap_or_default());
    assert_eq!(r["csp_violations"], json!([]));
    assert_eq!(r["script_errors"], json!([]));
    assert_eq!(r["listed"], json!({"rows": 1, "value": "2"}));
    assert_eq!(
        r["start"],
        json!({"value": "2", "max": "10", "counts": "2 of 10 (20%)"})
    );
    assert_eq!(r["label"], "Run progress");
    assert_eq!(
        r["moved"],
        json!({"value": "7", "max": "10", "counts": "7 of 10 (70%)"})
    );
    assert_eq!(r["message"], "rows 601-700");
    assert_eq!(
        r["metadata_open"], true,
        "the opened fold closed on refresh"
    );
    assert_eq!(r["error"], "disk full");
    assert_eq!(r["cancel_forms"], json!([1, 0]), "the cancel form goes");
    assert_eq!(r["same_document"], true, "no reload");
}

/// A queued run may start by waiting on a person: going straight to
/// `waiting` starts it (`started_at`), as `running` does.
#[tokio::test]
async fn a_queued_run_that_waits_first_has_started() {
    let app = TestApp::spawn().await;
    let src = app.source();
    let run = new_run(&src, json!({"name": "agent task"})).await;
    assert_eq!(run["status"], "queued");
    let r: Value = src
        .patch(
            &format!("/v1/source/runs/{}/progress", id(&run)),
            json!({"status": "waiting", "message": "asking for approval"}),
            200,
        )
        .await;
    assert_eq!(r["data"]["status"], "waiting");
    let started = r["data"]["started_at"].as_str().expect("started_at is set");
    assert!(started >= run["created_at"].as_str().unwrap(), "{r}");
    // Its timeline says both: it started, and it waits.
    // The message goes with the wait: what it waits for.
    let db = app.db();
    let mut st = db
        .prepare("SELECT kind, message FROM run_events WHERE run_id = ?1 ORDER BY seq")
        .unwrap();
    let lines: Vec<(String, Option<String>)> = st
        .query_map([id(&run)], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        lines,
        [
            ("created".to_owned(), None),
            ("started".to_owned(), None),
            ("waiting".to_owned(), Some("asking for approval".to_owned())),
        ]
    );
    // Back to running: the timeline reads "Resumed".
    src.patch::<Value>(
        &format!("/v1/source/runs/{}/progress", id(&run)),
        json!({"status": "running", "message": "approved, carrying on"}),
        200,
    )
    .await;
    let page = app
        .browser(app.admin().person())
        .await
        .page(&format!("/app/runs/{}", id(&run)))
        .await;
    let resumed = page.find("Resumed").expect("a Resumed line");
    assert!(page[resumed..].contains("approved, carrying on"), "{page}");
    let waiting = page.find(">Waiting<").expect("the Waiting line");
    assert!(
        page[waiting..resumed].contains("asking for approval"),
        "{page}"
    );
}

/// `result` is any JSON value, as the guide says: a string, an array or a
/// number is kept and read back as sent (the OpenAPI document types it as
/// any value; the API tests check every response against it). A `null`
/// in a progress update leaves that field as it was.
#[tokio::test]
async fn a_result_of_any_json_type_is_kept_and_a_null_progress_field_stays() {
    let app = TestApp::spawn().await;
    let src = app.source();
    for result in [
        json!("all 1200 rows imported"),
        json!([1, "two"]),
        json!(3.5),
        json!({"rows": 1200}),
    ] {
        let run = new_run(
            &src,
            json!({"name": "typed", "status": "running", "total": 9}),
        )
        .await;
        let path = format!("/v1/source/runs/{}", id(&run));
        let kept: Value = src
            .patch(
                &format!("{path}/progress"),
                json!({"message": "busy", "total": null, "completed": null}),
                200,
            )
            .await;
        let progress = &kept["data"]["progress"];
        assert_eq!(
            (&progress["message"], &progress["total"]),
            (&json!("busy"), &json!(9)),
            "{kept}"
        );
        let done: Value = src
            .post(
                &format!("{path}/complete"),
                json!({"status": "succeeded", "result": result}),
                200,
            )
            .await;
        assert_eq!(done["data"]["result"], result);
        let read: Value = app
            .admin()
            .get(&format!("/v1/runs/{}", id(&run)), 200)
            .await;
        assert_eq!(read["data"]["result"], result);
        // The run page shows it, indented, escaped.
        let page = app
            .browser(app.admin().person())
            .await
            .page(&format!("/app/runs/{}", id(&run)))
            .await;
        let shown = serde_json::to_string_pretty(&result)
            .unwrap()
            .replace('"', "&#34;");
        assert!(page.contains(r#"id="run-result""#), "{page}");
        assert!(page.contains(&shown), "{shown}: {page}");
    }
    // Metadata too, folded away.
    let run = new_run(
        &src,
        json!({"name": "with metadata", "metadata": {"pipeline": "<nightly>"}}),
    )
    .await;
    let page = app
        .browser(app.admin().person())
        .await
        .page(&format!("/app/runs/{}", id(&run)))
        .await;
    assert!(page.contains(r#"<details id="run-metadata">"#), "{page}");
    assert!(page.contains("&#60;nightly&#62;"), "{page}");
    assert!(!page.contains(r#"id="run-result""#), "{page}");
    assert!(page.contains("No progress reported yet."), "{page}");
    // Finished without numbers: none "yet".
    let _: Value = src
        .post(
            &format!("/v1/source/runs/{}/complete", id(&run)),
            json!({"status": "succeeded"}),
            200,
        )
        .await;
    let page = app
        .browser(app.admin().person())
        .await
        .page(&format!("/app/runs/{}", id(&run)))
        .await;
    assert!(page.contains("No progress was reported."), "{page}");
}

/// Owners and admins cancel a run its Source left active: the run ends
/// `cancelled` with who and why on its timeline, a repeat answers it again,
/// the Source is refused further progress, and reviewers, outsiders and
/// finished runs are refused with their codes. The run's open Actions stay
/// open.
#[tokio::test]
async fn owners_and_admins_cancel_a_run_left_active() {
    let app = TestApp::spawn().await;
    let src = app.source();
    let run = new_run(&src, json!({"name": "deploy 42", "status": "running"})).await;
    let rid = id(&run);
    let mut body = two_options("Ship it?");
    body["run_id"] = json!(rid);
    let a: Value = src.post("/v1/actions", body, 201).await;
    let cancel = format!("/v1/runs/{rid}/cancel");

    let reviewer = app.member(Role::Reviewer);
    let e = reviewer
        .post_err(&cancel, json!({}), 403, "FORBIDDEN")
        .await;
    assert_eq!(e["details"]["required_role"], "admin");
    // Who may not cancel is told so, whatever the body holds.
    reviewer
        .post_err(
            &cancel,
            json!({"reason": "x".repeat(2001)}),
            403,
            "FORBIDDEN",
        )
        .await;
    app.outsider()
        .post_err(&cancel, json!({}), 404, "RUN_NOT_FOUND")
        .await;
    let admin = app.member(Role::Admin);
    admin
        .post_err(
            &cancel,
            json!({"reason": "a\u{0}b"}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    admin
        .post_err(&cancel, json!({"why": "x"}), 422, "VALIDATION_ERROR")
        .await;

    let r = admin
        .call(
            Method::POST,
            &cancel,
            Some(&json!({"reason": "the runner died"})),
            &[],
        )
        .await;
    let done = r.ok(200)["data"].clone();
    assert!(r.headers.get("idempotent-replayed").is_none());
    assert_eq!(done["status"], "cancelled");
    assert!(done["completed_at"].is_string());
    let again = admin.call(Method::POST, &cancel, None, &[]).await;
    assert_eq!(again.ok(200)["data"]["status"], "cancelled");
    assert_eq!(again.headers["idempotent-replayed"], "true");

    let e = src
        .patch_err(
            &format!("/v1/source/runs/{rid}/progress"),
            json!({"completed": 2}),
            409,
            "RUN_NOT_ACTIVE",
        )
        .await;
    assert_eq!(e["details"]["status"], "cancelled");
    // The Source reads who cancelled it and why, as the run's `error`.
    let seen: Value = src.get(&format!("/v1/source/runs/{rid}"), 200).await;
    assert_eq!(
        seen["data"]["error"],
        format!("Cancelled by {}: the runner died", admin.person().email)
    );
    let page = app
        .browser(admin.person())
        .await
        .page(&format!("/app/runs/{rid}"))
        .await;
    assert!(
        page.contains(&format!(
            "Cancelled by {}: the runner died",
            admin.person().email
        )),
        "{page}"
    );
    // Its Action is still open.
    let got: Value = src
        .get(
            &format!("/v1/actions/{}", a["data"]["id"].as_str().unwrap()),
            200,
        )
        .await;
    assert_eq!(got["data"]["status"], "open");

    // A run that succeeded is not cancelled.
    let ok = new_run(&src, json!({"name": "done"})).await;
    src.post::<Value>(
        &format!("/v1/source/runs/{}/complete", id(&ok)),
        json!({"status": "succeeded"}),
        200,
    )
    .await;
    let e = admin
        .post_err(
            &format!("/v1/runs/{}/cancel", id(&ok)),
            json!({}),
            409,
            "RUN_NOT_ACTIVE",
        )
        .await;
    assert_eq!(e["details"]["status"], "succeeded");

    // The longest reason leaves the run's `error` within its 2,000
    // characters (the reason's end gives way to "…"); a reason of only
    // invisible characters gives none.
    let email = admin.person().email.clone();
    let long = new_run(&src, json!({"name": "long reason"})).await;
    let done: Value = admin
        .post(
            &format!("/v1/runs/{}/cancel", id(&long)),
            json!({"reason": "é".repeat(2000)}),
            200,
        )
        .await;
    let error = done["data"]["error"].as_str().unwrap();
    assert_eq!(error.chars().count(), 2000, "{error}");
    assert!(error.starts_with(&format!("Cancelled by {email}: éé")));
    assert!(error.ends_with("é…"), "{error}");
    let blank = new_run(&src, json!({"name": "blank reason"})).await;
    let done: Value = admin
        .post(
            &format!("/v1/runs/{}/cancel", id(&blank)),
            json!({"reason": "\u{200b}\u{3164} "}),
            200,
        )
        .await;
    assert_eq!(done["data"]["error"], format!("Cancelled by {email}"));
    // The list shows why a run ended in place of its last progress message.
    let list = app.browser(admin.person()).await.page("/app/runs").await;
    let row = list
        .split(&format!("id=\"run-{rid}\""))
        .nth(1)
        .and_then(|r| r.split("</li>").next())
        .unwrap();
    assert!(
        row.contains("run-row-error") && row.contains("the runner died"),
        "{row}"
    );
}

/// Revoking a Source cancels its active runs (nothing can report on them
/// any more); its finished runs keep their status.
#[tokio::test]
async fn revoking_a_source_cancels_its_active_runs() {
    let app = TestApp::spawn().await;
    let (sid, key) = app.second_source().await;
    let other = app.bearer(&key);
    let queued = new_run(&other, json!({"name": "queued"})).await;
    let waiting = new_run(&other, json!({"name": "waiting"})).await;
    other
        .patch::<Value>(
            &format!("/v1/source/runs/{}/progress", id(&waiting)),
            json!({"status": "waiting", "message": "needs a person"}),
            200,
        )
        .await;
    let done = new_run(&other, json!({"name": "done"})).await;
    other
        .post::<Value>(
            &format!("/v1/source/runs/{}/complete", id(&done)),
            json!({"status": "failed", "error": "boom"}),
            200,
        )
        .await;
    let mine = new_run(&app.source(), json!({"name": "the default Source's"})).await;
    app.admin()
        .delete::<Value>(&format!("/v1/sources/{sid}"), 204)
        .await;
    let admin = app.admin();
    for (run, status) in [
        (&queued, "cancelled"),
        (&waiting, "cancelled"),
        (&done, "failed"),
        (&mine, "queued"),
    ] {
        let got: Value = admin.get(&format!("/v1/runs/{}", id(run)), 200).await;
        assert_eq!(got["data"]["status"], status, "{got}");
        if status == "cancelled" {
            assert_eq!(
                got["data"]["error"], "Cancelled: its Source was revoked",
                "{got}"
            );
        }
    }
    let page = app
        .browser(admin.person())
        .await
        .page(&format!("/app/runs/{}", id(&waiting)))
        .await;
    assert!(page.contains("Cancelled: its Source was revoked"), "{page}");
}

/// The run page offers "Cancel run" to owners and admins of an active run,
/// asks first, then cancels; the Action page names its run and the run's
/// status.
#[tokio::test]
async fn the_run_page_cancels_after_asking_and_the_action_page_names_the_run() {
    let app = TestApp::spawn().await;
    let src = app.source();
    let run = new_run(&src, json!({"name": "migrate db", "status": "running"})).await;
    let rid = id(&run);
    let mut body = two_options("Drop the old table?");
    body["run_id"] = json!(rid);
    let a: Value = src.post("/v1/actions", body, 201).await;
    let aid = a["data"]["id"].as_str().unwrap().to_owned();

    let reviewer = app.browser(app.member(Role::Reviewer).person()).await;
    let page = reviewer.page(&format!("/app/runs/{rid}")).await;
    assert!(
        !page.contains(r#"id="run-cancel""#),
        "reviewers get no button"
    );
    // Posted anyway: refused at once, not asked first.
    let r = reviewer
        .post_form(
            &format!("/app/runs/{rid}/cancel"),
            Some(reviewer.url("").trim_end_matches('/')),
            &[("_csrf", reviewer.csrf())],
        )
        .await;
    assert_eq!(r.status(), 403);
    let body = r.text().await.unwrap();
    assert!(body.contains("owners and admins cancel a run"), "{body}");
    assert!(!body.contains("Cancel the run “"), "not asked first");
    let action = reviewer.page(&format!("/app/actions/{aid}")).await;
    assert!(
        action.contains(&format!(
            r#"in run <a href="/app/runs/{rid}">migrate db</a>"#
        )),
        "{action}"
    );
    assert!(action.contains(r#"<span class="badge run-running">running</span>"#));

    let admin = app.browser(app.admin().person()).await;
    let page = admin.page(&format!("/app/runs/{rid}")).await;
    assert!(page.contains(r#"id="run-cancel""#), "{page}");
    let origin = admin.url("").trim_end_matches('/').to_owned();
    let path = format!("/app/runs/{rid}/cancel");
    let asked = admin
        .post_form(
            &path,
            Some(&origin),
            &[("_csrf", admin.csrf()), ("reason", "wrong window")],
        )
        .await;
    assert_eq!(asked.status(), 200);
    let asked = asked.text().await.unwrap();
    assert!(asked.contains("Cancel the run “migrate db”?"), "{asked}");
    assert!(
        asked.contains(r#"name="reason" value="wrong window""#),
        "{asked}"
    );
    let got: Value = app.admin().get(&format!("/v1/runs/{rid}"), 200).await;
    assert_eq!(got["data"]["status"], "running", "asking changes nothing");
    let done = admin
        .post_form(
            &path,
            Some(&origin),
            &[
                ("_csrf", admin.csrf()),
                ("reason", "wrong window"),
                ("confirmed", "yes"),
            ],
        )
        .await;
    assert_eq!(done.status(), 303);
    let page = admin.page(&format!("/app/runs/{rid}")).await;
    assert!(page.contains(r#"id="run-status">cancelled"#), "{page}");
    assert!(!page.contains(r#"id="run-cancel""#));
    assert!(page.contains("wrong window"));
}

/// A person in no workspace gets 404 `WORKSPACE_NOT_FOUND` from the runs
/// list, as from billing and analytics, with what to do.
#[tokio::test]
async fn the_runs_list_of_a_person_in_no_workspace_is_not_found() {
    let app = TestApp::spawn().await;
    let conn = hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap();
    let user = hds::store::users::create(&conn, "loner@example.com", None, &app.now()).unwrap();
    let (token, _) =
        hds::store::users::issue_token(&conn, &user.id, "test", None, &app.now()).unwrap();
    let loner = app.bearer(&token);
    for path in ["/v1/runs", "/v1/billing", "/v1/analytics/summary"] {
        let e = loner.get_err(path, 404, "WORKSPACE_NOT_FOUND").await;
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("the dashboard's Workspaces page"),
            "{path}: {e}"
        );
    }
    // The Runs page, in every signed-in person's navigation, shows none.
    let person = crate::helpers::Person {
        id: user.id.clone(),
        email: "loner@example.com".into(),
    };
    let browser = app.browser(&person).await;
    let page = browser.page("/app/runs").await;
    assert!(page.contains(r#"id="runs-none""#), "{page}");
    // … and says why, not that a Source may create one.
    assert!(page.contains("You belong to no workspace yet"), "{page}");
    assert!(!page.contains("POST /v1/runs"), "{page}");
    // So does the Analytics page: nothing counted, and why.
    let page = browser.page("/app/analytics").await;
    assert!(page.contains(r#"id="analytics-no-workspace""#), "{page}");
    assert!(page.contains("No Actions in this window."), "{page}");
    // Pages with nothing to show without a workspace say why, and lead to
    // the Workspaces page (still 404, as the API).
    for path in ["/app/billing", "/app/settings/notification-policy"] {
        let page = browser.page_with_status(path, 404).await;
        assert!(page.contains("<h1>No workspace yet</h1>"), "{path}: {page}");
        assert!(
            page.contains(r#"<a class="btn" href="/app/workspaces">Go to Workspaces</a>"#),
            "{path}: {page}"
        );
    }
}

/// A restricted Action in a run shows its title to those who may see it
/// (its listed reviewer, an admin) and only its id to other members.
#[tokio::test]
async fn a_restricted_action_in_a_run_is_titled_for_those_who_may_see_it() {
    let app = TestApp::spawn().await;
    let src = app.source();
    let run = new_run(&src, json!({"name": "payroll"})).await;
    let rid = id(&run);
    let listed = app.member(Role::Reviewer);
    let other = app.member(Role::Reviewer);
    let mut body = two_options("Pay the bonuses");
    body["run_id"] = json!(rid);
    body["visibility"] = json!("restricted");
    body["reviewer_emails"] = json!([listed.person().email]);
    let a: Value = src.post("/v1/actions", body, 201).await;
    let aid = a["data"]["id"].as_str().unwrap().to_owned();
    let viewer = app.member(Role::Viewer);
    for (who, titled) in [
        (listed.person(), true),
        (app.admin().person(), true),
        (other.person(), false),
        (viewer.person(), false),
    ] {
        let page = app
            .browser(who)
            .await
            .page(&format!("/app/runs/{rid}"))
            .await;
        let list = page
            .split(r#"<ul id="run-actions">"#)
            .nth(1)
            .and_then(|rest| rest.split("</ul>").next())
            .unwrap_or_default();
        assert_eq!(
            list.contains(&format!(
                r#"<a href="/app/actions/{aid}">Pay the bonuses</a>"#
            )),
            titled,
            "{}: {list}",
            who.email
        );
        assert_eq!(
            page.contains(&format!("Restricted Action {aid}")),
            !titled,
            "{}",
            who.email
        );
    }
}

/// A completion retried with the same result written another way (`1`
/// for `1.0`, members in another order) is the same completion; a blanked
/// message or an empty error shows nothing empty on the page; a test run
/// is marked in the list of both environments.
#[tokio::test]
async fn a_completion_is_the_same_by_value_and_blank_texts_show_nothing() {
    let app = TestApp::spawn().await;
    let src = app.source();
    let run = new_run(&src, json!({"name": "nightly"})).await;
    let path = format!("/v1/source/runs/{}", id(&run));
    let _: Value = src
        .patch(
            &format!("{path}/progress"),
            json!({"status": "running", "message": "step 1"}),
            200,
        )
        .await;
    // Blanking the message adds no empty line to the timeline.
    let _: Value = src
        .patch(&format!("{path}/progress"), json!({"message": ""}), 200)
        .await;
    let body = json!({"status": "succeeded", "result": {"n": 1.0, "ok": true}, "error": ""});
    src.post::<Value>(&format!("{path}/complete"), body, 200)
        .await;
    let again = src
        .call(
            Method::POST,
            &format!("{path}/complete"),
            Some(&json!({"status": "succeeded", "result": {"ok": true, "n": 1}, "error": ""})),
            &[],
        )
        .await;
    again.ok(200);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    src.post_err(
        &format!("{path}/complete"),
        json!({"status": "succeeded", "result": {"ok": true, "n": 2}, "error": ""}),
        409,
        "RUN_NOT_ACTIVE",
    )
    .await;

    let browser = app.browser(app.admin().person()).await;
    let page = browser.page(&format!("/app/runs/{}", id(&run))).await;
    assert!(
        !page.contains(r#"id="run-error""#),
        "no empty banner: {page}"
    );
    assert!(!page.contains(r#"id="run-message""#), "{page}");
    assert!(
        !page.contains(r#"<div class="ev-detail pre-wrap"></div>"#),
        "{page}"
    );
    assert_eq!(
        page.matches(r#"<div class="ev-what">Progress"#).count(),
        0,
        "{page}"
    );

    // A failure with a blank error: its notice says it in its own words.
    let failed = new_run(&src, json!({"name": "import"})).await;
    src.post::<Value>(
        &format!("/v1/source/runs/{}/complete", id(&failed)),
        json!({"status": "failed", "error": "  "}),
        200,
    )
    .await;
    let notes: Value = app.admin().get("/v1/notifications", 200).await;
    let note = notes["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["kind"] == "run.failed")
        .unwrap_or_else(|| panic!("{notes}"))
        .clone();
    assert_eq!(
        note["body"], "The Source reported the run as failed.",
        "{note}"
    );

    // A test run is marked as such where both environments are listed.
    let test = app.source_test();
    let t = new_run(&test, json!({"name": "dry run"})).await;
    let list = browser.page("/app/runs?environment=all").await;
    let row_of = |r: &Value| {
        list.split(&format!(r#"id="run-{}""#, id(r)))
            .nth(1)
            .and_then(|rest| rest.split("</li>").next())
            .unwrap()
            .to_owned()
    };
    let (row, live_row) = (row_of(&t), row_of(&run));
    assert!(row.contains("badge-test"), "{row}");
    assert!(!live_row.contains("badge-test"), "{live_row}");
}

/// The run page says when its lists are cut: the newest 100 Actions, the
/// newest 200 timeline lines.
#[tokio::test]
async fn the_run_page_says_when_its_lists_are_cut_short() {
    let app = TestApp::spawn().await;
    let src = app.source();
    let run = new_run(&src, json!({"name": "bulk"})).await;
    let browser = app.browser(app.admin().person()).await;
    let path = format!("/app/runs/{}", id(&run));
    let page = browser.page(&path).await;
    assert!(!page.contains("run-actions-more"), "{page}");
    assert!(!page.contains("run-timeline-earlier"), "{page}");
    for i in 0..101 {
        let mut body = two_options(&format!("Item {i}"));
        body["run_id"] = json!(id(&run));
        let _: Value = src.post("/v1/actions", body, 201).await;
    }
    for i in 0..200 {
        let _: Value = src
            .patch(
                &format!("/v1/source/runs/{}/progress", id(&run)),
                json!({"status": "running", "message": format!("step {i}")}),
                200,
            )
            .await;
    }
    let page = browser.page(&path).await;
    assert!(
        page.contains("The newest 100 are listed; this run raised more."),
        "{page}"
    );
    assert_eq!(page.matches("/app/actions/act_").count(), 100);
    assert!(
        page.contains("The newest 200 lines are shown; earlier ones are left out."),
        "{page}"
    );
    assert!(!page.contains(r#"<div class="ev-what">Created</div>"#));
    assert!(page.contains("step 199"));
}

/// `GET /v1/me/actions?run_id=` lists the Actions raised in one run, with
/// the other filters; a run of another workspace, or no run id, is 422. The
/// run page leads to the inbox narrowed to it, where its open requests are
/// picked and decided together.
#[tokio::test]
async fn the_inbox_narrows_to_a_run_and_the_run_page_leads_there() {
    let app = TestApp::spawn().await;
    let src = app.source();
    let admin = app.admin();
    let run = new_run(&src, json!({"name": "nightly import", "status": "running"})).await;
    let rid = id(&run);
    let mut ids = Vec::new();
    for t in [
        "Merge duplicate 1",
        "Merge duplicate 2",
        "Merge duplicate 3",
    ] {
        let mut body = two_options(t);
        body["run_id"] = json!(rid);
        let a: Value = src.post("/v1/actions", body, 201).await;
        ids.push(id(&a["data"]));
    }
    app.create_action(two_options("Not in the run")).await;
    let listed =
        |v: &Value| -> Vec<String> { v["data"].as_array().unwrap().iter().map(id).collect() };
    let got: Value = admin
        .get(&format!("/v1/me/actions?run_id={rid}"), 200)
        .await;
    let mut seen = listed(&got);
    seen.sort();
    assert_eq!(seen, ids, "{got}");
    // With the other filters and pages.
    let got: Value = admin
        .get(
            &format!("/v1/me/actions?run_id={rid}&search=duplicate&limit=2"),
            200,
        )
        .await;
    assert_eq!(listed(&got).len(), 2);
    assert_eq!(got["has_more"], true);
    let last = listed(&got)[1].clone();
    let rest: Value = admin
        .get(
            &format!("/v1/me/actions?run_id={rid}&search=duplicate&limit=2&starting_after={last}"),
            200,
        )
        .await;
    assert_eq!(listed(&rest).len(), 1);
    assert_eq!(rest["has_more"], false);
    let none: Value = admin
        .get(&format!("/v1/me/actions?run_id={rid}&status=resolved"), 200)
        .await;
    assert_eq!(none["data"], json!([]));
    // A search without a word, or a viewer awaiting their vote, match
    // nothing, with the run too (no query error).
    for q in ["search=-", "search=%23", "scope=needs_my_vote"] {
        let who = if q.starts_with("scope") {
            app.member(Role::Viewer)
        } else {
            app.admin()
        };
        let got: Value = who
            .get(&format!("/v1/me/actions?run_id={rid}&{q}"), 200)
            .await;
        assert_eq!(got["data"], json!([]), "{q}");
        let page = app
            .browser(who.person())
            .await
            .page(&format!("/app?run_id={rid}&{}", q.replace("search", "q")))
            .await;
        assert!(page.contains(r#"id="inbox-run""#), "{q}: {page}");
    }
    // Empty: no filter. Not a run id, or a run of no workspace of the
    // caller's active one: 422 naming run_id.
    let all: Value = admin.get("/v1/me/actions?run_id=", 200).await;
    assert_eq!(listed(&all).len(), 4);
    for bad in ["run_nope".to_owned(), format!("run_{}", "0".repeat(26))] {
        let e = admin
            .get_err(
                &format!("/v1/me/actions?run_id={bad}"),
                422,
                "VALIDATION_ERROR",
            )
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], "run_id", "{e}");
    }
    let outsider = app.outsider();
    let e = outsider
        .get_err(
            &format!("/v1/me/actions?run_id={rid}"),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("is not a run of this workspace"),
        "{e}"
    );

    // The run page leads to the inbox narrowed to the run, which names it,
    // keeps it through the filter form, and offers the batch.
    let browser = app.browser(admin.person()).await;
    let page = browser.page(&format!("/app/runs/{rid}")).await;
    let link = format!("/app?run_id={rid}&amp;environment=live");
    assert!(page.contains(&link), "{page}");
    let inbox = browser
        .page(&format!("/app?run_id={rid}&environment=live"))
        .await;
    assert!(inbox.contains(r#"id="inbox-run""#), "{inbox}");
    assert!(inbox.contains("nightly import"), "{inbox}");
    assert!(
        inbox.contains(&format!(
            r#"<input type="hidden" name="run_id" value="{rid}">"#
        )),
        "{inbox}"
    );
    assert_eq!(inbox.matches(r#"name="pick""#).count(), 3, "{inbox}");
    assert!(!inbox.contains("Not in the run"), "{inbox}");
    // Once every Action of the run is decided, the run page no longer
    // leads there.
    let decisions: Vec<Value> = ids
        .iter()
        .map(|a| {
            json!({"action_id": a, "option_id": "approve", "action_version": 1,
                   "fingerprint": null})
        })
        .collect();
    for (i, a) in ids.iter().enumerate() {
        let got: Value = admin.get(&format!("/v1/actions/{a}"), 200).await;
        let mut d = decisions[i].clone();
        d["fingerprint"] = got["data"]["fingerprint"].clone();
        let out: Value = admin
            .post("/v1/actions/decisions", json!({"decisions": [d]}), 200)
            .await;
        assert_eq!(out["data"][0]["action"]["status"], "resolved", "{out}");
    }
    let page = browser.page(&format!("/app/runs/{rid}")).await;
    assert!(!page.contains(r#"id="run-actions-inbox""#), "{page}");
}
