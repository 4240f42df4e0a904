//! Sessions (guide: "Sign-in and sessions"): one-time links, the `service_session`
//! cookie, bearer sessions, logout, CSRF and the bootstrap data.

use reqwest::Method;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use serde_json::{Value, json};

use crate::helpers::{TestApp, browser_client, two_options};

/// The caller's session as `client` sees it: (status, body).
async fn session_of(app: &TestApp, client: &reqwest::Client) -> (u16, Value) {
    let r = client
        .get(format!("{}/v1/auth/session", app.base))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

#[tokio::test]
async fn sign_in_methods_list_the_configured_providers_and_links() {
    let app = TestApp::spawn_with(|c| {
        c.auth.providers.insert(
            "google".into(),
            toml::from_str("kind = \"google\"\nclient_id = \"web-client\"").unwrap(),
        );
    })
    .await;
    let r = app
        .call(Method::GET, "/v1/auth/providers", None, None, &[])
        .await;
    let data = r.ok(200)["data"].as_array().unwrap().clone();
    assert_eq!(data.len(), 2, "{data:?}");
    assert_eq!(data[0]["id"], "google");
    assert_eq!(data[0]["kind"], "google");
    assert_eq!(data[0]["name"], "Google");
    assert_eq!(data[0]["start_url"], "/v1/auth/google/start");
    assert_eq!(
        data[0]["native"]["challenge_url"],
        "/v1/auth/google/native/challenge"
    );
    assert_eq!(data[1]["id"], "link");
    // The public list names no secret.
    assert!(!r.body.to_string().contains("client_secret"));
}

#[tokio::test]
async fn a_bearer_session_reads_itself_and_logout_revokes_it() {
    let app = TestApp::spawn().await;
    let admin = app.admin();
    app.create_action(two_options("Ship it?")).await;

    let s: Value = admin.get("/v1/auth/session", 200).await;
    let d = &s["data"];
    assert_eq!(d["auth"], "bearer");
    assert_eq!(d["kind"], "api");
    assert_eq!(d["user"]["email"], "admin@example.com");
    assert_eq!(d["user"]["workspaces"][0]["role"], "owner");
    assert!(
        d.get("csrf_token").is_none(),
        "bearer callers need no CSRF token"
    );

    let b: Value = admin.get("/v1/bootstrap", 200).await;
    let b = &b["data"];
    assert_eq!(b["user"]["email"], "admin@example.com");
    assert_eq!(b["inbox_counts"]["open"], 1);
    assert_eq!(b["active_workspace"]["id"], app.creds["workspace_id"]);
    assert_eq!(b["signin_methods"][0]["id"], "link");

    let out: Value = admin.post("/v1/auth/logout", json!({}), 200).await;
    assert_eq!(out["data"]["revoked"], true);
    admin
        .get_err("/v1/me/actions", 401, "INVALID_API_KEY")
        .await;
    admin
        .get_err("/v1/auth/session", 401, "INVALID_API_KEY")
        .await;
}

#[tokio::test]
async fn a_one_time_link_opens_a_cookie_session_once() {
    let app = TestApp::spawn().await;
    let link = app.signin_link("admin@example.com").await;
    assert!(
        link.starts_with(&format!("{}/app/signin/link/", app.base)),
        "{link}"
    );
    let browser = app.sign_in_with_link(&link).await;

    let s: Value = browser.get("/v1/auth/session", 200).await;
    assert_eq!(s["data"]["auth"], "cookie");
    assert_eq!(s["data"]["kind"], "session");
    assert_eq!(s["data"]["method"], "link");
    assert!(s["data"]["id"].as_str().unwrap().starts_with("ses_"));
    assert!(
        s["data"]["csrf_token"]
            .as_str()
            .is_some_and(|t| t.len() >= 32)
    );
    // Cookie sessions read every user route, the inbox included.
    let _: Value = browser.get("/v1/me/actions", 200).await;

    // The link is spent: a second browser cannot use it.
    let other = browser_client();
    let again = other
        .post(&link)
        .header("origin", &app.base)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("")
        .send()
        .await
        .unwrap();
    assert_ne!(again.status(), 303);
    assert!(
        again.headers().get_all(SET_COOKIE).iter().all(|c| !c
            .to_str()
            .unwrap()
            .starts_with("service_session=")
            || c.to_str().unwrap().contains("Max-Age=0")),
        "no session from a spent link"
    );
    assert_eq!(session_of(&app, &other).await.0, 401);
}

#[tokio::test]
async fn logout_ends_the_cookie_and_needs_the_csrf_token() {
    let app = TestApp::spawn().await;
    let browser = app.browser(app.admin().person()).await;
    let (client, cookie) = (browser.http(), browser.cookie.clone().unwrap());
    let csrf = browser.csrf().to_owned();
    let logout = |headers: Vec<(&'static str, String)>| {
        let mut req = client.post(format!("{}/v1/auth/logout", app.base));
        for (k, v) in headers {
            req = req.header(k, v);
        }
        req.send()
    };

    // Without the token, or from another site with it: refused, still signed in.
    let r = logout(vec![("origin", app.base.clone())]).await.unwrap();
    assert_eq!(r.status(), 403);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "CSRF_FAILED");
    // A program, not a form: told which header to send.
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("X-CSRF-Token"), "{message}");
    assert!(!message.contains("form"), "{message}");
    let r = logout(vec![
        ("origin", "https://evil.example".into()),
        ("x-csrf-token", csrf.clone()),
    ])
    .await
    .unwrap();
    assert_eq!(r.status(), 403);
    // An opaque origin gets no advice that cannot work.
    let r = logout(vec![
        ("origin", "null".into()),
        ("x-csrf-token", csrf.clone()),
    ])
    .await
    .unwrap();
    assert_eq!(r.status(), 403);
    let body: Value = r.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(!message.contains("--base-url null"), "{message}");
    assert!(message.contains(&app.base), "{message}");
    assert_eq!(session_of(&app, client).await.0, 200);

    let r = logout(vec![("origin", app.base.clone()), ("x-csrf-token", csrf)])
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(session_of(&app, client).await.0, 401);
    // A copy of the old cookie (kept by an attacker, say) is dead too.
    let replay = crate::helpers::client_builder()
        .build()
        .unwrap()
        .get(format!("{}/v1/auth/session", app.base))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(replay.status(), 401);
}

