//! Workspaces and their members (guide: "Workspaces and members"): list the
//! caller's workspaces, create a team workspace, select the active one for one
//! session or token, and list, re-role or remove members. Who may change whom
//! is decided by `domain::access`; the last-owner rule is checked inside the
//! writer's transaction, so two concurrent demotions cannot both pass.

use serde::Deserialize;
use utoipa::ToSchema;

use crate::domain::access::{self, Role};
use crate::domain::action::Actor;
use crate::domain::time;
use crate::error::{Code, Error, Result};
use crate::service::Services;
use crate::service::caller::UserCaller;
use crate::service::{invitations, work};
use crate::store::workspaces::{self as store, Member, Workspace};
use crate::store::{users, workspaces};

/// POST /v1/workspaces.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceCreate {
    /// 1-100 characters, one line.
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069][^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*$"
    )]
    pub name: String,
}

/// POST /v1/workspaces/select.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceSelect {
    /// A workspace the caller belongs to (`ws_…`).
    pub workspace_id: String,
}

/// PATCH /v1/workspaces/members/{user_id}.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = MembershipRoleUpdate)]
pub struct MemberUpdate {
    /// `owner`, `admin`, `reviewer` or `viewer`.
    #[schema(schema_with = role_schema)]
    pub role: String,
}

fn role_schema() -> utoipa::openapi::Object {
    crate::service::inbox::string_enum(&["owner", "admin", "reviewer", "viewer"])
}

/// A workspace as its member sees it.
#[derive(Clone, Debug)]
pub struct MyWorkspace {
    pub workspace: Workspace,
    pub role: Role,
    /// The active workspace of the credential that asked.
    pub active: bool,
}

/// A workspace name, trimmed: 1–100 characters, one line.
pub fn check_name(name: &str) -> Result<String> {
    let n = name.trim();
    if crate::domain::validate::says_nothing(n) {
        return Err(Error::field(
            "name",
            "name must be 1-100 characters, not only blanks or invisible characters",
        ));
    }
    if n.chars().count() > 100 {
        return Err(Error::field("name", "name must be 1-100 characters"));
    }
    if !crate::domain::validate::is_one_line(n) {
        return Err(Error::field(
            "name",
            format!("name {}", crate::domain::validate::ONE_LINE),
        ));
    }
    Ok(n.to_owned())
}

fn workspace_not_found() -> Error {
    Error::new(
        Code::WorkspaceNotFound,
        "no workspace with that id among yours; GET /v1/workspaces lists them",
    )
}

fn member_not_found() -> Error {
    Error::new(
        Code::MemberNotFound,
        "no member with that user id in this workspace; GET /v1/workspaces/members lists them",
    )
}

/// The caller's active workspace, or 404 when they belong to none.
fn active(user: &UserCaller) -> Result<String> {
    Ok(user.active_or_404()?.workspace_id.clone())
}

/// Every workspace of the caller, in the order they joined them, the
/// active one marked.
pub async fn list(s: &Services, user: &UserCaller) -> Result<Vec<MyWorkspace>> {
    let uid = user.user_id.clone();
    let active = user.active_workspace().map(|m| m.workspace_id.clone());
    let all = s.db.read(move |c| store::of_user(c, &uid)).await?;
    Ok(all
        .into_iter()
        .map(|(w, role)| MyWorkspace {
            active: Some(&w.id) == active.as_ref(),
            workspace: w,
            role,
        })
        .collect())
}

/// Creates a team workspace whose owner is the caller. It does not become
/// active by itself: `select` does that.
pub async fn create(s: &Services, user: &UserCaller, req: WorkspaceCreate) -> Result<MyWorkspace> {
    let name = check_name(&req.name)?;
    let uid = user.user_id.clone();
    let now = time::format(s.clock.now());
    // On the operator's `[billing] default_plan`: a workspace anyone may
    // make is not a way around the plans.
    let plan = s.config.billing.default_plan.clone();
    let most = s.config.billing.workspaces_per_person;
    let w = s
        .write(move |c, _| {
            // Nor is making many of them: counted in the same transaction.
            if let Some(most) = most {
                let n = store::owned_on_plan(c, &uid, &plan)?;
                if n >= i64::from(most) {
                    return Err(Error::new(
                        Code::PlanLimitReached,
                        format!(
                            "you own {n} workspace{s} on the {plan} plan, the most one person may create here; \
                             use one of them, move one to another plan (on its Billing page when this server takes subscriptions through Stripe, else by the operator: `hds workspaces set-plan`), or ask the operator to create one (`hds workspaces create`)",
                            s = if n == 1 { "" } else { "s" }
                        ),
                    )
                    .with_detail("resource", "workspaces")
                    .with_detail("limit", most)
                    .with_detail("used", n));
                }
            }
            let w = create_team(c, &name, &uid, &now)?;
            crate::store::billing::set_plan(c, &w.id, &plan)?;
            Ok(w)
        })
        .await?;
    Ok(MyWorkspace {
        workspace: w,
        role: Role::Owner,
        active: false,
    })
}

/// A team workspace and its first owner, in the caller's transaction (the
/// API and `hds workspaces create` share it).
pub fn create_team(
    c: &rusqlite::Connection,
    name: &str,
    owner_id: &str,
    now: &str,
) -> Result<Workspace> {
    let w = store::create(c, name, "team", now)?;
    store::add_member(c, &w.id, owner_id, Role::Owner, now)?;
    Ok(w)
}

