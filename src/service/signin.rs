//! Signing in (guide: "Who may sign in"): who may, how a person is recognised, and the
//! session every successful sign-in ends with. The identity-provider flows
//! (service::oidc) and one-time links both finish here.

use crate::config::AuthConfig;
use crate::domain::credentials;
use crate::domain::session::{
    LINK_LIFETIME, MAILED_LINK_LIFETIME, MAILED_LINK_SPACING, MAILED_LINKS_PER_DAY,
    MAILED_LINKS_PER_WINDOW, NONCE_LIFETIME, SESSION_LIFETIME,
};
use crate::domain::time;
use crate::error::{Code, Error, Result};
use crate::service::Services;
use crate::store::users::{self, NewCredential, User};
use crate::store::{signin, workspaces};

/// Who the identity provider says the person is.
#[derive(Clone, Debug)]
pub struct Identity {
    pub issuer: String,
    pub subject: String,
    pub email: Option<String>,
    pub email_verified: bool,
    pub name: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionKind {
    /// A cookie session in a browser; the token is never handed out.
    Browser,
    /// A bearer session for an app (`svc_usr_…`).
    Bearer,
}

/// The method of a session opened by an invitation link alone (no identity
/// provider configured). Whoever created the invitation held that link too,
/// so such a session proves less than the others: it creates no API token and
/// accepts no other invitation, and the person's first sign-in by any other
/// method (or acceptance of another invitation) ends it (guide: "Invitations").
pub const INVITATION_METHOD: &str = "invitation";

/// How the session began, recorded on it (the account page lists it).
#[derive(Clone, Debug)]
pub struct SessionMeta {
    /// `link`, `invitation` or the provider's name.
    pub method: String,
    pub kind: SessionKind,
    /// The `X-Service-Client` header of the sign-in request.
    pub client: Option<String>,
    pub user_agent: Option<String>,
}

#[derive(Clone, Debug)]
pub struct SignedIn {
    pub token: String,
    pub token_id: String,
    pub expires_at: String,
    pub user: User,
}

/// 403 SIGNIN_NOT_ALLOWED with `details.reason`, so the sign-in page can
/// say what to do: `unverified_email`, `linked_elsewhere`,
/// `unusable_email` or `not_admitted`.
fn refused(reason: &'static str, message: impl Into<String>) -> Error {
    Error::new(Code::SigninNotAllowed, message).with_detail("reason", reason)
}

fn domain_allowed(auth: &AuthConfig, email: &str) -> bool {
    let Some((_, domain)) = email.rsplit_once('@') else {
        return false;
    };
    auth.allowed_email_domains
        .iter()
        .any(|d| d.trim_start_matches('@').eq_ignore_ascii_case(domain))
}

/// Finds the person by (issuer, subject), or links/creates them when they may
/// sign in, and opens a session. One transaction: a refused sign-in leaves
/// nothing behind.
pub async fn complete(s: &Services, id: Identity, meta: SessionMeta) -> Result<SignedIn> {
    let auth = s.config.auth.clone();
    let billing = s.config.billing.clone();
    let clock_now = s.clock.now();
    s.db.write(move |c| {
        let now = time::format(clock_now);
        let user_id = match signin::user_of_identity(c, &id.issuer, &id.subject, &now)? {
            Some(u) => u,
            None => admit(c, &auth, &billing, &id, clock_now)?,
        };
        if let Some(name) = id.name.as_deref().filter(|n| !n.trim().is_empty()) {
            users::set_name_if_missing(c, &user_id, name)?;
        }
        open_session(c, &user_id, &meta, clock_now)
    })
    .await
}

/// The first sign-in of an identity: links it to the user with that verified
/// e-mail (the init admin, an invited person), or creates the user when an
/// invitation or an allowed domain admits them.
fn admit(
    c: &rusqlite::Connection,
    auth: &AuthConfig,
    billing: &crate::config::billing::BillingConfig,
    id: &Identity,
    clock_now: time::Timestamp,
) -> Result<String> {
    let now = &time::format(clock_now);
    let Some(email) = id.email.as_deref().filter(|_| id.email_verified) else {
        return Err(refused(
            "unverified_email",
            "your identity provider did not share a verified e-mail address, so hds cannot tell \
             whether you may sign in; verify your e-mail with the provider and try again",
        ));
    };
    if let Some(user) = users::by_email(c, email)? {
        if signin::has_identity_at(c, &user.id, &id.issuer)? {
            return Err(refused(
                "linked_elsewhere",
                format!(
                    "{email} is already linked to a different account at {}; sign in with that account",
                    id.issuer
                ),
            ));
        }
        signin::link_identity(c, &id.issuer, &id.subject, &user.id, Some(email), now)?;
        return Ok(user.id);
    }
    // A new person only: an existing one keeps the address they have.
    if !crate::domain::validate::looks_like_email(email) {
        return Err(refused(
            "unusable_email",
            format!(
                "your identity provider shared the e-mail address {:?}, which hds cannot use \
             (it needs a name, @ and a dotted domain, with no spaces or control characters); \
             ask the provider's administrator to correct it",
                email.chars().take(100).collect::<String>()
            ),
        ));
    }
    let invited = signin::has_pending_invitation(c, email, now)?;
    let by_domain = domain_allowed(auth, email);
    if !invited && !by_domain {
        return Err(refused(
            "not_admitted",
            format!(
                "{email} may not sign in to this hds: ask an admin to add you \
             (`hds users link {email} --create-as reviewer`) or to allow your e-mail domain"
            ),
        ));
    }
    let user = users::create(c, email, id.name.as_deref(), now)?;
    signin::link_identity(c, &id.issuer, &id.subject, &user.id, Some(email), now)?;
    if by_domain && !invited {
        // An allowed domain joins the oldest workspace; an invitation says
        // where (and is accepted explicitly).
        if let Some(ws) = workspaces::oldest(c)? {
            // A member like any other: the workspace's plan counts them, and
            // a full workspace refuses the sign-in (nothing is written).
            let members = crate::domain::billing::Resource::Members;
            crate::service::billing::check(c, billing, &ws, members, clock_now)?;
            workspaces::add_member(c, &ws, &user.id, auth.domain_role, now)?;
        }
    }
    Ok(user.id)
}

/// Opens a session for `user_id` inside the caller's transaction (every
/// sign-in ends here, an invitation accepted by its link too). A sign-in by
/// any other method ends, in the same transaction, the sessions an
/// invitation link opened for that person: the link's holder may have been
/// whoever invited them.
pub(crate) fn open_session(
    c: &rusqlite::Connection,
    user_id: &str,
    meta: &SessionMeta,
    now: time::Timestamp,
) -> Result<SignedIn> {
    let expires_at = time::format(now + SESSION_LIFETIME);
    let created_at = time::format(now);
    if meta.method != INVITATION_METHOD {
        users::revoke_sessions_by_method(c, user_id, INVITATION_METHOD, &created_at)?;
    }
    let name = match meta.kind {
        SessionKind::Browser => "browser session".to_owned(),
        SessionKind::Bearer => format!("app session ({})", meta.method),
    };
    let (token, token_id) = users::insert_credential(
        c,
        &NewCredential {
            user_id,
            name: &name,
            kind: "session",
            method: Some(&meta.method),
            client: meta.client.as_deref(),
            user_agent: meta.user_agent.as_deref(),
            expires_at: Some(&expires_at),
            created_at: &created_at,
        },
    )?;
    let user = users::by_id(c, user_id)?
        .ok_or_else(|| Error::internal(anyhow::anyhow!("user {user_id} vanished")))?;
    Ok(SignedIn {
        token,
        token_id,
        expires_at,
        user,
    })
}

/// A one-time sign-in link for an existing user, inside the caller's
/// transaction (the CLI's connection or the writer). Earlier unused links
/// keep working until they expire: a person may hold one per device.
pub fn new_link(
    c: &rusqlite::Connection,
    base_url: &str,
    user_id: &str,
    now: time::Timestamp,
) -> Result<String> {
    link_for(c, base_url, user_id, now, LINK_LIFETIME)
}

fn link_for(
    c: &rusqlite::Connection,
    base_url: &str,
    user_id: &str,
    now: time::Timestamp,
    lifetime: ::time::Duration,
) -> Result<String> {
    let secret = credentials::new_secret();
    signin::insert_link(
        c,
        &secret,
        user_id,
        &time::format(now),
        &time::format(now + lifetime),
    )?;
    Ok(format!(
        "{}/app/signin/link/{secret}",
        base_url.trim_end_matches('/')
    ))
}

/// The longest address the sign-in page's e-mail field takes (RFC 5321's
/// path limit).
pub const MAX_EMAIL: usize = 254;

/// What became of a request for a mailed link. The page answers every one
/// alike, so that it does not tell who has an account; the tests read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mailed {
    /// A link was made and its mail queued.
    Queued,
    /// No account has that address (or it was deleted): nothing was sent.
    NoAccount,
    /// That address was asked for a moment ago, or too often lately.
    Throttled,
}

