//! A person's credentials (account page): sessions and API tokens, listed,
//! created and revoked. Ending the current session is logout.

use crate::domain::time;
use crate::error::{Code, Error, Result};
use crate::service::Services;
use crate::service::caller::UserCaller;
use crate::service::signin::INVITATION_METHOD;
use crate::store::users::{self, Credential, NewCredential};

/// Longest lifetime of a personal API token, in days.
pub const MAX_TOKEN_DAYS: u32 = 366;

/// The caller's credentials that work: every API token and the newest
/// sessions (`users::live_credentials`).
pub async fn list(s: &Services, user: &UserCaller) -> Result<Vec<Credential>> {
    let uid = user.user_id.clone();
    let now = s.clock.now();
    s.db.read(move |c| users::live_credentials(c, &uid, now))
        .await
}

/// Signs the caller out everywhere else: every other session ends at once
/// (API tokens stay). Answers how many ended.
pub async fn end_other_sessions(s: &Services, user: &UserCaller) -> Result<usize> {
    let (uid, keep) = (user.user_id.clone(), user.credential_id.clone());
    let now = time::format(s.clock.now());
    s.db.write(move |c| users::revoke_other_sessions(c, &uid, &keep, &now))
        .await
}

/// Why a session opened by an invitation link creates no API token.
pub const INVITATION_SESSION_NO_TOKENS: &str = "this session was opened by an invitation link, which \
     whoever invited you also held: sign in with your identity provider or a sign-in link from \
     your operator to create API tokens";

/// A new API token; the secret is returned once. Not from a session an
/// invitation link opened (403 `FORBIDDEN`): a token would outlive that
/// session, which ends when the person signs in another way.
pub async fn create_api_token(
    s: &Services,
    user: &UserCaller,
    name: &str,
    expires_in_days: Option<u32>,
) -> Result<(String, Credential)> {
    let name = name.trim();
    // Only blanks or invisible characters name nothing a person can tell
    // apart in the list of tokens.
    if crate::domain::validate::says_nothing(name) || name.chars().count() > 100 {
        return Err(Error::validation(vec![crate::error::FieldError::new(
            "name",
            "give the token a name of 1 to 100 characters, e.g. where it is used",
        )]));
    }
    if !crate::domain::validate::is_one_line(name) {
        return Err(Error::validation(vec![crate::error::FieldError::new(
            "name",
            format!("name {}", crate::domain::validate::ONE_LINE),
        )]));
    }
    if let Some(d) = expires_in_days
        && !(1..=MAX_TOKEN_DAYS).contains(&d)
    {
        return Err(Error::validation(vec![crate::error::FieldError::new(
            "expires_in_days",
            format!("between 1 and {MAX_TOKEN_DAYS} days, or leave empty for no expiry"),
        )]));
    }
    let (uid, name) = (user.user_id.clone(), name.to_owned());
    let now = s.clock.now();
    let cred_id = user.credential_id.clone();
    s.db.write(move |c| {
        if users::credential_method(c, &cred_id)?.as_deref() == Some(INVITATION_METHOD) {
            return Err(Error::new(Code::Forbidden, INVITATION_SESSION_NO_TOKENS));
        }
        let expires = expires_in_days.map(|d| time::format(now + ::time::Duration::days(d.into())));
        let created_at = time::format(now);
        let (token, id) = users::insert_credential(
            c,
            &NewCredential {
                user_id: &uid,
                name: &name,
                kind: "api",
                method: None,
                client: None,
                user_agent: None,
                expires_at: expires.as_deref(),
                created_at: &created_at,
            },
        )?;
        let cred = users::credential_of(c, &uid, &id)?
            .ok_or_else(|| Error::internal(anyhow::anyhow!("new token {id} not found")))?;
        Ok((token, cred))
    })
    .await
}

/// Revokes one of the caller's sessions or tokens. Takes effect on the next
/// request that presents it: every lookup checks `revoked_at`.
pub async fn revoke(s: &Services, user: &UserCaller, id: &str) -> Result<()> {
    let (uid, id) = (user.user_id.clone(), id.to_owned());
    let now = time::format(s.clock.now());
    let done =
        s.db.write(move |c| users::revoke_credential(c, &uid, &id, &now))
            .await?;
    if done {
        Ok(())
    } else {
        Err(Error::new(
            Code::NotFound,
            "no live session or token with that id belongs to you",
        ))
    }
}

/// A browser signed in again while it held another session (perhaps another
/// person's): the session it held is revoked, so that no account page lists
/// a live session no browser can present any more.
pub async fn end_replaced_session(s: &Services, id: &str) -> Result<()> {
    let id = id.to_owned();
    let now = time::format(s.clock.now());
    s.db.write(move |c| users::revoke_session(c, &id, &now))
        .await?;
    Ok(())
}
