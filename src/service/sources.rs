//! Source management (guide: "GET /v1/sources and GET /v1/sources/{source_id}"): members list and read; owners and admins
//! create, update, rotate and revoke.

use serde::Deserialize;
use utoipa::ToSchema;

use crate::domain::access;
use crate::domain::action::{Actor, Environment, Resolution, Status};
use crate::domain::event::ActionEvent;
use crate::domain::time;
use crate::error::{Code, Error, Result};
use crate::service::Services;
use crate::service::caller::{self, UserCaller};
use crate::service::effects::{self, On};
use crate::service::workspaces::check_name;
use crate::store::actions;
use crate::store::sources::{self as store, Secrets, Source};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceCreate {
    /// 1-100 characters, one line.
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069][^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*$"
    )]
    pub name: String,
    /// At most 500 characters.
    #[serde(default)]
    #[schema(max_length = 500)]
    pub description: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceUpdate {
    /// 1-100 characters, one line; it cannot be cleared (`null` is refused).
    #[serde(default, deserialize_with = "present")]
    #[schema(
        value_type = String,
        min_length = 1,
        max_length = 100,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069][^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*$"
    )]
    pub name: Option<Option<String>>,
    /// At most 500 characters; `null` clears the description.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, max_length = 500)]
    pub description: Option<Option<String>>,
}

/// Distinguishes an absent field (None) from an explicit null (Some(None)).
pub(crate) fn present<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Option<String>>, D::Error> {
    Ok(Some(Option::deserialize(d)?))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyRotate {
    /// Keys to replace: `live`, `test`, `both` (default) or `none`.
    #[serde(default)]
    #[schema(schema_with = rotate_environment_schema)]
    pub environment: Option<String>,
    /// Also replace the webhook signing secret.
    #[serde(default)]
    pub webhook_secret: bool,
    /// Seconds the old webhook secret keeps signing beside the new one (both
    /// signatures in `webhook-signature`), so receivers can switch without
    /// missing a delivery. 0..604800, default 86400 (a day); 0 ends it at once.
    #[serde(
        default,
        deserialize_with = "crate::domain::strict_json::optional_integer"
    )]
    #[schema(minimum = 0, maximum = 604800)]
    pub webhook_secret_overlap_seconds: Option<i64>,
    /// Seconds each replaced key keeps working beside its new one (listed in
    /// `keys` with its `expires_at` meanwhile), so callers can switch without
    /// a failed request. 0..604800, default 86400 (a day); 0 ends it at once.
    /// A key still in the overlap of an earlier rotation ends now: only the
    /// new key and the one it replaced work.
    #[serde(
        default,
        deserialize_with = "crate::domain::strict_json::optional_integer"
    )]
    #[schema(minimum = 0, maximum = 604800)]
    pub key_overlap_seconds: Option<i64>,
}

/// Default overlap of an old and a new webhook secret, and of an old and a
/// new key.
pub const DEFAULT_OVERLAP_SECS: i64 = 86_400;
/// Longest overlap: seven days.
pub const MAX_OVERLAP_SECS: i64 = 604_800;

/// An overlap in seconds from the request, checked against 0..=7 days.
pub(crate) fn overlap(field: &str, asked: Option<i64>) -> Result<i64> {
    let secs = asked.unwrap_or(DEFAULT_OVERLAP_SECS);
    if (0..=MAX_OVERLAP_SECS).contains(&secs) {
        Ok(secs)
    } else {
        Err(Error::field(
            field,
            format!("{field} must be between 0 and {MAX_OVERLAP_SECS} (7 days)"),
        ))
    }
}

fn rotate_environment_schema() -> utoipa::openapi::Object {
    crate::service::inbox::string_enum(&["live", "test", "both", "none"])
}

pub(crate) fn workspace(user: &UserCaller, admin: bool) -> Result<String> {
    let m = user.active_or_404()?;
    if admin {
        caller::require_manager(m.role, access::can_manage_sources, "Sources")?;
    }
    Ok(m.workspace_id.clone())
}

/// The caller's role as it is inside the write: a demotion or removal that
/// committed after authentication refuses the change (as the work routes
/// do, `service::actions::access_now`).
pub(crate) fn still_manages(c: &rusqlite::Connection, ws: &str, user_id: &str) -> Result<()> {
    let role = crate::store::workspaces::role_of(c, ws, user_id)?.ok_or_else(|| {
        Error::new(
            Code::Forbidden,
            "you are no longer a member of this workspace",
        )
    })?;
    caller::require_manager(role, access::can_manage_sources, "Sources")
}

