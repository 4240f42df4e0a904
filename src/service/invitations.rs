//! Invitations (guide: "Invitations"): owners and admins invite by e-mail
//! into the active workspace; the invited person accepts with the link's
//! secret, signed in or, when no identity provider is configured, by the link
//! itself. A second invitation to the same address replaces the pending one
//! (the old link stops working), so "invite again" is how a lost link is
//! resent.

use rusqlite::Connection;
use serde::Deserialize;
use utoipa::ToSchema;

use crate::domain::access::{self, Role};
use crate::domain::{credentials, time};
use crate::error::{Code, Error, Result};
use crate::service::Services;
use crate::service::caller::UserCaller;
use crate::service::effects::Effects;
use crate::service::mail::{self, Letter, MailKind};
use crate::service::signin::{self, SessionMeta, SignedIn};
use crate::store::invitations::{self as store, Invitation, Link, NewInvitation};
use crate::store::{users, workspaces};

/// How long an invitation can be accepted.
pub const LIFETIME: ::time::Duration = ::time::Duration::days(7);

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InvitationCreate {
    /// The address the invitation is for; whoever accepts must have this
    /// verified e-mail (compared case-insensitively). A part without spaces,
    /// control, invisible or direction-override characters or `()<>[]\,;:"`;
    /// `@`; a dotted domain whose labels are
    /// ASCII letters, digits and inner `-`, or other scripts' characters, the
    /// last not all digits (`looks_like_email` agrees).
    #[schema(
        min_length = 3,
        max_length = 254,
        pattern = "^[^@\\s\\u0000-\\u001f\\u007f-\\u009f()<>\\[\\]\\\\,;:\"\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u2060-\\u2064\\ufeff\\u202a-\\u202e\\u2066-\\u2069]+@[^\\s\\u0000-\\u002f\\u003a-\\u0040\\u005b-\\u0060\\u007b-\\u009f\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u2060-\\u2064\\ufeff\\u202a-\\u202e\\u2066-\\u2069]([^\\s\\u0000-\\u002c\\u002e\\u002f\\u003a-\\u0040\\u005b-\\u0060\\u007b-\\u009f\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u2060-\\u2064\\ufeff\\u202a-\\u202e\\u2066-\\u2069]*[^\\s\\u0000-\\u002f\\u003a-\\u0040\\u005b-\\u0060\\u007b-\\u009f\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u2060-\\u2064\\ufeff\\u202a-\\u202e\\u2066-\\u2069])?(\\.[^\\s\\u0000-\\u002f\\u003a-\\u0040\\u005b-\\u0060\\u007b-\\u009f\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u2060-\\u2064\\ufeff\\u202a-\\u202e\\u2066-\\u2069]([^\\s\\u0000-\\u002c\\u002e\\u002f\\u003a-\\u0040\\u005b-\\u0060\\u007b-\\u009f\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u2060-\\u2064\\ufeff\\u202a-\\u202e\\u2066-\\u2069]*[^\\s\\u0000-\\u002f\\u003a-\\u0040\\u005b-\\u0060\\u007b-\\u009f\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u2060-\\u2064\\ufeff\\u202a-\\u202e\\u2066-\\u2069])?)*\\.(?![0-9]+$)[^\\s\\u0000-\\u002f\\u003a-\\u0040\\u005b-\\u0060\\u007b-\\u009f\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u2060-\\u2064\\ufeff\\u202a-\\u202e\\u2066-\\u2069]([^\\s\\u0000-\\u002c\\u002e\\u002f\\u003a-\\u0040\\u005b-\\u0060\\u007b-\\u009f\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u2060-\\u2064\\ufeff\\u202a-\\u202e\\u2066-\\u2069]*[^\\s\\u0000-\\u002f\\u003a-\\u0040\\u005b-\\u0060\\u007b-\\u009f\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u2060-\\u2064\\ufeff\\u202a-\\u202e\\u2066-\\u2069])?$"
    )]
    pub email: String,
    /// The role the person gets on accepting. Only owners offer `owner`.
    pub role: Role,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InvitationAccept {
    /// The secret at the end of `accept_url`.
    #[schema(min_length = 1, max_length = 200)]
    pub token: String,
}

