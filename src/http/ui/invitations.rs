//! Invitations in the dashboard (guide: "Invitations"): the page where owners
//! and admins invite and revoke, and the page an invitation link opens. A new
//! link is shown once by POST-redirect-GET (`ui::shown_once`), so a reload
//! shows no link and invites no one again. Opening the link never uses it
//! (link previewers fetch it); only its form POST accepts.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use tower_sessions::Session;

use crate::app::AppState;
use crate::domain::access::{self, Role};
use crate::domain::time;
use crate::error::{Code, Error};
use crate::http::session::{self, PageUser};
use crate::http::ui::shown_once;
use crate::http::ui::signin::{self, Method};
use crate::http::ui::view::{
    Ask, ConfirmPage, DoneQuery, FormData, Layout, PageAddressBudget, PagePath, PageQuery, UiError,
    When, check_csrf, page_with_error, see_other, shows_error,
};
use crate::service::invitations::{self, InvitationCreate};
use crate::service::shown_once::Secret;
use crate::store::invitations::Invitation;

pub struct InvitationVm {
    pub id: String,
    pub email: String,
    pub role: &'static str,
    pub status: &'static str,
    pub invited_by: String,
    pub expires: When,
    /// Pending or expired: a revoke button.
    pub revocable: bool,
}

/// An invitation just made: its link, on the page the invite redirects to
/// and never again.
pub struct CreatedVm {
    pub email: String,
    pub url: String,
    /// The invitation e-mail with the link is queued (guide: "E-mail").
    pub mailed: bool,
    /// Identity providers are configured: this copy of the link works for
    /// a newcomer too (they sign in with one).
    pub providers: bool,
}

#[derive(Template, WebTemplate)]
#[template(path = "invitations.html")]
pub struct InvitationsPage {
    layout: Layout,
    manager: bool,
    /// The roles this person may offer.
    roles: Vec<&'static str>,
    invitations: Vec<InvitationVm>,
    created: Option<CreatedVm>,
    /// Redirected here after an invitation, but its link was already shown.
    shown_before: bool,
    flash: Option<&'static str>,
    error: Option<String>,
    /// The invite form's field the error is about (`email`, `role`).
    error_field: Option<String>,
    /// The invite form as entered, when it was refused (else empty and
    /// `reviewer`).
    entered_email: String,
    entered_role: &'static str,
}

/// `mine`: the role of the page's viewer; they may revoke only what they
/// may offer (an admin, not an invitation to become owner).
fn vm(i: Invitation, now: time::Timestamp, mine: Option<Role>) -> InvitationVm {
    let now_s = time::format(now);
    let status = i.status(&now_s);
    InvitationVm {
        revocable: matches!(status, "pending" | "expired")
            && mine.is_some_and(|r| access::can_invite(r, i.role)),
        status,
        role: i.role.as_str(),
        invited_by: i.invited_by_email.unwrap_or_else(|| "—".into()),
        expires: When::new(&i.expires_at, now),
        id: i.id,
        email: i.email,
    }
}

async fn page(st: &AppState, p: &PageUser) -> Result<InvitationsPage, UiError> {
    let role = p.user.active_workspace().map(|m| m.role);
    let manager = role.is_some_and(access::manages_workspace);
    let listed = if manager {
        invitations::list(&st.services, &p.user).await?
    } else {
        Vec::new()
    };
    let now = st.services.clock.now();
    Ok(InvitationsPage {
        layout: Layout::signed_in(st, p, "Invitations", "invitations").await?,
        manager,
        roles: Role::ALL
            .into_iter()
            .filter(|r| role.is_some_and(|mine| access::can_invite(mine, *r)))
            .map(Role::as_str)
            .collect(),
        invitations: listed.into_iter().map(|i| vm(i, now, role)).collect(),
        created: None,
        shown_before: false,
        flash: None,
        error: None,
        error_field: None,
        entered_email: String::new(),
        entered_role: Role::Reviewer.as_str(),
    })
}

/// The page again after a refused invite, with the form as entered.
async fn page_as_entered(
    st: &AppState,
    p: &PageUser,
    email: &str,
    role: Role,
) -> Result<InvitationsPage, UiError> {
    let mut out = page(st, p).await?;
    out.entered_email = email.to_owned();
    out.entered_role = role.as_str();
    Ok(out)
}

shows_error!(fields: InvitationsPage);

/// GET /app/invitations
pub async fn invitations_page(
    State(st): State<AppState>,
    p: PageUser,
    PageQuery(q): PageQuery<DoneQuery>,
) -> Result<InvitationsPage, UiError> {
    let mut out = page(&st, &p).await?;
    match q.done.as_deref() {
        Some("revoked") => out.flash = Some("Invitation revoked. Its link no longer works."),
        Some("created") => {
            out.created = shown_once::take(&st, &p, Secret::INVITATION_SLOT, |held| match held {
                Secret::InvitationLink { email, url, mailed } => Some(CreatedVm {
                    email,
                    url,
                    mailed,
                    providers: !methods(&st).is_empty(),
                }),
                _ => None,
            })
            .await?;
            out.shown_before = out.created.is_none();
        }
        _ => {}
    }
    Ok(out)
}

