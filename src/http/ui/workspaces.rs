//! The workspace pages: the header's switcher (POST /app/workspaces/select),
//! "Your workspaces" with the "New workspace" form, and the members page with
//! role change and removal forms. Each form calls the same service as
//! /v1/workspaces; the members page offers exactly what `domain::access`
//! allows the person, and the service checks again.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use crate::app::AppState;
use crate::domain::access::{self, Role};
use crate::error::Error;
use crate::http::session::PageUser;
use crate::http::ui::view::{
    Ask, ConfirmPage, DoneQuery, FormData, Layout, PagePath, PageQuery, UiError, When, check_csrf,
    page_with_error, see_other, shows_error,
};
use crate::service::workspaces::{self, MemberUpdate, WorkspaceCreate, WorkspaceSelect};

/// A local path to return to after switching; anything else goes to the inbox.
fn back_to(form: &FormData) -> String {
    match crate::http::session::local_next(form.get("next")) {
        Ok(n) if n.starts_with("/app") => n,
        _ => "/app".to_owned(),
    }
}

/// POST /app/workspaces/select: the header's switcher.
pub async fn select_workspace(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    let req = WorkspaceSelect {
        workspace_id: form.get("workspace_id").unwrap_or_default().to_owned(),
    };
    workspaces::select(&st.services, &p.user, req).await?;
    Ok(see_other(&back_to(&form)))
}

pub struct WorkspaceVm {
    pub id: String,
    pub name: String,
    pub kind: String,
    pub role: Role,
    pub active: bool,
    pub created: When,
}

#[derive(Template, WebTemplate)]
#[template(path = "workspaces.html")]
pub struct WorkspacesPage {
    layout: Layout,
    workspaces: Vec<WorkspaceVm>,
    /// Invitations to the person's address still waiting to be accepted.
    invited: Vec<InvitedVm>,
    /// The person's address, which the invitation e-mails went to.
    email: String,
    flash: Option<&'static str>,
    error: Option<String>,
    /// The form field the error is about.
    error_field: Option<String>,
    /// The name typed into "New workspace", back after a refusal.
    entered_name: String,
}

shows_error!(fields: WorkspacesPage);

/// An invitation waiting for the person.
pub struct InvitedVm {
    pub workspace_name: String,
    pub role: Role,
    /// Who invited them, when that account still has an address.
    pub by: Option<String>,
    pub expires: When,
    /// hds e-mailed the link; otherwise only whoever invited has it.
    pub mailed: bool,
}

async fn workspaces_view(st: &AppState, p: &PageUser) -> Result<WorkspacesPage, UiError> {
    let all = workspaces::list(&st.services, &p.user).await?;
    let waiting = crate::service::invitations::waiting_for(&st.services, &p.user).await?;
    let now = st.services.clock.now();
    Ok(WorkspacesPage {
        layout: Layout::signed_in(st, p, "Workspaces", "workspaces").await?,
        invited: waiting
            .into_iter()
            .map(|i| InvitedVm {
                workspace_name: i.workspace_name,
                role: i.role,
                by: i.invited_by_email,
                expires: When::new(&i.expires_at, now),
                mailed: i.mailed,
            })
            .collect(),
        email: p.user.email.clone(),
        workspaces: all
            .into_iter()
            .map(|w| WorkspaceVm {
                created: When::new(&w.workspace.created_at, now),
                id: w.workspace.id,
                name: w.workspace.name,
                kind: w.workspace.kind,
                role: w.role,
                active: w.active,
            })
            .collect(),
        flash: None,
        error: None,
        error_field: None,
        entered_name: String::new(),
    })
}

/// GET /app/workspaces
pub async fn workspaces_page(
    State(st): State<AppState>,
    p: PageUser,
    PageQuery(q): PageQuery<DoneQuery>,
) -> Result<WorkspacesPage, UiError> {
    let mut out = workspaces_view(&st, &p).await?;
    out.flash = (q.done.as_deref() == Some("left"))
        .then_some("You left the workspace. This session now acts on the workspace below marked active, if any.");
    Ok(out)
}

/// POST /app/workspaces: creates a team workspace the person owns and
/// switches this session to it.
pub async fn create_workspace(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    let req = WorkspaceCreate {
        name: form.get("name").unwrap_or_default().to_owned(),
    };
    match workspaces::create(&st.services, &p.user, req).await {
        Ok(made) => {
            let select = WorkspaceSelect {
                workspace_id: made.workspace.id,
            };
            workspaces::select(&st.services, &p.user, select).await?;
            Ok(see_other("/app/members?done=created"))
        }
        Err(e) => {
            let typed = form
                .get("name")
                .unwrap_or_default()
                .chars()
                .take(100)
                .collect();
            page_with_error(e, async {
                let mut page = workspaces_view(&st, &p).await?;
                page.entered_name = typed;
                Ok(page)
            })
            .await
        }
    }
}

pub struct MemberVm {
    pub user_id: String,
    pub email: String,
    pub name: Option<String>,
    pub role: Role,
    pub joined: When,
    pub is_me: bool,
    /// Roles the viewer of the page may give this member (never the current one).
    pub grantable: Vec<Role>,
    pub removable: bool,
}