/// A workspace the caller just joined, as the accept route answers it.
#[derive(Clone, Debug)]
pub struct Joined {
    pub workspace: workspaces::Workspace,
    pub role: Role,
    /// Whether it is now the active workspace of the credential that accepted.
    pub active: bool,
}

/// A created invitation and its one-time link.
pub struct Created {
    pub invitation: Invitation,
    pub accept_url: String,
    /// What became of the invitation e-mail.
    pub email: EmailStatus,
}

/// The invitation e-mail, as the creation response tells it (guide:
/// "E-mail").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmailStatus {
    /// Queued in the outbox with the invitation; the worker sends it.
    Queued,
    /// No `[smtp]` is configured: send `accept_url` yourself.
    NotConfigured,
    /// The address is not one SMTP can deliver to; the e-mail log says so.
    Failed,
}

impl EmailStatus {
    pub const ALL: [EmailStatus; 3] = [Self::Queued, Self::NotConfigured, Self::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::NotConfigured => "not_configured",
            Self::Failed => "failed",
        }
    }
}

/// The address, trimmed, or a refusal a person can act on.
pub fn check_email(raw: &str) -> Result<String> {
    let e = raw.trim();
    if !crate::domain::validate::looks_like_email(e) {
        return Err(Error::field(
            "email",
            crate::domain::validate::not_an_email("email", e),
        ));
    }
    Ok(e.to_owned())
}

fn not_found() -> Error {
    Error::new(
        Code::InvitationNotFound,
        "no invitation with that id in this workspace",
    )
}

fn link_not_found() -> Error {
    Error::new(
        Code::InvitationNotFound,
        "this invitation is unknown, was already used, revoked or has expired; ask whoever invited you for a new one",
    )
}

/// The active workspace, when the caller may manage its invitations.
fn managed_workspace(user: &UserCaller) -> Result<(String, Role)> {
    let m = user.active_or_404()?;
    crate::service::caller::require_manager(m.role, access::manages_workspace, "invitations")?;
    Ok((m.workspace_id.clone(), m.role))
}

/// The caller's role in `ws` read inside the write: a demotion or removal
/// since sign-in counts.
fn current_role(c: &rusqlite::Connection, ws: &str, uid: &str) -> Result<Role> {
    let role = workspaces::role_of(c, ws, uid)?.ok_or_else(|| {
        Error::new(
            Code::WorkspaceNotFound,
            "you are no longer a member of this workspace",
        )
    })?;
    crate::service::caller::require_manager(role, access::manages_workspace, "invitations")?;
    Ok(role)
}

fn refused_role(required: Role) -> Error {
    let what = if required == Role::Owner {
        "only workspace owners invite owners"
    } else {
        "only workspace owners and admins manage invitations"
    };
    Error::new(Code::Forbidden, what).with_detail("required_role", required.as_str())
}

/// Invitations one person may create in 24 hours, across every workspace:
/// each may send an e-mail from this server's address, and anyone may
/// create a workspace to invite from, so this bounds what one account can
/// make the server mail to strangers.
pub const INVITATIONS_PER_DAY: i64 = 100;

/// 429 `RATE_LIMITED` when the caller made [`INVITATIONS_PER_DAY`] in the
/// last 24 hours, with when the oldest of them frees a place.
fn check_daily_cap(c: &Connection, user_id: &str, now: ::time::OffsetDateTime) -> Result<()> {
    let since = time::format(now - ::time::Duration::days(1));
    if store::created_by_since(c, user_id, &since)? < INVITATIONS_PER_DAY {
        return Ok(());
    }
    let wait = store::nth_newest_by(c, user_id, INVITATIONS_PER_DAY)?
        .and_then(|at| time::parse(&at))
        .map(|at| {
            (at + ::time::Duration::days(1) - now)
                .whole_seconds()
                .max(1)
        })
        .unwrap_or(3600);
    Err(Error::new(
        Code::RateLimited,
        format!(
            "you sent {INVITATIONS_PER_DAY} invitations in the last 24 hours, the most one person may; try again later"
        ),
    )
    .with_detail("scope", "invitations")
    .with_detail("limit", INVITATIONS_PER_DAY)
    .retry_after(u64::try_from(wait).unwrap_or(3600)))
}

