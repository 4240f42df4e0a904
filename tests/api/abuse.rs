//! The per-address budget (guide: "Rate limiting"): anonymous sign-in routes
//! and refused credentials from one client address get 429 once it is used
//! up, before anything is written; behind a trusted proxy the forwarded
//! address is the client, and from anyone else the header is ignored.

use hds::config::{ProviderConfig, ProviderKind};
use reqwest::Method;

use crate::helpers::{Resp, TestApp, browser_client};
use crate::signin_oidc::idp::{Idp, provider};

/// Budgets in tests: a burst, then one unit a minute, so nothing refills
/// while a test runs.
const BURST: u32 = 4;

fn budget(c: &mut hds::config::Config) {
    c.anonymous_rate_limit = 1;
    c.anonymous_burst = BURST;
}

/// Asserts 429 RATE_LIMITED in the envelope with a Retry-After of 1–60 s.
#[track_caller]
fn limited(r: &Resp) {
    r.error(429, "RATE_LIMITED");
    retry_after(&r.headers);
}

#[track_caller]
fn retry_after(headers: &reqwest::header::HeaderMap) -> u64 {
    let secs: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&secs), "Retry-After: {secs}");
    secs
}

/// The status of each answer, in order.
fn statuses(answers: &[Resp]) -> Vec<u16> {
    answers.iter().map(|r| r.status.as_u16()).collect()
}

fn expected(ok: u16, n: usize) -> Vec<u16> {
    let mut want = vec![ok; BURST as usize];
    want.resize(n, 429);
    want
}

#[tokio::test]
async fn native_challenges_from_one_address_stop_at_the_budget_and_write_no_more_rows() {
    let app = TestApp::spawn_with(|c| {
        budget(c);
        // A native-only provider: the challenge needs no issuer.
        c.auth.providers.insert(
            "google".into(),
            ProviderConfig {
                client_ids: vec!["ios.apps.example".into()],
                client_id: None,
                ..provider(ProviderKind::Google, "http://127.0.0.1:9", "unused")
            },
        );
    })
    .await;
    let before = app.count_rows("auth_nonces");
    let mut answers = Vec::new();
    for _ in 0..20 {
        let path = "/v1/auth/google/native/challenge";
        answers.push(app.call(Method::POST, path, None, None, &[]).await);
    }
    assert_eq!(statuses(&answers), expected(200, 20));
    answers[BURST as usize..].iter().for_each(limited);
    assert_eq!(app.count_rows("auth_nonces") - before, i64::from(BURST));

    // The exchange spends the same budget: refused before the nonce is touched.
    let body = serde_json::json!({ "id_token": "x", "nonce": "y" });
    let r = app
        .call(
            Method::POST,
            "/v1/auth/google/native",
            None,
            Some(&body),
            &[],
        )
        .await;
    limited(&r);
}

#[tokio::test]
async fn signin_starts_from_one_address_stop_at_the_budget_and_write_no_more_rows() {
    let mint = Idp::spawn("idp-mint.mjs", &[]).await;
    let issuer = mint.issuer();
    let app = TestApp::spawn_with(move |c| {
        budget(c);
        let p = provider(ProviderKind::Oidc, &issuer, "hds-test");
        c.auth.providers.insert("op".into(), p);
    })
    .await;
    let browser = browser_client();
    let mut answers = Vec::new();
    for _ in 0..12 {
        let r = browser
            .get(format!("{}/v1/auth/op/start", app.base))
            .send()
            .await
            .unwrap();
        let (status, headers) = (r.status(), r.headers().clone());
        let body = r.json().await.unwrap_or(serde_json::Value::Null);
        let what = "GET /v1/auth/op/start".into();
        answers.push(Resp {
            what,
            status,
            headers,
            body,
        });
    }
    assert_eq!(statuses(&answers), expected(303, 12));
    answers[BURST as usize..].iter().for_each(limited);
    assert_eq!(app.count_rows("oidc_logins"), i64::from(BURST));
    // One discovery for the whole run: refused starts never call out.
    assert_eq!(mint.stats().await["discovery"], 1);
    // A person's browser over the budget lands on the sign-in page, told to
    // wait, instead of a JSON body.
    let r = browser
        .get(format!("{}/v1/auth/op/start?next=/app", app.base))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()["location"], "/app/signin?error=RATE_LIMITED");
    assert_eq!(app.count_rows("oidc_logins"), i64::from(BURST));
    let page = browser
        .get(format!("{}/app/signin?error=RATE_LIMITED", app.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("Too many sign-ins from this address"),
        "{page}"
    );
    assert!(page.contains("Wait a minute, then try again."), "{page}");
}

#[tokio::test]
async fn signin_link_pages_spend_the_budget_and_answer_with_the_error_page() {
    let app = TestApp::spawn_with(budget).await;
    let browser = browser_client();
    let url = format!("{}/app/signin/link/not-a-link", app.base);
    let mut seen = Vec::new();
    for i in 0..BURST + 2 {
        let r = if i % 2 == 0 {
            browser.get(&url).send().await.unwrap()
        } else {
            let form = browser
                .post(&url)
                .header("origin", &app.base)
                .form(&[("next", "/app")]);
            form.send().await.unwrap()
        };
        seen.push(r.status().as_u16());
        if r.status() == 429 {
            retry_after(r.headers());
            let page = r.text().await.unwrap();
            assert!(page.contains("RATE_LIMITED"), "{page}");
        }
    }
    assert_eq!(seen, [410, 410, 410, 410, 429, 429]);
}