pub(crate) fn not_found() -> Error {
    Error::new(
        Code::SourceNotFound,
        "no Source with that id in this workspace",
    )
}

/// Why a change to Source `id` found nothing to change: it was revoked (it
/// is still read, so "no Source" would be untrue), or there is none.
fn unchangeable(c: &rusqlite::Connection, ws: &str, id: &str, now: &str) -> Error {
    match store::get(c, ws, id, now) {
        Ok(Some(src)) if src.revoked_at.is_some() => Error::new(
            Code::SourceNotFound,
            "this Source was revoked: it can still be read, but not changed or given new keys; create a new Source instead",
        )
        .with_detail("status", "revoked"),
        Ok(_) => not_found(),
        Err(e) => e,
    }
}

pub async fn list(s: &Services, user: UserCaller) -> Result<Vec<Source>> {
    let ws = workspace(&user, false)?;
    let now = time::format(s.clock.now());
    s.db.read(move |c| store::list(c, &ws, &now)).await
}

pub async fn get(s: &Services, user: UserCaller, id: String) -> Result<Source> {
    let ws = workspace(&user, false)?;
    let now = time::format(s.clock.now());
    s.db.read(move |c| store::get(c, &ws, &id, &now))
        .await?
        .ok_or_else(not_found)
}

/// A Source's description: at most 500 characters (the dashboard's form
/// says the same).
fn check_description(d: Option<&str>) -> Result<()> {
    if d.is_some_and(|d| d.chars().count() > 500) {
        return Err(Error::field(
            "description",
            "description must be at most 500 characters",
        ));
    }
    Ok(())
}

/// Creates a Source; its keys and webhook secret are in this response only.
pub async fn create(
    s: &Services,
    user: UserCaller,
    req: SourceCreate,
) -> Result<(Source, Secrets)> {
    let ws = workspace(&user, true)?;
    let name = check_name(&req.name)?;
    check_description(req.description.as_deref())?;
    let clock_now = s.clock.now();
    let now = time::format(clock_now);
    let me = user.user_id.clone();
    let config = s.config.clone();
    s.db.write(move |c| {
        still_manages(c, &ws, &me)?;
        let sources = crate::domain::billing::Resource::Sources;
        crate::service::billing::check(c, &config.billing, &ws, sources, clock_now)?;
        store::create(c, &ws, &name, req.description.as_deref(), &now)
    })
    .await
}

pub async fn update(
    s: &Services,
    user: UserCaller,
    id: String,
    req: SourceUpdate,
) -> Result<Source> {
    let ws = workspace(&user, true)?;
    let name = match &req.name {
        Some(Some(n)) => Some(check_name(n)?),
        Some(None) => {
            return Err(Error::field(
                "name",
                "name cannot be null: a Source always has a name; leave the field out to keep it",
            ));
        }
        None => None,
    };
    check_description(req.description.as_ref().and_then(|d| d.as_deref()))?;
    let now = time::format(s.clock.now());
    let me = user.user_id.clone();
    s.db.write(move |c| {
        still_manages(c, &ws, &me)?;
        store::update(
            c,
            &ws,
            &id,
            name.as_deref(),
            req.description.as_ref().map(|d| d.as_deref()),
            &now,
        )?
        .ok_or_else(|| unchangeable(c, &ws, &id, &now))
    })
    .await
}

/// Why a revoked Source's open Actions were cancelled, in their history.
pub const REVOKED_REASON: &str = "the Source was revoked";

/// Refuses, inside a write, a Source revoked since its key was checked: the
/// answer a request after the revocation gets.
pub fn check_not_revoked(c: &rusqlite::Connection, source_id: &str) -> Result<()> {
    if store::is_revoked(c, source_id)? {
        return Err(Error::new(
            Code::SourceRevoked,
            "this Source was revoked; its keys no longer work",
        ));
    }
    Ok(())
}

/// Most open Actions the revocation's confirmation counts ("more than
/// 10,000" beyond).
pub const OPEN_COUNT_CAP: i64 = 10_000;

/// How many open Actions revoking Source `id` would cancel, up to
/// `OPEN_COUNT_CAP` + 1 (more than the cap).
pub async fn open_actions(s: &Services, user: UserCaller, id: String) -> Result<i64> {
    let ws = workspace(&user, false)?;
    s.db.read(move |c| store::open_actions(c, &ws, &id, OPEN_COUNT_CAP + 1))
        .await
}