/// Invites `email` with `role` into the caller's active workspace.
pub async fn create(s: &Services, user: &UserCaller, req: InvitationCreate) -> Result<Created> {
    let (ws, my_role) = managed_workspace(user)?;
    if !access::can_invite(my_role, req.role) {
        return Err(refused_role(Role::Owner));
    }
    let email = check_email(&req.email)?;
    let (uid, role, base) = (user.user_id.clone(), req.role, s.config.base_url.clone());
    let mail_on = mail::enabled(&s.config);
    let now = s.clock.now();
    let config = s.config.clone();
    s.write(move |c, fx| {
        // The role as it is now, not as it was at sign-in.
        let my_role = current_role(c, &ws, &uid)?;
        if !access::can_invite(my_role, role) {
            return Err(refused_role(Role::Owner));
        }
        let (created_at, expires_at) = (time::format(now), time::format(now + LIFETIME));
        if let Some(u) = users::by_email(c, &email)?
            && workspaces::role_of(c, &ws, &u.id)?.is_some()
        {
            return Err(Error::new(
                Code::AlreadyMember,
                format!("{email} is already a member of this workspace; change their role on the members page instead"),
            )
            .with_detail("user_id", u.id));
        }
        check_daily_cap(c, &uid, now)?;
        // Inviting again replaces the pending invitation: not one offering
        // `owner`, for those who may not revoke it.
        if !access::can_invite(my_role, Role::Owner)
            && store::pending_offers_owner(c, &ws, &email, &created_at)?
        {
            return Err(Error::new(
                Code::Forbidden,
                format!(
                    "{email} has a pending invitation to become owner; only workspace owners replace or revoke it"
                ),
            )
            .with_detail("required_role", Role::Owner.as_str()));
        }
        if store::revoke_pending_for(c, &ws, &email, &created_at)? > 0 {
            crate::service::notifications::invitation_ended(c, fx, &ws, &email, &created_at)?;
        }
        // After the person's earlier invitation is revoked: re-inviting
        // someone takes no second place (an error undoes the revoke).
        let members = crate::domain::billing::Resource::Members;
        crate::service::billing::check(c, &config.billing, &ws, members, now)?;
        crate::store::mail::cancel_invitations(c, &ws, &email, &created_at)?;
        let secret = credentials::new_secret();
        let new = NewInvitation {
            workspace_id: &ws,
            email: &email,
            role,
            invited_by: &uid,
            created_at: &created_at,
            expires_at: &expires_at,
        };
        let id = store::insert(c, &new, &secret)?;
        let invitation = store::get(c, &ws, &id)?
            .ok_or_else(|| Error::internal(anyhow::anyhow!("new invitation {id} not found")))?;
        let accept_url = accept_url(&base, &secret);
        // Someone with an account here also hears of it in the dashboard.
        let ws_name = workspaces::get(c, &ws)?.map(|w| w.name).unwrap_or_default();
        crate::service::notifications::invitation_received(
            c, fx, &ws, &ws_name, &email, role, &uid, &created_at,
        )?;
        let email = if mail_on {
            // The e-mail carries a link of its own, the one that signs a new
            // person in by itself: the inviter, shown `accept_url`, cannot.
            let sendable = mail::sendable(&email);
            let mailed_url = if sendable {
                let mail_secret = credentials::new_secret();
                store::set_mail_secret(c, &id, &mail_secret)?;
                self::accept_url(&base, &mail_secret)
            } else {
                accept_url.clone()
            };
            let letter = invitation_letter(c, &invitation, &mailed_url)?;
            mail::enqueue(c, fx, &letter, &created_at)?;
            if sendable {
                EmailStatus::Queued
            } else {
                EmailStatus::Failed
            }
        } else {
            EmailStatus::NotConfigured
        };
        Ok(Created {
            invitation,
            accept_url,
            email,
        })
    })
    .await
}

