//! Sign-in and session bodies (guide: "Sign-in and sessions", "GET /v1/bootstrap"): sign-in methods, the
//! current session, logout, bootstrap and the native token exchange.

use serde::Serialize;
use utoipa::ToSchema;

use crate::config::ProviderKind;
use crate::domain::access::Role;
use crate::store::actions::InboxCounts;
use crate::store::users::{Credential, User};
use crate::store::workspaces::Workspace;

/// One way to sign in: an identity provider, or the one-time link.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum SigninMethod {
    Provider {
        id: String,
        /// `google`, `apple` or `oidc`.
        #[schema(value_type = String)]
        kind: ProviderKind,
        name: String,
        /// The browser flow; null when the provider has only native client ids.
        start_url: Option<String>,
        native: NativeUrls,
    },
    Link {
        id: &'static str,
        kind: &'static str,
        name: &'static str,
        how: &'static str,
    },
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NativeUrls {
    pub challenge_url: String,
    pub exchange_url: String,
}

/// `{object: "list", data}` of sign-in methods (no paging).
#[derive(Debug, Serialize, ToSchema)]
pub struct MethodList {
    /// Always `list`.
    pub object: &'static str,
    pub data: Vec<SigninMethod>,
    /// Always false: every method is in `data`.
    pub has_more: bool,
}

/// The credential (session or API token) a request came with.
#[derive(Debug, Serialize, ToSchema)]
pub struct CredentialOut {
    pub id: String,
    /// `api` or `session`.
    pub kind: String,
    pub name: String,
    pub method: Option<String>,
    pub client: Option<String>,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub last_used_at: Option<String>,
}

impl From<&Credential> for CredentialOut {
    fn from(c: &Credential) -> Self {
        Self {
            id: c.id.clone(),
            kind: c.kind.clone(),
            name: c.name.clone(),
            method: c.method.clone(),
            client: c.client.clone(),
            created_at: c.created_at.clone(),
            expires_at: c.expires_at.clone(),
            last_used_at: c.last_used_at.clone(),
        }
    }
}

/// GET /v1/auth/session: the credential's fields, how it came, and its person.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionOut {
    #[serde(flatten)]
    pub credential: CredentialOut,
    /// `cookie` or `bearer`.
    pub auth: &'static str,
    pub user: UserOut,
    /// Cookie sessions only: send it back as X-CSRF-Token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub csrf_token: Option<String>,
}

/// A person with their workspaces.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserOut {
    pub id: String,
    pub email: String,
    pub name: Option<String>,
    pub workspaces: Vec<WorkspaceOut>,
}

#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct WorkspaceOut {
    pub id: String,
    pub name: String,
    /// `personal` or `team`.
    pub kind: String,
    /// `owner`, `admin`, `reviewer` or `viewer`.
    #[schema(value_type = String)]
    pub role: Role,
}

impl From<&(Workspace, Role)> for WorkspaceOut {
    fn from((w, role): &(Workspace, Role)) -> Self {
        Self {
            id: w.id.clone(),
            name: w.name.clone(),
            kind: w.kind.clone(),
            role: *role,
        }
    }
}

/// POST /v1/auth/logout.
#[derive(Debug, Serialize, ToSchema)]
pub struct Revoked {
    pub id: String,
    pub revoked: bool,
}

/// GET /v1/bootstrap: what the dashboard's script needs in one request.
#[derive(Debug, Serialize, ToSchema)]
pub struct BootstrapOut {
    pub user: Person,
    pub workspaces: Vec<WorkspaceOut>,
    pub active_workspace: Option<WorkspaceOut>,
    /// Actions per inbox tab: open, snoozed, resolved, cancelled, expired;
    /// each counted up to 1000 (1000 means at least that many).
    #[schema(value_type = Object)]
    pub inbox_counts: InboxCounts,
    pub signin_methods: Vec<SigninMethod>,
    pub api_version: &'static str,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Person {
    pub id: String,
    pub email: String,
    pub name: Option<String>,
}

/// POST /v1/auth/{provider}/native/challenge.
#[derive(Debug, Serialize, ToSchema)]
pub struct Challenge {
    pub nonce: String,
    pub expires_at: String,
}

/// A bearer session from a native sign-in.
#[derive(Debug, Serialize, ToSchema)]
pub struct BearerOut {
    /// `svc_usr_…`, shown once.
    pub token: String,
    pub expires_at: String,
    pub user: UserRecord,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UserRecord {
    pub id: String,
    pub email: String,
    pub name: Option<String>,
    pub created_at: String,
}

impl From<User> for UserRecord {
    fn from(u: User) -> Self {
        Self {
            id: u.id,
            email: u.email,
            name: u.name,
            created_at: u.created_at,
        }
    }
}
