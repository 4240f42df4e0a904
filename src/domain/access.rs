//! Who may do what: typed workspace roles, Action visibility, and one function
//! per permission. The API, the dashboard and every later feature ask these
//! functions; nothing else compares roles (guide: "Roles").
//!
//! | may…                                                   | owner | admin | reviewer | viewer |
//! |--------------------------------------------------------|-------|-------|----------|--------|
//! | read Actions, comments, runs, analytics, billing usage | ✓     | ✓     | ✓        | ✓      |
//! | read a `restricted` Action                             | ✓     | ✓     | listed   | listed |
//! | decide, claim, controls, context                       | ✓ (listed if restricted) | ✓ (listed if restricted) | ✓ (listed if restricted) | ✗ |
//! | vote (approval policy)                                 | listed | listed | listed   | ✗      |
//! | assign, snooze, comment                                | ✓     | ✓     | ✓ (listed if restricted) | ✗ |
//! | manage Sources, invitations, members, notifications    | ✓     | ✓ (not owners) | ✗ | ✗   |
//! | grant or remove `owner`, open the billing portal       | ✓     | ✗     | ✗        | ✗      |
//! | leave the workspace (not its last owner)               | ✓     | ✓     | ✓        | ✓      |

use std::fmt;

use serde::{Deserialize, Serialize};

/// A person's role in one workspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Owner,
    Admin,
    Reviewer,
    Viewer,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Owner, Role::Admin, Role::Reviewer, Role::Viewer];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Admin => "admin",
            Role::Reviewer => "reviewer",
            Role::Viewer => "viewer",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who may read an Action: everyone in its workspace, or (restricted) its
/// listed reviewers plus the workspace's owners and admins.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Visibility {
    #[default]
    Workspace,
    Restricted,
}

impl Visibility {
    pub fn as_str(self) -> &'static str {
        match self {
            Visibility::Workspace => "workspace",
            Visibility::Restricted => "restricted",
        }
    }

    pub fn parse(s: &str) -> Option<Visibility> {
        [Visibility::Workspace, Visibility::Restricted]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// A person's relation to one Action: their role in its workspace, whether
/// the Action is restricted, and whether they are one of its listed reviewers.
#[derive(Clone, Copy, Debug)]
pub struct ActionAccess {
    pub role: Role,
    pub visibility: Visibility,
    pub listed: bool,
    /// The Action has an approval policy: it is decided by votes.
    pub approval: bool,
    /// The person is the one the Source asks on behalf of
    /// (`requested_by_*`) and the approval policy does not allow
    /// self-approval: they may not decide or vote (guide: "Separation of
    /// duties").
    pub own_request: bool,
}

impl ActionAccess {
    /// Read the Action, its history and comments.
    pub fn can_see(self) -> bool {
        match self.visibility {
            Visibility::Workspace => true,
            Visibility::Restricted => manages_workspace(self.role) || self.listed,
        }
    }

    /// Work on it: decide (or vote), claim, assign, snooze, comment, invoke
    /// controls, ask for context. Viewers never; on a restricted Action only
    /// its listed reviewers.
    pub fn can_work_on(self) -> bool {
        self.can_see()
            && self.role != Role::Viewer
            && (self.visibility == Visibility::Workspace || self.listed)
    }

    /// Press one of its callback controls (guide: "Controls"): as working
    /// on it — viewers never, on a restricted Action only listed reviewers.
    pub fn can_invoke_controls(self) -> bool {
        self.can_work_on()
    }

    /// Ask its Source for more context (guide: "Context requests"): as
    /// working on it.
    pub fn can_ask_for_context(self) -> bool {
        self.can_work_on()
    }

    /// Decide it. An Action with an approval policy is then decided by
    /// votes (`can_vote`), which the decision route says with its own code.
    pub fn can_decide(self) -> bool {
        self.can_work_on()
    }

    /// Vote: listed reviewers with a deciding role, on an approval-policy Action.
    pub fn can_vote(self) -> bool {
        self.approval && self.listed && may_vote(self.role)
    }

    /// Refused as their own request: deciding or voting answers 403
    /// SELF_APPROVAL_FORBIDDEN (checked before `can_decide` / `can_vote`).
    pub fn self_approval_forbidden(self) -> bool {
        self.own_request
    }

    /// Whether the inbox offers it for a batch decision: decided outright
    /// (not by votes), by someone who may, on someone else's request.
    pub fn offers_batch_decision(self) -> bool {
        !self.own_request && !self.approval && self.can_decide()
    }

    /// Whether the Action page offers a decision (a vote or a decide form).
    pub fn offers_decision(self) -> bool {
        !self.own_request
            && if self.approval {
                self.can_vote()
            } else {
                self.can_decide()
            }
    }

    /// Why the Action page offers no decision, in words for the person
    /// (`None` when it offers one).
    pub fn why_no_decision(self) -> Option<&'static str> {
        if self.offers_decision() {
            None
        } else if self.own_request {
            Some(
                "You asked for this decision, so someone else makes it: a request is never approved by the person it is for (separation of duties).",
            )
        } else if self.role == Role::Viewer {
            Some("You can read this request but not decide it: viewers read, reviewers decide.")
        } else if self.approval {
            Some("Only the reviewers listed on this request vote on it.")
        } else {
            Some("Only the reviewers listed on this restricted request decide it.")
        }
    }

    /// May hold the Action: claim it, or be named its assignee. Only someone
    /// who may decide it (or vote on it), never its own requester.
    pub fn can_be_assignee(self) -> bool {
        self.offers_decision()
    }

    /// Claim it for themselves.
    pub fn can_claim(self) -> bool {
        self.can_be_assignee()
    }

    /// Organise the work on it: snooze it, comment on it. Viewers never;
    /// reviewers where they may work on it; owners and admins on every
    /// Action they see (the matrix's "✓" for them has no "listed" condition).
    pub fn can_organise(self) -> bool {
        self.can_work_on() || (self.can_see() && manages_workspace(self.role))
    }

    /// Snooze or un-snooze it.
    pub fn can_snooze(self) -> bool {
        self.can_organise()
    }

    /// Write a comment (every member who sees it reads them).
    pub fn can_comment(self) -> bool {
        self.can_organise()
    }

    /// Change a comment's body: its author, while they may still comment.
    pub fn can_edit_comment(self, is_author: bool) -> bool {
        is_author && self.can_comment()
    }

    /// Delete a comment: its author while they may still comment, or an
    /// owner or admin (moderation, as on GitHub).
    pub fn can_delete_comment(self, is_author: bool) -> bool {
        self.can_edit_comment(is_author) || manages_workspace(self.role)
    }

    /// Withdraw it (close it as `cancelled`, nothing decided): the people
    /// who manage the workspace, for a request its Source left open (a
    /// crashed agent, a forgotten job), as they cancel such a run; on a
    /// restricted Action only when listed, so that restricting it to named
    /// people is not undone by every admin (they revoke the Source instead).
    pub fn can_withdraw(self) -> bool {
        manages_workspace(self.role) && self.can_work_on()
    }

    /// Change its assignment. `held_by_other`: someone other than the caller
    /// holds it now. Reviewers assign an Action nobody else holds (or hand on
    /// their own); taking it from someone else is for owners and admins
    /// (DESIGN: "an admin may reassign").
    pub fn can_assign(self, held_by_other: bool) -> bool {
        if manages_workspace(self.role) {
            return self.can_see();
        }
        self.can_work_on() && !held_by_other
    }
}

