//! Sign-in with identity providers against real issuers on loopback: npm
//! `oidc-provider` for the browser flow (this file), a jose-based minting
//! issuer for the native exchanges (`native`). Each test starts its own
//! issuer and hds server and talks HTTP to both.

pub mod idp;
mod native;

use hds::config::ProviderKind;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, browser_client as browser, run_node};
use idp::{Idp, location, provider};

/// What Chromium sends when it navigates.
const HTML: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

async fn start_op() -> (Idp, TestApp) {
    start_op_as("op", ProviderKind::Oidc, &[]).await
}

/// oidc-provider configured in hds as provider `name` of `kind`.
async fn start_op_as(name: &str, kind: ProviderKind, domains: &[&str]) -> (Idp, TestApp) {
    let redirect = format!("http://127.0.0.1/v1/auth/{name}/callback");
    let op = Idp::spawn("idp-oidc-provider.mjs", &["--redirect-uri", &redirect]).await;
    let (issuer, secret) = (
        op.issuer(),
        op.info["client_secret"].as_str().unwrap().to_owned(),
    );
    let (name, domains) = (name.to_owned(), domains.iter().map(|d| d.to_string()));
    let domains: Vec<String> = domains.collect();
    let app = TestApp::spawn_with(move |c| {
        let mut p = provider(kind, &issuer, "hds-test");
        p.client_secret = Some(secret);
        c.auth.providers.insert(name, p);
        c.auth.allowed_email_domains = domains;
    })
    .await;
    (op, app)
}

/// How the provider hands the browser back to hds.
enum Answer {
    /// A redirect to the callback (query string).
    Redirect(String),
    /// `response_mode=form_post`: a self-submitting form to the callback.
    FormPost(String, Vec<(String, String)>),
}

impl Answer {
    fn redirect(self) -> String {
        match self {
            Answer::Redirect(url) => url,
            Answer::FormPost(url, _) => panic!("expected a redirect, got a form post to {url}"),
        }
    }
}

