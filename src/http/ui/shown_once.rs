//! POST-redirect-GET for secrets a dashboard page shows once (a Source's
//! keys, an API token, an invitation link): the POST holds the secret in
//! `service::shown_once` under a random id kept in the session (never in the
//! URL) and redirects; the GET it leads to takes the secret out and shows it.
//! A reload of that page finds nothing, so it shows a notice instead and
//! makes nothing.

use axum::response::Response;

use crate::app::AppState;
use crate::http::session::{PageUser, session_error};
use crate::http::ui::view::{UiError, see_other};
use crate::service::shown_once::{Pending, Secret};

/// The session key holding the id of the secret waiting for its showing on
/// one page (`Secret::slot`).
fn session_key(slot: &str) -> String {
    format!("shown_once:{slot}")
}

/// Holds `secret` for its one showing by `p` and answers with the 303 to
/// `to`, the page that shows it.
pub(super) async fn hold(
    st: &AppState,
    p: &PageUser,
    secret: Secret,
    to: &str,
) -> Result<Response, UiError> {
    let key = session_key(&secret.slot());
    let pending = Pending {
        user_id: p.user.user_id.clone(),
        secret,
    };
    let id = st.services.shown_once.put(pending, st.services.clock.now());
    p.session.insert(&key, id).await.map_err(session_error)?;
    Ok(see_other(to))
}

/// The secret waiting for `p` on the page of `slot` (`Secret::slot`), taken
/// out (gone afterwards) and read by `pick`. None once it was shown.
pub(super) async fn take<T>(
    st: &AppState,
    p: &PageUser,
    slot: &str,
    pick: impl FnOnce(Secret) -> Option<T>,
) -> Result<Option<T>, UiError> {
    let Some(id) = p
        .session
        .remove::<String>(&session_key(slot))
        .await
        .map_err(session_error)?
    else {
        return Ok(None);
    };
    let now = st.services.clock.now();
    Ok(st
        .services
        .shown_once
        .take(&id, &p.user.user_id, now)
        .and_then(pick))
}
