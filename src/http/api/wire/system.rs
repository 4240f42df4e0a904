//! System bodies (guide: "Endpoints"): index, health, readiness, receipt keys, guide.

use serde::Serialize;
use utoipa::ToSchema;

/// GET / for API clients.
#[derive(Debug, Serialize, ToSchema)]
pub struct IndexOut {
    pub name: &'static str,
    pub description: &'static str,
    pub api_version: &'static str,
    pub base_url: String,
    pub links: Links,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Links {
    pub docs: &'static str,
    pub openapi: &'static str,
    pub receipt_keys: &'static str,
    pub health: &'static str,
    pub ready: &'static str,
    pub dashboard: &'static str,
    pub signin_methods: &'static str,
}

/// GET /health.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// Always `ok`.
    pub status: &'static str,
}

/// GET /ready, also the body of its 503.
#[derive(Debug, Serialize, ToSchema)]
pub struct Ready {
    /// `ready` or `unavailable`.
    pub status: &'static str,
    pub checks: ReadyChecks,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ReadyChecks {
    /// `ok` or `failing`.
    pub database_read: &'static str,
    pub database_write: &'static str,
    /// `ok`, or `failing` when the active receipt signing key cannot be read
    /// (its file has another owner or is damaged): decisions would fail.
    pub receipt_signing: &'static str,
    /// `ok`, or `failing` when the data dir's file system has less free than
    /// `--ready-min-free-mb` (64 MiB by default): writes are about to fail for
    /// want of space. `unknown` where free space cannot be read.
    pub disk_space: &'static str,
}

/// GET /v1/receipts/keys: a JWK Set (RFC 7517) of Ed25519 public keys (RFC 8037).
#[derive(Debug, Serialize, ToSchema)]
pub struct Jwks {
    /// `{kty: OKP, crv: Ed25519, x, kid, alg: EdDSA, use: sig, status, created_at, retired_at}` per key.
    #[schema(value_type = Vec<Object>)]
    pub keys: Vec<serde_json::Value>,
}

/// GET /v1/docs: the public guide as Markdown sections.
#[derive(Debug, Serialize, ToSchema)]
pub struct Guide {
    pub title: String,
    pub api_version: &'static str,
    /// Always `markdown`.
    pub format: &'static str,
    pub sections: Vec<GuideSection>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct GuideSection {
    pub id: String,
    pub title: String,
    pub markdown: String,
}
