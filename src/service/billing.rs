//! Plans and billing (guide: "Plans and billing"; DESIGN §14): the limits
//! every counted create checks inside its write, the usage summary, the
//! billing portal (Stripe's, or the instance's own page) and Stripe's
//! subscription webhooks, which keep a workspace's plan in step.

use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;
use tracing::Instrument;
use utoipa::ToSchema;

use crate::config::billing::SELF_HOSTED;
use crate::config::{BillingConfig, PlanConfig, StripeConfig};
use crate::domain::access::{self, Role};
use crate::domain::billing::{Resource, one_more_fits, period};
use crate::domain::time::{self, Timestamp};
use crate::error::{Code, Error, Result};
use crate::service::Services;
use crate::service::caller::UserCaller;
use crate::store::{billing as store, workspaces};

/// How long one call to Stripe may take.
const STRIPE_TIMEOUT: Duration = Duration::from_secs(10);
/// How far a webhook's signed timestamp may be from now (Stripe's default).
const SIGNATURE_TOLERANCE_SECS: i64 = 300;

/// The plan a workspace is on. A start refuses plans the configuration
/// does not define ([`plans_defined`]); one that appears while the server
/// runs (a restore, a `set-plan` read against another hds.toml) counts as
/// the built-in unlimited plan until the next start (its id is still shown).
fn plan_config(plans: &BillingConfig, plan_id: &str) -> PlanConfig {
    plans.plan(plan_id).unwrap_or_else(PlanConfig::self_hosted)
}

/// Refuses a start where a workspace is on a plan the configuration no
/// longer defines (renamed or removed from hds.toml): its limits would
/// silently stop applying. Names each such workspace and what to do.
pub fn plans_defined(c: &Connection, plans: &BillingConfig) -> anyhow::Result<()> {
    let unknown: Vec<String> = store::plans_in_use(c)
        .map_err(Error::for_operator)?
        .into_iter()
        .filter(|(_, _, plan)| plans.plan(plan).is_none())
        .map(|(id, name, plan)| {
            format!(
                "workspace {id} ({}) is on plan `{plan}`, which the configuration does not define: define [billing.plans.{plan}] again, or move it with `hds workspaces set-plan {id} PLAN_ID`",
                crate::error::printable(name)
            )
        })
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "{}\n(the limits of a plan hds does not know would no longer apply, so hds does not start)",
        unknown.join("\n")
    )
}

/// How much of `what` the workspace uses now (this month, for monthly ones).
fn used(c: &Connection, workspace_id: &str, what: Resource, now: Timestamp) -> Result<u64> {
    Ok(match what {
        Resource::Actions => store::monthly_usage(c, workspace_id, &period(now).key)?.0,
        Resource::Runs => store::monthly_usage(c, workspace_id, &period(now).key)?.1,
        Resource::Members => store::members_and_pending(c, workspace_id, &time::format(now))?,
        Resource::Sources => store::live_sources(c, workspace_id)?,
    })
}

/// Refuses one more `what` over the workspace's plan: 403
/// `PLAN_LIMIT_REACHED` (`details.resource, limit, used`, and `period_end`
/// for a monthly count). Call it in the
/// writer's transaction before the insert, so concurrent creates cannot
/// overshoot; an unlimited plan costs one primary-key read.
pub fn check(
    c: &Connection,
    plans: &BillingConfig,
    workspace_id: &str,
    what: Resource,
    now: Timestamp,
) -> Result<()> {
    let plan_id = store::plan_of(c, workspace_id)?.unwrap_or_else(|| SELF_HOSTED.into());
    let Some(limit) = what.limit(&plan_config(plans, &plan_id)) else {
        return Ok(());
    };
    let n = used(c, workspace_id, what, now)?;
    if one_more_fits(Some(limit), n) {
        return Ok(());
    }
    let one = limit == 1;
    let are = if n == 1 { "is" } else { "are" };
    let noun = match what {
        Resource::Actions if one => "Action this month",
        Resource::Actions => "Actions this month",
        Resource::Runs if one => "run this month",
        Resource::Runs => "runs this month",
        Resource::Members if one => "member or pending invitation",
        Resource::Members => "members and pending invitations",
        Resource::Sources if one => "Source",
        Resource::Sources => "Sources",
    };
    // Who can change the plan here: an owner through Stripe's portal, or
    // else only the operator.
    let change = if plans.stripe.is_some() {
        "or an owner can change the plan on the Billing page (/app/billing)"
    } else {
        "or the instance's operator can move the workspace to another plan (hds workspaces set-plan)"
    };
    let refused = |message: String| {
        Error::new(Code::PlanLimitReached, message)
            .with_detail("resource", what.as_str())
            .with_detail("limit", limit)
            .with_detail("used", n)
    };
    Err(match what {
        // Counted per month: room again when the month ends.
        Resource::Actions | Resource::Runs => {
            let end = time::format(period(now).end);
            refused(format!(
                "the workspace's plan allows {limit} {noun} and {n} {are} used; the count starts again at {end}, {change}"
            ))
            .with_detail("period_end", end)
        }
        // Levels: room again when one goes.
        Resource::Members => refused(format!(
            "the workspace's plan allows {limit} {noun} and {n} {are} used; remove a member or revoke a pending invitation, {change}"
        )),
        Resource::Sources => refused(format!(
            "the workspace's plan allows {limit} {noun} and {n} {are} used; revoke one, {change}"
        )),
    })
}

