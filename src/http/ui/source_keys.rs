//! Replacing a Source's keys from its page (guide: "Rotating keys"): the
//! live key, the test key or both, and/or the webhook secret, each with an
//! overlap during which the old one still works, behind a confirmation.
//!
//! New secrets are shown once by POST-redirect-GET (`ui::shown_once`): the
//! POST holds them and redirects to the Source page, which takes them out; a
//! reload of that page shows a notice instead, and rotates nothing. Source creation
//! (`sources::create_source`) redirects the same way.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use crate::app::AppState;
use crate::domain::time::{self, Timestamp};
use crate::error::{Error, Result};
use crate::http::session::PageUser;
use crate::http::ui::shown_once;
use crate::http::ui::source::{page, source_head};
use crate::http::ui::view::{
    Ask, ConfirmPage, FormData, PagePath, UiError, When, check_csrf, page_with_error,
};
use crate::service::shown_once::Secret;
use crate::service::sources::{self, DEFAULT_OVERLAP_SECS, KeyRotate};
use crate::store::sources::Secrets;

/// Secrets just made, as the page shows them once.
pub struct SecretsVm {
    pub title: String,
    pub live_key: Option<String>,
    pub test_key: Option<String>,
    pub webhook_secret: Option<String>,
}

/// Holds new secrets for their one showing on the Source page and answers
/// with the redirect there (`?done=` says what happened).
pub(super) async fn show_once(
    st: &AppState,
    p: &PageUser,
    source_id: &str,
    title: String,
    secrets: Secrets,
    done: &str,
) -> std::result::Result<Response, UiError> {
    let secret = Secret::SourceKeys {
        source_id: source_id.to_owned(),
        title,
        secrets,
    };
    let to = format!("/app/sources/{source_id}?done={done}");
    shown_once::hold(st, p, secret, &to).await
}

/// The secrets waiting for this person on this Source's page, taken out.
pub(super) async fn take_shown(
    st: &AppState,
    p: &PageUser,
    id: &str,
) -> std::result::Result<Option<SecretsVm>, UiError> {
    shown_once::take(st, p, &Secret::source_slot(id), |held| match held {
        Secret::SourceKeys {
            source_id,
            title,
            secrets,
        } if source_id == id => Some(SecretsVm {
            title,
            live_key: secrets.live_key,
            test_key: secrets.test_key,
            webhook_secret: secrets.webhook_secret,
        }),
        _ => None,
    })
    .await
}

/// What a rotation form asks for, read from its fields.
struct RotateForm {
    environment: String,
    webhook_secret: bool,
    overlap: i64,
}

impl RotateForm {
    fn read(form: &FormData) -> Result<Self> {
        let overlap = match form.get("overlap") {
            None | Some("") => DEFAULT_OVERLAP_SECS,
            Some(v) => v
                .parse()
                .map_err(|_| Error::field("overlap", "overlap must be a number of seconds"))?,
        };
        // Checked before the confirmation is drawn, as the service checks it.
        let overlap = sources::overlap("overlap", Some(overlap))?;
        let environment = form.get("environment").unwrap_or("both").to_owned();
        let webhook_secret = form.get("webhook_secret") == Some("yes");
        if !matches!(environment.as_str(), "live" | "test" | "both" | "none")
            || (environment == "none" && !webhook_secret)
        {
            return Err(Error::field(
                "environment",
                "choose the live key, the test key or both, or the webhook secret",
            ));
        }
        Ok(Self {
            environment,
            webhook_secret,
            overlap,
        })
    }