/// The invitation e-mail: who invited the person to which workspace as
/// which role, the accept link as the button, and when it expires. Secret:
/// the link is the invitation.
fn invitation_letter(c: &Connection, inv: &Invitation, accept_url: &str) -> Result<Letter> {
    let workspace = workspaces::get(c, &inv.workspace_id)?
        .map(|w| w.name)
        .unwrap_or_else(|| "a workspace".into());
    let inviter = match &inv.invited_by {
        Some(id) => users::by_id(c, id)?,
        None => None,
    };
    let who = match &inviter {
        Some(u) => match &u.name {
            Some(n) if !n.trim().is_empty() => format!("{} <{}>", n.trim(), u.email),
            _ => u.email.clone(),
        },
        None => "Someone".into(),
    };
    let article = match inv.role {
        Role::Admin | Role::Owner => "an",
        Role::Reviewer | Role::Viewer => "a",
    };
    let expires = inv
        .expires_at
        .get(..16)
        .unwrap_or(&inv.expires_at)
        .replace('T', " ");
    Ok(Letter {
        to: inv.email.clone(),
        subject: format!("{who} invited you to {workspace} on hds"),
        lines: vec![
            format!(
                "{who} invited you to join the workspace \u{201c}{workspace}\u{201d} on hds as {article} {}.",
                inv.role
            ),
            format!(
                "The invitation is for {} and can be accepted until {expires} UTC. If you did not expect it, ignore this e-mail.",
                inv.email
            ),
        ],
        items: Vec::new(),
        link: Some(("Accept the invitation".into(), accept_url.to_owned())),
        settings: None,
        kind: MailKind::Invitation,
        workspace_id: Some(inv.workspace_id.clone()),
        user_id: users::by_email(c, &inv.email)?.map(|u| u.id),
        secret: true,
        unsubscribable: false,
    })
}

/// `<base_url>/app/invitations/<secret>`.
pub fn accept_url(base_url: &str, secret: &str) -> String {
    format!(
        "{}/app/invitations/{secret}",
        base_url.trim_end_matches('/')
    )
}

/// The invitations waiting for the person (to their address, pending, to a
/// workspace they are not in), newest first, at most 20: the Workspaces
/// page lists them, where an `invitation.received` notice leads.
pub async fn waiting_for(s: &Services, user: &UserCaller) -> Result<Vec<Invitation>> {
    let (email, uid) = (user.email.clone(), user.user_id.clone());
    let now = time::format(s.clock.now());
    s.db.read(move |c| store::pending_for(c, &email, &uid, &now, 20))
        .await
}

/// The active workspace's invitations, newest first.
pub async fn list(s: &Services, user: &UserCaller) -> Result<Vec<Invitation>> {
    let (ws, _) = managed_workspace(user)?;
    s.db.read(move |c| store::list(c, &ws)).await
}