/// Counts one use of a monthly resource (Actions, runs) in the same
/// transaction as the create: one UPSERT. Levels (members, Sources) need none.
pub fn record_use(
    c: &Connection,
    workspace_id: &str,
    what: Resource,
    now: Timestamp,
) -> Result<()> {
    store::bump(c, workspace_id, &period(now).key, what)
}

/// `{id, name}` of a plan.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct PlanOut {
    pub id: String,
    pub name: String,
}

/// The calendar month (UTC) usage counts in.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct PeriodOut {
    pub start: String,
    pub end: String,
}

/// Usage or limits per resource; in limits, null is unlimited.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Counts<T> {
    pub actions: T,
    pub runs: T,
    pub members: T,
    pub sources: T,
}

/// The workspace's oldest owner, who the bills are for.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct BillingOwner {
    pub user_id: String,
    pub email: String,
}

/// GET /v1/billing.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct BillingOut {
    pub plan: PlanOut,
    pub period: PeriodOut,
    pub usage: Counts<u64>,
    pub limits: Counts<Option<u64>>,
    pub billing_owner: Option<BillingOwner>,
    /// `stripe` with `[billing.stripe]`, else `local`.
    #[schema(pattern = "^(stripe|local)$")]
    pub portal: String,
    /// Whether the caller may open the portal (owners).
    pub can_open_portal: bool,
}

fn active(user: &UserCaller) -> Result<(String, Role)> {
    let m = user.active_or_404()?;
    Ok((m.workspace_id.clone(), m.role))
}

/// The active workspace's plan, this month's usage and the limits; any
/// member may read it (DESIGN §9).
pub async fn summary(s: &Services, user: &UserCaller) -> Result<BillingOut> {
    let (ws, role) = active(user)?;
    let now = s.clock.now();
    let cfg = s.config.clone();
    s.db.read(move |c| {
        let plan_id = store::plan_of(c, &ws)?
            .ok_or_else(|| Error::new(Code::WorkspaceNotFound, "the workspace no longer exists"))?;
        let plan = plan_config(&cfg.billing, &plan_id);
        let p = period(now);
        let (actions, runs) = store::monthly_usage(c, &ws, &p.key)?;
        Ok(BillingOut {
            plan: PlanOut {
                id: plan_id,
                name: plan.name.clone(),
            },
            period: PeriodOut {
                start: time::format(p.start),
                end: time::format(p.end),
            },
            usage: Counts {
                actions,
                runs,
                members: store::members_and_pending(c, &ws, &time::format(now))?,
                sources: store::live_sources(c, &ws)?,
            },
            limits: Counts {
                actions: plan.actions_per_month,
                runs: plan.runs_per_month,
                members: plan.members,
                sources: plan.sources,
            },
            billing_owner: store::oldest_owner(c, &ws)?
                .map(|(user_id, email)| BillingOwner { user_id, email }),
            portal: if cfg.billing.stripe.is_some() {
                "stripe"
            } else {
                "local"
            }
            .into(),
            can_open_portal: access::can_open_billing(role),
        })
    })
    .await
}

/// What opening Stripe for a workspace needs, read as one owner's request:
/// the customer (if made), the workspace's name, its oldest owner's
/// address, and the subscription it follows while that is live.
struct OwnerContext {
    workspace_id: String,
    customer: Option<String>,
    name: String,
    email: String,
    /// The subscription it follows unless that ended for good: (id, live).
    standing: Option<(String, bool)>,
    pending: Option<store::PendingCheckout>,
}

async fn owner_context(s: &Services, user: &UserCaller) -> Result<OwnerContext> {
    let (ws, _) = active(user)?;
    let me = user.user_id.clone();
    // The role as it is now, not as it was at sign-in.
    s.db.read(move |c| {
        let role = workspaces::role_of(c, &ws, &me)?;
        if !role.is_some_and(access::can_open_billing) {
            return Err(Error::new(
                Code::Forbidden,
                "only workspace owners open the billing portal or start a subscription",
            )
            .with_detail("required_role", Role::Owner.as_str()));
        }
        let name = workspaces::get(c, &ws)?.map(|w| w.name).unwrap_or_default();
        let email = store::oldest_owner(c, &ws)?
            .map(|o| o.1)
            .unwrap_or_default();
        Ok(OwnerContext {
            customer: store::stripe_customer(c, &ws)?,
            standing: store::standing_subscription(c, &ws)?,
            pending: store::pending_checkout(c, &ws)?,
            workspace_id: ws,
            name,
            email,
        })
    })
    .await
}

/// The workspace's Stripe customer, made on first use.
async fn ensure_customer(
    s: &Services,
    http: &reqwest::Client,
    stripe: &StripeConfig,
    ctx: &OwnerContext,
) -> Result<String> {
    if let Some(id) = &ctx.customer {
        return Ok(id.clone());
    }
    make_customer(s, http, stripe, ctx, None).await
}

