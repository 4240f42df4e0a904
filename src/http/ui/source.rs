//! One Source's page: what it is, its keys (with replacing them: per
//! environment, the webhook secret, each with an overlap; guide: "Rotating
//! keys") and its webhook delivery log (guide: "The Source page"), newest
//! first, 50 at a time, with a Resend form per delivery for the people who
//! manage Sources, and one delivery's attempts. Reading, rotating and
//! resending are the services', as on `/v1`; the page only hides the buttons
//! from people the service would refuse anyway.
//! Replacing keys and showing new secrets once is `source_keys`'s.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use crate::app::AppState;
use crate::domain::access;
use crate::domain::ids;
use crate::domain::time::Timestamp;
use crate::http::api::paging;
use crate::http::session::PageUser;
use crate::http::ui::source_keys::{SecretsVm, take_shown};
use crate::http::ui::sources::{KeyVm, key_vm};
use crate::http::ui::view::{
    FormData, Layout, PagePath, PageQuery, UiError, When, check_csrf, page_with_error, see_other,
    shows_error,
};
use crate::service::{sources, webhooks};
use crate::store::deliveries::{Attempt, Delivery};

/// Deliveries one page of the log shows.
const PAGE: usize = 50;

/// A delivery as a row of the log.
pub struct DeliveryVm {
    pub id: String,
    pub event_type: String,
    pub action_id: String,
    pub test: bool,
    pub url: String,
    /// `pending`, `delivered` or `failed`: also the badge's class.
    pub status: String,
    pub attempts: i64,
    pub last_status_code: Option<i64>,
    pub last_error: Option<String>,
    pub last_attempt: Option<When>,
    /// Only while pending.
    pub next_retry: Option<When>,
    pub created: When,
}

fn delivery_vm(d: Delivery, now: Timestamp) -> DeliveryVm {
    DeliveryVm {
        test: d.environment == "test",
        last_attempt: When::opt(d.last_attempt_at.as_deref(), now),
        next_retry: When::opt(d.next_attempt_at.as_deref(), now).filter(|_| d.status == "pending"),
        created: When::new(&d.created_at, now),
        id: d.id,
        event_type: d.event_type,
        action_id: d.action_id,
        url: d.url,
        status: d.status,
        attempts: d.attempts,
        last_status_code: d.last_status_code,
        last_error: d.last_error,
    }
}

/// The Source itself, as the page heads it.
pub struct SourceHead {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub active: bool,
    pub created: When,
    /// The keys that work now: current ones, and replaced ones in their overlap.
    pub keys: Vec<KeyVm>,
    /// Until when a replaced webhook secret still signs beside the current one.
    pub old_secret_until: Option<When>,
}

pub(super) async fn source_head(
    st: &AppState,
    p: &PageUser,
    id: &str,
) -> Result<SourceHead, UiError> {
    let s = sources::get(&st.services, p.user.clone(), id.to_owned()).await?;
    let now = st.services.clock.now();
    Ok(SourceHead {
        created: When::new(&s.created_at, now),
        keys: s.keys.into_iter().map(|k| key_vm(k, now)).collect(),
        old_secret_until: s
            .previous_webhook_secret_expires_at
            .as_deref()
            .map(|until| When::new(until, now)),
        active: s.status == "active",
        id: s.id,
        name: s.name,
        description: s.description,
    })
}

/// Whether the signed-in person may resend (the rule the service applies).
fn manages(p: &PageUser) -> bool {
    p.user
        .active_workspace()
        .is_some_and(|m| access::can_manage_sources(m.role))
}

#[derive(Template, WebTemplate)]
#[template(path = "source.html")]
pub struct SourcePage {
    layout: Layout,
    source: SourceHead,
    deliveries: Vec<DeliveryVm>,
    /// The `before` of the "Load older" link, when there are older ones.
    older: Option<String>,
    /// Whether this is a later page (`?before=`): a link back to the newest.
    paged: bool,
    admin: bool,
    /// Secrets made by the POST that redirected here, shown this once.
    secrets: Option<SecretsVm>,
    /// Redirected here after new secrets, but they were already shown.
    shown_before: bool,
    flash: Option<&'static str>,
    error: Option<String>,
}

shows_error!(SourcePage);