/// POST /app/invitations: invites and redirects to the page, which shows the
/// link once.
pub async fn create_invitation(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    let role = form.get("role").unwrap_or_default();
    let Some(role) = Role::parse(role) else {
        let e = Error::field("role", "choose a role: owner, admin, reviewer or viewer");
        return page_with_error(e, page(&st, &p)).await;
    };
    let email = form.get("email").unwrap_or_default().to_owned();
    let req = InvitationCreate {
        email: email.clone(),
        role,
    };
    match invitations::create(&st.services, &p.user, req).await {
        Ok(made) => {
            let secret = Secret::InvitationLink {
                email: made.invitation.email,
                url: made.accept_url,
                mailed: made.email == invitations::EmailStatus::Queued,
            };
            shown_once::hold(&st, &p, secret, "/app/invitations?done=created").await
        }
        Err(e) => page_with_error(e, page_as_entered(&st, &p, &email, role)).await,
    }
}

/// POST /app/invitations/{id}/revoke
pub async fn revoke_invitation(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    if form.get("confirmed") != Some("yes") {
        // Only an invitation of this workspace that this person may revoke
        // (their role may offer its role) is asked about; anything else
        // gets the refusal it would get.
        let mine = p.user.active_or_404().ok().map(|m| m.role);
        let now = time::format(st.services.clock.now());
        let open = invitations::list(&st.services, &p.user)
            .await?
            .into_iter()
            .find(|i| {
                i.id == id
                    && i.accepted_at.is_none()
                    && i.revoked_at.is_none()
                    && mine.is_some_and(|r| access::can_invite(r, i.role))
            });
        if let Some(i) = open {
            let message = if i.status(&now) == "expired" {
                "It has expired already: revoking it marks it so in the list. You can invite the address again later."
            } else {
                "Its link stops working at once, even if it is being opened now; you can invite the address again later."
            };
            let ask = Ask {
                heading: format!("Revoke the invitation of {}?", i.email),
                message: message.into(),
                post_to: format!("/app/invitations/{id}/revoke"),
                confirm_label: "Revoke the invitation".into(),
                cancel_url: "/app/invitations".into(),
            };
            return ConfirmPage::ask(&st, &p, "invitations", &form, ask).await;
        }
    }
    match invitations::revoke(&st.services, &p.user, id).await {
        Ok(_) => Ok(see_other("/app/invitations?done=revoked")),
        Err(e) => page_with_error(e, page(&st, &p)).await,
    }
}

#[derive(Template, WebTemplate)]
#[template(path = "invitation_accept.html")]
pub struct AcceptPage {
    layout: Layout,
    action: String,
    workspace: String,
    role: &'static str,
    invited_by: Option<String>,
    email: String,
    /// Signed in: as whom, and whether that is the invited address.
    signed_in_as: Option<String>,
    matches: bool,
    /// Signed out: the identity providers that return here.
    methods: Vec<Method>,
    /// Why accepting here would be refused, said instead of the button:
    /// signed out with no provider, the link shown to the inviter of an
    /// invitation hds e-mailed, or an address that has an account; signed
    /// in, a session an invitation link opened.
    refusal: Option<String>,
}

/// Holds an invitation link's secret in the browser while its person signs
/// in with an identity provider: the sign-in returns to [`CONTINUE`], a path
/// without the secret, so the stored sign-in (`oidc_logins.next`) never holds
/// it (tokens are stored hashed only). Scoped to the invitation pages and
/// short-lived like the sign-in itself.
const INVITATION_COOKIE: &str = "hds_invitation";
/// Where a provider sign-in started on an invitation page comes back to.
pub const CONTINUE: &str = "/app/invitations/continue";

/// Identity providers with a browser flow, each returning to [`CONTINUE`].
fn methods(st: &AppState) -> Vec<Method> {
    signin::methods(st, CONTINUE)
}

/// The signed-in person of this browser, if any.
async fn visitor(st: &AppState, session: Session) -> Result<Option<PageUser>, UiError> {
    Ok(session::cookie_user(st, &session)
        .await?
        .map(|(user, csrf)| PageUser {
            user,
            csrf,
            session,
        }))
}

/// The `Set-Cookie` that keeps (or with None forgets) the invitation token
/// in this browser.
fn invitation_cookie(st: &AppState, token: Option<&str>) -> Result<HeaderValue, UiError> {
    let secure = if st.services.config.secure_cookies() {
        "; Secure"
    } else {
        ""
    };
    let (value, age) = token.map_or(("", 0), |t| (t, 600));
    let set = format!(
        "{INVITATION_COOKIE}={value}; HttpOnly; Path=/app/invitations/; Max-Age={age}; SameSite=Lax{secure}"
    );
    Ok(HeaderValue::from_str(&set).map_err(Error::internal)?)
}