/// Whether a role votes at all (where listed): every role but viewer. A
/// member whose role no longer does has their approvals withdrawn.
pub fn may_vote(role: Role) -> bool {
    role != Role::Viewer
}

/// Who reads the workspace-wide notices of new Actions (`action.new`
/// broadcasts): the roles that may decide them, every role but viewer.
pub fn hears_of_new_actions(role: Role) -> bool {
    required_for_decision(role).is_none()
}

/// Owners and admins: manage Sources, invitations, members and the
/// notification policy; see every restricted Action.
pub fn manages_workspace(role: Role) -> bool {
    matches!(role, Role::Owner | Role::Admin)
}

/// Create, update, rotate and revoke Sources.
pub fn can_manage_sources(role: Role) -> bool {
    manages_workspace(role)
}

/// Read the workspace's e-mail log (GET /v1/workspaces/emails): it names
/// every recipient and subject, so it is for those who manage the workspace.
pub fn can_read_email_log(role: Role) -> bool {
    manages_workspace(role)
}

/// Runs (guide: "Runs"): every member of a workspace reads its runs, in
/// every environment; only the Source that made a run reports on it
/// (owners and admins may cancel one: [`can_cancel_runs`]).
pub fn can_read_runs(_role: Role) -> bool {
    true
}

/// Cancel a run a Source left active (POST /v1/runs/{id}/cancel): the
/// people who manage the workspace and its Sources.
pub fn can_cancel_runs(role: Role) -> bool {
    manages_workspace(role)
}

/// Who hears that a run failed (`run.failed`), besides the assignees of its
/// open Actions: the people who manage the workspace.
pub fn hears_of_failed_runs(role: Role) -> bool {
    manages_workspace(role)
}

/// The role a refused decision names in `details.required_role`: a viewer
/// needs a deciding role; an owner or admin not listed on a restricted
/// Action needs none (only its listed reviewers decide it), so None.
pub fn required_for_decision(role: Role) -> Option<Role> {
    (role == Role::Viewer).then_some(Role::Reviewer)
}

