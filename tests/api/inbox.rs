//! GET /v1/me/actions: filters and bounds (guide: "GET /v1/me/actions").

use serde_json::json;

use crate::helpers::{TestApp, two_options};

fn titles(v: &serde_json::Value) -> Vec<String> {
    v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn inbox_filters_sort_and_bound() {
    let app = TestApp::spawn().await;
    let user = app.user_token();
    let mut low = two_options("Low thing");
    low["priority"] = json!("low");
    app.create_action(low).await;
    let mut urgent = two_options("Urgent 100% thing");
    urgent["priority"] = json!("urgent");
    urgent["assignee_user_id"] = app.creds["user_id"].clone();
    app.create_action(urgent).await;
    let done = app.create_action(two_options("Done thing")).await;
    app.decide(&done, json!({"option_id": "approve"}))
        .await
        .ok(200);
    app.create_action_with(&app.test_key(), two_options("Test thing"))
        .await;

    // Default: live, open, most pressing first.
    assert_eq!(
        titles(app.get("/v1/me/actions", &user).await.ok(200)),
        ["Urgent 100% thing", "Low thing"]
    );
    assert_eq!(
        titles(
            app.get("/v1/me/actions?status=resolved", &user)
                .await
                .ok(200)
        ),
        ["Done thing"]
    );
    assert_eq!(
        titles(
            app.get("/v1/me/actions?environment=test", &user)
                .await
                .ok(200)
        ),
        ["Test thing"]
    );
    assert_eq!(
        app.get("/v1/me/actions?environment=all&status=all", &user)
            .await
            .ok(200)["data"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    assert_eq!(
        titles(app.get("/v1/me/actions?priority=low", &user).await.ok(200)),
        ["Low thing"]
    );
    // `%` is matched literally, not as a wildcard.
    assert_eq!(
        titles(app.get("/v1/me/actions?search=100%25", &user).await.ok(200)),
        ["Urgent 100% thing"]
    );
    assert_eq!(
        titles(app.get("/v1/me/actions?scope=mine", &user).await.ok(200)),
        ["Urgent 100% thing"]
    );
    assert_eq!(
        titles(
            app.get("/v1/me/actions?routing=unassigned", &user)
                .await
                .ok(200)
        ),
        ["Low thing"]
    );
    let src = app.creds["source_id"].as_str().unwrap();
    assert_eq!(
        app.get(&format!("/v1/me/actions?source_id={src}"), &user)
            .await
            .ok(200)["data"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let page = app.get("/v1/me/actions?limit=1", &user).await;
    assert_eq!(page.ok(200)["data"].as_array().unwrap().len(), 1);
    assert_eq!(page.body["has_more"], true);

    for bad in [
        "limit=0",
        "limit=201",
        "limit=ten",
        "status=pending",
        "environment=prod",
        "scope=team",
        "priority=p1",
        "routing=x",
    ] {
        app.get(&format!("/v1/me/actions?{bad}"), &user)
            .await
            .error(422, "VALIDATION_ERROR");
    }
    // The older name `routing` is named alone in its error.
    let e = app.get("/v1/me/actions?routing=x", &user).await;
    let errors = &e.error(422, "VALIDATION_ERROR")["details"]["errors"];
    assert_eq!(errors.as_array().unwrap().len(), 1, "{errors}");
    assert_eq!(errors[0]["field"], "routing", "{errors}");
    let long = "a".repeat(121);
    let e = app
        .get(&format!("/v1/me/actions?search={long}"), &user)
        .await;
    assert_eq!(
        e.error(422, "VALIDATION_ERROR")["details"]["errors"][0]["field"],
        "search"
    );
    app.get(&format!("/v1/me/actions?search={}", "a".repeat(120)), &user)
        .await
        .ok(200);

    // Unknown parameters are named together, as a body's unknown fields.
    for path in ["/v1/me/actions", "/v1/source/actions"] {
        let who = if path == "/v1/source/actions" {
            app.live_key()
        } else {
            user.clone()
        };
        let e = app.get(&format!("{path}?foo=1&bar=2"), &who).await;
        let errors = e.error(422, "VALIDATION_ERROR")["details"]["errors"].clone();
        let mut fields: Vec<&str> = errors
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["field"].as_str().unwrap())
            .collect();
        fields.sort_unstable();
        assert_eq!(fields, ["bar", "foo"], "{path}: {errors}");
    }
    // An empty source_id is no filter; one that is no Source id, or no
    // Source of this workspace, is told rather than answered with nothing.
    let all = app.get("/v1/me/actions", &user).await.ok(200)["data"].clone();
    let empty = app.get("/v1/me/actions?source_id=", &user).await.ok(200)["data"].clone();
    assert_eq!(all, empty);
    let e = app.get("/v1/me/actions?source_id=src_bogus", &user).await;
    let e = e.error(422, "VALIDATION_ERROR");
    assert_eq!(e["details"]["errors"][0]["field"], "source_id", "{e}");
    let unknown = format!("src_{}", "0".repeat(26));
    let e = app
        .get(&format!("/v1/me/actions?source_id={unknown}"), &user)
        .await;
    let e = e.error(422, "VALIDATION_ERROR");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("is not a Source of this workspace"),
        "{e}"
    );
    // A revoked Source is still one to filter by (its Actions were
    // cancelled, and stay listed under their status); another workspace's
    // Source is not one of this workspace.
    let admin = app.admin();
    let other: serde_json::Value = admin
        .post("/v1/sources", json!({"name": "Old bot"}), 201)
        .await;
    let old = other["data"]["id"].as_str().unwrap().to_owned();
    let r = admin
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/sources/{old}"),
            None,
            &[],
        )
        .await;
    assert!(r.status.is_success(), "{}", r.body);
    app.get(&format!("/v1/me/actions?source_id={old}&status=all"), &user)
        .await
        .ok(200);
    let outsider = app.outsider();
    let theirs: serde_json::Value = outsider
        .post("/v1/sources", json!({"name": "Theirs"}), 201)
        .await;
    let e = app
        .get(
            &format!(
                "/v1/me/actions?source_id={}",
                theirs["data"]["id"].as_str().unwrap()
            ),
            &user,
        )
        .await;
    e.error(422, "VALIDATION_ERROR");
    // A cursor in lower case is told what case it takes.
    let id = all[0]["id"].as_str().unwrap().to_lowercase();
    let e = app
        .get(&format!("/v1/me/actions?starting_after={id}"), &user)
        .await;
    let e = e.error(422, "VALIDATION_ERROR");
    assert!(e["message"].as_str().unwrap().contains("upper-case"), "{e}");
}

/// `search` (FTS5): every word must begin a word of the title, in any case
/// and with or without accents; odd input is literal text, never a 500; it
/// combines with the other filters and follows title changes.
#[tokio::test]
async fn search_matches_word_prefixes_case_and_accents() {
    let app = TestApp::spawn().await;
    let user = app.user_token();
    let deploy = app
        .create_action(two_options("Déployer la Version 2.4 to PROD"))
        .await;
    let mut urgent = two_options("Rotate the café-bar keys");
    urgent["priority"] = json!("urgent");
    app.create_action(urgent).await;
    app.create_action(two_options("Quote \"AND\" NEAR(x) -minus *star*"))
        .await;
    app.create_action_with(&app.test_key(), two_options("Deploy test thing"))
        .await;
    let s = |q: &str| format!("/v1/me/actions?search={}", urlencode(q));

    for (q, want) in [
        ("deploy", vec!["Déployer la Version 2.4 to PROD"]),
        ("DÉPLOY", vec!["Déployer la Version 2.4 to PROD"]),
        ("prod deplo", vec!["Déployer la Version 2.4 to PROD"]),
        ("version 2.4", vec!["Déployer la Version 2.4 to PROD"]),
        ("CAFE", vec!["Rotate the café-bar keys"]),
        ("cafe-bar", vec!["Rotate the café-bar keys"]),
        ("ploy", vec![]),
        ("deploy keys", vec![]),
        ("\"and\"", vec!["Quote \"AND\" NEAR(x) -minus *star*"]),
        ("near(", vec!["Quote \"AND\" NEAR(x) -minus *star*"]),
        ("-minus", vec!["Quote \"AND\" NEAR(x) -minus *star*"]),
        ("*sta", vec!["Quote \"AND\" NEAR(x) -minus *star*"]),
    ] {
        assert_eq!(
            titles(app.get(&s(q), &user).await.ok(200)),
            want,
            "search={q}"
        );
    }
    // FTS syntax and punctuation are text: 200, never a 500.
    for odd in [
        "\"",
        "*",
        "AND",
        "OR",
        "NOT",
        "-",
        "NEAR",
        "NEAR(a b)",
        "a AND",
        "(",
        ")",
        "^x",
        "col:x",
        "title:deploy",
        "\"\"\"",
        "a\"b",
        "{x}",
        "+",
        "'",
        "\\",
        "%",
        "_",
        "\u{0}",
        "\u{7}x",
        "🚀",
        "x*y*",
        "AND OR NOT",
        ":",
    ] {
        app.get(&s(odd), &user).await.ok(200);
        app.get(
            &format!("{}&environment=all&status=all&scope=mine", s(odd)),
            &user,
        )
        .await
        .ok(200);
    }
    // No letter or digit: nothing matches.
    assert!(titles(app.get(&s("- * \""), &user).await.ok(200)).is_empty());
    // Combined with the other filters.
    assert_eq!(
        titles(
            app.get(&format!("{}&environment=all", s("depl")), &user)
                .await
                .ok(200)
        ),
        ["Déployer la Version 2.4 to PROD", "Deploy test thing"]
    );
    assert_eq!(
        titles(
            app.get(&format!("{}&environment=test", s("depl")), &user)
                .await
                .ok(200)
        ),
        ["Deploy test thing"]
    );
    assert!(
        titles(
            app.get(&format!("{}&priority=urgent", s("depl")), &user)
                .await
                .ok(200)
        )
        .is_empty()
    );
    assert_eq!(
        titles(
            app.get(&format!("{}&priority=urgent", s("rot")), &user)
                .await
                .ok(200)
        ),
        ["Rotate the café-bar keys"]
    );
    assert!(
        titles(
            app.get(&format!("{}&scope=mine", s("rot")), &user)
                .await
                .ok(200)
        )
        .is_empty()
    );
    // A new title is found, the old one is not (the index follows PATCH).
    let path = format!("/v1/actions/{}", deploy["id"].as_str().unwrap());
    let patched = app
        .patch(&path, &app.live_key(), json!({"title": "Ship release"}))
        .await
        .ok(200)["data"]
        .clone();
    assert!(titles(app.get(&s("deploy"), &user).await.ok(200)).is_empty());
    assert_eq!(
        titles(app.get(&s("ship"), &user).await.ok(200)),
        ["Ship release"]
    );
    // The index and the table agree after creates and a title change.
    rusqlite::Connection::open(app.data_dir().join("hds.db"))
        .unwrap()
        .execute(
            "INSERT INTO actions_fts(actions_fts, rank) VALUES ('integrity-check', 1)",
            [],
        )
        .unwrap();
    // Resolved Actions are found under their tab.
    app.decide(&patched, json!({"option_id": "approve"}))
        .await
        .ok(200);
    assert_eq!(
        titles(
            app.get(&format!("{}&status=resolved", s("ship")), &user)
                .await
                .ok(200)
        ),
        ["Ship release"]
    );
}

/// scope=mine matches the e-mail assignee in any ASCII case, once even when
/// the user id matches too; scope=unassigned excludes both.
#[tokio::test]
async fn scope_mine_by_id_or_email() {
    let app = TestApp::spawn().await;
    let user = app.user_token();
    let me = app.creds["user_id"].clone();
    let mut by_id = two_options("By id");
    by_id["assignee_user_id"] = me.clone();
    app.create_action(by_id).await;
    let mut by_mail = two_options("By mail");
    by_mail["assignee_email"] = json!("ADMIN@Example.com");
    let by_mail = app.create_action(by_mail).await;
    let mut both = two_options("Both");
    both["priority"] = json!("urgent");
    both["assignee_user_id"] = me;
    both["assignee_email"] = json!("admin@example.com");
    app.create_action(both).await;
    app.member_as(hds::domain::access::Role::Reviewer, "else@example.com");
    let mut other = two_options("Other");
    other["assignee_email"] = json!("else@example.com");
    app.create_action(other).await;
    let nobody = app.create_action(two_options("Nobody")).await;
    assert_eq!(
        titles(app.get("/v1/me/actions?scope=mine", &user).await.ok(200)),
        ["Both", "By id", "By mail"]
    );
    assert_eq!(
        titles(
            app.get("/v1/me/actions?scope=unassigned", &user)
                .await
                .ok(200)
        ),
        ["Nobody"]
    );
    assert_eq!(
        titles(
            app.get("/v1/me/actions?scope=mine&environment=all&search=by", &user)
                .await
                .ok(200)
        ),
        ["By id", "By mail"]
    );
    // Assignment rewrites the e-mail the filters read (a plain column since
    // migration 0018, written beside the spec): "Nobody" becomes mine by
    // e-mail, "By mail" nobody's.
    let assignment =
        |a: &serde_json::Value| format!("/v1/actions/{}/assignment", a["id"].as_str().unwrap());
    app.patch(
        &assignment(&nobody),
        &user,
        json!({"assignee_email": "ADMIN@EXAMPLE.COM"}),
    )
    .await
    .ok(200);
    app.patch(
        &assignment(&by_mail),
        &user,
        json!({"assignee_user_id": null}),
    )
    .await
    .ok(200);
    assert_eq!(
        titles(app.get("/v1/me/actions?scope=mine", &user).await.ok(200)),
        ["Both", "By id", "Nobody"]
    );
    assert_eq!(
        titles(
            app.get("/v1/me/actions?scope=unassigned", &user)
                .await
                .ok(200)
        ),
        ["By mail"]
    );
    let stray: i64 = rusqlite::Connection::open(app.data_dir().join("hds.db"))
        .unwrap()
        .query_row(
            "SELECT count(*) FROM actions
              WHERE assignee_email IS NOT lower(spec ->> '$.assignee_email')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stray, 0, "the column and the spec disagree");
}

fn urlencode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[tokio::test]
async fn the_snoozed_tab_lists_the_next_back_first() {
    let app = TestApp::spawn().await;
    let reviewer = app.member(hds::domain::access::Role::Reviewer);
    let clock = &app.state.services.clock;
    let mut urgent = two_options("Urgent, back in three hours");
    urgent["priority"] = json!("urgent");
    let urgent = app.create_action(urgent).await;
    let mut low = two_options("Low, back in one hour");
    low["priority"] = json!("low");
    let low = app.create_action(low).await;
    for (a, hours) in [(&urgent, 3), (&low, 1)] {
        let until = hds::domain::time::format(clock.now() + time::Duration::hours(hours));
        reviewer
            .post::<serde_json::Value>(
                &format!("/v1/actions/{}/snooze", a["id"].as_str().unwrap()),
                json!({"until": until}),
                200,
            )
            .await;
    }
    // By wake-up time, not priority: the tab is a schedule.
    let snoozed: serde_json::Value = reviewer.get("/v1/me/actions?status=snoozed", 200).await;
    assert_eq!(
        titles(&snoozed),
        ["Low, back in one hour", "Urgent, back in three hours"]
    );
    let page = app
        .browser(reviewer.person())
        .await
        .page("/app?status=snoozed")
        .await;
    let (first, second) = (
        page.find("Low, back in one hour").unwrap(),
        page.find("Urgent, back in three hours").unwrap(),
    );
    assert!(first < second, "the page lists them in the same order");
}

/// Same priority: the oldest first.
fn assert_oldest_first(rows: &[serde_json::Value]) {
    let at: Vec<&str> = rows
        .iter()
        .map(|a| a["created_at"].as_str().unwrap())
        .collect();
    assert!(at.windows(2).all(|w| w[0] <= w[1]), "{at:?}");
}

/// The text of the `<span class="count">` of the tab labelled `label`, None
/// when the tab shows no number.
fn tab_count(page: &str, label: &str) -> Option<String> {
    let nav = &page[page.find("<nav class=\"tabs\"").unwrap()..];
    let nav = &nav[..nav.find("</nav>").unwrap()];
    let tab = nav
        .split("<a ")
        .find(|t| t.contains(&format!(">{label}")))
        .unwrap_or_else(|| panic!("no tab {label} in {nav}"));
    let tab = &tab[..tab.find("</a>").unwrap()];
    tab.split("<span class=\"count\">")
        .nth(1)
        .map(|c| c.split('<').next().unwrap().to_owned())
}

#[tokio::test]
async fn counts_stop_at_a_thousand_and_a_broad_search_is_listed_not_counted() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    // 2,001 Actions match "deploy": more than the search counts (2,000),
    // and more than the tabs count (1,000). One matches "rotate".
    let bodies: Vec<_> = (0..2001)
        .map(|i| {
            let mut b = two_options(&format!("Deploy build {i}"));
            b["priority"] = json!(if i == 7 { "urgent" } else { "normal" });
            b
        })
        .chain([two_options("Rotate the signing keys")])
        .collect();
    for chunk in bodies.chunks(32) {
        futures::future::join_all(chunk.iter().map(|b| app.create_action(b.clone()))).await;
    }

    // Unfiltered: the tabs and the nav stop at 1,000; the API says 1000.
    let boot: serde_json::Value = admin.get("/v1/bootstrap", 200).await;
    assert_eq!(
        boot["data"]["inbox_counts"],
        json!({"open": 1000, "snoozed": 0, "resolved": 0, "cancelled": 0, "expired": 0})
    );
    let browser = app.browser(admin.person()).await;
    let page = browser.page("/app").await;
    assert_eq!(tab_count(&page, "Open").as_deref(), Some("1,000+"));
    assert_eq!(tab_count(&page, "Resolved").as_deref(), Some("0"));
    assert!(page.contains(r#"id="nav-open-count" title="Open Actions">1,000+<"#));

    // A broad search is listed in inbox order, its tabs without numbers.
    let found: serde_json::Value = admin
        .get("/v1/me/actions?search=deploy&limit=50", 200)
        .await;
    assert_eq!(titles(&found).len(), 50);
    assert_eq!(titles(&found)[0], "Deploy build 7", "the urgent one first");
    assert_oldest_first(&found["data"].as_array().unwrap()[1..]);
    assert_eq!(found["has_more"], true);
    let page = browser.page("/app?q=deploy").await;
    assert!(page.contains("Deploy build 7"));
    assert_eq!(tab_count(&page, "Open"), None);
    assert_eq!(tab_count(&page, "Resolved"), None);
    // … and says why, and how to see them.
    assert!(page.contains(r#"id="inbox-uncounted""#), "{page}");
    assert!(page.contains(r#"id="nav-open-count" title="Open Actions">1,000+<"#));
    // Both environments merged (three test Actions, the newest); and newest
    // first, where the one Action that does not match ("Rotate…", in the
    // last batch of 18 live creates) comes among the first 18 of the walk
    // and is passed over.
    for i in 0..3 {
        app.create_action_with(
            &app.test_key(),
            two_options(&format!("Deploy test build {i}")),
        )
        .await;
    }
    let found: serde_json::Value = admin
        .get("/v1/me/actions?search=deploy&environment=all&limit=50", 200)
        .await;
    assert_eq!(titles(&found).len(), 50);
    assert_eq!(titles(&found)[0], "Deploy build 7", "the urgent one first");
    let found: serde_json::Value = admin
        .get(
            "/v1/me/actions?search=deploy&environment=all&status=all&limit=3",
            200,
        )
        .await;
    let mut newest = titles(&found);
    newest.sort();
    assert_eq!(
        newest,
        [
            "Deploy test build 0",
            "Deploy test build 1",
            "Deploy test build 2"
        ]
    );
    let found: serde_json::Value = admin
        .get("/v1/me/actions?search=deploy&status=all&limit=20", 200)
        .await;
    assert_eq!(titles(&found).len(), 20);
    assert!(
        titles(&found)
            .iter()
            .all(|t| t.starts_with("Deploy build "))
    );
    assert_eq!(found["has_more"], true);
    let all: serde_json::Value = admin.get("/v1/me/actions?status=all&limit=18", 200).await;
    assert!(titles(&all).contains(&"Rotate the signing keys".to_owned()));

    // A narrow one is read match by match, in the same order, and counted.
    // "build 7" matches build 7, 70-79 and 700-799 (each word a prefix).
    let found: serde_json::Value = admin
        .get("/v1/me/actions?search=build+7&limit=200", 200)
        .await;
    let listed = titles(&found);
    assert_eq!(listed.len(), 111);
    assert_eq!(found["has_more"], false);
    assert_eq!(listed[0], "Deploy build 7", "the urgent one first");
    assert!(listed[1..].iter().all(|t| t.starts_with("Deploy build 7")));
    assert_oldest_first(&found["data"].as_array().unwrap()[1..]);
    let page = browser.page("/app?q=rotate").await;
    assert_eq!(tab_count(&page, "Open").as_deref(), Some("1"));
    assert_eq!(tab_count(&page, "Resolved").as_deref(), Some("0"));

    // Whether a search is counted depends on the matches of the person's
    // workspace alone: the owner of another workspace, whose one Action
    // matches "deploy", sees it counted whatever the 2,001 here (they
    // could otherwise learn what this workspace's titles hold by making
    // matching Actions of their own until the counts vanish).
    let outsider = app.outsider();
    let made: serde_json::Value = outsider
        .post("/v1/sources", json!({"name": "Elsewhere bot"}), 201)
        .await;
    app.create_action_with(
        made["secrets"]["live_key"].as_str().unwrap(),
        two_options("Deploy elsewhere"),
    )
    .await;
    let theirs = app.browser(outsider.person()).await;
    let page = theirs.page("/app?q=deploy").await;
    assert!(page.contains("Deploy elsewhere"), "{page}");
    assert!(!page.contains("Deploy build"));
    assert_eq!(tab_count(&page, "Open").as_deref(), Some("1"));
    assert_eq!(tab_count(&page, "Resolved").as_deref(), Some("0"));
    // Here, still broad (2,001 of this workspace's own match).
    let page = browser.page("/app?q=deploy").await;
    assert_eq!(tab_count(&page, "Open"), None);

    // The writer indexed each title once, per batch of concurrent creates
    // (not per row): every one is found by its own number, and FTS5's own
    // check finds the index and the table in agreement.
    for n in ["1234", "2000", "0"] {
        let found: serde_json::Value = admin
            .get(&format!("/v1/me/actions?search=build+{n}&limit=200"), 200)
            .await;
        assert!(titles(&found).contains(&format!("Deploy build {n}")), "{n}");
    }
    let db = rusqlite::Connection::open(app.data_dir().join("hds.db")).unwrap();
    db.execute(
        "INSERT INTO actions_fts(actions_fts, rank) VALUES ('integrity-check', 1)",
        [],
    )
    .unwrap();
    let indexed: i64 = db
        .query_row(
            "SELECT count(*) FROM actions_fts WHERE actions_fts MATCH 'deploy OR rotate'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(indexed, 2006, "each title indexed exactly once");

    // Paged with `starting_after`, a broad search (its matches tested on
    // the index walk) lists each of its 2,004 matches once, in order.
    // So does the open list of both environments (two arms merged).
    for query in [
        "search=deploy&environment=all&status=all",
        "search=deploy&environment=all",
    ] {
        let paged = pages(&admin, query, 200).await;
        let distinct: std::collections::HashSet<&String> = paged.iter().collect();
        assert_eq!((paged.len(), distinct.len()), (2004, 2004), "{query}");
        assert_eq!(paged[..200], ids(&admin, query).await, "{query}");
    }

    // The page shows 100 and links the next 100, which follow without a
    // repeat and link back to the first.
    let first = browser.page("/app").await;
    let next = link(&first, "next-page").expect("a next page");
    let shown = row_ids(&first);
    assert_eq!(shown.len(), 100);
    assert_eq!(
        next,
        format!("/app?status=open&starting_after={}", shown[99])
    );
    assert!(!first.contains(">First page<"));
    let second = browser.page(&next).await;
    let more = row_ids(&second);
    assert_eq!(more.len(), 100);
    let open = ids(&admin, "").await;
    assert_eq!([shown, more].concat(), open[..200]);
    assert_eq!(
        link(&second, "first-page").as_deref(),
        Some("/app?status=open")
    );
    // A batch decided on a later page comes back to that page.
    let picked: serde_json::Value = admin.get(&format!("/v1/actions/{}", open[150]), 200).await;
    let picked = &picked["data"];
    let base = browser.url("");
    let r = browser
        .post_form(
            "/app/inbox/decide",
            Some(base.trim_end_matches('/')),
            &[
                ("_csrf", browser.csrf()),
                ("back", &format!("status=open&starting_after={}", open[99])),
                (
                    "pick",
                    &format!(
                        "{} {} {}",
                        open[150],
                        picked["action_version"],
                        picked["fingerprint"].as_str().unwrap()
                    ),
                ),
                ("option_id", "approve"),
            ],
        )
        .await;
    assert_eq!(r.status(), 303);
    assert_eq!(
        r.headers()["location"],
        format!("/app?status=open&starting_after={}&batch=done", open[99]).as_str()
    );
    // A later page that cannot be read still links the first.
    let stale = browser
        .page("/app?status=resolved&starting_after=act_01M8CHV7XBSAWWWE5GRKFH08J7")
        .await;
    assert!(
        stale.contains("is not an Action of this workspace that you can see"),
        "{stale}"
    );
    assert_eq!(
        link(&stale, "first-page").as_deref(),
        Some("/app?status=resolved")
    );
    // A filter value that is not one is said on the inbox page, whichever
    // filter it is (the environment too), not on an error page.
    for (query, words) in [
        ("environment=nope", "environment"),
        ("priority=zzz", "priority"),
        ("status=bogus", "status"),
    ] {
        let page = browser.page(&format!("/app?{query}")).await;
        assert!(page.contains("<h1>Inbox</h1>"), "{query}: {page}");
        assert!(
            page.contains(&format!("`{}`", query.split('=').nth(1).unwrap())),
            "{query}: {page}"
        );
        assert!(page.contains(words), "{query}");
    }
    // The live refresh of a later page refreshes that page.
    assert!(
        second.contains(&format!(
            r#"data-rows-url="/app/inbox/rows?status=open&#38;starting_after={}""#,
            open[99]
        )),
        "{second}"
    );
}

/// Every id of one query's list, in a single page (at most 200).
async fn ids(who: &crate::helpers::Actor, query: &str) -> Vec<String> {
    let all: serde_json::Value = who
        .get(&format!("/v1/me/actions?{query}&limit=200"), 200)
        .await;
    all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Every id of one query's list, read `limit` at a time with
/// `starting_after`, checking `has_more` on the way.
async fn pages(who: &crate::helpers::Actor, query: &str, limit: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for _ in 0..100 {
        let after = out
            .last()
            .map(|id| format!("&starting_after={id}"))
            .unwrap_or_default();
        let page: serde_json::Value = who
            .get(&format!("/v1/me/actions?{query}&limit={limit}{after}"), 200)
            .await;
        let got = page["data"].as_array().unwrap();
        out.extend(got.iter().map(|a| a["id"].as_str().unwrap().to_owned()));
        if page["has_more"] == false {
            return out;
        }
        assert_eq!(
            got.len(),
            limit,
            "{query}: a page with more after it is full"
        );
    }
    panic!("{query}: more than 100 pages");
}

/// The href of the link with `id`, unescaped.
fn link(page: &str, id: &str) -> Option<String> {
    let at = page.find(&format!(r#"id="{id}" href=""#))? + id.len() + 12;
    Some(page[at..at + page[at..].find('"')?].replace("&#38;", "&"))
}

/// The Action ids of the inbox rows, in order.
fn row_ids(page: &str) -> Vec<String> {
    page.split(r#"<a class="row-link" href="/app/actions/"#)
        .skip(1)
        .map(|r| r[..r.find('"').unwrap()].to_owned())
        .collect()
}

/// `starting_after` reads each list, in every order, a page at a time with
/// no repeat and no gap, ties included (Actions created in the same
/// millisecond); the Action a page ends with may leave the list before the
/// next page is read. A cursor that is not an Action the caller may see is
/// refused alike, whether it exists or not.
#[tokio::test]
async fn starting_after_pages_every_order_without_repeats_or_gaps() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    let reviewer = app.member(hds::domain::access::Role::Reviewer);
    let prios = [
        "urgent", "low", "normal", "normal", "high", "normal", "urgent", "low", "normal", "high",
        "normal",
    ];
    let mut made = Vec::new();
    for (i, p) in prios.iter().enumerate() {
        let mut b = two_options(&format!("Paged {i}"));
        b["priority"] = json!(p);
        if i % 3 == 0 {
            b["assignee_user_id"] = app.creds["user_id"].clone();
        }
        made.push(app.create_action(b).await);
    }
    for (i, p) in prios.iter().take(3).enumerate() {
        let mut b = two_options(&format!("Paged test {i}"));
        b["priority"] = json!(p);
        app.create_action_with(&app.test_key(), b).await;
    }
    let mut hidden = two_options("Paged but restricted");
    hidden["visibility"] = json!("restricted");
    hidden["reviewer_emails"] = json!(["admin@example.com"]);
    let hidden = app.create_action(hidden).await;
    // Ties on every order's values: the first eight in one millisecond.
    app.db()
        .execute(
            "UPDATE actions SET created_at = '2026-11-26T12:00:00.000Z'
             WHERE rowid IN (SELECT rowid FROM actions ORDER BY rowid LIMIT 8)",
            [],
        )
        .unwrap();
    for a in &made[8..10] {
        app.decide(a, json!({"option_id": "approve"})).await.ok(200);
    }
    let until =
        hds::domain::time::format(app.state.services.clock.now() + time::Duration::hours(1));
    for a in &made[5..8] {
        admin
            .post::<serde_json::Value>(
                &format!("/v1/actions/{}/snooze", a["id"].as_str().unwrap()),
                json!({"until": until}),
                200,
            )
            .await;
    }

    for query in [
        "",
        "environment=all",
        "status=resolved",
        "status=all",
        "status=all&environment=all",
        "status=snoozed",
        "scope=mine",
        "scope=mine&environment=all",
        "scope=unassigned&environment=all",
        "priority=normal",
        "search=paged",
        "search=paged&environment=all&status=all",
    ] {
        let whole = ids(&admin, query).await;
        assert!(!whole.is_empty(), "{query}");
        for limit in [1, 2, 3] {
            assert_eq!(
                pages(&admin, query, limit).await,
                whole,
                "{query}, {limit} a page"
            );
        }
    }
    // A member who is no reviewer of the restricted one pages without it.
    let seen = ids(&reviewer, "status=all").await;
    assert!(!seen.contains(&hidden["id"].as_str().unwrap().to_owned()));
    assert_eq!(pages(&reviewer, "status=all", 2).await, seen);

    // The last Action of a page is decided before the next page is read:
    // the next page goes on from where it sorts, repeating nothing.
    let open = ids(&admin, "").await;
    let first: serde_json::Value = admin.get("/v1/me/actions?limit=3", 200).await;
    let last = first["data"][2].clone();
    assert_eq!(last["id"], json!(open[2]));
    app.decide(&last, json!({"option_id": "approve"}))
        .await
        .ok(200);
    let next: serde_json::Value = admin
        .get(
            &format!("/v1/me/actions?limit=3&starting_after={}", open[2]),
            200,
        )
        .await;
    let next: Vec<&str> = next["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(next, open[3..6]);

    // Refused, with the field named: not an id; no such Action; one the
    // caller may not see (the same words as for none); another workspace's
    // would be the same.
    // An empty one is the first page, as on runs and mails.
    let first: serde_json::Value = admin.get("/v1/me/actions?starting_after=", 200).await;
    let whole: serde_json::Value = admin.get("/v1/me/actions", 200).await;
    assert_eq!(first, whole);
    let e = admin
        .get_err(
            "/v1/me/actions?starting_after=act_nope",
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "starting_after");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("act_ and 26 upper-case letters and digits"),
        "{e}"
    );
    let absent = "act_01M8CHV7XBSAWWWE5GRKFH08J7";
    let hidden_id = hidden["id"].as_str().unwrap();
    for (who, id) in [(&admin, absent), (&reviewer, hidden_id)] {
        let e = who
            .get_err(
                &format!("/v1/me/actions?status=all&starting_after={id}"),
                422,
                "VALIDATION_ERROR",
            )
            .await;
        assert_eq!(e["details"]["errors"][0]["field"], "starting_after");
        assert_eq!(
            e["details"]["errors"][0]["message"],
            format!(
                "{id} is not an Action of this workspace that you can see; give the id of the last Action of the page before"
            )
        );
    }
    let after_hidden: serde_json::Value = admin
        .get(
            &format!("/v1/me/actions?status=all&starting_after={hidden_id}"),
            200,
        )
        .await;
    assert!(after_hidden["data"].is_array());
}