/// Revokes a Source and, in the same transaction, cancels its open Actions
/// (nobody is left to act on a decision); their long polls answer at once.
pub async fn revoke(s: &Services, user: UserCaller, id: String) -> Result<()> {
    let ws = workspace(&user, true)?;
    let now = time::format(s.clock.now());
    let me = user.user_id.clone();
    let svc = s.clone();
    let revoked = s
        .write(move |c, fx| {
            still_manages(c, &ws, &me)?;
            if !store::revoke(c, &ws, &id, &now)? {
                return Ok(false);
            }
            let resolution = Resolution::without_choice(
                Some(REVOKED_REASON.into()),
                Actor::system(),
                now.clone(),
            );
            for (action_id, version, named) in
                actions::close_open_of_source(c, &id, Status::Cancelled, &resolution)?
            {
                let event = ActionEvent::Cancelled {
                    reason: resolution.reason.clone(),
                };
                let by = &resolution.decided_by;
                effects::record(c, fx, On::new(&action_id, &ws), by, version, event, &now)?;
                // Its requester and assignee hear how it ended, as when the
                // Source cancels it (only those rows are read again).
                if named && let Some(a) = actions::get(c, &action_id)? {
                    let how = crate::service::notifications::Closed {
                        status: Status::Cancelled,
                        resolution: &resolution,
                        closer: Some(&me),
                        revoked_by: Some(&me),
                    };
                    crate::service::notifications::action_closed(c, fx, &svc, &a, how, &now)?;
                }
            }
            crate::service::runs::cancel_of_revoked_source(c, fx, &ws, &id, &now)?;
            Ok(true)
        })
        .await?;
    s.key_cache.clear();
    if revoked { Ok(()) } else { Err(not_found()) }
}

/// Replaces keys (guide: "Rotating keys"); each old one works until the end
/// of its overlap, at once when the overlap is 0.
pub async fn rotate_keys(
    s: &Services,
    user: UserCaller,
    id: String,
    req: KeyRotate,
) -> Result<(Source, Secrets)> {
    let ws = workspace(&user, true)?;
    let envs = match req.environment.as_deref().unwrap_or("both") {
        "both" => vec![Environment::Live, Environment::Test],
        "live" => vec![Environment::Live],
        "test" => vec![Environment::Test],
        "none" => vec![],
        other => {
            return Err(Error::field(
                "environment",
                format!("`{other}` is not valid; use live, test, both or none"),
            ));
        }
    };
    if envs.is_empty() && !req.webhook_secret {
        return Err(Error::field(
            "environment",
            "nothing to rotate: choose keys (environment) and/or webhook_secret: true",
        ));
    }
    // An overlap for something not replaced would be silently ignored:
    // refused, so a caller who meant to rotate it learns it was not.
    if envs.is_empty() && req.key_overlap_seconds.is_some() {
        return Err(Error::field(
            "key_overlap_seconds",
            "key_overlap_seconds applies only when keys are replaced; environment is none",
        ));
    }
    if !req.webhook_secret && req.webhook_secret_overlap_seconds.is_some() {
        return Err(Error::field(
            "webhook_secret_overlap_seconds",
            "webhook_secret_overlap_seconds applies only with webhook_secret: true",
        ));
    }
    let webhook = req.webhook_secret;
    let secret_overlap = overlap(
        "webhook_secret_overlap_seconds",
        req.webhook_secret_overlap_seconds,
    )?;
    let key_overlap = overlap("key_overlap_seconds", req.key_overlap_seconds)?;
    let clock_now = s.clock.now();
    let after = |secs: i64| time::format(clock_now + ::time::Duration::seconds(secs));
    let secret_until = (secret_overlap > 0).then(|| after(secret_overlap));
    let key_until = after(key_overlap);
    let now = time::format(clock_now);
    let me = user.user_id.clone();
    let rotated =
        s.db.write(move |c| {
            still_manages(c, &ws, &me)?;
            let secret_until = secret_until.as_deref();
            store::rotate_keys(c, &ws, &id, &envs, &key_until, webhook, secret_until, &now)?
                .ok_or_else(|| unchangeable(c, &ws, &id, &now))
        })
        .await?;
    s.key_cache.clear();
    Ok(rotated)
}