/// Makes the workspace's customer at Stripe and keeps its id. `gone`: the
/// customer kept before, which Stripe no longer has (deleted, or another
/// account's keys); it is forgotten first, and the new customer's key
/// names it, so Stripe does not answer that one again.
async fn make_customer(
    s: &Services,
    http: &reqwest::Client,
    stripe: &StripeConfig,
    ctx: &OwnerContext,
    gone: Option<&str>,
) -> Result<String> {
    let ws = ctx.workspace_id.clone();
    if let Some(old) = gone {
        let (w, old) = (ws.clone(), old.to_owned());
        let ended_plan = s.config.billing.default_plan.clone();
        let now = time::format(s.clock.now());
        s.db.write(move |c| {
            let before = store::by_stripe_customer(c, &old)?;
            if !store::forget_stripe_customer(c, &w, &old)? {
                return Ok(());
            }
            // A customer Stripe no longer has has no subscription either:
            // the one followed ends (its events, sent for that customer,
            // would find no workspace now), and so does a Checkout session
            // started for it.
            if let Some(st) = before.filter(|st| st.live)
                && let Some(sub) = st.subscription_id.clone()
            {
                store::remember_ended(c, &w, &sub, &now)?;
                let ended = store::StripeState { live: false, ..st };
                store::set_plan_from_stripe(c, &ended_plan, &ended)?;
            }
            store::close_pending_checkout(c, &w)
        })
        .await?;
    }
    let form = [
        ("name", ctx.name.as_str()),
        ("email", ctx.email.as_str()),
        ("metadata[workspace_id]", ws.as_str()),
    ];
    // Two owners (or two clicks) opening the portal at once make one
    // customer: Stripe answers the same customer to the same key and
    // parameters for 24 hours.
    let mut key = customer_key(&ws, &form);
    if let Some(old) = gone {
        key.push_str(&format!("-after-{old}"));
    }
    let made = stripe_post(http, stripe, "/v1/customers", &form, Some(&key)).await?;
    let id = string_field(&made, "id", "/v1/customers")?;
    s.db.write(move |c| store::set_stripe_customer(c, &ws, &id))
        .await
}

/// Where POST /v1/billing/portal sends an owner: a Stripe customer portal
/// session (the customer created on first use) or, without
/// `[billing.stripe]`, the instance's own billing page.
pub async fn portal(s: &Services, user: &UserCaller) -> Result<String> {
    let ctx = owner_context(s, user).await?;
    let return_url = format!("{}/app/billing", s.config.base_url);
    let Some(stripe) = s.config.billing.stripe.clone() else {
        return Ok(return_url);
    };
    let http = stripe_client()?;
    let mut customer = ensure_customer(s, &http, &stripe, &ctx).await?;
    let mut renewed = false;
    let session = loop {
        let form = [
            ("customer", customer.as_str()),
            ("return_url", return_url.as_str()),
        ];
        match stripe_post(&http, &stripe, "/v1/billing_portal/sessions", &form, None).await {
            // The customer kept is gone at Stripe: a new one, once.
            Err(e) if e.missing_customer && !renewed => {
                customer = make_customer(s, &http, &stripe, &ctx, Some(&customer)).await?;
                renewed = true;
            }
            r => break r?,
        }
    };
    string_field(&session, "url", "/v1/billing_portal/sessions")
}

/// POST /v1/billing/checkout.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckoutRequest {
    /// A plan that a price in `[billing.stripe] prices` maps to.
    pub plan_id: String,
}

/// The plans an owner can subscribe to through Stripe Checkout: each plan
/// some price maps to, with the price (the first by id when several map to
/// one plan), in plan id order.
pub fn checkout_plans(cfg: &BillingConfig) -> Vec<(String, String, String)> {
    let Some(stripe) = &cfg.stripe else {
        return Vec::new();
    };
    let mut by_plan: std::collections::BTreeMap<&str, &str> = std::collections::BTreeMap::new();
    for (price, plan) in &stripe.prices {
        by_plan.entry(plan.as_str()).or_insert(price.as_str());
    }
    by_plan
        .into_iter()
        .map(|(plan, price)| {
            (
                plan.to_owned(),
                plan_config(cfg, plan).name,
                price.to_owned(),
            )
        })
        .collect()
}

/// What the Billing page offers an owner: the plans to subscribe to, none
/// while the workspace follows a subscription that has not ended for good
/// (that one changes in the portal) or without Stripe.
pub async fn checkout_offer(s: &Services, user: &UserCaller) -> Result<Vec<(String, String)>> {
    let plans = checkout_plans(&s.config.billing);
    if plans.is_empty() {
        return Ok(Vec::new());
    }
    let (ws, role) = active(user)?;
    if !access::can_open_billing(role) {
        return Ok(Vec::new());
    }
    let standing =
        s.db.read(move |c| store::standing_subscription(c, &ws))
            .await?;
    Ok(if standing.is_some() {
        Vec::new()
    } else {
        plans.into_iter().map(|(id, name, _)| (id, name)).collect()
    })
}