/// Revokes an invitation that was not accepted; revoking one already revoked
/// answers it again. Admins cannot revoke an invitation that offers `owner`.
pub async fn revoke(s: &Services, user: &UserCaller, id: String) -> Result<Invitation> {
    let (ws, _) = managed_workspace(user)?;
    let uid = user.user_id.clone();
    let now = time::format(s.clock.now());
    s.write(move |c, fx| {
        let my_role = current_role(c, &ws, &uid)?;
        let inv = store::get(c, &ws, &id)?.ok_or_else(not_found)?;
        if !access::can_invite(my_role, inv.role) {
            return Err(Error::new(
                Code::Forbidden,
                "only workspace owners revoke an invitation to become owner",
            )
            .with_detail("required_role", Role::Owner.as_str()));
        }
        match inv.status(&now) {
            "accepted" => Err(Error::new(
                Code::AlreadyMember,
                format!(
                    "{} accepted this invitation and is a member; remove them on the members page instead",
                    inv.email
                ),
            )),
            "revoked" => Ok(inv),
            // Pending, or expired (revoking it changes nothing it could do).
            _ => {
                store::revoke(c, &ws, &id, &now)?;
                crate::store::mail::cancel_invitations(c, &ws, &inv.email, &now)?;
                crate::service::notifications::invitation_ended(c, fx, &ws, &inv.email, &now)?;
                store::get(c, &ws, &id)?.ok_or_else(not_found)
            }
        }
    })
    .await
}

/// A pending invitation seen through one of its links.
pub struct Preview {
    pub invitation: Invitation,
    /// Whether this link signs a new person in by itself (no identity
    /// provider configured): the e-mailed link, or the only link when hds
    /// did not e-mail one. The link shown to the inviter of a mailed
    /// invitation does not ([`accept_by_link`]).
    pub signs_in: bool,
    /// The invited address has an account already: the link alone signs
    /// no one in ([`existing_account_signs_in_first`]).
    pub has_account: bool,
    /// The viewer's session was opened by an invitation link, which
    /// accepts no other invitation ([`accept`]).
    pub viewer_came_by_invitation: bool,
}

/// A pending invitation by its link's secret, without using it (the accept
/// page; link previewers fetch it too). `viewer`: the credential of whoever
/// is signed in, if anyone.
pub async fn preview(s: &Services, secret: &str, viewer: Option<&str>) -> Result<Preview> {
    let secret = secret.to_owned();
    let viewer = viewer.map(str::to_owned);
    let now = time::format(s.clock.now());
    s.db.read(move |c| {
        let (invitation, link) = pending_link(c, &secret, &now)?;
        let viewer_came_by_invitation = match &viewer {
            Some(cred) => {
                users::credential_method(c, cred)?.as_deref() == Some(signin::INVITATION_METHOD)
            }
            None => false,
        };
        Ok(Preview {
            signs_in: link == Link::Mailed || !invitation.mailed,
            has_account: users::by_email(c, &invitation.email)?.is_some(),
            viewer_came_by_invitation,
            invitation,
        })
    })
    .await
}

/// A pending invitation by its secret, whose inviter still may offer its
/// role: a member change revokes what the member may no longer offer
/// (`revoke_offered_by`), and this check holds even if something else
/// changed the role.
fn pending(c: &Connection, secret: &str, now: &str) -> Result<Invitation> {
    Ok(pending_link(c, secret, now)?.0)
}

/// [`pending`], and which of the invitation's links the secret is.
fn pending_link(c: &Connection, secret: &str, now: &str) -> Result<(Invitation, Link)> {
    let (inv, link) = store::by_secret(c, secret)?
        .filter(|(i, _)| i.status(now) == "pending")
        .ok_or_else(link_not_found)?;
    let inviter_role = match &inv.invited_by {
        Some(by) => workspaces::role_of(c, &inv.workspace_id, by)?,
        None => None,
    };
    if !inviter_role.is_some_and(|r| access::can_invite(r, inv.role)) {
        return Err(Error::new(
            Code::InvitationNotFound,
            "whoever sent this invitation may no longer invite people with this role; ask an owner or admin of the workspace for a new one",
        ));
    }
    Ok((inv, link))
}

/// Revokes, in the caller's transaction (a member change's), the pending
/// invitations `member` created in `ws` that their new role may no longer
/// offer (`access::can_invite`); `role` None (removed): all of them.
/// Answers how many.
pub(crate) fn revoke_offered_by(
    c: &Connection,
    fx: &mut Effects,
    ws: &str,
    member: &str,
    role: Option<Role>,
    now: &str,
) -> Result<usize> {
    let mut revoked = 0;
    for inv in store::pending_by_inviter(c, ws, member, now)? {
        if role.is_some_and(|r| access::can_invite(r, inv.role)) {
            continue;
        }
        if store::revoke(c, ws, &inv.id, now)? {
            revoked += 1;
            crate::service::notifications::invitation_ended(c, fx, ws, &inv.email, now)?;
        }
    }
    Ok(revoked)
}

