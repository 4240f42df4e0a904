//! System routes (guide: "Endpoints"): service index, liveness, readiness, receipt keys,
//! the public guide and the OpenAPI document.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use sha2::{Digest, Sha256};

use crate::app::AppState;
use crate::domain::receipt;
use crate::error::Result;
use crate::http::api::wire::system::{Guide, Health, IndexOut, Jwks, Links, Ready, ReadyChecks};
use crate::store::receipts;

/// Service index: JSON for API clients; browsers (Accept: text/html) go to the dashboard.
#[utoipa::path(get, path = "/", tag = "system", responses((status = 200, description = "name, API version and links", body = IndexOut), (status = 303, description = "browsers: to /app")))]
pub async fn index(State(st): State<AppState>, headers: HeaderMap) -> Response {
    let browser = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/html"));
    if browser {
        return axum::response::Redirect::to("/app").into_response();
    }
    Json(IndexOut {
        name: "hds",
        description: "Human-Decision Service",
        api_version: crate::API_VERSION,
        base_url: st.services.config.base_url.clone(),
        links: Links {
            docs: "/v1/docs",
            openapi: "/v1/openapi.json",
            receipt_keys: "/v1/receipts/keys",
            health: "/health",
            ready: "/ready",
            dashboard: "/app",
            signin_methods: "/v1/auth/providers",
        },
    })
    .into_response()
}

/// Process liveness; says nothing about the deployment.
#[utoipa::path(get, path = "/health", tag = "system", responses((status = 200, description = "alive", body = Health)))]
pub async fn health() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// How long a write that found the disk full keeps `database_write`
/// failing: the probe's one small page may fit where the writes do not.
const DISK_FULL_WINDOW: std::time::Duration = std::time::Duration::from_secs(60);

/// Readiness: the database answers a read, the writer commits a change
/// (`ready_probe`), and the data dir's file system has `--ready-min-free-mb`
/// free. Below that, a write that grows the log or the database (a create
/// with a long description, a checkpoint) is about to fail, which the
/// writer's probe alone cannot tell (its one small page may still fit).
#[utoipa::path(get, path = "/ready", tag = "system", responses((status = 200, description = "ready", body = Ready), (status = 503, description = "not ready", body = Ready)))]
pub async fn ready(State(st): State<AppState>) -> Response {
    let db = &st.services.db;
    let read = db
        .read(|c| Ok(c.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))?))
        .await
        .is_ok();
    let write = db
        .probe_commit(crate::domain::time::format(st.services.clock.now()))
        .await
        && !db.disk_full_within(DISK_FULL_WINDOW);
    // A receipt key this process cannot read (another owner, a damaged
    // file) would fail every decision.
    let keyring = st.services.keyring.clone();
    let signing = db
        .read(move |c| Ok(keyring.can_sign(c)))
        .await
        .unwrap_or(false);
    let free = crate::files::free_bytes(&st.services.config.data_dir);
    let min_free = st
        .services
        .config
        .ready_min_free_mb
        .saturating_mul(1024 * 1024);
    let space = free.is_none_or(|f| f >= min_free);
    let ok = read && write && space && signing;
    let check = |ok: bool| if ok { "ok" } else { "failing" };
    let body = Ready {
        status: if ok { "ready" } else { "unavailable" },
        checks: ReadyChecks {
            database_read: check(read),
            database_write: check(write),
            receipt_signing: check(signing),
            disk_space: match free {
                None => "unknown",
                Some(_) => check(space),
            },
        },
    };
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(body)).into_response()
}

/// The JWKS of every key that ever signed a receipt.
#[utoipa::path(get, path = "/v1/receipts/keys", tag = "receipts", responses((status = 200, description = "JWKS (RFC 7517)", body = Jwks, content_type = "application/jwk-set+json"), (status = 304, description = "not modified")))]
pub async fn receipt_keys(State(st): State<AppState>, headers: HeaderMap) -> Result<Response> {
    let keys = st.services.db.read(receipts::keys).await?;
    let body = receipt::jwks(&keys).to_string();
    let etag = format!(
        "\"{}\"",
        &hex::encode(Sha256::digest(body.as_bytes()))[..32]
    );
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        // RFC 9110 §13.1.2: weak comparison (a `W/` tag matches), and `*`
        // matches any current representation.
        .is_some_and(|v| {
            v.split(',')
                .map(str::trim)
                .any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t) == etag)
        });
    let mut resp = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "application/jwk-set+json")], body).into_response()
    };
    let h = resp.headers_mut();
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    Ok(resp)
}

/// The public user guide, as JSON sections of Markdown.
#[utoipa::path(get, path = "/v1/docs", tag = "system", responses((status = 200, description = "the guide as Markdown sections", body = Guide)))]
pub async fn docs() -> Json<Guide> {
    Json(crate::http::docs::guide())
}

/// This API's OpenAPI 3.1 document, generated from the route table.
#[utoipa::path(get, path = "/v1/openapi.json", tag = "system", responses((status = 200, description = "OpenAPI document", body = Object)))]
pub async fn openapi(Extension(doc): Extension<Arc<serde_json::Value>>) -> Response {
    Json(doc.as_ref()).into_response()
}