/// The hidden inputs of oidc-provider's form_post page (values HTML-escaped).
fn hidden_inputs(page: &str) -> Vec<(String, String)> {
    let unescape = |v: &str| {
        v.replace("&#x2F;", "/")
            .replace("&#x3D;", "=")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&#x27;", "'")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
    };
    page.split(r#"<input type="hidden" name=""#)
        .skip(1)
        .map(|rest| {
            let (name, rest) = rest.split_once('"').unwrap();
            let value = rest
                .split_once(r#"value=""#)
                .unwrap()
                .1
                .split_once('"')
                .unwrap()
                .0;
            (name.to_owned(), unescape(value))
        })
        .collect()
}

/// Starts at hds, signs in at the provider's own login and consent pages as
/// `login`, and returns how the provider sends the browser back to hds.
async fn sign_in_at_provider(
    browser: &reqwest::Client,
    app: &TestApp,
    op: &Idp,
    provider: &str,
    login: &str,
    next: &str,
) -> Answer {
    let r = browser
        .get(format!("{}/v1/auth/{provider}/start?next={next}", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let binding = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap())
        .find(|v| v.starts_with("hds_oidc_binding="))
        .expect("start sets the binding cookie")
        .to_owned();
    for attribute in ["HttpOnly", "Path=/v1/auth/", "Max-Age=600", "SameSite=Lax"] {
        assert!(binding.contains(attribute), "{binding}");
    }
    let mut url = location(&r, &app.base);
    assert!(url.starts_with(&op.issuer()), "{url}");
    assert!(
        url.contains("code_challenge_method=S256") && url.contains("nonce="),
        "{url}"
    );
    // Bounded walk: authorize → login page → authorize → consent → callback.
    for _ in 0..12 {
        if url.starts_with(&app.base) {
            return Answer::Redirect(url);
        }
        let r = browser.get(&url).send().await.unwrap();
        if r.status().is_redirection() {
            url = location(&r, &op.issuer());
            continue;
        }
        assert_eq!(r.status(), StatusCode::OK, "{url}");
        let page = r.text().await.unwrap();
        let callback = format!("{}/v1/auth/{provider}/callback", app.base);
        if page.contains(&format!(r#"<form method="post" action="{callback}">"#)) {
            return Answer::FormPost(callback, hidden_inputs(&page));
        }
        let form: Vec<(&str, &str)> = if page.contains(r#"name="prompt" value="login""#) {
            vec![("prompt", "login"), ("login", login), ("password", "any")]
        } else {
            vec![("prompt", "consent")]
        };
        let r = browser.post(&url).form(&form).send().await.unwrap();
        assert!(r.status().is_redirection(), "{} on {url}", r.status());
        url = location(&r, &op.issuer());
    }
    panic!("the provider never sent the browser back to hds; last at {url}");
}

#[tokio::test]
async fn browser_signin_with_a_real_provider_ends_in_a_cookie_session() {
    let (op, app) = start_op().await;
    let browser = browser();
    let callback = sign_in_at_provider(
        &browser,
        &app,
        &op,
        "op",
        "admin",
        "/app/actions?status=open",
    )
    .await
    .redirect();
    assert!(
        callback.starts_with(&format!("{}/v1/auth/op/callback?", app.base)),
        "{callback}"
    );
    // The provider names itself (RFC 9207); hds checks and tolerates it.
    assert!(callback.contains("iss="), "{callback}");

    let r = browser.get(&callback).send().await.unwrap();
    assert_eq!(
        r.status(),
        StatusCode::SEE_OTHER,
        "{}",
        r.text().await.unwrap()
    );
    assert_eq!(r.headers()["location"], "/app/actions?status=open");
    assert!(
        r.headers()
            .get_all("set-cookie")
            .iter()
            .any(|v| v.to_str().unwrap().starts_with("service_session="))
    );
    // The binding cookie has served and is removed.
    assert!(
        r.headers().get_all("set-cookie").iter().any(|v| v
            .to_str()
            .unwrap()
            .starts_with("hds_oidc_binding=;")
            && v.to_str().unwrap().contains("Max-Age=0")),
        "{:?}",
        r.headers()
    );

    let r = browser
        .get(format!("{}/v1/auth/session", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let session: Value = r.json().await.unwrap();
    assert_eq!(session["data"]["user"]["email"], "admin@example.com");
    assert_eq!(session["data"]["method"], "op");
    assert_eq!(session["data"]["auth"], "cookie");

    // The callback is single use: replaying it finds no login to finish.
    let r = browser.get(&callback).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "CSRF_FAILED");
    let r = browser
        .get(&callback)
        .header("accept", HTML)
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["location"], "/app/signin?error=INVALID_STATE");

    // A claim hds does not read, in a type the standard does not give it
    // (`locale: 5`): the provider answered, so it is no outage (502) but a
    // token hds cannot read, named by where.
    let other = crate::helpers::browser_client();
    let callback = sign_in_at_provider(&other, &app, &op, "op", "odd-locale", "/app")
        .await
        .redirect();
    let r = other.get(&callback).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "INVALID_ID_TOKEN", "{body}");
    let m = body["error"]["message"].as_str().unwrap();
    assert!(m.contains("could not be read"), "{m}");
    assert!(m.contains("locale: invalid type"), "{m}");
}

#[tokio::test]
async fn a_callback_in_another_browser_or_from_another_issuer_is_refused() {
    let (op, app) = start_op().await;
    let victim = browser();
    let callback = sign_in_at_provider(&victim, &app, &op, "op", "admin", "/app")
        .await
        .redirect();
    // Login CSRF: the same answer delivered to a browser that did not start it.
    let r = browser().get(&callback).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "CSRF_FAILED");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("another browser"),
        "{body}"
    );
    // …which did not end the sign-in of the browser that started it: the
    // address of a callback seen elsewhere (a log, a Referer) is no way to
    // cancel someone's sign-in.
    let r = victim.get(&callback).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/app");

    // Mix-up: the answer claims another issuer (RFC 9207).
    let callback = sign_in_at_provider(&victim, &app, &op, "op", "admin", "/app")
        .await
        .redirect();
    let mut url = reqwest::Url::parse(&callback).unwrap();
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| match k.as_ref() {
            "iss" => (k.into_owned(), "https://evil.example".to_owned()),
            _ => (k.into_owned(), v.into_owned()),
        })
        .collect();
    url.query_pairs_mut().clear().extend_pairs(pairs);
    let r = victim.get(url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("RFC 9207"),
        "{body}"
    );
}

