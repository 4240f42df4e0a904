//! Plans and billing (guide: "Plans and billing"): usage and limits, the
//! refusals over a plan (nothing written, exactly the limit under
//! concurrency), decisions never limited, the portal with and without
//! Stripe (a loopback stand-in speaking Stripe's form-encoded API), and
//! Stripe's signed subscription webhooks.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use hds::config::{PlanConfig, StripeConfig};
use hds::domain::access::Role;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::helpers::{TestApp, two_options};

const SECRET_KEY: &str = "sk_test_standin";
const WEBHOOK_SECRET: &str = "whsec_test_standin";

fn plan(
    name: &str,
    actions: Option<u64>,
    members: Option<u64>,
    sources: Option<u64>,
) -> PlanConfig {
    PlanConfig {
        name: name.into(),
        actions_per_month: actions,
        members,
        sources,
        runs_per_month: None,
    }
}

/// A server whose plans are `starter` (3 Actions, 3 members, 2 Sources) and `team` (unlimited but named).
async fn with_plans(stripe: Option<StripeConfig>) -> TestApp {
    TestApp::spawn_with(move |c| {
        c.billing
            .plans
            .insert("starter".into(), plan("Starter", Some(3), Some(3), Some(2)));
        c.billing
            .plans
            .insert("team".into(), plan("Team", None, None, None));
        let mut runs = plan("Runs", None, None, None);
        runs.runs_per_month = Some(1);
        c.billing.plans.insert("runs".into(), runs);
        c.billing.stripe = stripe;
    })
    .await
}

/// Puts the init workspace on `plan` the operator's way (`hds workspaces set-plan`).
fn set_plan(app: &TestApp, plan: &str) {
    std::fs::write(
        app.data_dir().join("hds.toml"),
        "[billing.plans.starter]\nname = \"Starter\"\nactions_per_month = 3\nmembers = 3\nsources = 2\n\
         [billing.plans.team]\nname = \"Team\"\n[billing.plans.runs]\nname = \"Runs\"\nruns_per_month = 1\n",
    )
    .unwrap();
    hds::cli::workspaces::set_plan(&hds::cli::workspaces::SetPlanArgs {
        workspace_id: app.creds["workspace_id"].as_str().unwrap().into(),
        plan_id: plan.into(),
        config_file: None,
        dir: hds::cli::DataDir {
            data_dir: app.data_dir(),
        },
    })
    .unwrap();
}

#[tokio::test]
async fn billing_shows_the_plan_usage_and_limits_to_every_member() {
    let app = with_plans(None).await;
    let viewer = app.member(Role::Viewer);
    let b: Value = viewer.get("/v1/billing", 200).await;
    assert_eq!(
        b["plan"],
        json!({"id": "self_hosted", "name": "Self-hosted"})
    );
    assert_eq!(
        b["limits"],
        json!({"actions": null, "runs": null, "members": null, "sources": null})
    );
    assert_eq!(
        b["usage"],
        json!({"actions": 0, "runs": 0, "members": 2, "sources": 1})
    );
    assert_eq!(b["portal"], "local");
    assert_eq!(b["can_open_portal"], false);
    assert_eq!(b["billing_owner"]["email"], "admin@example.com");
    assert_eq!(b["billing_owner"]["user_id"], app.creds["user_id"]);
    let (start, end) = (
        b["period"]["start"].as_str().unwrap(),
        b["period"]["end"].as_str().unwrap(),
    );
    assert!(
        start.ends_with("-01T00:00:00.000Z") && end.ends_with("-01T00:00:00.000Z"),
        "{b}"
    );
    assert!(*start <= *app.now() && *app.now() < *end, "{b}");

    set_plan(&app, "starter");
    app.create_action(two_options("one")).await;
    let b: Value = app.admin().get("/v1/billing", 200).await;
    assert_eq!(b["plan"], json!({"id": "starter", "name": "Starter"}));
    assert_eq!(
        b["limits"],
        json!({"actions": 3, "runs": null, "members": 3, "sources": 2})
    );
    assert_eq!(b["usage"]["actions"], 1);
    assert_eq!(b["can_open_portal"], true);
    // Another workspace's owner sees their own workspace's plan.
    let other: Value = app.outsider().get("/v1/billing", 200).await;
    assert_eq!(
        (
            other["plan"]["id"].clone(),
            other["usage"]["actions"].clone()
        ),
        (json!("self_hosted"), json!(0))
    );
    app.anonymous()
        .get_err("/v1/billing", 401, "AUTH_REQUIRED")
        .await;
}

#[tokio::test]
async fn the_action_over_the_monthly_limit_is_refused_and_decisions_still_work() {
    let app = with_plans(None).await;
    set_plan(&app, "starter");
    let mut made = Vec::new();
    for i in 0..3 {
        made.push(app.create_action(two_options(&format!("a{i}"))).await);
    }
    let r = app
        .post("/v1/actions", &app.live_key(), two_options("fourth"))
        .await;
    let e = r.error(403, "PLAN_LIMIT_REACHED");
    assert_eq!(e["details"]["limit"], 3);
    assert_eq!(e["details"]["used"], 3);
    assert_eq!(e["details"]["resource"], "actions");
    assert!(
        e["details"]["period_end"]
            .as_str()
            .unwrap()
            .ends_with("-01T00:00:00.000Z")
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("allows 3 Actions this month"),
        "{e}"
    );
    assert_eq!(app.count_rows("actions"), 3);
    // Decisions, outcomes and receipts are never limited.
    let decided = app.decide(&made[0], json!({"option_id": "approve"})).await;
    assert!(decided.ok(200)["data"]["receipt"].is_object());
    let id = made[0]["id"].as_str().unwrap();
    let report = json!({"status": "success", "duration_ms": 5, "rollback": false, "action_version": 1, "fingerprint": made[0]["fingerprint"]});
    app.post(
        &format!("/v1/actions/{id}/outcome"),
        &app.live_key(),
        report,
    )
    .await
    .ok(201);
    // A new month starts from zero.
    app.state.services.clock.advance(time::Duration::days(32));
    app.create_action(two_options("next month")).await;
    // Back on the unlimited plan, the limit is gone at once.
    set_plan(&app, "self_hosted");
    for i in 0..4 {
        app.create_action(two_options(&format!("free{i}"))).await;
    }
}

#[tokio::test]
async fn concurrent_creates_stop_at_exactly_the_limit() {
    let app = with_plans(None).await;
    set_plan(&app, "starter");
    let key = app.live_key();
    let tries = (0..12).map(|i| app.post("/v1/actions", &key, two_options(&format!("c{i}"))));
    let answers = futures::future::join_all(tries).await;
    let created = answers.iter().filter(|r| r.status == 201).count();
    let refused = answers
        .iter()
        .filter(|r| r.status == 403 && r.body["error"]["code"] == "PLAN_LIMIT_REACHED")
        .count();
    assert_eq!((created, refused), (3, 9));
    assert_eq!(app.count_rows("actions"), 3);
    let b: Value = app.admin().get("/v1/billing", 200).await;
    assert_eq!(b["usage"]["actions"], 3);
}

#[tokio::test]
async fn sources_and_invitations_stop_at_the_plan() {
    let app = with_plans(None).await;
    set_plan(&app, "starter");
    let admin = app.admin();
    // 1 Source from init; the plan allows 2.
    admin
        .post::<Value>("/v1/sources", json!({"name": "second"}), 201)
        .await;
    let e = admin
        .post_err(
            "/v1/sources",
            json!({"name": "third"}),
            403,
            "PLAN_LIMIT_REACHED",
        )
        .await;
    assert_eq!(
        (e["details"]["limit"].clone(), e["details"]["used"].clone()),
        (json!(2), json!(2))
    );
    // A level, not a monthly count: no period end, and the way out named.
    assert!(e["details"].get("period_end").is_none(), "{e}");
    assert!(e["message"].as_str().unwrap().contains("revoke one"), "{e}");
    assert_eq!(app.count_rows("sources"), 2);
    // Members: the owner, one reviewer, one pending invitation = 3.
    app.member(Role::Reviewer);
    let inv = "/v1/workspaces/invitations";
    admin
        .post::<Value>(
            inv,
            json!({"email": "dana@example.com", "role": "viewer"}),
            201,
        )
        .await;
    // Inviting the same person again takes no second place.
    admin
        .post::<Value>(
            inv,
            json!({"email": "dana@example.com", "role": "reviewer"}),
            201,
        )
        .await;
    let before = app.count_rows("invitations");
    let e = admin
        .post_err(
            inv,
            json!({"email": "erin@example.com", "role": "viewer"}),
            403,
            "PLAN_LIMIT_REACHED",
        )
        .await;
    assert_eq!(e["details"]["resource"], "members");
    assert!(e["details"].get("period_end").is_none(), "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("revoke a pending invitation"),
        "{e}"
    );
    assert_eq!(app.count_rows("invitations"), before);
}

/// What the stand-in received: (path, form fields, bearer key).
/// Each call: path, form, Authorization, Idempotency-Key.
/// Every call a stand-in got: path, form, Authorization, Idempotency-Key,
/// method.
type Calls = Arc<
    Mutex<
        Vec<(
            String,
            BTreeMap<String, String>,
            String,
            Option<String>,
            String,
        )>,
    >,
>;

/// A Checkout session a stand-in made.
struct Made {
    /// The stand-in's address (as in `Host`).
    host: String,
    id: String,
    client_reference_id: String,
    customer: String,
    open: bool,
}

