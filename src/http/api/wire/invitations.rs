//! Invitation bodies (guide: "Invitations"): the invitation as listed, its
//! one-time `accept_url` on creation, and the workspace an accept joined.

use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::access::Role;
use crate::service::invitations::{Created, EmailStatus, Joined};
use crate::store::invitations::Invitation;

/// What `Role` serialises as.
fn role_schema() -> utoipa::openapi::Object {
    crate::service::inbox::string_enum(&Role::ALL.map(Role::as_str))
}

/// What `Invitation::status` answers.
fn status_schema() -> utoipa::openapi::Object {
    crate::service::inbox::string_enum(&STATUSES)
}

/// What `EmailStatus` answers.
fn email_schema() -> utoipa::openapi::Object {
    crate::service::inbox::string_enum(&EmailStatus::ALL.map(EmailStatus::as_str))
}

/// Every `status` an invitation has (`store::invitations::Invitation::status`).
pub const STATUSES: [&str; 4] = ["pending", "accepted", "revoked", "expired"];

#[derive(Debug, Serialize, ToSchema)]
pub struct InvitationOut {
    /// `inv_` + ULID.
    pub id: String,
    pub email: String,
    /// The role the person gets on accepting.
    #[schema(schema_with = role_schema)]
    pub role: Role,
    /// `pending`, `accepted`, `revoked` or `expired` (past `expires_at`).
    #[schema(schema_with = status_schema)]
    pub status: &'static str,
    /// The user id of whoever invited; null once that account is gone.
    pub invited_by: Option<String>,
    /// Seven days after `created_at`.
    pub expires_at: String,
    pub created_at: String,
    /// The link to send the person, in the creation response only: hds keeps
    /// only its hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accept_url: Option<String>,
    /// In the creation response only: `queued` (the invitation e-mail with
    /// the link is on its way), `not_configured` (hds sends no e-mail: pass
    /// `accept_url` on yourself) or `failed` (the address is not one SMTP can
    /// deliver to; GET /v1/workspaces/emails lists it).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = email_schema)]
    pub email_delivery: Option<&'static str>,
}

impl InvitationOut {
    pub fn new(i: &Invitation, now: &str) -> Self {
        Self {
            id: i.id.clone(),
            email: i.email.clone(),
            role: i.role,
            status: i.status(now),
            invited_by: i.invited_by.clone(),
            expires_at: i.expires_at.clone(),
            created_at: i.created_at.clone(),
            accept_url: None,
            email_delivery: None,
        }
    }

    pub fn created(c: &Created, now: &str) -> Self {
        Self {
            accept_url: Some(c.accept_url.clone()),
            email_delivery: Some(c.email.as_str()),
            ..Self::new(&c.invitation, now)
        }
    }
}

/// The workspace an accepted invitation joined.
#[derive(Debug, Serialize, ToSchema)]
pub struct JoinedWorkspace {
    pub id: String,
    pub name: String,
    /// `personal` or `team`.
    pub kind: String,
    /// The caller's role there: the invitation's.
    #[schema(schema_with = role_schema)]
    pub role: Role,
    /// Whether the credential that accepted now acts on this workspace.
    pub active: bool,
    pub created_at: String,
}

impl From<&Joined> for JoinedWorkspace {
    fn from(j: &Joined) -> Self {
        Self {
            id: j.workspace.id.clone(),
            name: j.workspace.name.clone(),
            kind: j.workspace.kind.clone(),
            role: j.role,
            active: j.active,
            created_at: j.workspace.created_at.clone(),
        }
    }
}