/// Where POST /v1/billing/checkout sends an owner: a Stripe Checkout
/// session that subscribes the workspace's customer (made on first use) to
/// the plan's price. The plan itself comes with the subscription's webhook,
/// as any other change does. One session at a time per workspace: the same
/// plan again is the same session; another plan expires the first at
/// Stripe before a new one is made, so two cannot both be paid.
pub async fn checkout(s: &Services, user: &UserCaller, req: CheckoutRequest) -> Result<String> {
    // A non-owner (by the role the request was authenticated with) is
    // refused without waiting behind an owner's checkout; the role as it is
    // now is read again below.
    let (ws, role) = active(user)?;
    if !access::can_open_billing(role) {
        owner_context(s, user).await?;
    }
    // Two owners choosing two plans at once would make two sessions under
    // two keys, and both could be paid: the second waits for the first and
    // then finds its session, which it ends before making its own. The wait
    // is the request's: a client gone while waiting has asked for nothing.
    let one_at_a_time = s.checkouts.lock(&ws).await;
    // Once begun it runs to its end even when the request is dropped (the
    // client gone): a session Stripe made is then always kept, and a session
    // expired is always forgotten, so the next start finds what is open.
    let (s, user) = (s.clone(), user.clone());
    let alone = async move {
        let r = checkout_alone(&s, &user, req).await;
        drop(one_at_a_time);
        r
    };
    tokio::spawn(alone.instrument(tracing::Span::current()))
        .await
        .map_err(|e| Error::internal(anyhow::anyhow!("the checkout task ended early: {e}")))?
}

/// `checkout`, with the workspace's checkouts held.
async fn checkout_alone(s: &Services, user: &UserCaller, req: CheckoutRequest) -> Result<String> {
    // Who asks first: a non-owner learns nothing of the plans.
    let ctx = owner_context(s, user).await?;
    let Some(stripe) = s.config.billing.stripe.clone() else {
        return Err(Error::new(
            Code::NotFound,
            "Stripe is not configured here ([billing.stripe] in hds.toml): this instance's operator sets plans with hds workspaces set-plan",
        ));
    };
    let plans = checkout_plans(&s.config.billing);
    let Some((plan_id, _, price)) = plans.iter().find(|p| p.0 == req.plan_id).cloned() else {
        let ids: Vec<&str> = plans.iter().map(|p| p.0.as_str()).collect();
        let message = if req.plan_id.trim().is_empty() {
            format!("choose a plan: one of {}", ids.join(", "))
        } else {
            format!(
                "`{}` is not a plan offered through Stripe here; choose one of: {}",
                req.plan_id,
                ids.join(", ")
            )
        };
        return Err(Error::field("plan_id", message).with_detail("plan_ids", ids));
    };
    if let Some((sub, live)) = &ctx.standing {
        let message = if *live {
            "this workspace already has a subscription; change its plan in the billing portal (POST /v1/billing/portal)"
        } else {
            "this workspace's subscription is unpaid or paused, not ended: settle or cancel it in the billing portal (POST /v1/billing/portal)"
        };
        return Err(Error::new(Code::AlreadySubscribed, message)
            .with_detail("subscription_id", sub.clone()));
    }
    let now = s.clock.now().unix_timestamp();
    let http = stripe_client()?;
    recover_intent(s, &http, &stripe, &ctx.workspace_id, now).await?;
    let pending = ctx.pending.clone();
    // A session still open: the same plan is the same session; another
    // plan ends it first.
    // The new session's key names the one before it, so it is never
    // answered with a session that lapsed.
    let after = pending
        .as_ref()
        .map_or_else(|| "first".to_owned(), |p| p.session_id.clone());
    if let Some(p) = pending.as_ref().filter(|p| p.expires_at > now) {
        // Reused while it has a minute left for the owner to pay in; any
        // other open session is ended, even in its last minute.
        if p.plan_id == plan_id && p.expires_at > now + 60 {
            return Ok(p.url.clone());
        }
        close_session(&http, &stripe, p).await?;
        // Expired at Stripe: forgotten here at once, so a failure below
        // never leaves the workspace pointed at a session that is gone.
        let w = ctx.workspace_id.clone();
        s.db.write(move |c| store::close_pending_checkout(c, &w))
            .await?;
    }
    let customer = ensure_customer(s, &http, &stripe, &ctx).await?;
    let base = &s.config.base_url;
    let success = format!("{base}/app/billing?done=checkout");
    let cancel = format!("{base}/app/billing");
    let ws = ctx.workspace_id.clone();
    // Two owners (or two clicks) at once make one session: Stripe answers
    // the same session to the same key and parameters.
    // Stripe keeps a refusal under its key for a day: the key also hashes
    // what is asked (price, customer), so a corrected configuration is a
    // new request.
    let asked = customer_key(
        &ws,
        &[("price", price.as_str()), ("customer", customer.as_str())],
    );
    let asked = asked.rsplit('-').next().unwrap_or_default();
    // Stripe keeps even a 5xx under its key for a day, so each attempt has
    // a key of its own (`attempt`); what one attempt may have left open is
    // found by `recover_intent`, not by asking again under its key.
    let attempt = crate::domain::ids::new_ordered_id("try");
    let key = format!("hds-checkout-{ws}-{plan_id}-after-{after}-{asked}-{attempt}");
    let mut customer = customer;
    let mut renewed = false;
    let session = loop {
        let form = [
            ("mode", "subscription"),
            ("customer", customer.as_str()),
            ("line_items[0][price]", price.as_str()),
            ("line_items[0][quantity]", "1"),
            ("client_reference_id", ws.as_str()),
            ("subscription_data[metadata][workspace_id]", ws.as_str()),
            ("subscription_data[metadata][plan_id]", plan_id.as_str()),
            ("success_url", success.as_str()),
            ("cancel_url", cancel.as_str()),
        ];
        // Another customer is another request: the key names it.
        let key = if renewed {
            format!("{key}-for-{customer}")
        } else {
            key.clone()
        };
        // Committed before the call: a crash before its answer is stored
        // leaves what to look for (`recover_intent`).
        let at = time::format(s.clock.now());
        let intent = store::CheckoutIntent {
            plan_id: plan_id.clone(),
            idempotency_key: key.clone(),
            form: form
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            created_at: at.clone(),
        };
        let w = ws.clone();
        s.db.write(move |c| store::put_checkout_intent(c, &w, &intent, &at))
            .await?;
        match stripe_post(&http, &stripe, "/v1/checkout/sessions", &form, Some(&key)).await {
            // The customer kept is gone at Stripe: a new one, once.
            Err(e) if e.missing_customer && !renewed => {
                customer = make_customer(s, &http, &stripe, &ctx, Some(&customer)).await?;
                renewed = true;
            }
            r => break r,
        }
    };
    let session = match session {
        Ok(session) => session,
        Err(e) => {
            // Refused as asked: Stripe made nothing, so there is nothing to
            // look for. Anything else (5xx, timeout, 409) may have made one.
            if e.invalid_request {
                let w = ws.clone();
                s.db.write(move |c| store::drop_checkout_intent(c, &w))
                    .await?;
            }
            return Err(e.error);
        }
    };
    let pending = session_made(&session, plan_id, now)?;
    let url = pending.url.clone();
    s.db.write(move |c| {
        store::set_pending_checkout(c, &ws, &pending)?;
        store::drop_checkout_intent(c, &ws)
    })
    .await?;
    Ok(url)
}

