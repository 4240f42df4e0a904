//! `/v1/billing` (guide: "Plans and billing"): the plan and usage, the
//! billing portal, and Stripe's subscription webhooks.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::app::AppState;
use crate::error::Result;
use crate::http::auth::UserAuth;
use crate::http::extract::ApiJson;
use crate::service::billing::{self, BillingOut, CheckoutRequest, WebhookOut};

/// The active workspace's plan, this month's usage and the plan's limits (null: unlimited). Any member.
#[utoipa::path(get, path = "/v1/billing", tag = "billing",
    responses((status = 200, description = "plan, period, usage, limits, billing owner, portal kind", body = BillingOut),
        (status = 404, description = "WORKSPACE_NOT_FOUND: the caller belongs to no workspace", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn get_billing(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
) -> Result<Json<BillingOut>> {
    Ok(Json(billing::summary(&st.services, &user).await?))
}

/// Redirects an owner to the billing portal: Stripe's customer portal with `[billing.stripe]`, else `/app/billing`.
#[utoipa::path(post, path = "/v1/billing/portal", tag = "billing",
    responses((status = 303, description = "to the portal (Location)"),
        (status = 403, description = "FORBIDDEN: only owners open the portal (details.required_role = owner)", body = crate::http::openapi::ErrorBody),
        (status = 404, description = "WORKSPACE_NOT_FOUND: the caller belongs to no workspace", body = crate::http::openapi::ErrorBody),
        (status = 502, description = "PROVIDER_UNAVAILABLE: Stripe could not be reached or refused", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn open_billing_portal(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
) -> Result<Response> {
    let url = billing::portal(&st.services, &user).await?;
    Ok((StatusCode::SEE_OTHER, [(header::LOCATION, url)]).into_response())
}

/// Redirects an owner to a Stripe Checkout session that subscribes the workspace to `plan_id` (with `[billing.stripe]`); the plan follows from Stripe's subscription webhook.
#[utoipa::path(post, path = "/v1/billing/checkout", tag = "billing",
    request_body = CheckoutRequest,
    responses((status = 303, description = "to Stripe Checkout (Location)"),
        (status = 403, description = "FORBIDDEN: only owners subscribe (details.required_role = owner)", body = crate::http::openapi::ErrorBody),
        (status = 404, description = "NOT_FOUND: no [billing.stripe] is configured; WORKSPACE_NOT_FOUND: the caller belongs to no workspace", body = crate::http::openapi::ErrorBody),
        (status = 409, description = "ALREADY_SUBSCRIBED: the workspace follows a live subscription, or the Checkout session it started for another plan was paid meanwhile; change it in the portal (details.subscription_id)", body = crate::http::openapi::ErrorBody),
        (status = 422, description = "VALIDATION_ERROR: plan_id is no plan a Stripe price maps to (details.plan_ids)", body = crate::http::openapi::ErrorBody),
        (status = 502, description = "PROVIDER_UNAVAILABLE: Stripe could not be reached or refused", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn start_checkout(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiJson(req): ApiJson<CheckoutRequest>,
) -> Result<Response> {
    let url = billing::checkout(&st.services, &user, req).await?;
    Ok((StatusCode::SEE_OTHER, [(header::LOCATION, url)]).into_response())
}

/// Stripe's subscription events (`customer.subscription.created|updated|deleted`), signed with the endpoint's secret.
#[utoipa::path(post, path = "/v1/billing/stripe/webhook", tag = "billing",
    params(("Stripe-Signature" = Option<String>, Header, description = "t=<unix time>,v1=<hex HMAC-SHA256 of \"{t}.{body}\">")),
    request_body(content_type = "application/json", description = "a Stripe event, exactly as Stripe sent it"),
    responses((status = 200, description = "received; `plan_id` when the event changed a workspace's plan", body = WebhookOut),
        (status = 400, description = "INVALID_SIGNATURE: missing, wrong or older than five minutes", body = crate::http::openapi::ErrorBody),
        (status = 404, description = "NOT_FOUND: no [billing.stripe] is configured", body = crate::http::openapi::ErrorBody)))]
pub async fn stripe_webhook(
    State(st): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<WebhookOut>> {
    let sig = headers
        .get("stripe-signature")
        .and_then(|v| v.to_str().ok());
    Ok(Json(
        billing::stripe_webhook(&st.services, sig, &body).await?,
    ))
}