static MADE: Mutex<Vec<Made>> = Mutex::new(Vec::new());

/// Keys whose first call a stand-in answered 500: as Stripe, it answers
/// them 500 again.
static FAILED_KEYS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A loopback stand-in for Stripe's API: `/v1/customers` and
/// `/v1/billing_portal/sessions`, form-encoded, answering as Stripe does.
/// How a stand-in misbehaves, by its address (as in `Host`): tests run at
/// once, each with a stand-in of its own.
#[derive(Clone, Copy, PartialEq)]
enum Trouble {
    /// Expiring a Checkout session is refused, as Stripe does one already
    /// paid; the session then reads as `complete`.
    SessionPaid,
    /// Expiring a Checkout session is refused and it reads as `expired`.
    SessionLapsed,
    /// Stripe has no such session (404 `resource_missing`).
    SessionGone,
    /// Expiring a Checkout session answers 500.
    ExpireDown,
    /// Making a Checkout session answers 500.
    SessionsDown,
    /// Making a Checkout session takes two seconds.
    SessionsSlow,
    /// A Checkout session is made, and the answer is a 500.
    SessionMadeThenDown,
}

static TROUBLE: Mutex<Vec<(String, Trouble)>> = Mutex::new(Vec::new());

/// The stand-in at `stripe_base` misbehaves as `t` until this is dropped
/// (a failing test's panic included).
struct InTrouble(String, Trouble);

fn trouble(stripe_base: &str, t: Trouble) -> InTrouble {
    let host = stripe_base.trim_start_matches("http://").to_owned();
    TROUBLE.lock().unwrap().push((host.clone(), t));
    InTrouble(host, t)
}

impl Drop for InTrouble {
    fn drop(&mut self) {
        TROUBLE
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(h, x)| !(*h == self.0 && *x == self.1));
    }
}

fn in_trouble(headers: &HeaderMap, t: Trouble) -> bool {
    let host = headers
        .get("host")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    TROUBLE
        .lock()
        .unwrap()
        .iter()
        .any(|(h, x)| h == host && *x == t)
}

fn session_gone(id: &str) -> axum::response::Response {
    let e = json!({"error": {"type": "invalid_request_error", "code": "resource_missing",
        "param": "session", "message": format!("No such checkout.session: '{id}'")}});
    (StatusCode::NOT_FOUND, axum::Json(e)).into_response()
}

/// The calls a stand-in got from the `before`th on, as "METHOD path".
fn asked_since(calls: &Calls, before: usize) -> Vec<String> {
    calls.lock().unwrap()[before..]
        .iter()
        .map(|c| format!("{} {}", c.4, c.0))
        .collect()
}

/// Checkout intents left in the SQLite file.
fn intents_left(app: &TestApp) -> i64 {
    hds::store::db::open_cli_connection(&app.data_dir().join("hds.db"))
        .unwrap()
        .query_row("SELECT count(*) FROM stripe_checkout_intents", [], |r| {
            r.get(0)
        })
        .unwrap()
}

fn stripe_down() -> axum::response::Response {
    let e = json!({"error": {"type": "api_error", "message": "stripe is down"}});
    (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(e)).into_response()
}

async fn stripe_standin() -> (String, Calls) {
    let calls: Calls = Arc::default();
    async fn handle(
        State(calls): State<Calls>,
        method: axum::http::Method,
        uri: Uri,
        headers: HeaderMap,
        body: Bytes,
    ) -> axum::response::Response {
        let auth = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let form: BTreeMap<String, String> =
            url::form_urlencoded::parse(&body).into_owned().collect();
        let path = uri.path().to_owned();
        let key = headers
            .get("idempotency-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let n = {
            let mut c = calls.lock().unwrap();
            // As Stripe: a key seen before with these parameters answers
            // what it answered then (the call number it had).
            let earlier = key.as_ref().and_then(|k| {
                c.iter()
                    .position(|x| x.3.as_ref() == Some(k) && x.0 == path && x.1 == form)
            });
            c.push((
                path.clone(),
                form.clone(),
                auth.clone(),
                key.clone(),
                method.to_string(),
            ));
            earlier.map_or(c.len(), |i| i + 1)
        };
        if auth != format!("Bearer {SECRET_KEY}") {
            let e = json!({"error": {"type": "invalid_request_error", "message": "Invalid API Key provided"}});
            return (StatusCode::UNAUTHORIZED, axum::Json(e)).into_response();
        }
        // As Stripe: a customer this account never made (or deleted).
        if let Some(c) = form.get("customer")
            && !c.starts_with("cus_standin")
        {
            let e = json!({"error": {"type": "invalid_request_error", "code": "resource_missing",
                "param": "customer", "message": format!("No such customer: '{c}'")}});
            return (StatusCode::BAD_REQUEST, axum::Json(e)).into_response();
        }
        let host = headers
            .get("host")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        // As Stripe: a list of the open sessions of a customer.
        if method == axum::http::Method::GET && path == "/v1/checkout/sessions" {
            let q: BTreeMap<String, String> =
                url::form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes())
                    .into_owned()
                    .collect();
            if let Some(c) = q.get("customer")
                && !c.starts_with("cus_standin")
            {
                let e = json!({"error": {"type": "invalid_request_error", "code": "resource_missing",
                    "param": "customer", "message": format!("No such customer: '{c}'")}});
                return (StatusCode::NOT_FOUND, axum::Json(e)).into_response();
            }
            let data: Vec<Value> = MADE
                .lock()
                .unwrap()
                .iter()
                .filter(|m| m.host == host && Some(&m.customer) == q.get("customer") && m.open)
                .map(|m| {
                    json!({"id": m.id, "object": "checkout.session", "status": "open",
                        "client_reference_id": m.client_reference_id, "customer": m.customer})
                })
                .collect();
            return axum::Json(json!({"object": "list", "data": data, "has_more": false}))
                .into_response();
        }
        // As Stripe: a key whose first call failed fails again.
        if key
            .as_ref()
            .is_some_and(|k| FAILED_KEYS.lock().unwrap().contains(k))
        {
            return stripe_down();
        }
        // As Stripe: a session reads as what became of it.
        if method == axum::http::Method::GET {
            return match path.strip_prefix("/v1/checkout/sessions/") {
                Some(id) if in_trouble(&headers, Trouble::SessionGone) => session_gone(id),
                Some(id) if in_trouble(&headers, Trouble::SessionPaid) => axum::Json(json!({
                    "id": id, "object": "checkout.session", "status": "complete",
                    "subscription": format!("sub_paid_{id}")}))
                .into_response(),
                Some(id) => {
                    axum::Json(json!({"id": id, "object": "checkout.session", "status": "expired"}))
                        .into_response()
                }
                None => StatusCode::NOT_FOUND.into_response(),
            };
        }
        if path == "/v1/checkout/sessions" && in_trouble(&headers, Trouble::SessionsSlow) {
            tokio::time::sleep(std::time::Duration::from_millis(2_000)).await;
        }
        if path == "/v1/checkout/sessions" && in_trouble(&headers, Trouble::SessionsDown) {
            FAILED_KEYS.lock().unwrap().extend(key.clone());
            return stripe_down();
        }
        if path == "/v1/checkout/sessions" {
            let id = format!("cs_test_{n}");
            let mut made = MADE.lock().unwrap();
            if !made.iter().any(|m| m.host == host && m.id == id) {
                made.push(Made {
                    host: host.clone(),
                    id,
                    client_reference_id: form
                        .get("client_reference_id")
                        .cloned()
                        .unwrap_or_default(),
                    customer: form.get("customer").cloned().unwrap_or_default(),
                    open: true,
                });
            }
            if in_trouble(&headers, Trouble::SessionMadeThenDown) {
                FAILED_KEYS.lock().unwrap().extend(key.clone());
                return stripe_down();
            }
        }
        match path.as_str() {
            "/v1/customers" => {
                axum::Json(json!({"id": format!("cus_standin{n}"), "object": "customer"}))
                    .into_response()
            }
            "/v1/billing_portal/sessions" => axum::Json(json!({
                "id": format!("bps_{n}"),
                "object": "billing_portal.session",
                "customer": form.get("customer"),
                "return_url": form.get("return_url"),
                "url": format!("https://billing.stripe.test/p/session_{n}"),
            }))
            .into_response(),
            "/v1/checkout/sessions" => axum::Json(json!({
                "id": format!("cs_test_{n}"),
                "object": "checkout.session",
                "status": "open",
                "mode": form.get("mode"),
                "customer": form.get("customer"),
                "success_url": form.get("success_url"),
                "cancel_url": form.get("cancel_url"),
                "expires_at": 4_102_444_800_i64,
                "url": format!("https://checkout.stripe.test/c/pay/cs_test_{n}"),
            }))
            .into_response(),
            p if p.starts_with("/v1/checkout/sessions/") && p.ends_with("/expire") => {
                let id = p
                    .trim_start_matches("/v1/checkout/sessions/")
                    .trim_end_matches("/expire");
                if in_trouble(&headers, Trouble::ExpireDown) {
                    return stripe_down();
                }
                if in_trouble(&headers, Trouble::SessionGone) {
                    return session_gone(id);
                }
                if in_trouble(&headers, Trouble::SessionPaid)
                    || in_trouble(&headers, Trouble::SessionLapsed)
                {
                    let e = json!({"error": {"type": "invalid_request_error",
                        "message": "Only Checkout Sessions with a status of open can be expired."}});
                    return (StatusCode::BAD_REQUEST, axum::Json(e)).into_response();
                }
                for m in MADE.lock().unwrap().iter_mut() {
                    if m.host == host && m.id == id {
                        m.open = false;
                    }
                }
                axum::Json(json!({"id": id, "object": "checkout.session", "status": "expired"}))
                    .into_response()
            }
            _ => (
                StatusCode::NOT_FOUND,
                axum::Json(json!({"error": {"message": "Unrecognized request URL"}})),
            )
                .into_response(),
        }
    }
    let router = axum::Router::new()
        .fallback(axum::routing::any(handle))
        .with_state(calls.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    (base, calls)
}