/// Refusal of a mailed link where `[auth] email_links` is off.
pub fn mailed_links_off() -> Error {
    Error::new(
        Code::NotFound,
        "this instance does not mail sign-in links: ask an admin for a link, or sign in with an identity provider",
    )
}

/// The sign-in page's "e-mail me a link" (guide: "With a link by e-mail"):
/// for the account with `email`, a one-time link valid for 15 minutes,
/// mailed in the same transaction that stores it, leading to `next` (a
/// local path the caller checked). Nothing for an unknown address, and
/// nothing when that address was asked for in the last minute, five times
/// in the last 15 minutes or ten in the last day, account or not.
pub async fn mail_link(s: &Services, email: &str, next: &str) -> Result<Mailed> {
    if !s.config.email_links() {
        return Err(mailed_links_off());
    }
    let email = email.trim().to_owned();
    if email.is_empty() || email.chars().count() > MAX_EMAIL || !email.contains('@') {
        return Err(Error::field(
            "email",
            format!("give the e-mail address of your account (at most {MAX_EMAIL} characters)"),
        ));
    }
    let base = s.config.base_url.clone();
    let next = next.to_owned();
    let now = s.clock.now();
    s.write(move |c, fx| {
        // Throttled, and recorded, by the address asked for, account or not:
        // the same reads, the same write and the same commit either way, so
        // how long the answer takes does not tell who has an account.
        let at = time::format(now);
        let key = signin::address_key(&email);
        let (recent, latest) =
            signin::requests_since(c, &key, &time::format(now - MAILED_LINK_LIFETIME))?;
        let spaced = latest.is_none_or(|t| t <= time::format(now - MAILED_LINK_SPACING));
        let (today, _) =
            signin::requests_since(c, &key, &time::format(now - ::time::Duration::DAY))?;
        if recent >= MAILED_LINKS_PER_WINDOW || !spaced || today >= MAILED_LINKS_PER_DAY {
            return Ok(Mailed::Throttled);
        }
        signin::record_request(c, &key, &at)?;
        let Some(user) = users::by_email(c, &email)? else {
            return Ok(Mailed::NoAccount);
        };
        let mut url = link_for(c, &base, &user.id, now, MAILED_LINK_LIFETIME)?;
        if next != "/app" {
            url.push_str("?next=");
            url.extend(form_urlencoded::byte_serialize(next.as_bytes()));
        }
        let host = url::Url::parse(&base)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_else(|| base.clone());
        let letter = crate::service::mail::Letter {
            to: user.email.clone(),
            subject: format!("Your sign-in link for hds at {host}"),
            lines: vec![
                format!(
                    "Someone, hopefully you, asked on the sign-in page of hds at {base} for a link that signs in {}.",
                    user.email
                ),
                "The link works once, within 15 minutes. If you did not ask for it, ignore this mail: no one signs in without the link.".to_owned(),
            ],
            items: Vec::new(),
            link: Some(("Sign in".to_owned(), url)),
            settings: None,
            kind: crate::service::mail::MailKind::Signin,
            workspace_id: None,
            user_id: Some(user.id.clone()),
            secret: true,
            unsubscribable: false,
        };
        crate::service::mail::enqueue(c, fx, &letter, &at)?;
        Ok(Mailed::Queued)
    })
    .await
}