/// Behind the test's "proxy" (the tests connect from 127.0.0.1), as `client`.
fn from(client: &str) -> [(&str, &str); 1] {
    [("x-forwarded-for", client)]
}

#[tokio::test]
async fn refused_credentials_from_one_address_get_429_and_others_are_unaffected() {
    let app = TestApp::spawn_with(|c| {
        budget(c);
        c.trusted_proxies = vec![hds::http::client_addr::parse_proxy("127.0.0.1").unwrap()];
    })
    .await;
    let (attacker, other) = ("203.0.113.7", "198.51.100.9");
    let forged = "svc_live_0000000000000000000000000000000000000000";
    // The Source's key is in use from the attacker's address too (one NAT).
    let live = app.live_key();
    let missing = "/v1/source/actions/act_missing";
    let r = app
        .call(Method::GET, missing, Some(&live), None, &from(attacker))
        .await;
    r.error(404, "ACTION_NOT_FOUND");

    let mut answers = Vec::new();
    for _ in 0..10 {
        let r = app
            .call(
                Method::GET,
                "/v1/source/actions/act_x",
                Some(forged),
                None,
                &from(attacker),
            )
            .await;
        answers.push(r);
    }
    assert_eq!(statuses(&answers), expected(401, 10));
    answers[0].error(401, "INVALID_API_KEY");
    answers[BURST as usize..].iter().for_each(limited);
    // No credential at all (an anonymous bootstrap) is refused the same way.
    limited(
        &app.call(Method::GET, "/v1/bootstrap", None, None, &from(attacker))
            .await,
    );
    // Prepending a fresh address does not help: the proxy appended the real one.
    let spoof = format!("198.51.100.77, {attacker}");
    limited(
        &app.call(Method::GET, "/v1/bootstrap", None, None, &from(&spoof))
            .await,
    );

    // Another address: unaffected, with a valid credential or a bad one.
    let token = app.user_token();
    let r = app
        .call(
            Method::GET,
            "/v1/bootstrap",
            Some(&token),
            None,
            &from(other),
        )
        .await;
    r.ok(200);
    let r = app
        .call(
            Method::GET,
            "/v1/auth/session",
            Some(forged),
            None,
            &from(other),
        )
        .await;
    r.error(401, "INVALID_API_KEY");
    // From the attacker's address a key in use still works; a credential
    // hds would have to look up waits with the attacker.
    let r = app
        .call(Method::GET, missing, Some(&live), None, &from(attacker))
        .await;
    r.error(404, "ACTION_NOT_FOUND");
    limited(
        &app.call(
            Method::GET,
            "/v1/bootstrap",
            Some(&token),
            None,
            &from(attacker),
        )
        .await,
    );
}

#[tokio::test]
async fn forwarded_addresses_from_an_untrusted_peer_are_ignored() {
    // No --trusted-proxy (the default): the peer, 127.0.0.1, is the client
    // whatever X-Forwarded-For says; a proxy elsewhere changes nothing.
    for proxies in [vec![], vec!["10.0.0.0/8".parse().unwrap()]] {
        let app = TestApp::spawn_with(move |c| {
            budget(c);
            c.trusted_proxies = proxies;
        })
        .await;
        let mut answers = Vec::new();
        for i in 0..8 {
            let fresh = format!("198.51.100.{i}");
            let headers = [
                ("x-forwarded-for", fresh.as_str()),
                ("x-real-ip", fresh.as_str()),
            ];
            let r = app.call(
                Method::GET,
                "/v1/bootstrap",
                Some("svc_usr_forged"),
                None,
                &headers,
            );
            answers.push(r.await);
        }
        assert_eq!(statuses(&answers), expected(401, 8));
        answers[BURST as usize..].iter().for_each(limited);
    }
}

#[tokio::test]
async fn without_a_recorded_peer_every_request_shares_one_budget() {
    // A server that does not record peers (no ConnectInfo): no panic, one
    // shared "unknown" client.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    hds::cli::init::initialise(&data, "admin@example.com", "Test").unwrap();
    let mut config = hds::config::Config::for_data_dir(data);
    budget(&mut config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    config.base_url = base.clone();
    let state = hds::app::start(config).await.unwrap();
    let router = hds::app::build_router(state).into_make_service();
    tokio::spawn(async move { axum::serve(listener, router).await });
    let http = crate::helpers::client_builder().build().unwrap();
    let mut seen = Vec::new();
    for _ in 0..6 {
        let r = http
            .get(format!("{base}/v1/bootstrap"))
            .send()
            .await
            .unwrap();
        seen.push(r.status().as_u16());
    }
    assert_eq!(seen, expected(401, 6));
}