/// The session Stripe answered, as kept.
fn session_made(session: &Value, plan_id: String, now: i64) -> Result<store::PendingCheckout> {
    Ok(store::PendingCheckout {
        session_id: string_field(session, "id", "/v1/checkout/sessions")?,
        url: string_field(session, "url", "/v1/checkout/sessions")?,
        // Stripe's sessions last 24 hours unless told otherwise.
        expires_at: session["expires_at"].as_i64().unwrap_or(now + 24 * 3600),
        plan_id,
    })
}

/// How many pages of 100 open sessions `recover_intent` looks through.
const MOST_SESSION_PAGES: usize = 10;

/// A Checkout session asked of Stripe whose answer was never stored (hds
/// stopped during the call, or Stripe answered 5xx or not at all): Stripe
/// may have made it. Every open session of the workspace's customer that
/// names the workspace (`client_reference_id`) and is not the pending one
/// is expired (a paid one is 409 ALREADY_SUBSCRIBED), then the intent is
/// dropped. Stripe down is 502, the intent kept for next time.
async fn recover_intent(
    s: &Services,
    http: &reqwest::Client,
    stripe: &StripeConfig,
    workspace_id: &str,
    now: i64,
) -> Result<()> {
    let ws = workspace_id.to_owned();
    let (intent, pending) =
        s.db.read(move |c| {
            Ok((
                store::checkout_intent(c, &ws)?,
                store::pending_checkout(c, &ws)?,
            ))
        })
        .await?;
    let Some(intent) = intent else {
        return Ok(());
    };
    // A Checkout session lives at most a day: an intent older than that
    // left nothing open to look for (and a lasting refusal of the list
    // cannot hold checkout up for longer).
    let age = time::parse(&intent.created_at).map_or(0, |t| now - t.unix_timestamp());
    if age > 24 * 3600 {
        let ws = workspace_id.to_owned();
        return s
            .db
            .write(move |c| store::drop_checkout_intent(c, &ws))
            .await;
    }
    let customer = intent
        .form
        .iter()
        .find(|(k, _)| k == "customer")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    // The pending session is spared only while it is reused (see
    // `checkout_alone`); one in its last minute is an orphan like any other.
    let keep = pending
        .filter(|p| p.expires_at > now + 60)
        .map(|p| p.session_id);
    // Page by page (Stripe lists at most 100 at a time), to a bound.
    let mut after: Option<String> = None;
    for _ in 0..MOST_SESSION_PAGES {
        let mut query = vec![
            ("customer", customer.as_str()),
            ("status", "open"),
            ("limit", "100"),
        ];
        if let Some(a) = after.as_deref() {
            query.push(("starting_after", a));
        }
        let listed = match stripe_get_query(http, stripe, "/v1/checkout/sessions", &query).await {
            Ok(listed) => listed,
            // A customer Stripe no longer has has no open session either.
            Err(e) if e.gone => Value::Null,
            Err(e) => return Err(e.error),
        };
        let page = listed["data"].as_array().cloned().unwrap_or_default();
        for session in &page {
            let id = session["id"].as_str().unwrap_or_default();
            if session["client_reference_id"].as_str() != Some(workspace_id)
                || session["status"].as_str() != Some("open")
                || keep.as_deref() == Some(id)
            {
                continue;
            }
            let orphan = store::PendingCheckout {
                session_id: id.to_owned(),
                plan_id: intent.plan_id.clone(),
                url: String::new(),
                expires_at: 0,
            };
            close_session(http, stripe, &orphan).await?;
        }
        after = page
            .last()
            .and_then(|s| s["id"].as_str())
            .map(str::to_owned);
        if listed["has_more"] != true || after.is_none() {
            break;
        }
    }
    let ws = workspace_id.to_owned();
    s.db.write(move |c| store::drop_checkout_intent(c, &ws))
        .await
}

