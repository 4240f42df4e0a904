//! The native exchanges (Google, Apple) and Apple's code exchange, with ID
//! tokens minted by tests/node/idp-mint.mjs.

use hds::config::ProviderKind;
use hds::domain::credentials::hash_secret;
use serde_json::{Value, json};

use super::idp::{Idp, now, provider};
use crate::helpers::{Resp, TestApp};

async fn start_mint(allowed_domain: Option<&str>) -> (Idp, TestApp) {
    let mint = Idp::spawn("idp-mint.mjs", &[]).await;
    let issuer = mint.issuer();
    let domain = allowed_domain.map(str::to_owned);
    let app = TestApp::spawn_with(move |c| {
        let mut google = provider(ProviderKind::Google, &issuer, "web.apps.example");
        google.client_ids = vec!["android.apps.example".into()];
        c.auth.providers.insert("google".into(), google);
        let mut apple = provider(ProviderKind::Apple, &issuer, "com.example.web");
        apple.client_ids = vec!["com.example.ios".into()];
        apple.client_secret = Some("apple-client-secret".into());
        c.auth.providers.insert("apple".into(), apple);
        c.auth.allowed_email_domains.extend(domain);
    })
    .await;
    (mint, app)
}

async fn challenge(app: &TestApp, provider: &str) -> String {
    let r = app
        .call(
            reqwest::Method::POST,
            &format!("/v1/auth/{provider}/native/challenge"),
            None,
            None,
            &[],
        )
        .await;
    assert!(r.ok(200)["expires_at"].is_string());
    r.body["nonce"].as_str().unwrap().to_owned()
}

async fn native(app: &TestApp, provider: &str, id_token: &str, nonce: &str) -> Resp {
    app.call(
        reqwest::Method::POST,
        &format!("/v1/auth/{provider}/native"),
        None,
        Some(&json!({ "id_token": id_token, "nonce": nonce })),
        &[("x-service-client", "hds-tests/1.0 (ios)")],
    )
    .await
}

#[tokio::test]
async fn native_google_accepts_both_issuer_spellings_and_every_client_id() {
    let (mint, app) = start_mint(None).await;
    let bare_issuer = mint.issuer().trim_start_matches("http://").to_owned();
    let mut user_ids = Vec::new();
    for (iss, aud) in [
        (mint.issuer(), "web.apps.example"),
        (bare_issuer, "android.apps.example"),
    ] {
        let nonce = challenge(&app, "google").await;
        let token = mint
            .mint(
                json!({ "iss": iss, "sub": "g-1", "aud": aud, "nonce": nonce,
                          "email": "admin@example.com", "email_verified": true, "name": "Ada" }),
            )
            .await;
        let r = native(&app, "google", &token, &nonce).await;
        let body = r.ok(200);
        assert!(body["token"].as_str().unwrap().starts_with("svc_usr_"));
        assert!(body["expires_at"].is_string());
        assert_eq!(body["user"]["email"], "admin@example.com");
        user_ids.push(body["user"]["id"].clone());

        let session = app
            .get("/v1/auth/session", body["token"].as_str().unwrap())
            .await;
        let data = &session.ok(200)["data"];
        assert_eq!(data["method"], "google");
        assert_eq!(data["client"], "hds-tests/1.0 (ios)");
        assert_eq!(data["auth"], "bearer");
    }
    // One person, the init admin: the first sign-in linked by verified e-mail,
    // and the two spellings are one issuer, so the second found that identity.
    assert_eq!(user_ids[0], app.creds["user_id"]);
    assert_eq!(user_ids[1], app.creds["user_id"]);
}

