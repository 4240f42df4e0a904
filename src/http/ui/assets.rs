//! `static/` embedded in the binary (rust-embed; debug builds read the folder
//! from disk). Pages link assets as `/static/<name>?v=<content hash>`, so a
//! matching request may be cached for a year and a new build is never stale.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use rust_embed::RustEmbed;
use serde::Deserialize;

use crate::error::{Code, Error};
use crate::http::extract::{ApiPath, ApiQuery};

#[derive(RustEmbed)]
#[folder = "static/"]
struct Static;

/// First 12 hex digits of the file's SHA-256: enough to tell builds apart.
fn version(name: &str) -> Option<String> {
    Static::get(name).map(|f| hex::encode(&f.metadata.sha256_hash()[..6]))
}

/// The URL a page uses for an asset; `name` is a path inside `static/`.
pub fn url(name: &str) -> String {
    match version(name) {
        Some(v) => format!("/static/{name}?v={v}"),
        // A missing asset is a build mistake; the page still renders.
        None => format!("/static/{name}"),
    }
}

#[derive(Deserialize)]
pub struct AssetQuery {
    v: Option<String>,
}

fn no_such_file(path: &str) -> Error {
    Error::new(Code::NotFound, format!("no static file /static/{path}"))
}

/// GET /static/{*path}. Errors are in the API's envelope, like every other.
pub async fn serve_asset(
    ApiPath(path): ApiPath<String>,
    ApiQuery(q): ApiQuery<AssetQuery>,
) -> Result<Response, Error> {
    if path
        .split('/')
        .any(|seg| seg.is_empty() || seg.starts_with('.'))
    {
        return Err(no_such_file(&path));
    }
    let Some(file) = Static::get(&path) else {
        return Err(no_such_file(&path));
    };
    let current = hex::encode(&file.metadata.sha256_hash()[..6]);
    // Only the URL naming this exact content is immutable; anything else
    // (an old page's link, a hand-typed URL) is revalidated soon.
    let cache = if q.v.as_deref() == Some(current.as_str()) {
        "public, max-age=31536000, immutable"
    } else {
        "public, max-age=300"
    };
    let mut mime = file.metadata.mimetype().to_owned();
    if mime.starts_with("text/") || mime.ends_with("javascript") {
        mime.push_str("; charset=utf-8");
    }
    let mime = HeaderValue::from_str(&mime)
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    Ok((
        [
            (header::CONTENT_TYPE, mime),
            (header::CACHE_CONTROL, HeaderValue::from_static(cache)),
        ],
        file.data.into_owned(),
    )
        .into_response())
}