/// Deleting the account over the API with the cookie ends the browser's
/// session as logout does: the cookie is expired in the answer.
#[tokio::test]
async fn deleting_the_account_with_the_cookie_expires_it() {
    let app = TestApp::spawn().await;
    let person = app
        .member(hds::domain::access::Role::Reviewer)
        .person()
        .clone();
    let browser = app.browser(&person).await;
    let client = browser.http();
    let r = client
        .delete(format!("{}/v1/account", app.base))
        .header("origin", &app.base)
        .header("x-csrf-token", browser.csrf())
        .json(&serde_json::json!({"confirm": person.email}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let expired = r.headers().get_all(SET_COOKIE).iter().any(|c| {
        let c = c.to_str().unwrap();
        c.starts_with("service_session=") && c.contains("Max-Age=0")
    });
    assert!(expired, "{:?}", r.headers());
    assert_eq!(session_of(&app, client).await.0, 401);
}

#[tokio::test]
async fn a_cookie_post_from_another_origin_decides_nothing() {
    let app = TestApp::spawn().await;
    let action = app
        .create_action(two_options("Rotate the database password?"))
        .await;
    let id = action["id"].as_str().unwrap();
    let admin = app.admin();
    let browser = app.browser(admin.person()).await;
    let (client, csrf) = (browser.http(), browser.csrf().to_owned());
    let body = json!({
        "action_version": action["action_version"],
        "fingerprint": action["fingerprint"],
        "option_id": "approve",
    });
    let decide = |origin: &str, site: &str, token: &str| {
        client
            .post(format!("{}/v1/actions/{id}/decision", app.base))
            .header("content-type", "application/json")
            .header("origin", origin)
            .header("sec-fetch-site", site)
            .header("x-csrf-token", token)
            .body(body.to_string())
            .send()
    };

    // A page on another site, even one that somehow learnt the token.
    let r = decide("https://evil.example", "cross-site", &csrf)
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["error"]["code"], "CSRF_FAILED");
    // Same origin without the session's token.
    let r = decide(&app.base, "same-origin", "forged").await.unwrap();
    assert_eq!(r.status(), 403);
    let still: Value = admin.get(&format!("/v1/actions/{id}"), 200).await;
    assert_eq!(still["data"]["status"], "open");

    let r = decide(&app.base, "same-origin", &csrf).await.unwrap();
    assert_eq!(r.status(), 200);
    let done: Value = admin.get(&format!("/v1/actions/{id}"), 200).await;
    assert_eq!(done["data"]["status"], "resolved");
}

#[tokio::test]
async fn users_link_works_while_the_server_runs_and_can_add_a_reviewer() {
    let app = TestApp::spawn().await;
    let args = |email: &str, create_as: Option<&str>| hds::cli::users::LinkArgs {
        email: email.into(),
        create_as: create_as.map(str::to_owned),
        dir: hds::cli::DataDir {
            data_dir: app.data_dir(),
        },
        base_url: Some(app.base.clone()),
    };
    let err = hds::cli::users::link(&args("nobody@example.com", None)).unwrap_err();
    assert!(err.to_string().contains("--create-as"), "{err}");

    let link = hds::cli::users::link(&args("rita@example.com", Some("reviewer"))).unwrap();
    let rita = app.sign_in_with_link(&link).await;
    let s: Value = rita.get("/v1/auth/session", 200).await;
    assert_eq!(s["data"]["user"]["email"], "rita@example.com");
    assert_eq!(s["data"]["user"]["workspaces"][0]["role"], "reviewer");
}

#[tokio::test]
async fn init_prints_a_working_signin_link() {
    let app = TestApp::spawn().await;
    // TestApp's init used the default base URL; the path is what matters.
    let url = app.creds["signin_url"].as_str().unwrap();
    let path = url.strip_prefix("http://127.0.0.1:8080").unwrap();
    assert!(path.starts_with("/app/signin/link/"), "{url}");
    let browser = app.sign_in_with_link(&format!("{}{path}", app.base)).await;
    let _: Value = browser.get("/v1/auth/session", 200).await;
}

#[tokio::test]
async fn pages_carry_the_security_headers_and_browsers_land_on_the_dashboard() {
    let app = TestApp::spawn().await;
    let r = browser_client()
        .get(format!("{}/app/signin", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let h = r.headers();
    let csp = h["content-security-policy"].to_str().unwrap();
    for part in [
        "script-src 'self'",
        "frame-ancestors 'none'",
        "form-action 'self'",
    ] {
        assert!(csp.contains(part), "{csp}");
    }
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(h["x-content-type-options"], "nosniff");
    // Pages post forms to us, so they send their origin to us (and only to us).
    assert_eq!(h["referrer-policy"], "same-origin");
    assert_eq!(h["x-frame-options"], "DENY");
    assert!(
        h.get("strict-transport-security").is_none(),
        "no HSTS with an http base URL"
    );
    // With an https base URL (a TLS proxy in front), every answer asks
    // browsers for https only.
    let tls = TestApp::spawn_with(|c| c.base_url = "https://hds.example.test".into()).await;
    for path in ["/app/signin", "/v1/health"] {
        let r = browser_client()
            .get(format!("{}{path}", tls.base))
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.headers()["strict-transport-security"],
            "max-age=31536000",
            "{path}"
        );
    }

    // Signed out, a page sends the browser to sign in and back.
    let r = browser_client()
        .get(format!("{}/app/sources", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()[LOCATION], "/app/signin?next=%2Fapp%2Fsources");

    let r = browser_client()
        .get(format!("{}/", app.base))
        .header("accept", "text/html,application/xhtml+xml")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()[LOCATION], "/app");
    // API clients still get JSON.
    let j = app.call(Method::GET, "/", None, None, &[]).await;
    assert_eq!(j.ok(200)["name"], "hds");
    assert_eq!(j.headers["referrer-policy"], "no-referrer");
}

#[tokio::test]
async fn auth_codes_and_boundaries() {
    let app = TestApp::spawn().await;
    let nobody = app.anonymous();
    nobody
        .post_err("/v1/actions", two_options("x"), 401, "AUTH_REQUIRED")
        .await;
    nobody.get_err("/v1/me/actions", 401, "AUTH_REQUIRED").await;
    for forged in ["svc_live_notakey", "something-else"] {
        app.bearer(forged)
            .post_err("/v1/actions", two_options("x"), 401, "INVALID_API_KEY")
            .await;
    }
    // A credential of one boundary is refused on the other.
    let e = app
        .admin()
        .post_err("/v1/actions", two_options("x"), 401, "INVALID_API_KEY")
        .await;
    assert!(e["message"].as_str().unwrap().contains("Source key"), "{e}");
    let source = app.source();
    let e = source
        .get_err("/v1/me/actions", 401, "INVALID_API_KEY")
        .await;
    assert!(e["message"].as_str().unwrap().contains("user token"), "{e}");
    let a = app.create_action(two_options("x")).await;
    let decision =
        json!({"action_version": 1, "fingerprint": a["fingerprint"], "option_id": "approve"});
    source
        .post_err(
            &format!("/v1/actions/{}/decision", a["id"].as_str().unwrap()),
            decision,
            401,
            "INVALID_API_KEY",
        )
        .await;
    app.bearer("svc_usr_unknown")
        .get_err("/v1/me/actions", 401, "INVALID_API_KEY")
        .await;
    // A route open to both says so of a credential of neither.
    let e = app
        .bearer("whsec_abc")
        .get_err(
            &format!("/v1/actions/{}", a["id"].as_str().unwrap()),
            401,
            "INVALID_API_KEY",
        )
        .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("neither a Source key"),
        "{e}"
    );
}

/// Opens `link` in `client` as a browser does (its page, then its form POST).
async fn redeem(app: &TestApp, client: &reqwest::Client, link: &str) {
    assert_eq!(client.get(link).send().await.unwrap().status(), 200);
    let done = client
        .post(link)
        .header("origin", &app.base)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("")
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 303);
}