fn stripe_config(api_base: &str, secret_key: &str) -> StripeConfig {
    StripeConfig {
        secret_key: secret_key.into(),
        api_base: api_base.into(),
        webhook_secret: WEBHOOK_SECRET.into(),
        prices: [
            ("price_team".to_owned(), "team".to_owned()),
            ("price_starter".to_owned(), "starter".to_owned()),
        ]
        .into(),
    }
}

/// POST /v1/billing/portal with `token`, redirects not followed.
async fn open_portal(app: &TestApp, token: &str) -> reqwest::Response {
    crate::helpers::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .post(format!("{}/v1/billing/portal", app.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn without_stripe_the_portal_is_the_instances_own_page() {
    let app = with_plans(None).await;
    let r = open_portal(&app, &app.user_token()).await;
    assert_eq!(r.status(), 303);
    assert_eq!(
        r.headers()["location"],
        format!("{}/app/billing", app.base).as_str()
    );
    let admin = app.member(Role::Admin);
    let e = admin
        .post_err("/v1/billing/portal", json!(null), 403, "FORBIDDEN")
        .await;
    assert_eq!(e["details"]["required_role"], "owner");
}

#[tokio::test]
async fn the_owner_is_sent_to_a_stripe_portal_session_and_the_customer_is_made_once() {
    let (base, calls) = stripe_standin().await;
    let app = with_plans(Some(stripe_config(&base, SECRET_KEY))).await;
    let b: Value = app.admin().get("/v1/billing", 200).await;
    assert_eq!(b["portal"], "stripe");
    let ws = app.creds["workspace_id"].as_str().unwrap();
    for round in 0..2 {
        let r = open_portal(&app, &app.user_token()).await;
        assert_eq!(r.status(), 303, "round {round}");
        assert!(
            r.headers()["location"]
                .to_str()
                .unwrap()
                .starts_with("https://billing.stripe.test/p/session_")
        );
    }
    let seen = calls.lock().unwrap().clone();
    let paths: Vec<&str> = seen.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/v1/customers",
            "/v1/billing_portal/sessions",
            "/v1/billing_portal/sessions"
        ]
    );
    let key = seen[0]
        .3
        .clone()
        .expect("the customer is made with an Idempotency-Key");
    assert!(key.starts_with(&format!("hds-customer-{ws}-")), "{key}");
    assert_eq!(seen[0].1["metadata[workspace_id]"], ws);
    assert_eq!(seen[0].1["email"], "admin@example.com");
    assert_eq!(seen[1].1["customer"], "cus_standin1");
    assert_eq!(seen[2].1["customer"], "cus_standin1");
    assert_eq!(seen[1].1["return_url"], format!("{}/app/billing", app.base));
    assert!(seen.iter().all(|c| c.2 == format!("Bearer {SECRET_KEY}")));
    // An admin is refused before Stripe hears anything.
    let admin = app.member(Role::Admin);
    let e = admin
        .post_err("/v1/billing/portal", json!(null), 403, "FORBIDDEN")
        .await;
    assert_eq!(e["details"]["required_role"], "owner");
    assert_eq!(calls.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn a_stripe_refusal_or_outage_is_a_502() {
    let (base, calls) = stripe_standin().await;
    let app = with_plans(Some(stripe_config(&base, "sk_test_wrong"))).await;
    let admin = app.admin();
    let e = admin
        .post_err(
            "/v1/billing/portal",
            json!(null),
            502,
            "PROVIDER_UNAVAILABLE",
        )
        .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("Invalid API Key provided"),
        "{e}"
    );
    assert_eq!(calls.lock().unwrap().len(), 1);
    // Nothing stored: the next try creates the customer again.
    let c = rusqlite::Connection::open(app.data_dir().join("hds.db")).unwrap();
    let stored: Option<String> = c
        .query_row("SELECT stripe_customer_id FROM workspaces", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(stored, None);
    // Nobody listening.
    let dead = with_plans(Some(stripe_config("http://127.0.0.1:9", SECRET_KEY))).await;
    dead.admin()
        .post_err(
            "/v1/billing/portal",
            json!(null),
            502,
            "PROVIDER_UNAVAILABLE",
        )
        .await;
}

fn stripe_signature(secret: &str, t: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.{body}").as_bytes());
    format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
}

fn subscription_event(kind: &str, customer: &str, price: &str) -> String {
    stripe_event(
        kind,
        customer,
        price,
        ("sub_1", 1_600_000_000),
        "active",
        1_700_000_000,
    )
}

/// A subscription event as Stripe sends it: the subscription `(id,
/// created)`, its status, and `created`, when Stripe made the event (Unix
/// seconds), which orders events that arrive out of order; a negative
/// `created` leaves it out.
fn stripe_event(
    kind: &str,
    customer: &str,
    price: &str,
    (sub, sub_created): (&str, i64),
    status: &str,
    created: i64,
) -> String {
    let mut event = json!({
        "id": format!("evt_{sub}_{created}"), "object": "event", "type": kind, "created": created,
        "data": {"object": {
            "id": sub, "object": "subscription", "customer": customer, "status": status,
            "created": sub_created,
            "items": {"object": "list", "data": [{"id": "si_1", "price": {"id": price, "object": "price"}}]}
        }}
    });
    if created < 0 {
        event.as_object_mut().unwrap().remove("created");
    }
    event.to_string()
}

async fn send_event(app: &TestApp, body: &str, signature: Option<String>) -> reqwest::Response {
    let mut req = crate::helpers::client_builder()
        .build()
        .unwrap()
        .post(format!("{}/v1/billing/stripe/webhook", app.base))
        .header("content-type", "application/json")
        .body(body.to_owned());
    if let Some(s) = signature {
        req = req.header("stripe-signature", s);
    }
    req.send().await.unwrap()
}

async fn plan_id(app: &TestApp) -> Value {
    app.admin().get::<Value>("/v1/billing", 200).await["plan"]["id"].clone()
}

#[tokio::test]
async fn signed_subscription_events_set_the_plan_and_bad_signatures_change_nothing() {
    let (base, _calls) = stripe_standin().await;
    let app = with_plans(Some(stripe_config(&base, SECRET_KEY))).await;
    assert_eq!(open_portal(&app, &app.user_token()).await.status(), 303);
    let now = app.state.services.clock.now().unix_timestamp();
    let created = subscription_event(
        "customer.subscription.created",
        "cus_standin1",
        "price_team",
    );

    // Refused: no header, another secret, a tampered body, a stale or future timestamp.
    let tampered = created.replace("price_team", "price_teaM");
    for (body, sig) in [
        (created.clone(), None),
        (
            created.clone(),
            Some(stripe_signature("whsec_other", now, &created)),
        ),
        (
            tampered.clone(),
            Some(stripe_signature(WEBHOOK_SECRET, now, &created)),
        ),
        (
            created.clone(),
            Some(stripe_signature(WEBHOOK_SECRET, now - 360, &created)),
        ),
        (
            created.clone(),
            Some(stripe_signature(WEBHOOK_SECRET, now + 360, &created)),
        ),
        (created.clone(), Some("v1=deadbeef".into())),
        // Timestamps at the ends of i64: refused as stale, never overflowing.
        (
            created.clone(),
            Some(stripe_signature(WEBHOOK_SECRET, i64::MIN, &created)),
        ),
        (
            created.clone(),
            Some(stripe_signature(WEBHOOK_SECRET, i64::MAX, &created)),
        ),
    ] {
        let r = send_event(&app, &body, sig.clone()).await;
        assert_eq!(r.status(), 400, "{sig:?}");
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["error"]["code"], "INVALID_SIGNATURE", "{e}");
        assert_eq!(plan_id(&app).await, "self_hosted");
    }

    let r = send_event(
        &app,
        &created,
        Some(stripe_signature(WEBHOOK_SECRET, now, &created)),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"received": true, "plan_id": "team"})
    );
    assert_eq!(plan_id(&app).await, "team");

    // Unknown events, customers and prices are acknowledged and ignored.
    for body in [
        json!({"id": "evt_2", "type": "invoice.paid", "data": {"object": {"id": "in_1"}}})
            .to_string(),
        subscription_event("customer.subscription.updated", "cus_unknown", "price_team"),
        subscription_event(
            "customer.subscription.updated",
            "cus_standin1",
            "price_unmapped",
        ),
    ] {
        let r = send_event(
            &app,
            &body,
            Some(stripe_signature(WEBHOOK_SECRET, now, &body)),
        )
        .await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.json::<Value>().await.unwrap()["plan_id"], Value::Null);
        assert_eq!(plan_id(&app).await, "team");
    }

    let deleted = subscription_event(
        "customer.subscription.deleted",
        "cus_standin1",
        "price_team",
    );
    let r = send_event(
        &app,
        &deleted,
        Some(stripe_signature(WEBHOOK_SECRET, now, &deleted)),
    )
    .await;
    assert_eq!(r.json::<Value>().await.unwrap()["plan_id"], "self_hosted");
    assert_eq!(plan_id(&app).await, "self_hosted");
}

