//! Sessions (SPEC §4.2, §5; DESIGN §8): one-time links, the `service_session`
//! cookie, bearer sessions, logout, CSRF and the bootstrap data.

use reqwest::Method;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use serde_json::{Value, json};

use crate::helpers::{TestApp, two_options};

/// A browser-like client: keeps cookies, does not follow redirects.
fn browser() -> reqwest::Client {
    crate::helpers::client_builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Signs in through a one-time link the way a browser does (confirmation
/// page, then its POST); returns the `service_session` cookie pair.
async fn sign_in_with_link(app: &TestApp, client: &reqwest::Client, link: &str) -> String {
    let page = client.get(link).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(
        html.contains("<form"),
        "confirmation page has a form: {html}"
    );
    let done = client
        .post(link)
        .header("origin", &app.base)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("")
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 303, "{:?}", done.text().await);
    assert_eq!(done.headers()[LOCATION], "/app");
    let cookie = done
        .headers()
        .get_all(SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|c| c.starts_with("service_session="))
        .expect("a service_session cookie");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Lax"), "{cookie}");
    // http base URL: Secure would stop the browser from sending it back.
    assert!(!cookie.contains("Secure"), "{cookie}");
    cookie.split(';').next().unwrap().to_owned()
}

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
    let token = app.user_token();
    app.create_action(two_options("Ship it?")).await;

    let s = app.get("/v1/auth/session", &token).await;
    let d = &s.ok(200)["data"];
    assert_eq!(d["auth"], "bearer");
    assert_eq!(d["kind"], "api");
    assert_eq!(d["user"]["email"], "admin@example.com");
    assert_eq!(d["user"]["workspaces"][0]["role"], "owner");
    assert!(
        d.get("csrf_token").is_none(),
        "bearer callers need no CSRF token"
    );

    let b = app.get("/v1/bootstrap", &token).await;
    let b = &b.ok(200)["data"];
    assert_eq!(b["user"]["email"], "admin@example.com");
    assert_eq!(b["inbox_counts"]["open"], 1);
    assert_eq!(b["active_workspace"]["id"], app.creds["workspace_id"]);
    assert_eq!(b["signin_methods"][0]["id"], "link");

    let out = app.post("/v1/auth/logout", &token, json!({})).await;
    assert_eq!(out.ok(200)["data"]["revoked"], true);
    app.get("/v1/me/actions", &token)
        .await
        .error(401, "INVALID_API_KEY");
    app.get("/v1/auth/session", &token)
        .await
        .error(401, "INVALID_API_KEY");
}

#[tokio::test]
async fn a_one_time_link_opens_a_cookie_session_once() {
    let app = TestApp::spawn().await;
    let link = hds::service::signin::create_link(&app.state.services, "admin@example.com")
        .await
        .unwrap();
    assert!(
        link.starts_with(&format!("{}/app/signin/link/", app.base)),
        "{link}"
    );
    let client = browser();
    sign_in_with_link(&app, &client, &link).await;

    let (status, s) = session_of(&app, &client).await;
    assert_eq!(status, 200, "{s}");
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
    let inbox = client
        .get(format!("{}/v1/me/actions", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(inbox.status(), 200);

    // The link is spent: a second browser cannot use it.
    let other = browser();
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
    let link = hds::service::signin::create_link(&app.state.services, "admin@example.com")
        .await
        .unwrap();
    let client = browser();
    let cookie = sign_in_with_link(&app, &client, &link).await;
    let (_, s) = session_of(&app, &client).await;
    let csrf = s["data"]["csrf_token"].as_str().unwrap().to_owned();
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
    let r = logout(vec![
        ("origin", "https://evil.example".into()),
        ("x-csrf-token", csrf.clone()),
    ])
    .await
    .unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(session_of(&app, &client).await.0, 200);

    let r = logout(vec![("origin", app.base.clone()), ("x-csrf-token", csrf)])
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(session_of(&app, &client).await.0, 401);
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

#[tokio::test]
async fn a_cookie_post_from_another_origin_decides_nothing() {
    let app = TestApp::spawn().await;
    let action = app
        .create_action(two_options("Rotate the database password?"))
        .await;
    let id = action["id"].as_str().unwrap();
    let link = hds::service::signin::create_link(&app.state.services, "admin@example.com")
        .await
        .unwrap();
    let client = browser();
    sign_in_with_link(&app, &client, &link).await;
    let (_, s) = session_of(&app, &client).await;
    let csrf = s["data"]["csrf_token"].as_str().unwrap().to_owned();
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
    let still = app
        .get(&format!("/v1/actions/{id}"), &app.user_token())
        .await;
    assert_eq!(still.ok(200)["data"]["status"], "open");

    let r = decide(&app.base, "same-origin", &csrf).await.unwrap();
    assert_eq!(r.status(), 200);
    let done = app
        .get(&format!("/v1/actions/{id}"), &app.user_token())
        .await;
    assert_eq!(done.ok(200)["data"]["status"], "resolved");
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
        base_url: app.base.clone(),
    };
    let err = hds::cli::users::link(&args("nobody@example.com", None)).unwrap_err();
    assert!(err.to_string().contains("--create-as"), "{err}");

    let link = hds::cli::users::link(&args("rita@example.com", Some("reviewer"))).unwrap();
    let client = browser();
    sign_in_with_link(&app, &client, &link).await;
    let (_, s) = session_of(&app, &client).await;
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
    let client = browser();
    sign_in_with_link(&app, &client, &format!("{}{path}", app.base)).await;
    assert_eq!(session_of(&app, &client).await.0, 200);
}

#[tokio::test]
async fn pages_carry_the_security_headers_and_browsers_land_on_the_dashboard() {
    let app = TestApp::spawn().await;
    let r = browser()
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

    // Signed out, a page sends the browser to sign in and back.
    let r = browser()
        .get(format!("{}/app/sources", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()[LOCATION], "/app/signin?next=%2Fapp%2Fsources");

    let r = browser()
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