/// Makes `workspace_id` the active workspace of the credential that asked
/// (this session or token only). Not a member → 404 `WORKSPACE_NOT_FOUND`.
pub async fn select(s: &Services, user: &UserCaller, req: WorkspaceSelect) -> Result<MyWorkspace> {
    let (uid, cred) = (user.user_id.clone(), user.credential_id.clone());
    let ws = req.workspace_id;
    s.write(move |c, _| {
        let Some(role) = store::role_of(c, &ws, &uid)? else {
            return Err(workspace_not_found());
        };
        let w = store::get(c, &ws)?.ok_or_else(workspace_not_found)?;
        if !users::select_workspace(c, &uid, &cred, &ws)? {
            // The credential was revoked between authentication and now.
            return Err(Error::new(
                Code::InvalidApiKey,
                "this session or token was revoked: sign in again",
            ));
        }
        Ok(MyWorkspace {
            workspace: w,
            role,
            active: true,
        })
    })
    .await
}

/// Every member of the active workspace; any member may read the list.
pub async fn members(s: &Services, user: &UserCaller) -> Result<Vec<Member>> {
    let ws = active(user)?;
    s.db.read(move |c| workspaces::members(c, &ws)).await
}

/// The refusal of a member change, naming the role it needs.
fn forbidden(from: Role, to: Option<Role>) -> Error {
    let required = access::required_for_member_change(from, to);
    Error::new(
        Code::Forbidden,
        "only owners grant the owner role or change or remove an owner",
    )
    .with_detail("required_role", required.as_str())
}

/// Checks, inside the write transaction, that `actor_id` may move `target`
/// from their role to `to` (None: removal) in `ws`; answers the target.
fn check_change(
    c: &rusqlite::Connection,
    ws: &str,
    actor_id: &str,
    target: &str,
    to: Option<Role>,
) -> Result<Member> {
    // The actor's role as of this transaction, not as of authentication.
    let actor = store::role_of(c, ws, actor_id)?.ok_or_else(workspace_not_found)?;
    let leaving = to.is_none() && actor_id == target && access::can_leave(actor);
    if !leaving {
        crate::service::caller::require_manager(actor, access::manages_workspace, "members")?;
    }
    let member = store::member(c, ws, target)?.ok_or_else(member_not_found)?;
    if !leaving && !access::can_change_member(actor, member.role, to) {
        return Err(forbidden(member.role, to));
    }
    if access::leaves_no_owner(member.role, to, store::owner_count(c, ws)?) {
        let message = if leaving {
            "you are the workspace's last owner and cannot leave it; make another member owner \
             first (with no one else in it, deleting your account keeps it, ownerless, for the operator)"
                .to_owned()
        } else {
            let what = if to.is_some() { "demoted" } else { "removed" };
            format!(
                "{} is the workspace's last owner and cannot be {what}; make another member owner first",
                member.email
            )
        };
        return Err(Error::new(Code::LastOwner, message));
    }
    Ok(member)
}

/// Changes a member's role in the active workspace; the open Actions they
/// hold and may not decide in the new role (a viewer decides none) are
/// released, and their pending invitations offering a role the new one may
/// not offer are revoked.
pub async fn change_role(
    s: &Services,
    user: &UserCaller,
    target: String,
    req: MemberUpdate,
) -> Result<Member> {
    let ws = active(user)?;
    let role = Role::parse(&req.role).ok_or_else(|| {
        Error::field(
            "role",
            format!(
                "`{}` is not a role; use owner, admin, reviewer or viewer",
                req.role
            ),
        )
    })?;
    let actor = user.user_id.clone();
    let now = time::format(s.clock.now());
    s.write(move |c, fx| {
        let mut member = check_change(c, &ws, &actor, &target, Some(role))?;
        if member.role != role {
            let old_role = member.role;
            store::set_role(c, &ws, &target, role)?;
            member.role = role;
            // What they may no longer decide they no longer hold.
            let release = work::Release {
                workspace_id: &ws,
                user_id: &member.user_id,
                email: &member.email,
                role: Some(role),
                old_role,
                by: Actor::user(&actor),
                reason: format!("role changed to {}", role.as_str()),
            };
            work::release_held(c, fx, &release, &now)?;
            // Nor do their invitations offer what they may no longer offer.
            invitations::revoke_offered_by(c, fx, &ws, &member.user_id, Some(role), &now)?;
        }
        Ok(member)
    })
    .await
}

/// The member `target` if the caller may remove them now, else the refusal
/// `remove` would give: the dashboard asks for confirmation only then.
pub async fn may_remove(s: &Services, user: &UserCaller, target: String) -> Result<Member> {
    let ws = active(user)?;
    let actor = user.user_id.clone();
    s.db.read(move |c| check_change(c, &ws, &actor, &target, None))
        .await
}

/// Removes a member from the active workspace; their sessions and tokens
/// that had selected it fall back to their oldest membership, the open
/// Actions they held there are released (`work::release_held`) and their
/// pending invitations revoked.
pub async fn remove(s: &Services, user: &UserCaller, target: String) -> Result<()> {
    let ws = active(user)?;
    let actor = user.user_id.clone();
    let now = time::format(s.clock.now());
    s.write(move |c, fx| {
        let member = check_change(c, &ws, &actor, &target, None)?;
        let release = work::Release {
            workspace_id: &ws,
            user_id: &member.user_id,
            email: &member.email,
            role: None,
            old_role: member.role,
            by: Actor::user(&actor),
            reason: "member removed".into(),
        };
        work::release_held(c, fx, &release, &now)?;
        // Their pending invitations go with them.
        invitations::revoke_offered_by(c, fx, &ws, &member.user_id, None, &now)?;
        store::remove_member(c, &ws, &target, &now)?;
        // What they were told about this workspace goes with them, and
        // what was still to be mailed to them.
        crate::store::notifications::forget_workspace(c, &target, &ws)?;
        crate::store::mail::cancel_for_member(c, &ws, &target, &now)?;
        Ok(())
    })
    .await
}
