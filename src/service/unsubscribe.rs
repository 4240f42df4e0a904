//! The one-click unsubscribe link of notification mails (guide: "E-mail"):
//! `GET /app/unsubscribe/{token}` shows what it stops, `POST` stops it
//! (the mail provider's one-click POST of RFC 8058, or the page's button).
//! Stopping turns off the person's e-mail from that workspace: the master
//! switch of their notification preferences there, as the settings page's
//! "E-mail" box does. Kinds the workspace makes mandatory are still
//! mailed, and the dashboard keeps every notification.

use crate::domain::unsubscribe;
use crate::error::{Code, Error, Result};
use crate::service::Services;
use crate::service::notification_mail;
use crate::store::mail as mail_store;
use crate::store::notifications as store;
use crate::store::{users, workspaces};

/// What a link names, as its page says it.
#[derive(Debug, Clone)]
pub struct Subscription {
    pub email: String,
    pub workspace_name: String,
    /// The person's e-mail switch for that workspace as it now is.
    pub email_on: bool,
}

fn not_found(link: &'static str) -> Error {
    Error::new(
        Code::NotFound,
        "this unsubscribe link is not valid (it was cut short or changed) or no longer applies \
         (the account or its membership is gone); sign in and open Settings → Notifications",
    )
    .with_detail("link", link)
}

/// What a refused link was, in `details.link`: `invalid` (its MAC does not
/// hold: cut short, changed or made up; the only refusal the address
/// budget counts) or `stale` (genuine, but its person left the workspace
/// or deleted their account).
pub const INVALID: &str = "invalid";

/// The person and workspace of a valid link, while the person is still a
/// member.
fn named(c: &rusqlite::Connection, token: &str) -> Result<(String, String, Subscription)> {
    let key = mail_store::unsubscribe_key(c)?;
    let (user_id, workspace_id) =
        unsubscribe::verify(&key, token).ok_or_else(|| not_found(INVALID))?;
    let stale = || not_found("stale");
    workspaces::role_of(c, &workspace_id, &user_id)?.ok_or_else(stale)?;
    let user = users::by_id(c, &user_id)?.ok_or_else(stale)?;
    let ws = workspaces::get(c, &workspace_id)?.ok_or_else(stale)?;
    let prefs = store::preferences(c, &user_id, &workspace_id)?;
    let sub = Subscription {
        email: user.email,
        workspace_name: ws.name,
        email_on: prefs.email,
    };
    Ok((user_id, workspace_id, sub))
}

/// GET: what the link stops; changes nothing (mail scanners open links).
pub async fn show(s: &Services, token: String) -> Result<Subscription> {
    s.db.read(move |c| named(c, &token).map(|(_, _, sub)| sub))
        .await
}

/// POST: the person's e-mail from the workspace off. Doing it again
/// changes nothing and answers the same.
pub async fn stop(s: &Services, token: String) -> Result<Subscription> {
    // Refused on a reader first: a forged or stale link, or one already
    // used, costs no write transaction.
    let current = show(s, token.clone()).await?;
    if !current.email_on {
        return Ok(current);
    }
    let now = crate::domain::time::format(s.clock.now());
    s.write(move |c, fx| {
        let (user_id, workspace_id, mut sub) = named(c, &token)?;
        if sub.email_on {
            let mut prefs = store::preferences(c, &user_id, &workspace_id)?;
            prefs.email = false;
            store::set_preferences(c, &user_id, &workspace_id, &prefs, &now)?;
            notification_mail::retime_digest(c, &user_id, &workspace_id, &prefs, &now)?;
            fx.user_changed(&user_id);
            tracing::info!(user.id = %user_id, workspace.id = %workspace_id,
                "notification e-mail turned off by an unsubscribe link");
            sub.email_on = false;
        }
        Ok(sub)
    })
    .await
}