/// A copy of the database (a backup) opens no browser session: the row is
/// keyed by the hash of the cookie value, never the value itself.
#[tokio::test]
async fn a_browser_session_is_stored_only_as_the_hash_of_its_cookie() {
    let app = TestApp::spawn().await;
    let browser = app.browser(&app.admin().person().clone()).await;
    let cookie = browser.cookie.clone().unwrap();
    let value = cookie.strip_prefix("service_session=").unwrap();
    let db = app.db();
    let count = |id: &str| -> i64 {
        db.query_row(
            "SELECT count(*) FROM web_sessions WHERE id = ?1",
            [id],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!(count(value), 0, "the cookie value is not stored");
    assert_eq!(count(&hds::store::sessions::stored_id(value)), 1);
    let stored: Vec<u8> = db
        .query_row("SELECT data FROM web_sessions", [], |r| r.get(0))
        .unwrap();
    assert!(!String::from_utf8_lossy(&stored).contains(value));
    // And the cookie still opens the session.
    let s: Value = browser.get("/v1/auth/session", 200).await;
    assert_eq!(s["data"]["auth"], "cookie");
}

/// Someone else signs in in the same browser: the session that browser held
/// is revoked, not left listed as live on its owner's account page.
#[tokio::test]
async fn signing_in_again_in_one_browser_revokes_the_session_it_held() {
    let app = TestApp::spawn().await;
    let other = app.member(hds::domain::access::Role::Reviewer);
    let client = browser_client();
    redeem(&app, &client, &app.signin_link("admin@example.com").await).await;
    let (status, first) = session_of(&app, &client).await;
    assert_eq!(status, 200);
    let first_id = first["data"]["id"].as_str().unwrap().to_owned();
    // The link's page names the account it signs in, and says that the
    // account signed in here now will be signed out; opening it uses nothing.
    let link = app.signin_link(&other.person().email).await;
    let page = page_text(&client, &link).await;
    assert!(
        page.contains(&format!(
            "It signs in <strong>{}</strong>",
            other.person().email
        )),
        "{page}"
    );
    let warning = page
        .split(r#"id="link-replaces""#)
        .nth(1)
        .and_then(|w| w.split("</div>").next())
        .unwrap_or_else(|| panic!("{page}"));
    assert!(
        warning.contains("signed in as <strong>admin@example.com</strong>"),
        "{warning}"
    );
    // The same account signed in already: nothing to warn of.
    let mine = app.signin_link("admin@example.com").await;
    let page = page_text(&client, &mine).await;
    assert!(!page.contains(r#"id="link-replaces""#), "{page}");
    let fresh = page_text(&browser_client(), &link).await;
    assert!(!fresh.contains(r#"id="link-replaces""#), "{fresh}");
    redeem(&app, &client, &link).await;
    let (_, second) = session_of(&app, &client).await;
    assert_eq!(
        second["data"]["user"]["email"],
        other.person().email.as_str()
    );
    let revoked: Option<String> = app
        .db()
        .query_row(
            "SELECT revoked_at FROM user_tokens WHERE id = ?1",
            [&first_id],
            |r| r.get(0),
        )
        .unwrap();
    assert!(revoked.is_some(), "{first_id} is revoked");
    // The admin's own export shows it ended too.
    let export: Value = app.admin().get("/v1/account/export", 200).await;
    let creds = &export["credentials"];
    let row = creds
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == first_id.as_str())
        .unwrap_or_else(|| panic!("{creds}"));
    assert!(!row["revoked_at"].is_null(), "{row}");
}

/// The body of a GET in this browser.
async fn page_text(client: &reqwest::Client, url: &str) -> String {
    client.get(url).send().await.unwrap().text().await.unwrap()
}
