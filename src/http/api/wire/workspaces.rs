//! Workspace and member bodies (guide: "Workspaces and members").

use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::access::Role;
use crate::service::workspaces::MyWorkspace;
use crate::store::workspaces::Member;

/// A workspace as the caller sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct WorkspaceRecord {
    /// `ws_…`.
    pub id: String,
    pub name: String,
    /// `personal` or `team`.
    pub kind: String,
    /// The caller's role there.
    pub role: Role,
    /// Whether it is the active workspace of the session or token that asked.
    pub active: bool,
    pub created_at: String,
}

impl From<MyWorkspace> for WorkspaceRecord {
    fn from(m: MyWorkspace) -> Self {
        Self {
            id: m.workspace.id,
            name: m.workspace.name,
            kind: m.workspace.kind,
            role: m.role,
            active: m.active,
            created_at: m.workspace.created_at,
        }
    }
}

/// A member of the active workspace.
#[derive(Debug, Serialize, ToSchema)]
pub struct MemberRecord {
    /// `usr_…`.
    pub user_id: String,
    pub email: String,
    pub name: Option<String>,
    pub role: Role,
    /// When they joined the workspace.
    pub joined_at: String,
}

impl From<Member> for MemberRecord {
    fn from(m: Member) -> Self {
        Self {
            user_id: m.user_id,
            email: m.email,
            name: m.name,
            role: m.role,
            joined_at: m.joined_at,
        }
    }
}