/// Invite people and revoke invitations; `invited` is the role offered.
pub fn can_invite(role: Role, invited: Role) -> bool {
    manages_workspace(role) && (invited != Role::Owner || role == Role::Owner)
}

/// Change a member's role from `from` to `to`, or remove them (`to` None).
/// Admins manage everyone but owners; only owners grant or remove `owner`.
pub fn can_change_member(actor: Role, from: Role, to: Option<Role>) -> bool {
    if !manages_workspace(actor) {
        return false;
    }
    let touches_owner = from == Role::Owner || to == Some(Role::Owner);
    !touches_owner || actor == Role::Owner
}

/// The role a refused member change names in `details.required_role`:
/// `owner` when it touches an owner (or grants `owner`), else `admin`.
pub fn required_for_member_change(from: Role, to: Option<Role>) -> Role {
    if from == Role::Owner || to == Some(Role::Owner) {
        Role::Owner
    } else {
        required_for_management()
    }
}

/// The roles `actor` may give a member who is now `from` (never `from`
/// itself): what the members page offers, and exactly what the API allows.
pub fn grantable_roles(actor: Role, from: Role) -> Vec<Role> {
    Role::ALL
        .into_iter()
        .filter(|to| *to != from && can_change_member(actor, from, Some(*to)))
        .collect()
}

/// What the members page offers `actor` for a member who is now `from`, in
/// a workspace with `owners` owners: the roles they may give (never `from`
/// itself) and whether they may remove them. Exactly what the API allows,
/// the last-owner rule included, so no button is refused.
pub fn member_changes_offered(
    actor: Role,
    from: Role,
    owners: i64,
    is_self: bool,
) -> (Vec<Role>, bool) {
    let roles = grantable_roles(actor, from)
        .into_iter()
        .filter(|to| !leaves_no_owner(from, Some(*to), owners))
        .collect();
    let removal = (is_self && can_leave(from) || can_change_member(actor, from, None))
        && !leaves_no_owner(from, None, owners);
    (roles, removal)
}

/// Leave a workspace (remove oneself): any member, whatever their role; the
/// last owner only once another member is owner (`leaves_no_owner`).
pub fn can_leave(_role: Role) -> bool {
    true
}

/// Whether a change from `from` to `to` (None: removal) would leave the
/// workspace without an owner, given how many owners it has now. Such a
/// change is refused with 409 `LAST_OWNER` (guide: "Workspaces and members").
pub fn leaves_no_owner(from: Role, to: Option<Role>, owners: i64) -> bool {
    from == Role::Owner && to != Some(Role::Owner) && owners <= 1
}

/// Whether deleting the account of a member with `role` would leave a
/// workspace of `members` people without an owner: refused with 409
/// `LAST_OWNER` (guide: "Account: export and deletion"). A workspace whose
/// only member deletes their account has no one left to hand it to: it is
/// kept, ownerless, with its Actions and receipts, for the operator.
pub fn account_deletion_orphans(role: Role, owners: i64, members: i64) -> bool {
    leaves_no_owner(role, None, owners) && members > 1
}

/// Read the workspace's analytics summary: any member. It holds counts and
/// times only, never a title or a person (guide: "Analytics").
pub fn can_read_analytics(_role: Role) -> bool {
    true
}

/// Open the billing portal.
pub fn can_open_billing(role: Role) -> bool {
    role == Role::Owner
}

/// Set the workspace's notification policy (guide: "Notifications").
pub fn can_set_notification_policy(role: Role) -> bool {
    manages_workspace(role)
}