/// Events about a subscription the customer moved away from, events older
/// than the last one applied, and a subscription not paid for yet change
/// nothing; one no longer paid for ends the plan.
#[tokio::test]
async fn only_the_current_paid_subscription_sets_the_plan_in_stripes_order() {
    let (base, _calls) = stripe_standin().await;
    let app = with_plans(Some(stripe_config(&base, SECRET_KEY))).await;
    assert_eq!(open_portal(&app, &app.user_token()).await.status(), 303);
    let now = app.state.services.clock.now().unix_timestamp();
    let (created, updated, deleted) = (
        "customer.subscription.created",
        "customer.subscription.updated",
        "customer.subscription.deleted",
    );
    // Subscriptions (id, created, price): A then B, a starter and a team
    // plan, so the plan shows which one the workspace follows; D and E later.
    let a = (("sub_a", 50), "price_starter");
    let b = (("sub_b", 190), "price_team");
    let d = (("sub_d", 650), "price_starter");
    let e = (("sub_e", 800), "price_team");
    let f = (("sub_f", 900), "price_starter");
    let g = (("sub_g", 900), "price_team");
    let h = (("sub_h", 950), "price_starter");
    let i = (("sub_i", 1030), "price_starter");
    // (event, subscription, its status, the event's `created`, the
    // answer's plan_id, the workspace's plan after it), as they arrive.
    let steps = [
        // Not paid yet: no plan; paid: the plan.
        (created, a, "incomplete", 100, None, "self_hosted"),
        (updated, a, "active", 110, Some("starter"), "starter"),
        // The customer moves to B. Updates of A (say, set to cancel at the
        // period's end, still active) and its end change nothing.
        (created, b, "active", 200, Some("team"), "team"),
        (updated, a, "active", 205, None, "team"),
        (deleted, a, "canceled", 300, None, "team"),
        // An event of B older than the last one applied.
        (updated, b, "unpaid", 190, None, "team"),
        // Payment retries run out: unpaid ends the plan; a late `active`
        // of the same second does not revive it; paid again, it returns.
        (updated, b, "past_due", 310, Some("team"), "team"),
        (
            updated,
            b,
            "unpaid",
            400,
            Some("self_hosted"),
            "self_hosted",
        ),
        (updated, b, "active", 400, None, "self_hosted"),
        (updated, b, "active", 500, Some("team"), "team"),
        (
            deleted,
            b,
            "canceled",
            600,
            Some("self_hosted"),
            "self_hosted",
        ),
        // D is paid; the customer moves to E and D's end arrives before
        // E's creation: E still takes over.
        (created, d, "active", 700, Some("starter"), "starter"),
        (
            deleted,
            d,
            "canceled",
            810,
            Some("self_hosted"),
            "self_hosted",
        ),
        (created, e, "active", 800, Some("team"), "team"),
        // An event without `created` applies, and the order is kept: an
        // older one after it still changes nothing.
        (updated, e, "active", -1, Some("team"), "team"),
        (updated, e, "unpaid", 790, None, "team"),
        // Two subscriptions of the same second: the greater id is followed,
        // whichever arrives first.
        (created, g, "active", 910, Some("team"), "team"),
        (created, f, "active", 905, None, "team"),
        (updated, g, "active", 920, Some("team"), "team"),
        // H ends before the workspace ever followed it, and its older
        // `active` arrives after: an end for good is remembered, so H never
        // takes over (nor does it as `unpaid`, which Stripe may revive).
        (deleted, h, "canceled", 1000, None, "team"),
        (created, h, "active", 990, None, "team"),
        (updated, h, "active", 1010, None, "team"),
        (updated, g, "active", 1020, Some("team"), "team"),
        // An `incomplete_expired` (a first payment never made) is an end
        // for good too.
        (created, i, "incomplete", 1030, None, "team"),
        (updated, i, "incomplete_expired", 1040, None, "team"),
        (updated, i, "active", 1035, None, "team"),
    ];
    for (kind, (sub, price), status, at, answer, plan) in steps {
        let body = stripe_event(kind, "cus_standin1", price, sub, status, at);
        let r = send_event(
            &app,
            &body,
            Some(stripe_signature(WEBHOOK_SECRET, now, &body)),
        )
        .await;
        assert_eq!(r.status(), 200);
        let got = r.json::<Value>().await.unwrap()["plan_id"].clone();
        assert_eq!(got, json!(answer), "{kind} {sub:?} {status} at {at}");
        assert_eq!(plan_id(&app).await, plan, "{kind} {sub:?} {status} at {at}");
    }
}

/// A workspace following no subscription (its plan set by the operator)
/// keeps that plan when a subscription it never followed ends, say a first
/// payment never made; a paid one still takes over.
#[tokio::test]
async fn the_end_of_a_subscription_never_followed_keeps_the_operators_plan() {
    let (base, _calls) = stripe_standin().await;
    let app = with_plans(Some(stripe_config(&base, SECRET_KEY))).await;
    assert_eq!(open_portal(&app, &app.user_token()).await.status(), 303);
    set_plan(&app, "team");
    let now = app.state.services.clock.now().unix_timestamp();
    let send = |kind: &'static str, sub: (&'static str, i64), status: &'static str, at: i64| {
        let app = &app;
        async move {
            let body = stripe_event(kind, "cus_standin1", "price_starter", sub, status, at);
            let r = send_event(
                app,
                &body,
                Some(stripe_signature(WEBHOOK_SECRET, now, &body)),
            )
            .await;
            assert_eq!(r.status(), 200);
            r.json::<Value>().await.unwrap()["plan_id"].clone()
        }
    };
    let q = ("sub_q", 100);
    assert_eq!(
        send("customer.subscription.created", q, "incomplete", 100).await,
        Value::Null
    );
    assert_eq!(
        send(
            "customer.subscription.updated",
            q,
            "incomplete_expired",
            200
        )
        .await,
        Value::Null
    );
    assert_eq!(plan_id(&app).await, "team");
    assert_eq!(
        send(
            "customer.subscription.deleted",
            ("sub_r", 150),
            "canceled",
            210
        )
        .await,
        Value::Null
    );
    assert_eq!(plan_id(&app).await, "team");
    assert_eq!(
        send(
            "customer.subscription.created",
            ("sub_s", 300),
            "active",
            300
        )
        .await,
        "starter"
    );
    assert_eq!(plan_id(&app).await, "starter");
}