/// Ends a Checkout session at Stripe before another is made. Stripe refuses
/// to expire a session that is no longer open: then the session says why.
/// Paid (`complete`) is 409 ALREADY_SUBSCRIBED naming the subscription,
/// whose webhook brings the plan; already expired, or not known to Stripe
/// at all, is done. Stripe down or unreachable is 502 PROVIDER_UNAVAILABLE,
/// as any other Stripe failure.
async fn close_session(
    http: &reqwest::Client,
    stripe: &StripeConfig,
    p: &store::PendingCheckout,
) -> Result<()> {
    let path = format!("/v1/checkout/sessions/{}", p.session_id);
    let refused = match stripe_post(http, stripe, &format!("{path}/expire"), &[], None).await {
        Ok(_) => return Ok(()),
        // A session Stripe does not have (deleted, or made with the test
        // keys before a switch to live ones) cannot be paid either.
        Err(e) if e.gone => return Ok(()),
        Err(e) if e.refused => e,
        Err(e) => return Err(e.error),
    };
    let session = match stripe_get(http, stripe, &path).await {
        Ok(session) => session,
        Err(e) if e.gone => return Ok(()),
        Err(e) => return Err(e.error),
    };
    match session["status"].as_str() {
        Some("expired") => Ok(()),
        Some("complete") => {
            let mut e = Error::new(
                Code::AlreadySubscribed,
                format!(
                    "the checkout started for plan {} was paid meanwhile: the plan follows when Stripe confirms the subscription; change it afterwards in the billing portal (POST /v1/billing/portal)",
                    p.plan_id
                ),
            );
            // Stripe names the subscription, or expands it to an object.
            let sub = session["subscription"]
                .as_str()
                .or_else(|| session["subscription"]["id"].as_str());
            if let Some(sub) = sub {
                e = e.with_detail("subscription_id", sub.to_owned());
            }
            Err(e)
        }
        _ => Err(refused.error),
    }
}

/// The Idempotency-Key of a workspace's customer creation: the workspace
/// and a hash of what is sent (Stripe refuses one key reused with other
/// parameters, as after a rename).
fn customer_key(workspace_id: &str, form: &[(&str, &str)]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for (k, v) in form {
        h.update(k.as_bytes());
        h.update([0]);
        h.update(v.as_bytes());
        h.update([0]);
    }
    let digest = h.finalize();
    let short: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("hds-customer-{workspace_id}-{short}")
}

fn stripe_client() -> Result<reqwest::Client> {
    // reqwest is built without a default TLS provider; a no-op when `main` installed it.
    let _ = rustls::crypto::ring::default_provider().install_default();
    crate::outbound::build(
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(STRIPE_TIMEOUT)
            .user_agent(concat!("hds/", env!("CARGO_PKG_VERSION"))),
    )
    .map_err(|e| Error::internal(anyhow::anyhow!(e)))
}

fn stripe_unavailable(path: &str, cause: String) -> Error {
    tracing::warn!(path, error = cause, "Stripe call failed");
    Error::new(
        Code::ProviderUnavailable,
        format!(
            "Stripe ({path}) could not be reached or refused the request: {cause}; try again shortly"
        ),
    )
}

/// A Stripe call that failed: the error to answer, whether Stripe refused
/// the request (a 4xx: it was understood and said no, as opposed to down or
/// unreachable), and whether it said the customer named does not exist
/// (`resource_missing` on `customer`).
struct StripeFailure {
    error: Error,
    refused: bool,
    /// Stripe refused the request as asked (`invalid_request_error`, not an
    /// idempotency conflict): it made nothing.
    invalid_request: bool,
    /// Stripe has no such object (404, `resource_missing`).
    gone: bool,
    missing_customer: bool,
}

impl From<Error> for StripeFailure {
    fn from(error: Error) -> Self {
        Self {
            error,
            refused: false,
            invalid_request: false,
            gone: false,
            missing_customer: false,
        }
    }
}

impl From<StripeFailure> for Error {
    fn from(f: StripeFailure) -> Self {
        f.error
    }
}

/// One form-encoded POST to Stripe's API, answered with its JSON.
async fn stripe_post(
    http: &reqwest::Client,
    cfg: &StripeConfig,
    path: &str,
    form: &[(&str, &str)],
    idempotency_key: Option<&str>,
) -> std::result::Result<Value, StripeFailure> {
    let mut req = http
        .post(format!("{}{path}", cfg.api_base))
        .bearer_auth(&cfg.secret_key)
        .form(form);
    if let Some(key) = idempotency_key {
        req = req.header("Idempotency-Key", key);
    }
    stripe_answer(req, path).await
}

/// One GET of a Stripe object, answered with its JSON.
async fn stripe_get(
    http: &reqwest::Client,
    cfg: &StripeConfig,
    path: &str,
) -> std::result::Result<Value, StripeFailure> {
    stripe_get_query(http, cfg, path, &[]).await
}

/// One GET of a Stripe object or list with query parameters, answered with
/// its JSON.
async fn stripe_get_query(
    http: &reqwest::Client,
    cfg: &StripeConfig,
    path: &str,
    query: &[(&str, &str)],
) -> std::result::Result<Value, StripeFailure> {
    let mut url = format!("{}{path}", cfg.api_base);
    if !query.is_empty() {
        url.push('?');
        url.push_str(
            &form_urlencoded::Serializer::new(String::new())
                .extend_pairs(query)
                .finish(),
        );
    }
    let req = http.get(url).bearer_auth(&cfg.secret_key);
    stripe_answer(req, path).await
}