#[tokio::test]
async fn a_person_the_rules_do_not_admit_is_refused_after_the_provider_login() {
    let (op, app) = start_op().await;
    let browser = browser();
    // bob@example.com: not the init admin, not invited, no allowed domain.
    let callback = sign_in_at_provider(&browser, &app, &op, "op", "bob", "/app")
        .await
        .redirect();
    let r = browser.get(&callback).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "SIGNIN_NOT_ALLOWED");
    assert_eq!(body["error"]["details"]["reason"], "not_admitted");

    // A person's browser is shown the refusal page instead of JSON.
    let callback = sign_in_at_provider(&browser, &app, &op, "op", "bob", "/app")
        .await
        .redirect();
    let r = browser
        .get(&callback)
        .header("accept", HTML)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(
        location,
        "/app/signin?error=SIGNIN_NOT_ALLOWED&reason=not_admitted"
    );
    let page = browser
        .get(format!("{}{location}", app.base))
        .header("accept", HTML)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::FORBIDDEN);
    let page = page.text().await.unwrap();
    assert!(page.contains("may not sign in"), "{page}");
    assert!(page.contains("Who may sign in"), "{page}");

    // An address the provider did not verify: the page says so, and what
    // to do, rather than listing who may sign in.
    let browser = crate::helpers::browser_client();
    let callback = sign_in_at_provider(&browser, &app, &op, "op", "unverified", "/app")
        .await
        .redirect();
    let r = browser
        .get(&callback)
        .header("accept", HTML)
        .send()
        .await
        .unwrap();
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(
        location,
        "/app/signin?error=SIGNIN_NOT_ALLOWED&reason=unverified_email"
    );
    let page = browser
        .get(format!("{}{location}", app.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("did not confirm your e-mail address"),
        "{page}"
    );
    assert!(!page.contains("Who may sign in"), "{page}");
    let r = browser
        .get(format!("{}/v1/auth/session", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn apple_browser_flow_answers_by_form_post_and_names_the_person() {
    let (op, app) = start_op_as("apple", ProviderKind::Apple, &["example.com"]).await;
    let browser = browser();
    let Answer::FormPost(callback, mut fields) =
        sign_in_at_provider(&browser, &app, &op, "apple", "ada", "/app").await
    else {
        panic!("an Apple provider must ask for response_mode=form_post");
    };
    assert!(fields.iter().any(|(k, _)| k == "code") && fields.iter().any(|(k, _)| k == "iss"));
    // Apple sends the name only here, on the first sign-in.
    fields.push((
        "user".into(),
        json!({ "name": { "firstName": "Ada", "lastName": "Lovelace" }, "email": "ada@example.com" })
            .to_string(),
    ));
    let r = browser.post(&callback).form(&fields).send().await.unwrap();
    assert_eq!(
        r.status(),
        StatusCode::SEE_OTHER,
        "{}",
        r.text().await.unwrap()
    );
    assert_eq!(r.headers()["location"], "/app");
    let session: Value = browser
        .get(format!("{}/v1/auth/session", app.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(session["data"]["user"]["email"], "ada@example.com");
    assert_eq!(session["data"]["user"]["name"], "Ada Lovelace");
    assert_eq!(session["data"]["method"], "apple");
}

#[tokio::test]
async fn chromium_signs_in_through_the_provider_and_evil_next_is_refused() {
    let (_op, app) = start_op().await;
    let env = [
        ("BASE_URL", app.base.as_str()),
        ("PROVIDER_LABEL", "op"),
        ("LOGIN", "admin"),
    ];
    let out = run_node(
        "browser-oidc.mjs",
        &env,
        std::time::Duration::from_secs(90),
        None,
    )
    .await;
    assert_eq!(out["landed"], format!("{}/app", app.base), "{out}");
    assert_eq!(out["session_status"], 200, "{out}");
    assert_eq!(out["email"], "admin@example.com", "{out}");
    assert_eq!(out["method"], "op", "{out}");
    let cookie = &out["session_cookie"];
    assert_eq!(cookie["httpOnly"], true, "{out}");
    assert_eq!(cookie["sameSite"], "Lax", "{out}");
    // Refused at hds: the browser lands on the sign-in page, told why.
    for attempt in out["evil"].as_array().unwrap() {
        assert_eq!(attempt["status"], 200, "{out}");
        assert_eq!(
            attempt["url"],
            format!("{}/app/signin?error=INVALID_NEXT", app.base),
            "{out}"
        );
    }
}

#[tokio::test]
async fn next_must_be_a_local_path() {
    // Nothing listens at this issuer: a refused `next` must not even reach it.
    let app = TestApp::spawn_with(|c| {
        c.auth.providers.insert(
            "op".into(),
            provider(ProviderKind::Oidc, "http://127.0.0.1:9", "hds"),
        );
    })
    .await;
    let browser = browser();
    for next in [
        "https://evil.example",
        "//evil.example",
        "/%5Cevil.example",
        "javascript:alert(1)",
    ] {
        let r = browser
            .get(format!("{}/v1/auth/op/start?next={next}", app.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY, "{next}");
        assert!(r.headers().get("location").is_none(), "{next}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], "VALIDATION_ERROR", "{next}");
        assert_eq!(
            body["error"]["details"]["errors"][0]["field"], "next",
            "{next}"
        );
        // A browser that followed such a link is not shown JSON: it lands on
        // the sign-in page, told why, and is never sent to the other site.
        let r = browser
            .get(format!("{}/v1/auth/op/start?next={next}", app.base))
            .header("accept", "text/html,application/xhtml+xml")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SEE_OTHER, "{next}");
        let to = r.headers()["location"].to_str().unwrap().to_owned();
        assert_eq!(to, "/app/signin?error=INVALID_NEXT", "{next}");
        let page = browser
            .get(format!("{}{to}", app.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(page.contains("That sign-in link leads elsewhere"), "{page}");
    }
    let r = app
        .call(
            reqwest::Method::GET,
            "/v1/auth/nobody/start",
            None,
            None,
            &[],
        )
        .await;
    r.error(404, "PROVIDER_NOT_FOUND");
    // A provider that cannot be reached is a gateway problem, not the person's.
    let r = app
        .call(
            reqwest::Method::GET,
            "/v1/auth/op/start?next=/app",
            None,
            None,
            &[],
        )
        .await;
    r.error(502, "PROVIDER_UNAVAILABLE");
}

/// A provider with only native client ids has no browser flow: its start
/// route answers 404 PROVIDER_NOT_FOUND without any call to the issuer.
#[tokio::test]
async fn a_native_only_provider_refuses_the_browser_flow_without_calling_out() {
    // An "issuer" on loopback that counts the connections it is offered.
    let issuer = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer_url = format!("http://{}", issuer.local_addr().unwrap());
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = calls.clone();
    tokio::spawn(async move {
        while let Ok((_socket, _)) = issuer.accept().await {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let app = TestApp::spawn_with(|c| {
        let mut p = provider(ProviderKind::Oidc, &issuer_url, "unused");
        p.client_id = None;
        p.client_ids = vec!["ios-app".into()];
        c.auth.providers.insert("corp".into(), p);
    })
    .await;
    let providers = app
        .anonymous()
        .get::<Value>("/v1/auth/providers", 200)
        .await;
    let corp = providers["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "corp")
        .unwrap()
        .clone();
    assert!(corp["start_url"].is_null(), "{corp}");
    for _ in 0..3 {
        let e = app
            .anonymous()
            .get_err("/v1/auth/corp/start?next=/app", 404, "PROVIDER_NOT_FOUND")
            .await;
        assert!(e["message"].as_str().unwrap().contains("native"), "{e}");
    }
    tokio::task::yield_now().await;
    assert_eq!(
        calls.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "no outbound call"
    );
}

/// Every stored value of every ordinary table, as text, read from the SQLite
/// file: what someone who copies the database holds.
fn stored_text(app: &TestApp) -> Vec<(String, String)> {
    let conn = rusqlite::Connection::open_with_flags(
        app.data_dir().join("hds.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut out = Vec::new();
    for t in tables {
        let mut st = conn.prepare(&format!("SELECT * FROM \"{t}\"")).unwrap();
        let n = st.column_count();
        let mut rows = st.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            for i in 0..n {
                let text = match row.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Text(b) | rusqlite::types::ValueRef::Blob(b) => {
                        String::from_utf8_lossy(b).into_owned()
                    }
                    _ => continue,
                };
                out.push((t.clone(), text));
            }
        }
    }
    out
}

/// The value of `name="…" value="…"` in a page.
fn input_value(html: &str, name: &str) -> String {
    let at = html.find(&format!(r#"name="{name}" value=""#)).unwrap();
    let rest = &html[at + name.len() + 15..];
    rest[..rest.find('"').unwrap()].to_owned()
}

#[tokio::test]
async fn an_invitation_accepted_through_a_provider_never_stores_its_secret() {
    let (op, app) = start_op().await;
    let r: Value = app
        .admin()
        .post(
            "/v1/workspaces/invitations",
            json!({ "email": "ada@example.com", "role": "reviewer" }),
            201,
        )
        .await;
    let link = r["data"]["accept_url"].as_str().unwrap().to_owned();
    let token = link.rsplit('/').next().unwrap().to_owned();
    let browser = browser();

    // Signed out: the page offers the provider, returning to a path without
    // the secret; the browser keeps the token in a short-lived cookie.
    let r = browser
        .get(&link)
        .header("accept", HTML)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let kept = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|v| v.starts_with("hds_invitation="))
        .expect("the page keeps the token in the browser");
    for attribute in [
        "HttpOnly",
        "Path=/app/invitations/",
        "Max-Age=600",
        "SameSite=Lax",
    ] {
        assert!(kept.contains(attribute), "{kept}");
    }
    let html = r.text().await.unwrap();
    let start = "/v1/auth/op/start?next=%2Fapp%2Finvitations%2Fcontinue";
    assert!(html.contains(&format!(r#"href="{start}""#)), "{html}");
    assert!(!html.contains(&format!("next=%2Fapp%2Finvitations%2F{token}")));

    let callback = sign_in_at_provider(
        &browser,
        &app,
        &op,
        "op",
        "ada",
        "%2Fapp%2Finvitations%2Fcontinue",
    )
    .await
    .redirect();
    // The sign-in in flight is stored, and no stored value holds the secret.
    assert_eq!(app.count_rows("oidc_logins"), 1);
    let leaks: Vec<_> = stored_text(&app)
        .into_iter()
        .filter(|(_, v)| v.contains(&token))
        .collect();
    assert!(
        leaks.is_empty(),
        "the invitation secret is stored: {leaks:?}"
    );

    let r = browser.get(&callback).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/app/invitations/continue");
    let r = browser
        .get(format!("{}/app/invitations/continue", app.base))
        .header("accept", HTML)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let html = r.text().await.unwrap();
    assert!(html.contains("Accept and join"), "{html}");
    let csrf = input_value(&html, "_csrf");
    let r = browser
        .post(&link)
        .header("origin", &app.base)
        .form(&[("_csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "{:?}", r.text().await);
    assert_eq!(r.headers()["location"], "/app");
    assert!(
        r.headers()
            .get_all("set-cookie")
            .iter()
            .any(|v| v.to_str().unwrap().starts_with("hds_invitation=;")),
        "the used token is forgotten"
    );
    let members: Value = app.admin().get("/v1/workspaces/members", 200).await;
    let ada = members["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["email"] == "ada@example.com")
        .unwrap_or_else(|| panic!("{members}"))
        .clone();
    assert_eq!(ada["role"], "reviewer");
    let leaks: Vec<_> = stored_text(&app)
        .into_iter()
        .filter(|(_, v)| v.contains(&token))
        .collect();
    assert!(
        leaks.is_empty(),
        "the invitation secret is stored: {leaks:?}"
    );

    // A sign-in asked to come back to the link itself is refused before
    // anything is stored; a browser holding no invitation is told what to do.
    let logins = app.count_rows("oidc_logins");
    let e = app
        .anonymous()
        .get_err(
            &format!("/v1/auth/op/start?next=/app/invitations/{token}"),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert!(e.to_string().contains("invitation"), "{e}");
    // Nor inside the sign-in page's own `next`, or a mangled path.
    for next in [
        format!("/app/signin?next=/app/invitations/{token}"),
        format!("/app/signin?next=%252Fapp%252Finvitations%252F{token}"),
        format!("/app//invitations/{token}"),
    ] {
        app.anonymous()
            .get_err(
                &format!("/v1/auth/op/start?next={next}"),
                422,
                "VALIDATION_ERROR",
            )
            .await;
    }
    assert_eq!(app.count_rows("oidc_logins"), logins);
    let r = super::helpers::browser_client()
        .get(format!("{}/app/invitations/continue", app.base))
        .header("accept", HTML)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert!(
        r.text()
            .await
            .unwrap()
            .contains("open the invitation link again")
    );
}
