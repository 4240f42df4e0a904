//! Source bodies (guide: "GET /v1/sources and GET /v1/sources/{source_id}"): the Source as shown (never a key, only hints)
//! and the one-time secrets of create and rotate.

use serde::Serialize;
use utoipa::ToSchema;

use crate::store::sources::{KeyInfo, Secrets, Source};

#[derive(Debug, Serialize, ToSchema)]
pub struct SourceOut {
    pub id: String,
    /// Always `source`.
    pub object: &'static str,
    pub workspace_id: String,
    pub name: String,
    pub description: Option<String>,
    /// `active` or `revoked`.
    pub status: &'static str,
    pub keys: Vec<KeyOut>,
    /// While a replaced webhook secret still signs beside the current one
    /// (the end of `webhook_secret_overlap_seconds`): until when; `null`
    /// when only the current secret signs.
    pub previous_webhook_secret_expires_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub revoked_at: Option<String>,
}

/// One live or test key that works now, by its hint: the current key of its
/// environment, or a replaced one still in its rotation overlap.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyOut {
    /// `live` or `test`.
    pub environment: String,
    /// The key's first characters, for telling keys apart; never the key.
    pub hint: String,
    pub created_at: String,
    /// For a key replaced in a rotation, when it stops working (the end of
    /// `key_overlap_seconds`); `null` for the current key.
    pub expires_at: Option<String>,
}

/// Secrets shown once; only the rotated ones are present.
#[derive(Debug, Serialize, ToSchema)]
pub struct SecretsOut {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook_secret: Option<String>,
}

/// `{data: Source, secrets}`: the answer to create and rotate.
#[derive(Debug, Serialize, ToSchema)]
pub struct SourceWithSecrets {
    pub data: SourceOut,
    pub secrets: SecretsOut,
}

impl From<&Source> for SourceOut {
    fn from(s: &Source) -> Self {
        Self {
            id: s.id.clone(),
            object: s.object,
            workspace_id: s.workspace_id.clone(),
            name: s.name.clone(),
            description: s.description.clone(),
            status: s.status,
            keys: s.keys.iter().map(KeyOut::from).collect(),
            previous_webhook_secret_expires_at: s.previous_webhook_secret_expires_at.clone(),
            created_at: s.created_at.clone(),
            updated_at: s.updated_at.clone(),
            revoked_at: s.revoked_at.clone(),
        }
    }
}

impl From<&KeyInfo> for KeyOut {
    fn from(k: &KeyInfo) -> Self {
        Self {
            environment: k.environment.clone(),
            hint: k.hint.clone(),
            created_at: k.created_at.clone(),
            expires_at: k.expires_at.clone(),
        }
    }
}

impl From<Secrets> for SecretsOut {
    fn from(s: Secrets) -> Self {
        Self {
            live_key: s.live_key,
            test_key: s.test_key,
            webhook_secret: s.webhook_secret,
        }
    }
}

impl SourceWithSecrets {
    pub fn new((source, secrets): (Source, Secrets)) -> Self {
        Self {
            data: SourceOut::from(&source),
            secrets: secrets.into(),
        }
    }
}