async fn stripe_answer(
    req: reqwest::RequestBuilder,
    path: &str,
) -> std::result::Result<Value, StripeFailure> {
    let r = req
        .send()
        .await
        .map_err(|e| stripe_unavailable(path, e.without_url().to_string()))?;
    let status = r.status();
    let body: Value = r
        .json()
        .await
        .map_err(|e| stripe_unavailable(path, format!("an unreadable answer ({e})")))?;
    if !status.is_success() {
        let msg = body["error"]["message"].as_str().unwrap_or("no message");
        return Err(StripeFailure {
            error: stripe_unavailable(path, format!("HTTP {status}: {msg}")),
            refused: status.is_client_error(),
            invalid_request: body["error"]["type"] == "invalid_request_error"
                && matches!(status.as_u16(), 400 | 402 | 404),
            gone: body["error"]["code"] == "resource_missing",
            missing_customer: body["error"]["code"] == "resource_missing"
                && body["error"]["param"] == "customer",
        });
    }
    Ok(body)
}

fn string_field(v: &Value, key: &str, path: &str) -> Result<String> {
    v[key]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| stripe_unavailable(path, format!("the answer has no {key}")))
}

/// Checks a `Stripe-Signature` header (`t=…,v1=…[,v1=…]`) the way Stripe
/// signs: HMAC-SHA256 of `"{t}.{body}"` keyed with the endpoint's secret,
/// hex; `t` within five minutes of `now`.
pub fn verify_signature(secret: &str, header: &str, body: &[u8], now: Timestamp) -> Result<()> {
    let refuse = |why: &str| {
        Error::new(
            Code::InvalidSignature,
            format!("the Stripe-Signature header {why}"),
        )
    };
    let mut t = None;
    let mut sigs = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = v.parse::<i64>().ok(),
            Some(("v1", v)) => sigs.extend(hex::decode(v).ok()),
            _ => {}
        }
    }
    let t = t.ok_or_else(|| refuse("has no timestamp (t=…)"))?;
    if now.unix_timestamp().abs_diff(t) > SIGNATURE_TOLERANCE_SECS.unsigned_abs() {
        return Err(refuse("is older than five minutes (or from the future)"));
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes())
        .map_err(|e| Error::internal(anyhow::anyhow!("HMAC key: {e}")))?;
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let expected = mac.finalize().into_bytes();
    let ok = sigs.iter().any(|s| {
        use subtle::ConstantTimeEq;
        s.len() == expected.len() && bool::from(s.as_slice().ct_eq(expected.as_slice()))
    });
    if ok {
        Ok(())
    } else {
        Err(refuse("does not match this body"))
    }
}

/// What the webhook did with an event.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct WebhookOut {
    pub received: bool,
    /// The plan the workspace is on now, when the event set it; null when
    /// the event was ignored (another type, an unknown customer or price, a
    /// subscription not paid for yet, one the customer moved away from, or
    /// an event older than the last one applied).
    pub plan_id: Option<String>,
}

/// POST /v1/billing/stripe/webhook: a signed subscription event sets the
/// plan of the customer's workspace; anything else is acknowledged.
pub async fn stripe_webhook(
    s: &Services,
    signature: Option<&str>,
    body: &[u8],
) -> Result<WebhookOut> {
    let Some(stripe) = s.config.billing.stripe.clone() else {
        return Err(Error::new(
            Code::NotFound,
            "Stripe is not configured here ([billing.stripe] in hds.toml)",
        ));
    };
    let header = signature.ok_or_else(|| {
        Error::new(
            Code::InvalidSignature,
            "the Stripe-Signature header is missing",
        )
    })?;
    verify_signature(&stripe.webhook_secret, header, body, s.clock.now())?;
    let ignored = || {
        Ok(WebhookOut {
            received: true,
            plan_id: None,
        })
    };
    let Ok(event) = serde_json::from_slice::<Value>(body) else {
        return ignored();
    };
    let kind = event["type"].as_str().unwrap_or_default();
    let sub = &event["data"]["object"];
    let (Some(customer), Some(sub_id)) = (sub["customer"].as_str(), sub["id"].as_str()) else {
        return ignored();
    };
    let status = sub["status"].as_str().unwrap_or_default();
    let verdict = match kind {
        "customer.subscription.deleted" => Verdict::Ended { for_good: true },
        "customer.subscription.created" | "customer.subscription.updated" => match status {
            // Paid, on trial, or paid before and being retried (Stripe's
            // dunning ends in `unpaid` or `canceled`, below).
            "active" | "trialing" | "past_due" => {
                let price = sub["items"]["data"][0]["price"]["id"]
                    .as_str()
                    .unwrap_or_default();
                match stripe.prices.get(price) {
                    Some(p) => Verdict::Paid(p.clone()),
                    None => {
                        tracing::warn!(price, "Stripe subscription with a price no plan maps");
                        return ignored();
                    }
                }
            }
            // Stripe never makes a canceled or expired subscription live
            // again; an unpaid or paused one may be.
            "canceled" | "incomplete_expired" => Verdict::Ended { for_good: true },
            "unpaid" | "paused" => Verdict::Ended { for_good: false },
            // `incomplete`: the first payment is not made yet; the plan
            // comes with the event that makes it `active`.
            _ => return ignored(),
        },
        _ => return ignored(),
    };
    let event_at = event["created"].as_i64();
    let sub_created = sub["created"].as_i64();
    let (customer, sub_id) = (customer.to_owned(), sub_id.to_owned());
    let ended_plan = s.config.billing.default_plan.clone();
    let now = time::format(s.clock.now());
    let applied =
        s.db.write(move |c| {
            let Some(ws) = store::by_stripe_customer(c, &customer)? else {
                return Ok(None);
            };
            // An end for good is kept whether or not the workspace follows
            // that subscription, so an older `active` of it, delivered
            // late, cannot bring it back.
            if let Verdict::Ended { for_good: true } = verdict {
                store::remember_ended(c, &ws.workspace_id, &sub_id, &now)?;
            } else if store::has_ended(c, &ws.workspace_id, &sub_id)? {
                return Ok(None);
            }
            let event = StripeEvent {
                subscription_id: &sub_id,
                subscription_created: sub_created,
                event_at,
                paid: matches!(verdict, Verdict::Paid(_)),
            };
            if !follows(&ws, &event) {
                return Ok(None);
            }
            let live = event.paid;
            let plan = match verdict {
                Verdict::Paid(plan) => plan,
                Verdict::Ended { .. } => ended_plan,
            };
            // An event or subscription without `created` keeps what is known
            // of the same subscription, so the order is never forgotten.
            let same = ws.subscription_id.as_deref() == Some(sub_id.as_str());
            let kept = |new: Option<i64>, old: Option<i64>| {
                if same { new.max(old) } else { new }
            };
            let now = store::StripeState {
                subscription_created: kept(sub_created, ws.subscription_created),
                event_at: kept(event_at, ws.event_at),
                workspace_id: ws.workspace_id,
                subscription_id: Some(sub_id),
                live,
            };
            store::set_plan_from_stripe(c, &plan, &now)?;
            // A paid subscription is what a Checkout session was for.
            if live {
                store::close_pending_checkout(c, &now.workspace_id)?;
            }
            Ok(Some(plan))
        })
        .await?;
    Ok(WebhookOut {
        received: true,
        plan_id: applied,
    })
}

