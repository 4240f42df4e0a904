//! The e-mail log page, `/app/settings/emails` (guide: "E-mail"): the active
//! workspace's mails newest first, 50 at a time, for owners and admins. It
//! reads what GET /v1/workspaces/emails reads (`service::mail::list`), which
//! also refuses everyone else.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;

use crate::app::AppState;
use crate::domain::time::Timestamp;
use crate::http::session::PageUser;
use crate::http::ui::view::{Layout, PageQuery, UiError, When, shows_error};
use crate::service::mail::{self, MailListParams};
use crate::store::mail::Mail;

/// Mails one page shows.
const PAGE: i64 = 50;

/// A mail as a row of the log.
pub struct MailVm {
    pub id: String,
    pub kind: String,
    pub to: String,
    pub subject: String,
    /// `pending`, `sent` or `failed`: also the badge's class.
    pub status: String,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub last_attempt: Option<When>,
    pub created: When,
}

fn mail_vm(m: Mail, now: Timestamp) -> MailVm {
    MailVm {
        last_attempt: When::opt(m.last_attempt_at.as_deref(), now),
        created: When::new(&m.created_at, now),
        id: m.id,
        kind: m.kind,
        to: m.to,
        subject: m.subject,
        status: m.status,
        attempts: m.attempts,
        last_error: m.last_error,
    }
}

#[derive(Template, WebTemplate)]
#[template(path = "emails.html")]
pub struct EmailsPage {
    layout: Layout,
    mails: Vec<MailVm>,
    /// The status shown, if one was picked.
    status: Option<String>,
    /// The `starting_after` of the "Load older" link, when there are older ones.
    older: Option<String>,
    paged: bool,
    enabled: bool,
    error: Option<String>,
}

shows_error!(EmailsPage);

/// The page's query; others are ignored, as on every page.
#[derive(Debug, Default, serde::Deserialize)]
pub struct EmailsQuery {
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub starting_after: Option<String>,
}

/// GET /app/settings/emails
pub async fn emails_page(
    State(st): State<AppState>,
    p: PageUser,
    PageQuery(q): PageQuery<EmailsQuery>,
) -> Result<EmailsPage, UiError> {
    let status = q.status.filter(|s| !s.is_empty());
    let paged = q.starting_after.is_some();
    let params = MailListParams {
        status: status.clone(),
        limit: Some(PAGE),
        starting_after: q.starting_after,
    };
    let (rows, has_more) = mail::list(&st.services, &p.user, params).await?;
    let older = has_more
        .then(|| rows.last().map(|m| m.id.clone()))
        .flatten();
    let now = st.services.clock.now();
    Ok(EmailsPage {
        layout: Layout::signed_in(&st, &p, "E-mail log", "").await?,
        mails: rows.into_iter().map(|m| mail_vm(m, now)).collect(),
        status,
        older,
        paged,
        enabled: mail::enabled(&st.services.config),
        error: None,
    })
}