#[tokio::test]
async fn native_tokens_failing_any_check_are_refused_with_the_reason() {
    let (mint, app) = start_mint(None).await;
    let good = |nonce: &str| {
        json!({ "sub": "g-2", "aud": "web.apps.example", "nonce": nonce,
                "email": "admin@example.com", "email_verified": true })
    };
    let patched = |nonce: &str, patch: Value| {
        let mut claims = good(nonce);
        claims
            .as_object_mut()
            .unwrap()
            .extend(patch.as_object().unwrap().clone());
        claims
    };
    let cases = [
        (
            "tampered signature",
            json!({ "claims": good("{n}"), "tamper": true }),
            "signature",
        ),
        (
            "unsigned",
            json!({ "claims": good("{n}"), "unsigned": true }),
            "unsigned",
        ),
        (
            "wrong audience",
            json!({ "claims": patched("{n}", json!({ "aud": "someone-else" })) }),
            "audience",
        ),
        (
            "extra untrusted audience",
            json!({ "claims": patched("{n}", json!({ "aud": ["web.apps.example", "someone-else"] })) }),
            "audience",
        ),
        (
            "expired",
            json!({ "claims": patched("{n}", json!({ "iat": now() - 7200, "exp": now() - 3600 })) }),
            "expired",
        ),
        (
            "other issuer",
            json!({ "claims": patched("{n}", json!({ "iss": "https://accounts.evil.example" })) }),
            "issuer",
        ),
        (
            "other nonce",
            json!({ "claims": patched("{n}", json!({ "nonce": "not-the-issued-one" })) }),
            "nonce",
        ),
        (
            "no nonce",
            json!({ "claims": patched("{n}", json!({ "nonce": null })) }),
            "nonce",
        ),
    ];
    for (case, request, reason) in cases {
        let nonce = challenge(&app, "google").await;
        let request: Value =
            serde_json::from_str(&request.to_string().replace("{n}", &nonce)).unwrap();
        let token = mint.mint_with(request).await;
        let r = native(&app, "google", &token, &nonce).await;
        let message = r.error(401, "INVALID_ID_TOKEN")["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(message.contains(reason), "{case}: {message}");
        // One attempt per nonce: a good token cannot follow a refused one.
        let token = mint.mint(good(&nonce)).await;
        let r = native(&app, "google", &token, &nonce).await;
        assert!(
            r.error(401, "INVALID_ID_TOKEN")["message"]
                .as_str()
                .unwrap()
                .contains("already used"),
            "{case}"
        );
    }

    // A replayed nonce: the first use signs in, the second is refused.
    let nonce = challenge(&app, "google").await;
    let token = mint.mint(good(&nonce)).await;
    native(&app, "google", &token, &nonce).await.ok(200);
    native(&app, "google", &token, &nonce)
        .await
        .error(401, "INVALID_ID_TOKEN");
    // A nonce hds never issued.
    let token = mint.mint(good("made-up")).await;
    native(&app, "google", &token, "made-up")
        .await
        .error(401, "INVALID_ID_TOKEN");
    // A nonce issued for another provider.
    let nonce = challenge(&app, "apple").await;
    let token = mint.mint(good(&nonce)).await;
    native(&app, "google", &token, &nonce)
        .await
        .error(401, "INVALID_ID_TOKEN");
}

#[tokio::test]
async fn who_may_sign_in_natively_follows_the_admission_rules() {
    let (mint, app) = start_mint(Some("example.org")).await;
    let sign_in = |email: &str, verified: Value, sub: &str| json!({ "sub": sub, "aud": "web.apps.example", "email": email, "email_verified": verified });
    for (claims, status) in [
        (sign_in("mallory@elsewhere.test", json!(true), "g-10"), 403),
        (sign_in("carol@example.org", json!(false), "g-11"), 403),
        // Ending in the allowed domain is not enough: the address must be
        // one (no newline, an empty or doubled local part).
        (sign_in("x\n@example.org", json!(true), "g-13"), 403),
        (sign_in("@example.org", json!(true), "g-14"), 403),
        (sign_in("a@b@example.org", json!(true), "g-15"), 403),
        (sign_in("carol@example.org", json!(true), "g-12"), 200),
    ] {
        let nonce = challenge(&app, "google").await;
        let mut claims = claims;
        claims["nonce"] = json!(nonce);
        let token = mint.mint(claims.clone()).await;
        let r = native(&app, "google", &token, &nonce).await;
        if status == 403 {
            r.error(403, "SIGNIN_NOT_ALLOWED");
        } else {
            assert_eq!(r.ok(200)["user"]["email"], "carol@example.org", "{claims}");
        }
    }
    let members: Value = app.admin().get("/v1/workspaces/members", 200).await;
    let emails: Vec<&str> = members["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["email"].as_str())
        .collect();
    assert!(emails.contains(&"carol@example.org"), "{members}");
    assert!(
        emails
            .iter()
            .all(|e| !e.contains('\n') && !e.starts_with('@') && e.matches('@').count() == 1),
        "{emails:?}"
    );
}

#[tokio::test]
async fn native_apple_accepts_the_hashed_nonce_and_string_booleans() {
    let (mint, app) = start_mint(Some("example.org")).await;
    let nonce = challenge(&app, "apple").await;
    let token = mint
        .mint(
            json!({ "sub": "001234.apple", "aud": "com.example.ios", "nonce": hash_secret(&nonce),
                      "nonce_supported": true, "email": "admin@example.com",
                      "email_verified": "true", "is_private_email": "false" }),
        )
        .await;
    let r = native(&app, "apple", &token, &nonce).await;
    assert_eq!(r.ok(200)["user"]["email"], "admin@example.com");

    // The raw nonce works too; "false" as a string is not a verified e-mail.
    let nonce = challenge(&app, "apple").await;
    let token = mint
        .mint(
            json!({ "sub": "005678.apple", "aud": "com.example.ios", "nonce": nonce,
                      "email": "erin@example.org", "email_verified": "false" }),
        )
        .await;
    native(&app, "apple", &token, &nonce)
        .await
        .error(403, "SIGNIN_NOT_ALLOWED");
    // Apple's nonce rule is Apple's only: Google wants the nonce as issued.
    let nonce = challenge(&app, "google").await;
    let token = mint
        .mint(
            json!({ "sub": "g-20", "aud": "web.apps.example", "nonce": hash_secret(&nonce),
                      "email": "admin@example.com", "email_verified": true }),
        )
        .await;
    native(&app, "google", &token, &nonce)
        .await
        .error(401, "INVALID_ID_TOKEN");
}

#[tokio::test]
async fn keys_are_cached_and_refetched_once_when_the_issuer_rotates() {
    let (mint, app) = start_mint(None).await;
    let claims = |nonce: &str| {
        json!({ "sub": "g-30", "aud": "web.apps.example", "nonce": nonce,
                "email": "admin@example.com", "email_verified": true })
    };
    for _ in 0..3 {
        let nonce = challenge(&app, "google").await;
        let token = mint.mint(claims(&nonce)).await;
        native(&app, "google", &token, &nonce).await.ok(200);
    }
    assert_eq!(mint.stats().await, json!({ "discovery": 1, "jwks": 1 }));
    // The issuer starts signing with a key hds has not seen.
    mint.call("/rotate", json!({})).await;
    let nonce = challenge(&app, "google").await;
    let token = mint.mint(claims(&nonce)).await;
    native(&app, "google", &token, &nonce).await.ok(200);
    assert_eq!(mint.stats().await, json!({ "discovery": 1, "jwks": 2 }));
}

#[tokio::test]
async fn apple_android_code_exchange_returns_a_bearer_session() {
    let (mint, app) = start_mint(Some("example.org")).await;
    let nonce = challenge(&app, "apple").await;
    let grant = json!({
        "client_id": "com.example.web",
        "client_secret": "apple-client-secret",
        "redirect_uri": format!("{}/v1/auth/apple/callback", app.base),
        "claims": { "sub": "007.apple", "email": "dave@example.org", "email_verified": "true",
                    "nonce": hash_secret(&nonce) },
    });
    let code = mint.call("/codes", grant).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = json!({ "code": code, "nonce": nonce });
    let r = app
        .call(
            reqwest::Method::POST,
            "/v1/auth/apple/android",
            None,
            Some(&body),
            &[("x-service-client", "hds-android/2.1")],
        )
        .await;
    let signed_in = r.ok(200);
    assert_eq!(signed_in["user"]["email"], "dave@example.org");
    let session = app
        .get("/v1/auth/session", signed_in["token"].as_str().unwrap())
        .await;
    assert_eq!(session.ok(200)["data"]["client"], "hds-android/2.1");

    // A proxy's HTML error page in front of the provider is an outage
    // (502, to try again), not a token hds cannot read.
    let outage = json!({
        "client_id": "com.example.web",
        "client_secret": "apple-client-secret",
        "redirect_uri": format!("{}/v1/auth/apple/callback", app.base),
        "claims": {},
        "answer": "html503",
    });
    let down = mint.call("/codes", outage).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let nonce2 = challenge(&app, "apple").await;
    let r = app
        .call(
            reqwest::Method::POST,
            "/v1/auth/apple/android",
            None,
            Some(&json!({ "code": down, "nonce": nonce2 })),
            &[],
        )
        .await;
    r.error(502, "PROVIDER_UNAVAILABLE");

    // Codes are single use at the provider; the nonce is spent too.
    let r = app
        .call(
            reqwest::Method::POST,
            "/v1/auth/apple/android",
            None,
            Some(&json!({ "code": code })),
            &[],
        )
        .await;
    assert!(
        r.error(401, "INVALID_ID_TOKEN")["message"]
            .as_str()
            .unwrap()
            .contains("refused the authorization code")
    );
    // Only Apple providers take codes.
    let r = app
        .call(
            reqwest::Method::POST,
            "/v1/auth/google/android",
            None,
            Some(&json!({ "code": "x" })),
            &[],
        )
        .await;
    r.error(404, "PROVIDER_NOT_FOUND");
}

#[tokio::test]
async fn native_requests_are_strict_and_name_the_provider() {
    let (_mint, app) = start_mint(None).await;
    let r = app
        .call(
            reqwest::Method::POST,
            "/v1/auth/nobody/native/challenge",
            None,
            None,
            &[],
        )
        .await;
    r.error(404, "PROVIDER_NOT_FOUND");
    let nonce = challenge(&app, "google").await;
    let r = app
        .call(
            reqwest::Method::POST,
            "/v1/auth/google/native",
            None,
            Some(&json!({ "id_token": "x.y.z", "nonce": nonce, "provider": "google" })),
            &[],
        )
        .await;
    r.error(422, "VALIDATION_ERROR");
    let r = native(&app, "google", "not-a-jwt", &nonce).await;
    r.error(401, "INVALID_ID_TOKEN");
}

#[tokio::test]
async fn an_unreachable_issuer_is_a_gateway_error() {
    let issuer = format!("http://127.0.0.1:{}", crate::smtp::free_port());
    let app = TestApp::spawn_with(move |c| {
        c.auth.providers.insert(
            "google".into(),
            provider(ProviderKind::Google, &issuer, "web"),
        );
    })
    .await;
    let nonce = challenge(&app, "google").await;
    let r = native(&app, "google", "a.b.c", &nonce).await;
    r.error(502, "PROVIDER_UNAVAILABLE");
}

/// A sign-in admitted by an allowed e-mail domain joins the oldest
/// workspace as a member like any other: a workspace at its plan's member
/// limit refuses it (403 `PLAN_LIMIT_REACHED`), and nothing is written.
#[tokio::test]
async fn a_domain_sign_in_into_a_full_workspace_is_refused() {
    let mint = Idp::spawn("idp-mint.mjs", &[]).await;
    let issuer = mint.issuer();
    let app = TestApp::spawn_with(move |c| {
        c.auth.providers.insert(
            "google".into(),
            provider(ProviderKind::Google, &issuer, "web.apps.example"),
        );
        c.auth.allowed_email_domains.push("example.org".into());
        c.billing.plans.insert(
            "tiny".into(),
            hds::config::PlanConfig {
                name: "Tiny".into(),
                actions_per_month: None,
                members: Some(1),
                sources: None,
                runs_per_month: None,
            },
        );
    })
    .await;
    let c = hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap();
    c.execute("UPDATE workspaces SET plan_id = 'tiny'", [])
        .unwrap();
    let users = app.count_rows("users");
    let nonce = challenge(&app, "google").await;
    let token = mint
        .mint(
            json!({ "sub": "g-20", "aud": "web.apps.example", "nonce": nonce,
                      "email": "dave@example.org", "email_verified": true }),
        )
        .await;
    let r = native(&app, "google", &token, &nonce).await;
    let e = r.error(403, "PLAN_LIMIT_REACHED");
    assert_eq!(e["details"]["resource"], "members", "{e}");
    assert_eq!(app.count_rows("users"), users, "no person was made");
}