/// POST /v1/billing/checkout with `token` and `body`, redirects not followed.
async fn start_checkout(app: &TestApp, token: &str, body: Value) -> reqwest::Response {
    crate::helpers::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .post(format!("{}/v1/billing/checkout", app.base))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// A dashboard billing form's answer: 200 with a page that opens Stripe at
/// once (meta refresh) and links there, never a 303 — the Billing page's CSP
/// (`form-action 'self'`) makes browsers refuse a redirect to another site
/// after a form post (browser::billing_buttons_open_stripe_in_chromium).
async fn opens_stripe(r: reqwest::Response, prefix: &str) {
    assert_eq!(r.status(), 200);
    let html = r.text().await.unwrap();
    let refresh = html
        .split(r#"<meta http-equiv="refresh" content="0; url="#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default();
    assert!(refresh.starts_with(prefix), "{html}");
    assert!(
        html.contains(&format!(r#"id="billing-leave" href="{refresh}""#)),
        "{html}"
    );
}

/// An owner starts a subscription through Stripe Checkout (the customer
/// made on first use, the plan's price, where Stripe sends the owner back);
/// the plan itself comes with the subscription's webhook, and while that
/// subscription is live Checkout is refused for the portal.
#[tokio::test]
async fn an_owner_subscribes_through_stripe_checkout() {
    let (base, calls) = stripe_standin().await;
    let app = with_plans(Some(stripe_config(&base, SECRET_KEY))).await;
    let token = app.user_token();
    let ws = app.creds["workspace_id"].as_str().unwrap().to_owned();
    // The Billing page offers the plans Stripe prices map to.
    let owner = app.browser(app.admin().person()).await;
    let html = owner.page("/app/billing").await;
    assert!(html.contains(">Subscribe to Starter</button>"), "{html}");
    assert!(html.contains(">Subscribe to Team</button>"), "{html}");

    let r = start_checkout(&app, &token, json!({"plan_id": "team"})).await;
    assert_eq!(r.status(), 303);
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        location.starts_with("https://checkout.stripe.test/c/pay/cs_test_"),
        "{location}"
    );
    let seen = calls.lock().unwrap().clone();
    let paths: Vec<&str> = seen.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(paths, ["/v1/customers", "/v1/checkout/sessions"]);
    let key = seen[1].3.clone().unwrap();
    assert!(
        key.starts_with(&format!("hds-checkout-{ws}-team-after-first-")),
        "{key}"
    );
    let form = &seen[1].1;
    let want = [
        ("mode", "subscription".to_owned()),
        ("customer", "cus_standin1".to_owned()),
        ("line_items[0][price]", "price_team".to_owned()),
        ("line_items[0][quantity]", "1".to_owned()),
        ("client_reference_id", ws.clone()),
        ("subscription_data[metadata][workspace_id]", ws.clone()),
        ("subscription_data[metadata][plan_id]", "team".to_owned()),
        (
            "success_url",
            format!("{}/app/billing?done=checkout", app.base),
        ),
        ("cancel_url", format!("{}/app/billing", app.base)),
    ];
    for (k, v) in want {
        assert_eq!(form.get(k), Some(&v), "{k}: {form:?}");
    }
    assert_eq!(seen[1].2, format!("Bearer {SECRET_KEY}"));
    // The same plan again (a second click, a second owner): the same
    // session, nothing new at Stripe.
    let r = start_checkout(&app, &token, json!({"plan_id": "team"})).await;
    assert_eq!(r.headers()["location"].to_str().unwrap(), location);
    assert_eq!(calls.lock().unwrap().len(), 2);
    // Another plan: the open session is expired at Stripe first, so two
    // cannot both be paid.
    let r = start_checkout(&app, &token, json!({"plan_id": "starter"})).await;
    assert_eq!(r.status(), 303);
    let starter_url = r.headers()["location"].to_str().unwrap().to_owned();
    assert_ne!(starter_url, location);
    let seen = calls.lock().unwrap().clone();
    let paths: Vec<&str> = seen.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/v1/customers",
            "/v1/checkout/sessions",
            "/v1/checkout/sessions/cs_test_2/expire",
            "/v1/checkout/sessions"
        ]
    );
    let key = seen[3].3.clone().unwrap();
    assert!(
        key.starts_with(&format!("hds-checkout-{ws}-starter-after-cs_test_2-")),
        "{key}"
    );
    // A session Stripe will not close because it was paid meanwhile (read
    // back as `complete`): 409 naming the subscription, nothing new made.
    let mishap = trouble(&base, Trouble::SessionPaid);
    let e = app
        .admin()
        .post_err(
            "/v1/billing/checkout",
            json!({"plan_id": "team"}),
            409,
            "ALREADY_SUBSCRIBED",
        )
        .await;
    drop(mishap);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("the checkout started for plan starter was paid meanwhile"),
        "{e}"
    );
    assert_eq!(e["details"]["subscription_id"], "sub_paid_cs_test_4", "{e}");
    let seen = calls.lock().unwrap().clone();
    let paths: Vec<&str> = seen[4..].iter().map(|c| c.0.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/v1/checkout/sessions/cs_test_4/expire",
            "/v1/checkout/sessions/cs_test_4"
        ],
        "the refused expire and the read of the session only"
    );
    // Back from Checkout before Stripe confirms: thanked, offered nothing.
    let html = owner.page("/app/billing?done=checkout").await;
    assert!(!html.contains("Subscribe to"), "{html}");

    // A plan no price maps to, or none at all: 422 naming what would do.
    let e = app
        .admin()
        .post_err(
            "/v1/billing/checkout",
            json!({"plan_id": "gold"}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(e["details"]["errors"][0]["field"], "plan_id", "{e}");
    assert_eq!(e["details"]["plan_ids"], json!(["starter", "team"]));
    app.admin()
        .post_err("/v1/billing/checkout", json!({}), 422, "VALIDATION_ERROR")
        .await;
    // An empty one (the dashboard's form sent without a plan) asks for one.
    let e = app
        .admin()
        .post_err(
            "/v1/billing/checkout",
            json!({"plan_id": ""}),
            422,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(
        e["details"]["errors"][0]["message"], "choose a plan: one of starter, team",
        "{e}"
    );
    // Owners only.
    let admin = app.member(Role::Admin);
    let e = admin
        .post_err(
            "/v1/billing/checkout",
            json!({"plan_id": "team"}),
            403,
            "FORBIDDEN",
        )
        .await;
    assert_eq!(e["details"]["required_role"], "owner");

    // Stripe confirms: the plan is set by the webhook, and Checkout now
    // sends the owner to the portal instead.
    let now = app.state.services.clock.now().unix_timestamp();
    let body = stripe_event(
        "customer.subscription.created",
        "cus_standin1",
        "price_team",
        ("sub_c", 100),
        "active",
        100,
    );
    let r = send_event(
        &app,
        &body,
        Some(stripe_signature(WEBHOOK_SECRET, now, &body)),
    )
    .await;
    assert_eq!(r.json::<Value>().await.unwrap()["plan_id"], "team");
    let e = app
        .admin()
        .post_err(
            "/v1/billing/checkout",
            json!({"plan_id": "starter"}),
            409,
            "ALREADY_SUBSCRIBED",
        )
        .await;
    assert_eq!(e["details"]["subscription_id"], "sub_c");
    let html = owner.page("/app/billing?done=checkout").await;
    assert!(!html.contains("Subscribe to"), "{html}");
    assert!(
        html.contains("Thank you. The plan changes here as soon as Stripe confirms"),
        "{html}"
    );
    assert!(html.contains("<strong>Team</strong> plan"), "{html}");
    // Ended: Checkout again, from the dashboard's form, for the same customer.
    let body = stripe_event(
        "customer.subscription.deleted",
        "cus_standin1",
        "price_team",
        ("sub_c", 100),
        "canceled",
        200,
    );
    send_event(
        &app,
        &body,
        Some(stripe_signature(WEBHOOK_SECRET, now, &body)),
    )
    .await;
    let html = owner.page("/app/billing").await;
    assert!(html.contains(">Subscribe to Starter</button>"), "{html}");
    let r = owner
        .post_form(
            "/app/billing/checkout",
            Some(app.base.as_str()),
            &[("_csrf", owner.csrf()), ("plan_id", "starter")],
        )
        .await;
    // A page that opens Stripe, not a 303 (see `opens_stripe`).
    opens_stripe(r, "https://checkout.stripe.test/").await;
    let seen = calls.lock().unwrap().clone();
    assert_eq!(seen.len(), 7, "no second customer: {seen:?}");
    let last = &seen[6];
    assert_eq!(
        last.0, "/v1/checkout/sessions",
        "the paid session is not expired again"
    );
    assert_eq!(
        last.1.get("customer").map(String::as_str),
        Some("cus_standin1")
    );
    assert_eq!(
        last.1.get("line_items[0][price]").map(String::as_str),
        Some("price_starter")
    );
    // Its key names the session the last subscription came from, so Stripe
    // never answers that one again.
    let key = last.3.clone().unwrap();
    assert!(
        key.starts_with(&format!("hds-checkout-{ws}-starter-after-cs_test_4-")),
        "{key}"
    );
}

/// Checkouts for two plans started at the same instant (two owners, two
/// tabs): one waits for the other, finds its session and expires it before
/// making its own, so only one session is ever open to be paid.
#[tokio::test]
async fn checkouts_started_at_once_leave_one_session_open() {
    let (base, calls) = stripe_standin().await;
    let app = with_plans(Some(stripe_config(&base, SECRET_KEY))).await;
    let token = app.user_token();
    for round in 0..4 {
        let (a, b) = tokio::join!(
            start_checkout(&app, &token, json!({"plan_id": "team"})),
            start_checkout(&app, &token, json!({"plan_id": "starter"})),
        );
        assert_eq!(
            (a.status().as_u16(), b.status().as_u16()),
            (303, 303),
            "round {round}"
        );
        let seen = calls.lock().unwrap().clone();
        let made: Vec<String> = seen
            .iter()
            .enumerate()
            .filter(|(_, c)| c.0 == "/v1/checkout/sessions")
            .map(|(i, _)| format!("cs_test_{}", i + 1))
            .collect();
        let expired: Vec<String> = seen
            .iter()
            .filter_map(|c| c.0.strip_prefix("/v1/checkout/sessions/"))
            .map(|p| p.trim_end_matches("/expire").to_owned())
            .collect();
        let open: Vec<&String> = made.iter().filter(|m| !expired.contains(m)).collect();
        assert_eq!(
            open.len(),
            1,
            "round {round}: made {made:?}, expired {expired:?}"
        );
        // The one left open is the one kept, and the last answer sent there.
        let kept: (String, String) =
            hds::store::db::open_cli_connection(&app.data_dir().join("hds.db"))
                .unwrap()
                .query_row(
                    "SELECT session_id, url FROM stripe_checkouts WHERE workspace_id = ?1",
                    [app.creds["workspace_id"].as_str().unwrap()],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
        assert_eq!(&kept.0, open[0], "round {round}");
        let answered = [a, b].map(|r| r.headers()["location"].to_str().unwrap().to_owned());
        assert!(
            answered.contains(&kept.1),
            "round {round}: {answered:?} {kept:?}"
        );
    }
    // One customer for all of it.
    let customers = calls
        .lock()
        .unwrap()
        .iter()
        .filter(|c| c.0 == "/v1/customers")
        .count();
    assert_eq!(customers, 1);
}

/// Stripe failing halfway through a change of plan: down while the open
/// session is expired is a 502 that keeps that session; down after it was
/// expired is a 502 too, and the expired session is never offered again.
#[tokio::test]
async fn a_change_of_plan_that_stripe_fails_leaves_no_dead_session() {
    let (base, calls) = stripe_standin().await;
    let app = with_plans(Some(stripe_config(&base, SECRET_KEY))).await;
    let token = app.user_token();
    let r = start_checkout(&app, &token, json!({"plan_id": "team"})).await;
    let team = r.headers()["location"].to_str().unwrap().to_owned();
    assert!(team.ends_with("/cs_test_2"), "{team}");

    // Stripe down as the team session is expired: 502, the session kept.
    let mishap = trouble(&base, Trouble::ExpireDown);
    let e = app
        .admin()
        .post_err(
            "/v1/billing/checkout",
            json!({"plan_id": "starter"}),
            502,
            "PROVIDER_UNAVAILABLE",
        )
        .await;
    drop(mishap);
    assert!(
        e["message"].as_str().unwrap().contains("stripe is down"),
        "{e}"
    );
    let r = start_checkout(&app, &token, json!({"plan_id": "team"})).await;
    assert_eq!(r.headers()["location"].to_str().unwrap(), team);

    // Expired, then Stripe down as the starter session is made: 502, and
    // the team session, now expired, is no longer answered.
    let mishap = trouble(&base, Trouble::SessionsDown);
    app.admin()
        .post_err(
            "/v1/billing/checkout",
            json!({"plan_id": "starter"}),
            502,
            "PROVIDER_UNAVAILABLE",
        )
        .await;
    drop(mishap);
    let before = calls.lock().unwrap().len();
    let r = start_checkout(&app, &token, json!({"plan_id": "team"})).await;
    assert_eq!(r.status(), 303);
    let again = r.headers()["location"].to_str().unwrap().to_owned();
    assert_ne!(again, team, "an expired session is never offered");
    // A 500 may have come after Stripe made the starter session: the next
    // start looks for the customer's open sessions of this workspace
    // (none: this one was never made), and asks under a key of its own, as
    // Stripe answers the failed key 500 again for a day.
    let seen = calls.lock().unwrap().clone();
    let asked = asked_since(&calls, before);
    assert_eq!(
        asked,
        ["GET /v1/checkout/sessions", "POST /v1/checkout/sessions"],
    );
    let ws = app.creds["workspace_id"].as_str().unwrap();
    let failed = seen[..before]
        .iter()
        .rev()
        .find(|c| c.0 == "/v1/checkout/sessions")
        .and_then(|c| c.3.clone())
        .unwrap();
    let key = seen[before + 1].3.clone().unwrap();
    assert_ne!(key, failed);
    assert!(
        key.starts_with(&format!("hds-checkout-{ws}-team-after-cs_test_2-")),
        "{key}"
    );

    // A session Stripe will not expire because it lapsed already (read back
    // as `expired`), or that Stripe does not know at all (test keys swapped
    // for live ones): nothing left to pay, so the new session is made.
    for (mishap, plan) in [
        (Trouble::SessionLapsed, "starter"),
        (Trouble::SessionGone, "team"),
    ] {
        let open = calls
            .lock()
            .unwrap()
            .iter()
            .enumerate()
            .rfind(|(_, c)| c.0 == "/v1/checkout/sessions")
            .map(|(i, _)| format!("cs_test_{}", i + 1))
            .unwrap();
        let before = calls.lock().unwrap().len();
        let trouble = trouble(&base, mishap);
        let r = start_checkout(&app, &token, json!({"plan_id": plan})).await;
        drop(trouble);
        assert_eq!(r.status(), 303, "{plan}");
        let seen = calls.lock().unwrap().clone();
        let paths: Vec<String> = seen[before..].iter().map(|c| c.0.clone()).collect();
        let expire = format!("/v1/checkout/sessions/{open}/expire");
        let read = format!("/v1/checkout/sessions/{open}");
        let make = "/v1/checkout/sessions".to_owned();
        let expected = match mishap {
            // Not found when expired: nothing to read back.
            Trouble::SessionGone => vec![expire, make],
            _ => vec![expire, read, make],
        };
        assert_eq!(paths, expected, "{plan}");
        assert_eq!(
            r.headers()["location"].to_str().unwrap(),
            format!("https://checkout.stripe.test/c/pay/cs_test_{}", seen.len())
        );
    }
}

/// An owner who closes the tab while Stripe makes the session: the start
/// runs to its end, so the session Stripe made is kept (and the next
/// request for another plan expires it) rather than left open unknown.
#[tokio::test]
async fn a_checkout_the_client_gave_up_on_still_keeps_its_session() {
    let (base, calls) = stripe_standin().await;
    let app = with_plans(Some(stripe_config(&base, SECRET_KEY))).await;
    let token = app.user_token();
    let slow = trouble(&base, Trouble::SessionsSlow);
    let gave_up = crate::helpers::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        // Long enough to be past the lock (a busy machine), well short of
        // Stripe's two seconds.
        .timeout(std::time::Duration::from_millis(1_000))
        .build()
        .unwrap()
        .post(format!("{}/v1/billing/checkout", app.base))
        .bearer_auth(&token)
        .json(&json!({"plan_id": "team"}))
        .send()
        .await;
    assert!(gave_up.is_err(), "the client stopped waiting");
    let ws = app.creds["workspace_id"].as_str().unwrap().to_owned();
    let kept = || -> Option<String> {
        hds::store::db::open_cli_connection(&app.data_dir().join("hds.db"))
            .unwrap()
            .query_row(
                "SELECT session_id FROM stripe_checkouts WHERE workspace_id = ?1",
                [&ws],
                |r| r.get(0),
            )
            .ok()
    };
    let mut session = None;
    // Up to 10 s: the machine may be busy.
    for _ in 0..500 {
        session = kept();
        if session.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    drop(slow);
    assert_eq!(
        session.as_deref(),
        Some("cs_test_2"),
        "kept after the client left"
    );
    // The next start for another plan closes it first.
    let r = start_checkout(&app, &token, json!({"plan_id": "starter"})).await;
    assert_eq!(r.status(), 303);
    let paths: Vec<String> = calls.lock().unwrap().iter().map(|c| c.0.clone()).collect();
    assert!(
        paths.contains(&"/v1/checkout/sessions/cs_test_2/expire".to_owned()),
        "{paths:?}"
    );
}

/// hds stopped (a crash, a kill) after asking Stripe for a session and
/// before storing it: the intent it wrote first makes the next checkout
/// look for the workspace's open sessions at Stripe and expire those it
/// does not know before another gets made, so two sessions can never both
/// be paid.
#[tokio::test]
async fn a_session_asked_for_before_a_crash_is_found_and_closed() {
    let (base, calls) = stripe_standin().await;
    let app = with_plans(Some(stripe_config(&base, SECRET_KEY))).await;
    let token = app.user_token();
    let ws = app.creds["workspace_id"].as_str().unwrap().to_owned();
    let r = start_checkout(&app, &token, json!({"plan_id": "team"})).await;
    assert_eq!(r.status(), 303);
    // Then a change to Starter: the Team session was expired and
    // forgotten, the intent written, Stripe made the session, and hds
    // stopped before storing it.
    let key = format!("hds-checkout-{ws}-starter-after-cs_test_2-crashed");
    let form: Vec<(String, String)> = [
        ("mode", "subscription"),
        ("customer", "cus_standin1"),
        ("line_items[0][price]", "price_starter"),
        ("line_items[0][quantity]", "1"),
        ("client_reference_id", ws.as_str()),
        ("subscription_data[metadata][workspace_id]", ws.as_str()),
        ("subscription_data[metadata][plan_id]", "starter"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    let http = reqwest::Client::new();
    http.post(format!("{base}/v1/checkout/sessions/cs_test_2/expire"))
        .bearer_auth(SECRET_KEY)
        .send()
        .await
        .unwrap();
    let db = hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap();
    db.execute(
        "UPDATE stripe_checkouts SET expires_at = 0 WHERE workspace_id = ?1",
        [&ws],
    )
    .unwrap();
    db.execute(
        "INSERT INTO stripe_checkout_intents (workspace_id, plan_id, idempotency_key, form, created_at)
         VALUES (?1, 'starter', ?2, ?3, '2026-11-27T18:00:00Z')",
        [&ws, &key, &serde_json::to_string(&form).unwrap()],
    )
    .unwrap();
    let made: Value = http
        .post(format!("{base}/v1/checkout/sessions"))
        .bearer_auth(SECRET_KEY)
        .header("idempotency-key", &key)
        .form(&form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let orphan = made["id"].as_str().unwrap().to_owned();
    let before = calls.lock().unwrap().len();

    // The next checkout, for Team again: the orphan is found and expired
    // first, then Team gets a session of its own.
    let r = start_checkout(&app, &token, json!({"plan_id": "team"})).await;
    assert_eq!(r.status(), 303);
    let seen = calls.lock().unwrap().clone();
    let asked = asked_since(&calls, before);
    assert_eq!(
        asked,
        [
            "GET /v1/checkout/sessions".to_owned(),
            format!("POST /v1/checkout/sessions/{orphan}/expire"),
            "POST /v1/checkout/sessions".to_owned(),
        ]
    );
    assert!(
        r.headers()["location"]
            .to_str()
            .unwrap()
            .ends_with(&format!("cs_test_{}", seen.len())),
    );
    let left = intents_left(&app);
    assert_eq!(left, 0, "nothing left to look for");
}

/// Stripe made the session and answered 500 (or the answer was lost): the
/// owner saw a 502 and no link, and the next start finds that session
/// among the customer's open ones and expires it before making its own.
#[tokio::test]
async fn a_session_made_behind_a_5xx_is_found_and_closed() {
    let (base, calls) = stripe_standin().await;
    let app = with_plans(Some(stripe_config(&base, SECRET_KEY))).await;
    let token = app.user_token();
    let mishap = trouble(&base, Trouble::SessionMadeThenDown);
    app.admin()
        .post_err(
            "/v1/billing/checkout",
            json!({"plan_id": "team"}),
            502,
            "PROVIDER_UNAVAILABLE",
        )
        .await;
    drop(mishap);
    let seen = calls.lock().unwrap().clone();
    let made = seen
        .iter()
        .rposition(|c| c.0 == "/v1/checkout/sessions")
        .map(|i| format!("cs_test_{}", i + 1))
        .unwrap();
    let before = seen.len();
    let r = start_checkout(&app, &token, json!({"plan_id": "team"})).await;
    assert_eq!(r.status(), 303);
    let asked = asked_since(&calls, before);
    assert_eq!(
        asked,
        [
            "GET /v1/checkout/sessions".to_owned(),
            format!("POST /v1/checkout/sessions/{made}/expire"),
            "POST /v1/checkout/sessions".to_owned(),
        ]
    );
    assert!(
        !r.headers()["location"]
            .to_str()
            .unwrap()
            .ends_with(&format!("/{made}")),
        "the session never shown is not handed out"
    );
}

/// What the look for unknown sessions leaves alone: a session of the same
/// customer naming another workspace, and nothing at all when Stripe no
/// longer has the customer the intent named (its sessions went with it).
#[tokio::test]
async fn the_look_for_unknown_sessions_touches_only_this_workspaces() {
    let (base, calls) = stripe_standin().await;
    let app = with_plans(Some(stripe_config(&base, SECRET_KEY))).await;
    let token = app.user_token();
    let ws = app.creds["workspace_id"].as_str().unwrap().to_owned();
    let r = start_checkout(&app, &token, json!({"plan_id": "team"})).await;
    assert_eq!(r.status(), 303);
    let http = reqwest::Client::new();
    let made: Value = http
        .post(format!("{base}/v1/checkout/sessions"))
        .bearer_auth(SECRET_KEY)
        .form(&[
            ("mode", "subscription"),
            ("customer", "cus_standin1"),
            ("client_reference_id", "ws_someone_else"),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let theirs = made["id"].as_str().unwrap().to_owned();
    let db = hds::store::db::open_cli_connection(&app.data_dir().join("hds.db")).unwrap();
    let intent = |customer: &str| {
        let form =
            serde_json::to_string(&[("customer", customer), ("client_reference_id", &ws)]).unwrap();
        db.execute(
            "INSERT OR REPLACE INTO stripe_checkout_intents (workspace_id, plan_id, idempotency_key, form, created_at)
             VALUES (?1, 'starter', 'k', ?2, '2026-11-27T18:00:00Z')",
            [&ws, &form],
        )
        .unwrap();
    };
    // The intent names this workspace's customer: its Team session is the
    // one offered (kept), the other workspace's is left open.
    intent("cus_standin1");
    let before = calls.lock().unwrap().len();
    let r = start_checkout(&app, &token, json!({"plan_id": "team"})).await;
    assert_eq!(r.status(), 303);
    let asked = asked_since(&calls, before);
    assert_eq!(asked, ["GET /v1/checkout/sessions"], "{theirs} untouched");
    assert!(
        r.headers()["location"]
            .to_str()
            .unwrap()
            .ends_with("/cs_test_2")
    );
    // A customer Stripe no longer has: nothing to look at, the intent goes.
    intent("cus_gone");
    let r = start_checkout(&app, &token, json!({"plan_id": "team"})).await;
    assert_eq!(r.status(), 303);
    let left = intents_left(&app);
    assert_eq!(left, 0);
}

/// A customer kept that Stripe no longer has (deleted, or the operator
/// moved from test keys to live ones): the portal and Checkout make a new
/// customer once, keep it, and go on; nothing is left broken.
#[tokio::test]
async fn a_customer_stripe_no_longer_has_is_made_again() {
    let (base, calls) = stripe_standin().await;
    let app = with_plans(Some(stripe_config(&base, SECRET_KEY))).await;
    let ws = app.creds["workspace_id"].as_str().unwrap().to_owned();
    let set = |id: &'static str| {
        let ws = ws.clone();
        app.state
            .services
            .db
            .write(move |c| hds::store::billing::set_stripe_customer(c, &ws, id))
    };
    set("cus_deleted").await.unwrap();
    let r = open_portal(&app, &app.user_token()).await;
    assert_eq!(r.status(), 303);
    let seen = calls.lock().unwrap().clone();
    let paths: Vec<&str> = seen.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/v1/billing_portal/sessions",
            "/v1/customers",
            "/v1/billing_portal/sessions"
        ]
    );
    assert!(
        seen[1]
            .3
            .as_deref()
            .unwrap()
            .ends_with("-after-cus_deleted"),
        "{seen:?}"
    );
    assert_eq!(seen[2].1["customer"], "cus_standin2");
    let b: Value = app.admin().get("/v1/billing", 200).await;
    assert_eq!(b["portal"], "stripe");
    // Kept: the next portal asks Stripe once.
    open_portal(&app, &app.user_token()).await;
    assert_eq!(calls.lock().unwrap().len(), 4);
    assert_eq!(calls.lock().unwrap()[3].1["customer"], "cus_standin2");
    // Checkout alike.
    app.state
        .services
        .db
        .write({
            let ws = ws.clone();
            move |c| {
                c.execute(
                    "UPDATE workspaces SET stripe_customer_id = 'cus_gone' WHERE id = ?1",
                    [&ws],
                )?;
                Ok(())
            }
        })
        .await
        .unwrap();
    let r = start_checkout(&app, &app.user_token(), json!({"plan_id": "team"})).await;
    assert_eq!(r.status(), 303);
    let seen = calls.lock().unwrap().clone();
    let last: Vec<&str> = seen[4..].iter().map(|c| c.0.as_str()).collect();
    assert_eq!(
        last,
        [
            "/v1/checkout/sessions",
            "/v1/customers",
            "/v1/checkout/sessions"
        ]
    );
    assert_eq!(seen[6].1["customer"], "cus_standin6");
    assert_ne!(seen[4].3, seen[6].3, "another customer, another key");

    // A gone customer's live subscription is gone too: the workspace is
    // back on the default plan, and Checkout is open again.
    app.state
        .services
        .db
        .write({
            let ws = ws.clone();
            move |c| {
                c.execute(
                    "UPDATE workspaces SET stripe_customer_id = 'cus_gone2' WHERE id = ?1",
                    [&ws],
                )?;
                Ok(())
            }
        })
        .await
        .unwrap();
    let now = app.state.services.clock.now().unix_timestamp();
    let body = stripe_event(
        "customer.subscription.created",
        "cus_gone2",
        "price_team",
        ("sub_old", 100),
        "active",
        100,
    );
    let r = send_event(
        &app,
        &body,
        Some(stripe_signature(WEBHOOK_SECRET, now, &body)),
    )
    .await;
    assert_eq!(r.json::<Value>().await.unwrap()["plan_id"], "team");
    app.admin()
        .post_err(
            "/v1/billing/checkout",
            json!({"plan_id": "starter"}),
            409,
            "ALREADY_SUBSCRIBED",
        )
        .await;
    assert_eq!(open_portal(&app, &app.user_token()).await.status(), 303);
    assert_eq!(plan_id(&app).await, "self_hosted");
    let r = start_checkout(&app, &app.user_token(), json!({"plan_id": "starter"})).await;
    assert_eq!(r.status(), 303);
}

#[tokio::test]
async fn without_stripe_there_is_no_checkout() {
    let app = with_plans(None).await;
    let e = app
        .admin()
        .post_err(
            "/v1/billing/checkout",
            json!({"plan_id": "team"}),
            404,
            "NOT_FOUND",
        )
        .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("hds workspaces set-plan"),
        "{e}"
    );
    let html = app
        .browser(app.admin().person())
        .await
        .page("/app/billing")
        .await;
    assert!(!html.contains("Subscribe to"), "{html}");
}

#[tokio::test]
async fn the_webhook_is_not_found_without_stripe() {
    let app = with_plans(None).await;
    let body = subscription_event("customer.subscription.created", "cus_x", "price_team");
    let r = send_event(
        &app,
        &body,
        Some(stripe_signature(WEBHOOK_SECRET, 0, &body)),
    )
    .await;
    assert_eq!(r.status(), 404);
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["error"]["code"], "NOT_FOUND");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("[billing.stripe]"),
        "{e}"
    );
}

#[tokio::test]
async fn the_billing_page_shows_usage_against_limits_and_the_portal_to_owners() {
    let (base, calls) = stripe_standin().await;
    let app = with_plans(Some(stripe_config(&base, SECRET_KEY))).await;
    set_plan(&app, "starter");
    app.create_action(two_options("one")).await;
    // With Stripe, an owner changes the plan on the Billing page.
    app.create_action(two_options("two")).await;
    app.create_action(two_options("three")).await;
    let e = app
        .source()
        .post_err(
            "/v1/actions",
            two_options("four"),
            403,
            "PLAN_LIMIT_REACHED",
        )
        .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .ends_with(", or an owner can change the plan on the Billing page (/app/billing)"),
        "{e}"
    );
    let owner = app.browser(app.admin().person()).await;
    let html = owner.page("/app/billing").await;
    assert!(html.contains("<strong>Starter</strong> plan"), "{html}");
    assert!(
        html.contains(r#"<meter min="0" max="3" value="3""#),
        "{html}"
    );
    assert!(html.contains("action=\"/app/billing/portal\""), "{html}");
    assert!(
        owner
            .page("/app/account")
            .await
            .contains("href=\"/app/billing\"")
    );
    // The button: a CSRF-checked form that goes where the API goes.
    let origin = app.base.clone();
    let r = owner
        .post_form(
            "/app/billing/portal",
            Some(&origin),
            &[("_csrf", owner.csrf())],
        )
        .await;
    opens_stripe(r, "https://billing.stripe.test/").await;
    let r = owner
        .post_form("/app/billing/portal", Some(&origin), &[("_csrf", "forged")])
        .await;
    assert_eq!(r.status(), 403);
    assert_eq!(calls.lock().unwrap().len(), 2);
    // A reviewer reads the page but gets no button.
    let reviewer = app.member(Role::Reviewer);
    let html = app
        .browser(reviewer.person())
        .await
        .page("/app/billing")
        .await;
    assert!(html.contains("Only owners change the plan") && !html.contains("/app/billing/portal"));
}

#[tokio::test]
async fn runs_stop_at_the_plan_and_nothing_is_written() {
    let app = with_plans(None).await;
    set_plan(&app, "runs");
    let src = app.source();
    src.post::<Value>("/v1/runs", json!({"name": "nightly"}), 201)
        .await;
    let e = src
        .post_err(
            "/v1/runs",
            json!({"name": "nightly 2"}),
            403,
            "PLAN_LIMIT_REACHED",
        )
        .await;
    assert_eq!(e["details"]["limit"], 1);
    assert_eq!(e["details"]["used"], 1);
    // One in the singular; without Stripe only the operator moves plans.
    let m = e["message"].as_str().unwrap();
    assert!(
        m.starts_with(
            "the workspace's plan allows 1 run this month and 1 is used; the count starts again at "
        ),
        "{m}"
    );
    assert!(m.ends_with(", or the instance's operator can move the workspace to another plan (hds workspaces set-plan)"), "{m}");
    assert_eq!(app.count_rows("runs"), 1);
    let b: Value = app.admin().get("/v1/billing", 200).await;
    assert_eq!(b["usage"]["runs"], 1);
    assert_eq!(b["limits"]["runs"], 1);
}

/// Owners opening the portal at once, before the workspace has a Stripe
/// customer, make one customer: every creation carries the same
/// Idempotency-Key, so Stripe answers the same customer, and every portal
/// session is for it.
#[tokio::test]
async fn portals_opened_at_once_make_one_stripe_customer() {
    let (base, calls) = stripe_standin().await;
    let app = with_plans(Some(stripe_config(&base, SECRET_KEY))).await;
    let token = app.user_token();
    let opened = futures::future::join_all((0..4).map(|_| open_portal(&app, &token))).await;
    assert!(opened.iter().all(|r| r.status() == 303));
    let seen = calls.lock().unwrap().clone();
    let keys: std::collections::BTreeSet<_> = seen
        .iter()
        .filter(|c| c.0 == "/v1/customers")
        .map(|c| c.3.clone())
        .collect();
    assert_eq!(keys.len(), 1, "one key for every attempt: {keys:?}");
    assert!(keys.iter().all(Option::is_some), "{keys:?}");
    let customers: std::collections::BTreeSet<_> = seen
        .iter()
        .filter(|c| c.0 == "/v1/billing_portal/sessions")
        .map(|c| c.1["customer"].clone())
        .collect();
    assert_eq!(customers.len(), 1, "{customers:?}");
    let stored: Option<String> =
        hds::store::db::open_cli_connection(&app.data_dir().join("hds.db"))
            .unwrap()
            .query_row(
                "SELECT stripe_customer_id FROM workspaces WHERE id = ?1",
                [app.creds["workspace_id"].as_str().unwrap()],
                |r| r.get(0),
            )
            .unwrap();
    assert_eq!(stored.as_ref(), customers.iter().next());
}

/// `[billing] default_plan`: a workspace someone creates is on it, and so
/// is one whose Stripe subscription ends; the operator's own workspaces
/// keep `self_hosted` (hds init, `hds workspaces create`).
#[tokio::test]
async fn the_default_plan_covers_new_workspaces_and_ended_subscriptions() {
    let (base, _calls) = stripe_standin().await;
    let stripe = stripe_config(&base, SECRET_KEY);
    let app = TestApp::spawn_with(move |c| {
        c.billing
            .plans
            .insert("starter".into(), plan("Starter", Some(3), Some(3), Some(2)));
        c.billing
            .plans
            .insert("team".into(), plan("Team", None, None, None));
        c.billing.stripe = Some(stripe);
        c.billing.default_plan = "starter".into();
    })
    .await;
    assert_eq!(plan_id(&app).await, "self_hosted", "the init workspace");
    let admin = app.admin();
    let made: Value = admin
        .post("/v1/workspaces", json!({"name": "Side project"}), 201)
        .await;
    let id = made["data"]["id"].as_str().unwrap();
    let _: Value = admin
        .post("/v1/workspaces/select", json!({"workspace_id": id}), 200)
        .await;
    let b: Value = admin.get("/v1/billing", 200).await;
    assert_eq!(b["plan"]["id"], "starter", "{b}");
    assert_eq!(b["limits"]["actions"], 3, "{b}");
    let _: Value = admin
        .post(
            "/v1/workspaces/select",
            json!({"workspace_id": app.creds["workspace_id"]}),
            200,
        )
        .await;

    // The init workspace subscribes, then the subscription ends.
    assert_eq!(open_portal(&app, &app.user_token()).await.status(), 303);
    let now = app.state.services.clock.now().unix_timestamp();
    for (kind, expect) in [
        ("customer.subscription.created", "team"),
        ("customer.subscription.deleted", "starter"),
    ] {
        let body = subscription_event(kind, "cus_standin1", "price_team");
        let r = send_event(
            &app,
            &body,
            Some(stripe_signature(WEBHOOK_SECRET, now, &body)),
        )
        .await;
        assert_eq!(
            r.json::<Value>().await.unwrap()["plan_id"],
            expect,
            "{kind}"
        );
        assert_eq!(plan_id(&app).await, expect, "{kind}");
    }
}

/// `[billing] workspaces_per_person`: a person who owns that many
/// workspaces on the default plan may create no more (each would bring a
/// fresh allowance of the plan); one moved to another plan makes room; a
/// refusal writes nothing; without the setting anyone creates freely.
#[tokio::test]
async fn one_person_creates_at_most_workspaces_per_person_on_the_default_plan() {
    let app = TestApp::spawn_with(|c| {
        c.billing
            .plans
            .insert("starter".into(), plan("Starter", Some(3), Some(3), Some(2)));
        c.billing.default_plan = "starter".into();
        c.billing.workspaces_per_person = Some(2);
    })
    .await;
    let bo = app.member(Role::Reviewer);
    let first: Value = bo
        .post("/v1/workspaces", json!({"name": "Side one"}), 201)
        .await;
    bo.post::<Value>("/v1/workspaces", json!({"name": "Side two"}), 201)
        .await;
    let e = bo
        .post_err(
            "/v1/workspaces",
            json!({"name": "Side three"}),
            403,
            "PLAN_LIMIT_REACHED",
        )
        .await;
    assert_eq!(e["details"]["resource"], "workspaces", "{e}");
    assert_eq!(e["details"]["limit"], 2);
    assert_eq!(e["details"]["used"], 2);
    assert!(e["details"].get("period_end").is_none());
    let mine: Value = bo.get("/v1/workspaces", 200).await;
    assert_eq!(mine["data"].as_array().unwrap().len(), 3, "nothing written");
    // One moved to another plan (a paid one) no longer counts.
    let id = first["data"]["id"].as_str().unwrap();
    hds::store::billing::set_plan(&app.db(), id, "self_hosted").unwrap();
    bo.post::<Value>("/v1/workspaces", json!({"name": "Side three"}), 201)
        .await;

    // Without the setting: no limit.
    let free = TestApp::spawn().await;
    let cy = free.member(Role::Reviewer);
    for n in 0..4 {
        cy.post::<Value>("/v1/workspaces", json!({"name": format!("W{n}")}), 201)
            .await;
    }
}

/// The Billing page's Stripe buttons in Chromium: "Subscribe to …" and
/// "Manage plan and payment" land on Stripe's site with no CSP violation.
/// The page's `form-action 'self'` made the browser refuse a 303 to Stripe
/// after the form post, so both buttons did nothing in a browser.
#[tokio::test]
async fn billing_buttons_open_stripe_in_chromium() {
    let (base, calls) = stripe_standin().await;
    let app = with_plans(Some(stripe_config(&base, SECRET_KEY))).await;
    let link = app.signin_link("admin@example.com").await;
    let r = crate::browser::run_script(&app, "browser-billing.mjs", &[("LINK", link)]).await;
    let checkout = r["checkout"].as_str().unwrap();
    assert!(
        checkout.starts_with("https://checkout.stripe.test/c/pay/cs_test_"),
        "{r}"
    );
    assert!(
        r["portal"]
            .as_str()
            .unwrap()
            .starts_with("https://billing.stripe.test/"),
        "{r}"
    );
    let paths: Vec<String> = calls.lock().unwrap().iter().map(|c| c.0.clone()).collect();
    assert!(
        paths.contains(&"/v1/checkout/sessions".to_owned()),
        "{paths:?}"
    );
    assert!(
        paths.contains(&"/v1/billing_portal/sessions".to_owned()),
        "{paths:?}"
    );
}
