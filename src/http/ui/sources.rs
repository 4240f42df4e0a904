//! The Sources page: list, create (keys and webhook secret shown once),
//! rotate and revoke (each behind a confirmation). The service decides who may
//! manage Sources; the page only hides what a member could not do anyway.

use crate::store::sources::{Secrets, Source};
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::app::AppState;
use crate::domain::access;
use crate::domain::time;
use crate::error::Result;
use crate::http::session::PageUser;
use crate::http::ui::view::{
    Ask, ConfirmPage, DoneQuery, FormData, Layout, PagePath, PageQuery, UiError, When, check_csrf,
    page_with_error, see_other, shows_error,
};
use crate::service::sources::{self, KeyRotate, SourceCreate};

pub struct KeyVm {
    pub environment: String,
    /// The key's first characters and a mask; never the key.
    pub masked: String,
}

pub struct SourceVm {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub active: bool,
    pub keys: Vec<KeyVm>,
    pub created: When,
}

/// Secrets just made: on this response and never again.
pub struct SecretsVm {
    pub title: String,
    pub live_key: Option<String>,
    pub test_key: Option<String>,
    pub webhook_secret: Option<String>,
}

#[derive(Template, WebTemplate)]
#[template(path = "sources.html")]
pub struct SourcesPage {
    layout: Layout,
    sources: Vec<SourceVm>,
    admin: bool,
    secrets: Option<SecretsVm>,
    flash: Option<&'static str>,
    error: Option<String>,
}

fn source_vm(v: Source, now: time::Timestamp) -> SourceVm {
    SourceVm {
        created: When::new(&v.created_at, now),
        active: v.status == "active",
        keys: v
            .keys
            .into_iter()
            .map(|k| KeyVm {
                masked: format!("{}…", k.hint.trim_end_matches('…')),
                environment: k.environment,
            })
            .collect(),
        id: v.id,
        name: v.name,
        description: v.description,
    }
}

fn secrets_vm(title: String, v: Secrets) -> SecretsVm {
    SecretsVm {
        title,
        live_key: v.live_key,
        test_key: v.test_key,
        webhook_secret: v.webhook_secret,
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
        secrets: None,
        flash: None,
        error: None,
    })
}

shows_error!(SourcesPage);

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

/// POST /app/sources
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
            let mut out = page(&st, &p).await?;
            out.secrets = Some(secrets_vm(
                format!("Source “{}” created", made.name),
                secrets,
            ));
            Ok((StatusCode::CREATED, out).into_response())
        }
        Err(e) => page_with_error(e, page(&st, &p)).await,
    }
}

async fn source_name(st: &AppState, p: &PageUser, id: &str) -> Result<String, UiError> {
    let got = sources::get(&st.services, p.user.clone(), id.to_owned()).await?;
    Ok(got.name)
}

/// POST /app/sources/{id}/rotate: new live and test keys (and, if asked, a
/// new webhook secret); the old ones stop working at once.
pub async fn rotate_source(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    let name = source_name(&st, &p, &id).await?;
    if form.get("confirmed") != Some("yes") {
        let ask = Ask {
            heading: "Replace this Source's keys?".into(),
            message: format!(
                "The live and test keys of “{name}” stop working at once. Whatever uses them fails until it is given the new keys."
            ),
            post_to: format!("/app/sources/{id}/rotate"),
            confirm_label: "Replace the keys".into(),
            cancel_url: "/app/sources".into(),
        };
        return ConfirmPage::ask(&st, &p, "sources", &form, ask).await;
    }
    let req = KeyRotate {
        environment: Some("both".into()),
        webhook_secret: form.get("webhook_secret") == Some("yes"),
        // The dashboard keeps the default: the old secret signs for a day more.
        webhook_secret_overlap_seconds: None,
    };
    match sources::rotate_keys(&st.services, p.user.clone(), id, req).await {
        Ok((_, secrets)) => {
            let mut out = page(&st, &p).await?;
            out.secrets = Some(secrets_vm(format!("New keys for “{name}”"), secrets));
            Ok(out.into_response())
        }
        Err(e) => page_with_error(e, page(&st, &p)).await,
    }
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
    let name = source_name(&st, &p, &id).await?;
    if form.get("confirmed") != Some("yes") {
        let ask = Ask {
            heading: "Revoke this Source?".into(),
            message: format!(
                "“{name}” can no longer send or read anything; its keys stop working for good. Its Actions, history and receipts are kept."
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