    /// "live key", "test key", "live and test keys" or None (the secret only).
    fn keys(&self) -> Option<&'static str> {
        match self.environment.as_str() {
            "live" => Some("live key"),
            "test" => Some("test key"),
            "both" => Some("live and test keys"),
            _ => None,
        }
    }

    /// The confirmation: what is replaced and until when the old one works.
    fn ask(&self, id: &str, name: &str, now: Timestamp) -> Ask {
        let until = When::new(
            &time::format(now + ::time::Duration::seconds(self.overlap)),
            now,
        );
        let keys = self.keys();
        // "The old live key … keeps", "The old live and test keys … keep".
        let (works, stops, it, one) = if self.environment == "both" {
            ("keep", "stop", "them", "ones")
        } else {
            ("keeps", "stops", "it", "one")
        };
        let mut message = match keys {
            Some(k) if self.overlap > 0 => format!(
                "The old {k} of “{name}” {works} working until {} ({}), then {stops}. Give whatever uses {it} the new {one} before then.",
                until.exact, until.ago
            ),
            Some(k) => format!(
                "The old {k} of “{name}” {stops} working at once. Whatever uses {it} fails until it is given the new {one}."
            ),
            None => String::new(),
        };
        if self.webhook_secret {
            let secret = if self.overlap > 0 {
                format!(
                    "hds signs webhooks of “{name}” with the old and the new secret until {} ({}), then with the new one only.",
                    until.exact, until.ago
                )
            } else {
                format!(
                    "hds signs webhooks of “{name}” with the new secret only, at once: receivers checking the old one refuse them until they are given the new one."
                )
            };
            message = format!("{message} {secret}").trim().to_owned();
        }
        let (heading, label) = match (keys, self.webhook_secret) {
            (Some(k), false) => (format!("Replace the {k}?"), "Replace the keys"),
            (None, true) => (
                "Replace the webhook signing secret?".to_owned(),
                "Replace the secret",
            ),
            (k, _) => (
                format!(
                    "Replace the {} and the webhook secret?",
                    k.unwrap_or("keys")
                ),
                "Replace them",
            ),
        };
        Ask {
            heading,
            message,
            post_to: format!("/app/sources/{id}/rotate"),
            confirm_label: label.into(),
            cancel_url: format!("/app/sources/{id}"),
        }
    }
}

/// POST /app/sources/{id}/rotate: replaces the live key, the test key or
/// both (`environment`), and/or the webhook secret (`webhook_secret=yes`),
/// the old ones working `overlap` seconds more; behind a confirmation. The
/// new secrets are shown once, on the page this redirects to.
pub async fn rotate_source(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> std::result::Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    // Refused before asking: no confirmation offers what the server refuses.
    sources::workspace(&p.user, true)?;
    let head = source_head(&st, &p, &id).await?;
    let asked = match RotateForm::read(&form) {
        Ok(a) => a,
        Err(e) => return page_with_error(e, page(&st, &p, &id, None)).await,
    };
    if form.get("confirmed") != Some("yes") {
        let mut ask = asked.ask(&id, &head.name, st.services.clock.now());
        // At most two keys per environment: a key replaced earlier and still
        // in its overlap ends now, and whoever still uses it should know.
        for k in &head.keys {
            let replaced = matches!(
                (asked.environment.as_str(), k.environment.as_str()),
                ("both", _) | ("live", "live") | ("test", "test")
            );
            if let (true, Some(ends)) = (replaced, &k.ends) {
                ask.message.push_str(&format!(
                    " The {} key {} replaced earlier, which would work until {} ({}), stops working at once.",
                    k.environment, k.masked, ends.exact, ends.ago
                ));
            }
        }
        return ConfirmPage::ask(&st, &p, "sources", &form, ask).await;
    }
    let title = match asked.keys() {
        Some(k) => format!("New {k} for “{}”", head.name),
        None => format!("New webhook secret for “{}”", head.name),
    };
    let req = KeyRotate {
        webhook_secret_overlap_seconds: asked.webhook_secret.then_some(asked.overlap),
        key_overlap_seconds: asked.keys().map(|_| asked.overlap),
        environment: Some(asked.environment),
        webhook_secret: asked.webhook_secret,
    };
    match sources::rotate_keys(&st.services, p.user.clone(), id.clone(), req).await {
        Ok((_, secrets)) => show_once(&st, &p, &id, title, secrets, "rotated").await,
        Err(e) => page_with_error(e, page(&st, &p, &id, None)).await,
    }
}
