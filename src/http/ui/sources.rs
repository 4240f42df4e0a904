//! The Sources page: list, create (the new Source's keys and webhook secret
//! shown once, on its page: `source_keys::show_once`) and revoke (behind a
//! confirmation). Keys are replaced on the Source page. The service decides
//! who may manage Sources; the page only hides what a member could not do
//! anyway.

use crate::store::sources::{KeyInfo, Source};
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use crate::app::AppState;
use crate::domain::access;
use crate::domain::time;
use crate::error::Result;
use crate::http::session::PageUser;
use crate::http::ui::source_keys::show_once;
use crate::http::ui::view::{
    Ask, ConfirmPage, DoneQuery, FormData, Layout, PagePath, PageQuery, UiError, When, check_csrf,
    page_with_error, see_other, shows_error,
};
use crate::service::sources::{self, SourceCreate};

pub struct KeyVm {
    pub environment: String,
    /// The key's first characters and a mask; never the key.
    pub masked: String,
    /// For a replaced key still in its overlap: when it stops working.
    pub ends: Option<When>,
}

pub(super) fn key_vm(k: KeyInfo, now: time::Timestamp) -> KeyVm {
    KeyVm {
        masked: format!("{}…", k.hint.trim_end_matches('…')),
        ends: When::opt(k.expires_at.as_deref(), now),
        environment: k.environment,
    }
}

pub struct SourceVm {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub active: bool,
    pub keys: Vec<KeyVm>,
    pub created: When,
}

#[derive(Template, WebTemplate)]
#[template(path = "sources.html")]
pub struct SourcesPage {
    layout: Layout,
    sources: Vec<SourceVm>,
    admin: bool,
    flash: Option<&'static str>,
    error: Option<String>,
    /// The form field the error is about.
    error_field: Option<String>,
}

fn source_vm(v: Source, now: time::Timestamp) -> SourceVm {
    SourceVm {
        created: When::new(&v.created_at, now),
        active: v.status == "active",
        keys: v.keys.into_iter().map(|k| key_vm(k, now)).collect(),
        id: v.id,
        name: v.name,
        description: v.description,
    }
}

async fn page(st: &AppState, page: &PageUser) -> Result<SourcesPage, UiError> {
    let listed = sources::list(&st.services, page.user.clone()).await?;
    let now = st.services.clock.now();
    Ok(SourcesPage {
        layout: Layout::signed_in(st, page, "Sources", "sources").await?,
        sources: listed.into_iter().map(|v| source_vm(v, now)).collect(),
        admin: page
            .user
            .active_workspace()
            .is_some_and(|m| access::can_manage_sources(m.role)),
        flash: None,
        error: None,
        error_field: None,
    })
}

shows_error!(fields: SourcesPage);

/// GET /app/sources
pub async fn sources_page(
    State(st): State<AppState>,
    p: PageUser,
    PageQuery(q): PageQuery<DoneQuery>,
) -> Result<SourcesPage, UiError> {
    let mut out = page(&st, &p).await?;
    out.flash = (q.done.as_deref() == Some("revoked"))
        .then_some("Source revoked. Its keys stopped working; its Actions and receipts are kept.");
    Ok(out)
}

/// POST /app/sources: creates the Source and redirects to its page, which
/// shows its keys and webhook secret once.
pub async fn create_source(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    let req = SourceCreate {
        name: form.get("name").unwrap_or_default().to_owned(),
        description: form.text("description"),
    };
    match sources::create(&st.services, p.user.clone(), req).await {
        Ok((made, secrets)) => {
            let title = format!("Source “{}” created", made.name);
            show_once(&st, &p, &made.id, title, secrets, "created").await
        }
        Err(e) => page_with_error(e, page(&st, &p)).await,
    }
}

async fn source_name(st: &AppState, p: &PageUser, id: &str) -> Result<String, UiError> {
    let got = sources::get(&st.services, p.user.clone(), id.to_owned()).await?;
    Ok(got.name)
}

/// POST /app/sources/{id}/revoke
pub async fn revoke_source(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    // Refused before asking: no confirmation offers what the server refuses.
    sources::workspace(&p.user, true)?;
    let name = source_name(&st, &p, &id).await?;
    if form.get("confirmed") != Some("yes") {
        let open = sources::open_actions(&st.services, p.user.clone(), id.clone()).await?;
        let cancels = match open {
            0 => String::new(),
            1 => " Its one open Action will be cancelled.".to_owned(),
            n if n > sources::OPEN_COUNT_CAP => {
                " Its open Actions, more than 10,000, will be cancelled.".to_owned()
            }
            n => format!(" Its {n} open Actions will be cancelled."),
        };
        let ask = Ask {
            heading: "Revoke this Source?".into(),
            message: format!(
                "“{name}” can no longer send or read anything; its keys stop working for good.{cancels} Its Actions, history and receipts are kept."
            ),
            post_to: format!("/app/sources/{id}/revoke"),
            confirm_label: "Revoke the Source".into(),
            cancel_url: "/app/sources".into(),
        };
        return ConfirmPage::ask(&st, &p, "sources", &form, ask).await;
    }
    match sources::revoke(&st.services, p.user.clone(), id).await {
        Ok(()) => Ok(see_other("/app/sources?done=revoked")),
        Err(e) => page_with_error(e, page(&st, &p)).await,
    }
}