/// The query of the Source page; others are ignored, as on every page.
#[derive(Debug, Default, serde::Deserialize)]
pub struct SourceQuery {
    /// A delivery id: show the ones created before it (`before` is the
    /// older name).
    #[serde(default)]
    pub starting_after: Option<String>,
    #[serde(default)]
    pub before: Option<String>,
    #[serde(default)]
    pub done: Option<String>,
}

pub(super) async fn page(
    st: &AppState,
    p: &PageUser,
    id: &str,
    before: Option<crate::domain::ids::Cursor>,
) -> Result<SourcePage, UiError> {
    let source = source_head(st, p, id).await?;
    let paged = before.is_some();
    let admin = manages(p);
    // The log is for owners and admins (`service::webhooks`); others see the Source.
    let mut rows = if admin {
        webhooks::list(
            &st.services,
            webhooks::Reader::Manager(p.user.clone(), id.to_owned()),
            false,
            before,
            PAGE as i64 + 1,
        )
        .await?
    } else {
        Vec::new()
    };
    let older = (rows.len() > PAGE).then(|| rows[PAGE - 1].id.clone());
    rows.truncate(PAGE);
    let now = st.services.clock.now();
    Ok(SourcePage {
        layout: Layout::signed_in(st, p, source.name.clone(), "sources").await?,
        source,
        deliveries: rows.into_iter().map(|d| delivery_vm(d, now)).collect(),
        older,
        paged,
        admin,
        secrets: None,
        shown_before: false,
        flash: None,
        error: None,
    })
}

/// GET /app/sources/{id}
pub async fn source_page(
    State(st): State<AppState>,
    p: PageUser,
    PagePath(id): PagePath<String>,
    PageQuery(q): PageQuery<SourceQuery>,
) -> Result<SourcePage, UiError> {
    let after = paging::cursor(q.starting_after, q.before, ids::DELIVERY, "a delivery")?;
    let mut out = page(&st, &p, &id, after).await?;
    out.flash = match q.done.as_deref() {
        Some("resent") => {
            Some("Queued again: hds sends it now, with the same webhook-id, signed afresh.")
        }
        Some("created" | "rotated") => {
            out.secrets = take_shown(&st, &p, &id).await?;
            out.shown_before = out.secrets.is_none();
            None
        }
        _ => None,
    };
    Ok(out)
}

/// POST /app/sources/{id}/deliveries/{delivery_id}/resend: the service
/// refuses anyone who does not manage Sources, and nothing is queued.
pub async fn resend_delivery(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    PagePath((id, delivery_id)): PagePath<(String, String)>,
    form: FormData,
) -> std::result::Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    match webhooks::resend(
        &st.services,
        webhooks::Reader::Manager(p.user.clone(), id.clone()),
        delivery_id,
    )
    .await
    {
        Ok(_) => Ok(see_other(&format!("/app/sources/{id}?done=resent"))),
        Err(e) => page_with_error(e, page(&st, &p, &id, None)).await,
    }
}

/// One attempt as the delivery page lists it.
pub struct AttemptVm {
    pub attempt: i64,
    pub started: When,
    pub status_code: Option<i64>,
    pub duration_ms: i64,
    pub error: Option<String>,
}

#[derive(Template, WebTemplate)]
#[template(path = "delivery.html")]
pub struct DeliveryPage {
    layout: Layout,
    source: SourceHead,
    d: DeliveryVm,
    attempts: Vec<AttemptVm>,
    admin: bool,
}

/// GET /app/sources/{id}/deliveries/{delivery_id}: every attempt of one delivery.
pub async fn delivery_page(
    State(st): State<AppState>,
    p: PageUser,
    PagePath((id, delivery_id)): PagePath<(String, String)>,
) -> Result<DeliveryPage, UiError> {
    let source = source_head(&st, &p, &id).await?;
    let (d, attempts) = webhooks::get(
        &st.services,
        webhooks::Reader::Manager(p.user.clone(), id),
        delivery_id,
    )
    .await?;
    let now = st.services.clock.now();
    Ok(DeliveryPage {
        layout: Layout::signed_in(&st, &p, format!("Delivery {}", d.id), "sources").await?,
        source,
        d: delivery_vm(d, now),
        attempts: attempts.into_iter().map(|a| attempt_vm(a, now)).collect(),
        admin: manages(&p),
    })
}

fn attempt_vm(a: Attempt, now: Timestamp) -> AttemptVm {
    AttemptVm {
        attempt: a.attempt,
        started: When::new(&a.started_at, now),
        status_code: a.status_code,
        duration_ms: a.duration_ms,
        error: a.error,
    }
}