#[derive(Template, WebTemplate)]
#[template(path = "members.html")]
pub struct MembersPage {
    layout: Layout,
    workspace_name: String,
    my_role: Role,
    my_id: String,
    /// The person may leave (they are not its last owner).
    may_leave: bool,
    members: Vec<MemberVm>,
    manages: bool,
    flash: Option<&'static str>,
    error: Option<String>,
}

async fn members_view(st: &AppState, p: &PageUser) -> Result<MembersPage, UiError> {
    let listed = workspaces::members(&st.services, &p.user).await?;
    let mine = workspaces::list(&st.services, &p.user).await?;
    let active = mine.into_iter().find(|w| w.active).ok_or_else(|| {
        UiError(Error::new(
            crate::error::Code::WorkspaceNotFound,
            "you belong to no workspace",
        ))
    })?;
    let me = active.role;
    let now = st.services.clock.now();
    let owners = listed.iter().filter(|m| m.role == Role::Owner).count();
    let owners = i64::try_from(owners).unwrap_or(i64::MAX);
    let members: Vec<MemberVm> = listed
        .into_iter()
        .map(|m| {
            let is_me = m.user_id == p.user.user_id;
            let (grantable, removable) = access::member_changes_offered(me, m.role, owners, is_me);
            MemberVm {
                grantable,
                removable,
                is_me,
                joined: When::new(&m.joined_at, now),
                user_id: m.user_id,
                email: m.email,
                name: m.name,
                role: m.role,
            }
        })
        .collect();
    let may_leave = members.iter().any(|m| m.is_me && m.removable);
    Ok(MembersPage {
        layout: Layout::signed_in(st, p, "Members", "members").await?,
        workspace_name: active.workspace.name,
        my_role: me,
        my_id: p.user.user_id.clone(),
        may_leave,
        members,
        manages: access::manages_workspace(me),
        flash: None,
        error: None,
    })
}

shows_error!(MembersPage);

/// GET /app/members
pub async fn members_page(
    State(st): State<AppState>,
    p: PageUser,
    PageQuery(q): PageQuery<DoneQuery>,
) -> Result<MembersPage, UiError> {
    let mut out = members_view(&st, &p).await?;
    out.flash = match q.done.as_deref() {
        Some("role") => Some("Role changed."),
        Some("removed") => Some("Member removed. Their sessions no longer see this workspace."),
        Some("created") => {
            Some("Workspace created; you are its owner and it is now your active workspace.")
        }
        _ => None,
    };
    Ok(out)
}

/// POST /app/members/{user_id}/role
pub async fn change_role(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    let req = MemberUpdate {
        role: form.get("role").unwrap_or_default().to_owned(),
    };
    // Making someone an owner gives them everything, the other owners
    // included: asked first, of someone the page offers it to (anyone else
    // gets the change's own refusal below).
    if req.role == "owner" && form.get("confirmed") != Some("yes") {
        let view = members_view(&st, &p).await?;
        if let Some(m) = view
            .members
            .iter()
            .find(|m| m.user_id == id && m.grantable.contains(&Role::Owner))
        {
            let ask = Ask {
                heading: "Make this member an owner?".into(),
                message: format!(
                    "{} will be able to do everything you can: manage Sources, invitations and members, grant or take away the owner role (yours included), and open billing.",
                    m.email
                ),
                post_to: format!("/app/members/{id}/role"),
                confirm_label: "Make them an owner".into(),
                cancel_url: "/app/members".into(),
            };
            return ConfirmPage::ask(&st, &p, "members", &form, ask).await;
        }
    }
    match workspaces::change_role(&st.services, &p.user, id, req).await {
        Ok(_) => Ok(see_other("/app/members?done=role")),
        Err(e) => page_with_error(e, members_view(&st, &p)).await,
    }
}

/// POST /app/members/{user_id}/remove, behind a confirmation.
pub async fn remove_member(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    if form.get("confirmed") != Some("yes") {
        // Asked only of someone who may remove this member now; anyone else
        // gets the refusal the removal itself would give.
        let m = match workspaces::may_remove(&st.services, &p.user, id.clone()).await {
            Ok(m) => m,
            Err(e) => return page_with_error(e, members_view(&st, &p)).await,
        };
        let ask = if id == p.user.user_id {
            Ask {
                heading: "Leave this workspace?".into(),
                message: "You lose access to this workspace at once: its inbox, Actions and Sources. Your decisions and receipts are kept. To come back, you need a new invitation.".into(),
                post_to: format!("/app/members/{id}/remove"),
                confirm_label: "Leave the workspace".into(),
                cancel_url: "/app/members".into(),
            }
        } else {
            Ask {
                heading: "Remove this member?".into(),
                message: format!(
                    "{} loses access to this workspace at once: its inbox, Actions and Sources. Their decisions and receipts are kept.",
                    m.email
                ),
                post_to: format!("/app/members/{id}/remove"),
                confirm_label: "Remove the member".into(),
                cancel_url: "/app/members".into(),
            }
        };
        return ConfirmPage::ask(&st, &p, "members", &form, ask).await;
    }
    let leaving = id == p.user.user_id;
    match workspaces::remove(&st.services, &p.user, id).await {
        Ok(()) if leaving => Ok(see_other("/app/workspaces?done=left")),
        Ok(()) => Ok(see_other("/app/members?done=removed")),
        Err(e) => page_with_error(e, members_view(&st, &p)).await,
    }
}
