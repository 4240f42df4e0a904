//! The billing page, `/app/billing` (guide: "Plans and billing"): the plan,
//! this month, usage against the limits, and for owners the portal button,
//! which posts to `/app/billing/portal` (CSRF-checked) and follows the same
//! `service::billing::portal` as POST /v1/billing/portal.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::http::HeaderMap;

use crate::app::AppState;
use crate::http::session::PageUser;
use crate::http::ui::view::{DoneQuery, FormData, Layout, PageQuery, UiError, check_csrf};
use crate::service::billing::{self, BillingOut};

/// One usage row: what, how much, of how many.
pub struct UsageRow {
    pub label: &'static str,
    pub used: u64,
    pub limit: Option<u64>,
    /// `used` past 90% of the limit: the bar says so.
    pub near: bool,
}

#[derive(Template, WebTemplate)]
#[template(path = "billing.html")]
pub struct BillingPage {
    layout: Layout,
    b: BillingOut,
    rows: Vec<UsageRow>,
    /// `2026-11-01` and `2026-11-30`: the month, in days.
    first_day: String,
    last_day: String,
    /// Plans (id, name) an owner can subscribe to through Stripe Checkout:
    /// none while a subscription is live, or without Stripe.
    offer: Vec<(String, String)>,
    /// Back from Stripe Checkout.
    flash: Option<&'static str>,
}

fn row(label: &'static str, used: u64, limit: Option<u64>) -> UsageRow {
    UsageRow {
        label,
        used,
        limit,
        near: limit.is_some_and(|l| used.saturating_mul(10) >= l.saturating_mul(9)),
    }
}

/// GET /app/billing
pub async fn billing_page(
    State(st): State<AppState>,
    p: PageUser,
    PageQuery(q): PageQuery<DoneQuery>,
) -> Result<BillingPage, UiError> {
    let b = billing::summary(&st.services, &p.user).await?;
    // Back from Checkout, the subscription is on its way: nothing to offer.
    let back = q.done.as_deref() == Some("checkout");
    let offer = if back {
        Vec::new()
    } else {
        billing::checkout_offer(&st.services, &p.user).await?
    };
    let rows = vec![
        row("Actions this month", b.usage.actions, b.limits.actions),
        row("Runs this month", b.usage.runs, b.limits.runs),
        row(
            "Members and pending invitations",
            b.usage.members,
            b.limits.members,
        ),
        row("Sources", b.usage.sources, b.limits.sources),
    ];
    let last_day = crate::domain::time::parse(&b.period.end)
        .map(|end| crate::domain::time::format(end - time::Duration::days(1)))
        .unwrap_or_default();
    Ok(BillingPage {
        layout: Layout::signed_in(&st, &p, "Billing", "account").await?,
        first_day: b.period.start.get(..10).unwrap_or_default().to_owned(),
        last_day: last_day.get(..10).unwrap_or_default().to_owned(),
        b,
        rows,
        offer,
        flash: back.then_some(
            "Thank you. The plan changes here as soon as Stripe confirms the subscription (usually within seconds).",
        ),
    })
}

/// The answer to a billing form that leads to Stripe: a page that opens
/// `url` at once (a meta refresh, with a link for a browser that does not
/// follow it). A 303 would not do: the Billing page's CSP
/// (`form-action 'self'`) also governs where its forms' redirects may go,
/// so browsers refuse to follow one to Stripe's site.
#[derive(Template, WebTemplate)]
#[template(path = "billing_leave.html")]
pub struct LeavePage {
    layout: Layout,
    url: String,
    what: &'static str,
}

/// POST /app/billing/portal: to the portal (owners; others see the refusal).
pub async fn open_portal(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    form: FormData,
) -> Result<LeavePage, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    let url = billing::portal(&st.services, &p.user).await?;
    Ok(LeavePage {
        layout: Layout::signed_in(&st, &p, "Opening Stripe", "account").await?,
        url,
        what: "You manage your plan and payment details",
    })
}

/// POST /app/billing/checkout: to Stripe Checkout for the plan chosen
/// (owners; the same `service::billing::checkout` as the API).
pub async fn start_checkout(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    form: FormData,
) -> Result<LeavePage, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    let req = billing::CheckoutRequest {
        plan_id: form.get("plan_id").unwrap_or_default().to_owned(),
    };
    let url = billing::checkout(&st.services, &p.user, req).await?;
    Ok(LeavePage {
        layout: Layout::signed_in(&st, &p, "Opening Stripe", "account").await?,
        url,
        what: "You pay for the subscription",
    })
}