/// What hds reads of a subscription event to order it.
struct StripeEvent<'a> {
    subscription_id: &'a str,
    /// When Stripe created the subscription.
    subscription_created: Option<i64>,
    /// When Stripe created the event.
    event_at: Option<i64>,
    /// It gives a plan (active, trialing, past_due); else it ends one.
    paid: bool,
}

/// Whether an event sets the plan of a workspace that follows `ws`'s
/// subscription (guide: "Plans and billing"). The workspace follows one
/// subscription: the newest paid one.
/// - Of the followed subscription: unless it is older than the last event
///   applied (Stripe delivers out of order); at the same second, the end
///   wins, so a late `updated` never revives a deleted subscription.
/// - Of another: only a paid one takes over, and only when it is not older
///   than the followed one or the followed one has ended; another's end,
///   or an update of one the customer moved away from, changes nothing.
fn follows(ws: &store::StripeState, e: &StripeEvent) -> bool {
    // Following none yet (the plan is the default or the operator's): only
    // a paid one is news; the end of one never followed changes nothing.
    let Some(current) = ws.subscription_id.as_deref() else {
        return e.paid;
    };
    if current == e.subscription_id {
        return match (e.event_at, ws.event_at) {
            // Same second: applied unless it would revive an ended one.
            (Some(at), Some(last)) => at > last || (at == last && (ws.live || !e.paid)),
            _ => true,
        };
    }
    // Two created in the same second: the greater id wins, whichever
    // arrives first, so the plan does not flip with delivery order.
    let newer = match (e.subscription_created, ws.subscription_created) {
        (Some(theirs), Some(ours)) => (theirs, e.subscription_id) > (ours, current),
        _ => true,
    };
    e.paid && (newer || !ws.live)
}

/// What a subscription event means for the plan.
enum Verdict {
    /// Paid for (or on trial): this plan.
    Paid(String),
    /// Ended, or no longer paid for: back to `[billing] default_plan`
    /// (`self_hosted` unless set). `for_good`: deleted, canceled or
    /// incomplete_expired, which Stripe never makes live again.
    Ended { for_good: bool },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(secret: &str, t: i64, body: &str) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("{t}.{body}").as_bytes());
        format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
    }

    #[test]
    fn signatures_are_checked_as_stripe_signs() {
        let now = time::parse("2026-11-23T12:00:00Z").unwrap();
        let t = now.unix_timestamp();
        let body = r#"{"type":"x"}"#;
        assert!(
            verify_signature("whsec_a", &sign("whsec_a", t, body), body.as_bytes(), now).is_ok()
        );
        let two = format!("{},v1=00ff", sign("whsec_a", t, body));
        assert!(verify_signature("whsec_a", &two, body.as_bytes(), now).is_ok());
        for bad in [
            sign("whsec_b", t, body),
            sign("whsec_a", t - 301, body),
            sign("whsec_a", t, "{}"),
            "v1=00".into(),
            String::new(),
        ] {
            let e = verify_signature("whsec_a", &bad, body.as_bytes(), now).unwrap_err();
            assert_eq!(e.code, Code::InvalidSignature, "{bad}");
        }
    }
}