/// Whether two addresses are the same person's: compared without ASCII case,
/// as SQLite's NOCASE (the `users` and `invitations` e-mail columns) and
/// the invitation page compare them. Unicode case folding would call two
/// addresses one person here that every lookup treats as two.
fn same_email(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

/// The join itself, inside the writer's transaction: the invitation is
/// pending, the person not yet a member, then pending → accepted by
/// compare-and-set and the membership added. Anything refused writes nothing.
fn join(
    c: &Connection,
    fx: &mut Effects,
    secret: &str,
    user_id: &str,
    email: &str,
    now: &str,
) -> Result<Invitation> {
    let inv = pending(c, secret, now)?;
    if !same_email(&inv.email, email) {
        return Err(Error::new(
            Code::InvitationEmailMismatch,
            format!(
                "this invitation is for {}, but you are signed in as {email}; sign in with the invited address or ask for an invitation to {email}",
                inv.email
            ),
        ));
    }
    if workspaces::role_of(c, &inv.workspace_id, user_id)?.is_some() {
        return Err(Error::new(
            Code::AlreadyMember,
            "you are already a member of this workspace",
        )
        .with_detail("workspace_id", inv.workspace_id.clone()));
    }
    if !store::accept(c, &inv.id, user_id, now)? {
        return Err(link_not_found());
    }
    workspaces::add_member(c, &inv.workspace_id, user_id, inv.role, now)?;
    // A new workspace's Actions reach this person's inbox, and the notice
    // of the invitation is read: both change what their open pages show.
    crate::store::notifications::read_invitation_notices(c, user_id, &inv.workspace_id, now)?;
    fx.user_changed(user_id);
    fx.workspace_changed(&inv.workspace_id);
    Ok(inv)
}

/// The joined workspace, and whether `credential_id` now acts on it.
fn joined(c: &Connection, inv: &Invitation, user_id: &str, credential_id: &str) -> Result<Joined> {
    let workspace = workspaces::get(c, &inv.workspace_id)?.ok_or_else(|| {
        Error::internal(anyhow::anyhow!("workspace {} vanished", inv.workspace_id))
    })?;
    let selected = store::credential_workspace(c, credential_id)?;
    let memberships = workspaces::of_user(c, user_id)?;
    let active_id = selected
        .filter(|w| memberships.iter().any(|(m, _)| &m.id == w))
        .or_else(|| memberships.first().map(|(m, _)| m.id.clone()));
    Ok(Joined {
        active: active_id.as_deref() == Some(workspace.id.as_str()),
        workspace,
        role: inv.role,
    })
}

/// Accepts an invitation as the signed-in caller. `select` also makes the
/// workspace the active one of the credential that accepted (the dashboard
/// lands there). A session an invitation link opened accepts no other
/// invitation (403); any other credential accepting ends those sessions.
pub async fn accept(s: &Services, user: &UserCaller, secret: &str, select: bool) -> Result<Joined> {
    if secret.is_empty() || secret.chars().count() > 200 {
        return Err(Error::field(
            "token",
            "token must be the 1-200 characters after /app/invitations/ in the invitation link",
        ));
    }
    let (secret, uid, email, cred) = (
        secret.to_owned(),
        user.user_id.clone(),
        user.email.clone(),
        user.credential_id.clone(),
    );
    let now = time::format(s.clock.now());
    s.write(move |c, fx| {
        if users::credential_method(c, &cred)?.as_deref() == Some(signin::INVITATION_METHOD) {
            return Err(invitation_session_accepts_no_other());
        }
        let inv = join(c, fx, &secret, &uid, &email, &now)?;
        // Signed in some other way and joining again: the sessions an
        // invitation link opened for this person end here (whoever created
        // that invitation held the link too).
        users::revoke_sessions_by_method(c, &uid, signin::INVITATION_METHOD, &now)?;
        if select {
            users::select_workspace(c, &uid, &cred, &inv.workspace_id)?;
        }
        joined(c, &inv, &uid, &cred)
    })
    .await
}

/// An address with an account is signed in some other way first: whoever
/// created the invitation holds its link too.
pub fn existing_account_signs_in_first() -> Error {
    Error::new(
        Code::AuthRequired,
        "this address already has an account: sign in first (an admin can print a \
         sign-in link with `hds users link EMAIL`), then open the invitation link again",
    )
}

/// A session an invitation link opened accepts no other invitation: whoever
/// created that invitation held the link too.
pub fn invitation_session_accepts_no_other() -> Error {
    Error::new(
        Code::Forbidden,
        "this session was opened by an invitation link, which whoever invited you also \
         held: sign in with your identity provider or a sign-in link from your operator \
         to accept another invitation",
    )
}

/// Why the link shown to an inviter does not sign anyone in when hds
/// e-mailed the invitation its own link.
pub fn shown_link_signs_no_one_in(email: &str) -> Error {
    Error::new(
        Code::AuthRequired,
        format!(
            "hds e-mailed this invitation to {email}: open the link in that e-mail to sign in and join. \
             This copy of the link, shown to whoever invited, accepts only for someone already signed in \
             as {email}. No e-mail came? Ask the workspace's owners or admins to invite you again: \
             the new e-mail replaces this invitation"
        ),
    )
}

/// Accepts by the link alone, signed out, when no identity provider is
/// configured: the link went to the invited address, so holding it proves
/// that address as a one-time sign-in link would. When hds e-mailed the
/// invitation, only the e-mailed link does: the inviter was shown the
/// other one, and must not be able to sign in as the invited person. Creates the person with
/// that e-mail, opens a browser session on the joined workspace, and
/// accepts, all in one transaction. An address that already has an account
/// is refused: whoever created the invitation holds the link too, and must
/// not get a session as an existing person (that person signs in first,
/// then accepts).
pub async fn accept_by_link(
    s: &Services,
    secret: &str,
    meta: SessionMeta,
) -> Result<(SignedIn, Joined)> {
    let secret = secret.to_owned();
    let clock_now = s.clock.now();
    s.write(move |c, fx| {
        let now = time::format(clock_now);
        let (inv, link) = pending_link(c, &secret, &now)?;
        if link == Link::Shown && inv.mailed {
            return Err(shown_link_signs_no_one_in(&inv.email));
        }
        if users::by_email(c, &inv.email)?.is_some() {
            return Err(existing_account_signs_in_first());
        }
        let user = users::create(c, &inv.email, None, &now)?;
        join(c, fx, &secret, &user.id, &user.email, &now)?;
        let signed_in = signin::open_session(c, &user.id, &meta, clock_now)?;
        users::select_workspace(c, &user.id, &signed_in.token_id, &inv.workspace_id)?;
        let joined = joined(c, &inv, &user.id, &signed_in.token_id)?;
        Ok((signed_in, joined))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::check_email;

    #[test]
    fn addresses_are_one_line_with_a_dotted_domain() {
        assert_eq!(check_email(" Ana@Example.com ").unwrap(), "Ana@Example.com");
        for bad in [
            "",
            "ana",
            "ana@localhost",
            "@example.com",
            "ana@.com",
            "ana@example.",
            "a@b@example.com",
            "a b@example.com",
            "ana\u{0}@example.com",
            "ana@exa\u{85}mple.com",
        ] {
            assert!(check_email(bad).is_err(), "{bad:?} accepted");
        }
        assert!(check_email(&format!("{}@example.com", "a".repeat(250))).is_err());
    }
}
