//! Who is calling, as established by the auth extractors, and the one
//! refusal of a caller who may not manage their workspace.

use crate::domain::access::{self, Role};
use crate::domain::action::Environment;
use crate::error::{Code, Error, Result};

/// What a person who belongs to no workspace is told by every route that
/// acts on "the" workspace (the dashboard shows its own page for it).
pub const NO_WORKSPACE: &str = "you belong to no workspace: create one (the dashboard's Workspaces page, or POST /v1/workspaces) or accept an invitation";

/// A Source authenticated by one of its keys; the key decides the environment.
#[derive(Clone, Debug)]
pub struct SourceCaller {
    pub source_id: String,
    pub workspace_id: String,
    pub team_workspace: bool,
    pub environment: Environment,
    /// The hash of the key presented, so a request that waits (a long
    /// poll, a blocking create) can ask again whether it still works.
    pub key_hash: KeyHash,
}

/// A key's hash (`credentials::hash_secret`), never shown in logs.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyHash(pub String);

impl std::fmt::Debug for KeyHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyHash(…)")
    }
}

/// One workspace a person belongs to, with their role there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Membership {
    pub workspace_id: String,
    pub role: Role,
}

/// A signed-in person.
#[derive(Clone, Debug)]
pub struct UserCaller {
    pub user_id: String,
    /// The session or API token the request presented (`ses_…` / `tok_…`).
    pub credential_id: String,
    pub email: String,
    /// When the account was created: an Action's lists name it by its
    /// address only if it existed then (`service::actions::access_of`).
    pub account_created_at: String,
    /// Every membership, the one joined first first.
    pub memberships: Vec<Membership>,
    /// The workspace user-scoped routes act on (inbox, Sources, members…):
    /// the one this session or token selected, else the oldest membership.
    /// None when the person belongs to no workspace.
    pub active: Option<Membership>,
}

impl UserCaller {
    /// Builds the caller; `selected` is the workspace the credential row
    /// names, honoured only while the person is still a member there.
    pub fn new(
        user_id: String,
        credential_id: String,
        email: String,
        account_created_at: String,
        memberships: Vec<Membership>,
        selected: Option<&str>,
    ) -> Self {
        let active = selected
            .and_then(|w| memberships.iter().find(|m| m.workspace_id == w))
            .or_else(|| memberships.first())
            .cloned();
        Self {
            user_id,
            credential_id,
            email,
            account_created_at,
            memberships,
            active,
        }
    }

    /// The active workspace and the caller's role there.
    pub fn active_workspace(&self) -> Option<&Membership> {
        self.active.as_ref()
    }

    /// The active workspace, or 404 `WORKSPACE_NOT_FOUND` for a person who
    /// belongs to none (every route that acts on "the" workspace).
    pub fn active_or_404(&self) -> Result<&Membership> {
        self.active
            .as_ref()
            .ok_or_else(|| Error::new(Code::WorkspaceNotFound, NO_WORKSPACE))
    }

    pub fn role_in(&self, workspace_id: &str) -> Option<Role> {
        self.memberships
            .iter()
            .find(|m| m.workspace_id == workspace_id)
            .map(|m| m.role)
    }
}

/// Refuses a caller whose `role` fails `may`, a `domain::access` permission
/// on managing the workspace: 403 `FORBIDDEN`, "only workspace owners and
/// admins manage {what}", naming the role needed in `details.required_role`
/// (guide: "Roles"). Sources, members and invitations refuse with it.
pub fn require_manager(role: Role, may: fn(Role) -> bool, what: &str) -> Result<()> {
    if may(role) {
        return Ok(());
    }
    Err(Error::new(
        Code::Forbidden,
        format!("only workspace owners and admins manage {what}"),
    )
    .with_detail("required_role", access::required_for_management().as_str()))
}

#[derive(Clone, Debug)]
pub enum Caller {
    Source(SourceCaller),
    User(UserCaller),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(w: &str, role: Role) -> Membership {
        Membership {
            workspace_id: w.into(),
            role,
        }
    }

    #[test]
    fn the_selected_workspace_is_active_while_the_person_is_a_member() {
        let ms = vec![m("ws_a", Role::Owner), m("ws_b", Role::Viewer)];
        let u = |sel| {
            UserCaller::new(
                "u".into(),
                "c".into(),
                "e".into(),
                "t".into(),
                ms.clone(),
                sel,
            )
        };
        assert_eq!(u(None).active, Some(m("ws_a", Role::Owner)));
        assert_eq!(u(Some("ws_b")).active, Some(m("ws_b", Role::Viewer)));
        // A workspace the person left falls back to the oldest membership.
        assert_eq!(u(Some("ws_gone")).active, Some(m("ws_a", Role::Owner)));
    }

    #[test]
    fn only_managers_pass_and_a_refusal_names_what_and_the_role() {
        assert!(require_manager(Role::Admin, access::manages_workspace, "members").is_ok());
        let e = require_manager(Role::Reviewer, access::can_manage_sources, "Sources").unwrap_err();
        assert_eq!(e.code, Code::Forbidden);
        assert_eq!(e.message, "only workspace owners and admins manage Sources");
        assert_eq!(e.details.get("required_role"), Some(&"admin".into()));
    }
}