/// GET /app/invitations/{token}: who invites whom to what, and one button.
/// Signed out with identity providers, the token is kept in a short-lived
/// cookie for the way back from the provider ([`continue_page`]).
pub async fn accept_page(
    _: PageAddressBudget,
    State(st): State<AppState>,
    session: Session,
    PagePath(token): PagePath<String>,
) -> Result<Response, UiError> {
    let page = render_accept(&st, session, &token).await?;
    let keep = page.signed_in_as.is_none() && !page.methods.is_empty();
    if keep && token_shaped(&token) {
        let set = invitation_cookie(&st, Some(&token))?;
        return Ok(([(header::SET_COOKIE, set)], page).into_response());
    }
    Ok(page.into_response())
}

/// Whether a value could be an invitation token (and so may go in a cookie).
fn token_shaped(token: &str) -> bool {
    (16..=128).contains(&token.len())
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// GET /app/invitations/continue: back from the identity provider, the
/// invitation page again for the token this browser holds.
pub async fn continue_page(
    _: PageAddressBudget,
    State(st): State<AppState>,
    session: Session,
    headers: HeaderMap,
) -> Result<Response, UiError> {
    let token = crate::http::api::auth::cookie(&headers, INVITATION_COOKIE)
        .filter(|t| token_shaped(t))
        .ok_or_else(|| {
            Error::new(
                Code::InvitationNotFound,
                "this browser holds no invitation any more (they are kept 10 minutes); \
                 open the invitation link again",
            )
        })?;
    Ok(render_accept(&st, session, &token).await?.into_response())
}

async fn render_accept(
    st: &AppState,
    session: Session,
    token: &str,
) -> Result<AcceptPage, UiError> {
    let here = format!("/app/invitations/{token}");
    let who = visitor(st, session).await?;
    let invitations::Preview {
        invitation: inv,
        signs_in,
        has_account,
        viewer_came_by_invitation,
    } = invitations::preview(
        &st.services,
        token,
        who.as_ref().map(|p| p.user.credential_id.as_str()),
    )
    .await?;
    let layout = match &who {
        Some(p) => Layout::signed_in(st, p, "Invitation", "").await?,
        None => Layout::public("Invitation"),
    };
    let signed_in_as = who.as_ref().map(|p| p.user.email.clone());
    Ok(AcceptPage {
        layout,
        matches: signed_in_as
            .as_deref()
            .is_some_and(|e| e.eq_ignore_ascii_case(&inv.email)),
        signed_in_as,
        // Only the link itself signs in without a provider; with one, the
        // provider's buttons work from either copy of the link.
        // Said before any button that could only be refused.
        refusal: if who.is_some() {
            viewer_came_by_invitation.then(|| {
                invitations::invitation_session_accepts_no_other()
                    .message
                    .clone()
            })
        } else if !methods(st).is_empty() {
            None
        } else if !signs_in {
            Some(
                invitations::shown_link_signs_no_one_in(&inv.email)
                    .message
                    .clone(),
            )
        } else {
            has_account.then(|| {
                invitations::existing_account_signs_in_first()
                    .message
                    .clone()
            })
        },
        methods: methods(st),
        action: here,
        workspace: inv.workspace_name,
        role: inv.role.as_str(),
        invited_by: inv.invited_by_email,
        email: inv.email,
    })
}

/// POST /app/invitations/{token}: accepts. Signed in, as that person (CSRF
/// checked); signed out with no identity provider configured, by the link
/// itself, which also signs the person in. Either way the dashboard opens on
/// the joined workspace.
pub async fn accept_invitation(
    _: PageAddressBudget,
    State(st): State<AppState>,
    session: Session,
    headers: HeaderMap,
    PagePath(token): PagePath<String>,
    form: FormData,
) -> Result<Response, UiError> {
    if let Some(p) = visitor(&st, session.clone()).await? {
        check_csrf(&st, &headers, &p, &form)?;
        invitations::accept(&st.services, &p.user, &token, true).await?;
        // Used: the browser need not keep it any longer.
        let forget = invitation_cookie(&st, None)?;
        return Ok(([(header::SET_COOKIE, forget)], see_other("/app")).into_response());
    }
    // No session yet, so no form token: the origin check is what stops
    // another site from posting the link on a visitor's behalf.
    if !session::same_origin(&headers, &st.services.config) {
        return Err(session::cross_origin(&headers, &st.services.config, "accepting").into());
    }
    if !methods(&st).is_empty() {
        return Err(Error::new(
            Code::AuthRequired,
            "sign in first with one of the methods on the invitation page, then accept",
        )
        .into());
    }
    let meta = signin::browser_meta(&headers, crate::service::signin::INVITATION_METHOD);
    let (signed_in, _) = invitations::accept_by_link(&st.services, &token, meta).await?;
    session::begin(&st.services, &session, &signed_in).await?;
    Ok(see_other("/app"))
}
