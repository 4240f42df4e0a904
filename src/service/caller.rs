//! Who is calling, as established by the auth extractors.

use crate::domain::action::Environment;

/// A Source authenticated by one of its keys; the key decides the environment.
#[derive(Clone, Debug)]
pub struct SourceCaller {
    pub source_id: String,
    pub workspace_id: String,
    pub team_workspace: bool,
    pub environment: Environment,
}

/// A signed-in person.
#[derive(Clone, Debug)]
pub struct UserCaller {
    pub user_id: String,
    /// The session or API token the request presented (`ses_…` / `tok_…`).
    pub credential_id: String,
    pub email: String,
    /// (workspace id, role), oldest membership first.
    pub memberships: Vec<(String, String)>,
}

impl UserCaller {
    /// The workspace user-scoped routes act on: the first membership until
    /// workspace selection lands.
    pub fn active_workspace(&self) -> Option<&(String, String)> {
        self.memberships.first()
    }
    pub fn role_in(&self, workspace_id: &str) -> Option<&str> {
        self.memberships
            .iter()
            .find(|(w, _)| w == workspace_id)
            .map(|(_, r)| r.as_str())
    }
}

#[derive(Clone, Debug)]
pub enum Caller {
    Source(SourceCaller),
    User(UserCaller),
}

/// Roles that may manage Sources and see restricted Actions.
pub fn is_admin(role: &str) -> bool {
    matches!(role, "owner" | "admin")
}

/// Roles that may decide.
pub fn can_decide(role: &str) -> bool {
    matches!(role, "owner" | "admin" | "reviewer")
}