/// The role a refusal names in `details.required_role`.
pub fn required_for_management() -> Role {
    Role::Admin
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(role: Role, visibility: Visibility, listed: bool, approval: bool) -> ActionAccess {
        ActionAccess {
            role,
            visibility,
            listed,
            approval,
            own_request: false,
        }
    }

    #[test]
    fn roles_round_trip_through_their_names() {
        for r in Role::ALL {
            assert_eq!(Role::parse(r.as_str()), Some(r));
        }
        assert_eq!(Role::parse("root"), None);
    }

    #[test]
    fn restricted_actions_are_for_listed_reviewers_and_managers() {
        use Role::*;
        use Visibility::*;
        for r in Role::ALL {
            assert!(on(r, Workspace, false, false).can_see());
        }
        assert!(on(Owner, Restricted, false, false).can_see());
        assert!(on(Admin, Restricted, false, false).can_see());
        assert!(!on(Reviewer, Restricted, false, false).can_see());
        assert!(on(Viewer, Restricted, true, false).can_see());
        // Managers see a restricted Action but decide only when listed.
        assert!(!on(Admin, Restricted, false, false).can_decide());
        assert!(on(Reviewer, Restricted, true, false).can_decide());
        assert!(!on(Viewer, Restricted, true, false).can_decide());
        assert!(!on(Viewer, Workspace, false, false).can_decide());
    }

    #[test]
    fn approval_actions_are_voted_not_decided() {
        use Role::*;
        use Visibility::*;
        assert!(on(Reviewer, Restricted, true, true).can_vote());
        assert!(!on(Owner, Restricted, false, true).can_vote());
        assert!(!on(Viewer, Restricted, true, true).can_vote());
        assert!(on(Reviewer, Restricted, true, true).offers_decision());
        assert!(!on(Admin, Restricted, false, true).offers_decision());
    }

    #[test]
    fn working_on_an_action_follows_the_matrix() {
        use Role::*;
        use Visibility::*;
        assert!(on(Reviewer, Workspace, false, false).can_claim());
        assert!(!on(Viewer, Workspace, false, false).can_claim());
        assert!(!on(Viewer, Workspace, false, false).can_comment());
        assert!(!on(Viewer, Workspace, false, false).can_snooze());
        assert!(on(Admin, Restricted, false, false).can_comment());
        assert!(!on(Admin, Restricted, false, false).can_claim());
        assert!(!on(Reviewer, Restricted, false, false).can_comment());
        assert!(on(Reviewer, Workspace, false, false).can_assign(false));
        assert!(!on(Reviewer, Workspace, false, false).can_assign(true));
        assert!(on(Admin, Workspace, false, false).can_assign(true));
        assert!(!on(Viewer, Workspace, false, false).can_assign(false));
        assert!(on(Reviewer, Workspace, false, false).can_invoke_controls());
        assert!(!on(Viewer, Workspace, false, false).can_invoke_controls());
        assert!(!on(Reviewer, Restricted, false, false).can_invoke_controls());
        assert!(on(Reviewer, Restricted, true, false).can_ask_for_context());
        assert!(!on(Viewer, Restricted, true, false).can_ask_for_context());
    }

    #[test]
    fn a_requester_is_not_offered_their_own_decision() {
        let mut a = on(Role::Reviewer, Visibility::Workspace, false, false);
        a.own_request = true;
        assert!(a.self_approval_forbidden());
        assert!(!a.offers_decision() && !a.can_claim());
        assert!(a.can_comment());
    }

    #[test]
    fn only_owners_touch_owners() {
        use Role::*;
        assert!(can_change_member(Admin, Reviewer, Some(Viewer)));
        assert!(!can_change_member(Admin, Owner, Some(Admin)));
        assert!(!can_change_member(Admin, Reviewer, Some(Owner)));
        assert!(can_change_member(Owner, Owner, None));
        assert!(!can_change_member(Reviewer, Viewer, None));
        assert!(can_invite(Admin, Reviewer) && !can_invite(Admin, Owner));
        assert_eq!(required_for_member_change(Admin, Some(Viewer)), Admin);
        assert_eq!(required_for_member_change(Owner, None), Owner);
        assert_eq!(required_for_member_change(Viewer, Some(Owner)), Owner);
        assert_eq!(grantable_roles(Admin, Viewer), vec![Admin, Reviewer]);
        assert_eq!(grantable_roles(Owner, Owner), vec![Admin, Reviewer, Viewer]);
        assert!(grantable_roles(Admin, Owner).is_empty());
        assert!(grantable_roles(Reviewer, Viewer).is_empty());
        assert!(leaves_no_owner(Owner, Some(Admin), 1));
        // The sole owner is offered no demotion and no removal; with two
        // owners, both.
        assert_eq!(
            member_changes_offered(Owner, Owner, 1, false),
            (vec![], false)
        );
        assert_eq!(
            member_changes_offered(Owner, Owner, 1, true),
            (vec![], false)
        );
        assert_eq!(
            member_changes_offered(Viewer, Viewer, 1, true),
            (vec![], true)
        );
        assert_eq!(
            member_changes_offered(Viewer, Reviewer, 1, false),
            (vec![], false)
        );
        assert_eq!(
            member_changes_offered(Owner, Owner, 2, false),
            (vec![Admin, Reviewer, Viewer], true)
        );
        assert_eq!(
            member_changes_offered(Admin, Owner, 1, false),
            (vec![], false)
        );
        assert_eq!(
            member_changes_offered(Admin, Viewer, 1, false),
            (vec![Admin, Reviewer], true)
        );
        assert!(leaves_no_owner(Owner, None, 1));
        assert!(!leaves_no_owner(Owner, None, 2));
        assert!(!leaves_no_owner(Owner, Some(Owner), 1));
        assert!(!leaves_no_owner(Admin, None, 1));
        assert!(can_open_billing(Owner) && !can_open_billing(Admin));
        assert!(can_manage_sources(Admin) && !can_manage_sources(Reviewer));
    }
}