/// `hds users link` for a running server's tests: a link for the user with this e-mail.
pub async fn create_link(s: &Services, email: &str) -> Result<String> {
    let email = email.to_owned();
    let base = s.config.base_url.clone();
    let now = s.clock.now();
    s.db.write(move |c| {
        let user = users::by_email(c, &email)?
            .ok_or_else(|| Error::new(Code::NotFound, format!("no user has the e-mail {email}")))?;
        new_link(c, &base, &user.id, now)
    })
    .await
}

fn link_refused() -> Error {
    Error::new(
        Code::AuthRequired,
        "this sign-in link was already used or has expired; ask an admin for a new one \
         (`hds users link you@example.com`)",
    )
}

/// The address of the account a link signs in, while it can still be used
/// (the confirmation page names it; reading does not use the link).
pub async fn live_link_email(s: &Services, secret: &str) -> Result<Option<String>> {
    let secret = secret.to_owned();
    let now = time::format(s.clock.now());
    s.db.read(move |c| signin::live_link_email(c, &secret, &now))
        .await
}

/// Uses a one-time link: the first use opens a session, every later one is refused.
pub async fn redeem_link(s: &Services, secret: &str, meta: SessionMeta) -> Result<SignedIn> {
    let secret = secret.to_owned();
    let now = s.clock.now();
    s.db.write(move |c| {
        let user_id =
            signin::redeem_link(c, &secret, &time::format(now))?.ok_or_else(link_refused)?;
        open_session(c, &user_id, &meta, now)
    })
    .await
}

/// A native-flow challenge: the app passes the nonce to the provider, then
/// sends the ID token back within a few minutes.
pub async fn issue_nonce(s: &Services, provider: &str) -> Result<(String, String)> {
    let provider = provider.to_owned();
    let nonce = credentials::new_secret();
    let now = s.clock.now();
    let expires_at = time::format(now + NONCE_LIFETIME);
    let (n, e) = (nonce.clone(), expires_at.clone());
    s.db.write(move |c| signin::insert_nonce(c, &n, &provider, &time::format(now), &e))
        .await?;
    Ok((nonce, expires_at))
}

/// Spends a challenge nonce. Any attempt spends it, successful or not.
pub async fn consume_nonce(s: &Services, provider: &str, nonce: &str) -> Result<()> {
    let (provider, nonce) = (provider.to_owned(), nonce.to_owned());
    let now = time::format(s.clock.now());
    let ok =
        s.db.write(move |c| signin::consume_nonce(c, &nonce, &provider, &now))
            .await?;
    if ok {
        Ok(())
    } else {
        Err(Error::new(
            Code::InvalidIdToken,
            "the nonce is unknown, expired or already used: get a new one from the challenge route",
        ))
    }
}
