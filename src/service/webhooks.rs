//! Webhooks as use cases (guide: "Webhooks"): queueing a message in the
//! transaction of the event that causes it, and the delivery log a Source's
//! managers read and resend from. Sending is the worker's (`workers::jobs`).

use rusqlite::Connection;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::domain::action::{ActionOut, ActionRecord};
use crate::domain::event::ActionEvent;
use crate::domain::ids;
use crate::domain::webhook::EventType;
use crate::error::{Error, Result};
use crate::service::Services;
use crate::service::caller::{SourceCaller, UserCaller};
use crate::service::effects::Effects;
use crate::service::sources as sources_svc;
use crate::store::deliveries::{self, Attempt, Delivery, NewDelivery};
use crate::store::jobs::{self, Kind};
use crate::store::{actions, sources};

/// The webhook a closing event sends, if any.
pub fn event_type_of(event: &ActionEvent) -> Option<EventType> {
    match event {
        ActionEvent::Resolved { .. } => Some(EventType::Resolved),
        ActionEvent::Cancelled { .. } => Some(EventType::Cancelled),
        ActionEvent::Expired { .. } => Some(EventType::Expired),
        _ => None,
    }
}

/// A webhook's body, serialised straight from the Action (no `Value` tree
/// built first).
#[derive(Serialize)]
struct Message<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    timestamp: &'a str,
    data: Data,
}

#[derive(Serialize)]
struct Data {
    action: ActionOut,
    /// The control, control request or context request, by name.
    #[serde(flatten)]
    extra: Map<String, Value>,
}

/// Queues `event` for the Action's `callback_url`, in the caller's
/// transaction: the body is `{type, timestamp, data}` with `data.action` the
/// Action as `GET /v1/source/actions/{id}` shows it now, plus `extra` (the
/// control, the control request, the context request). Nothing is queued for
/// an Action without a callback_url. Returns the delivery id.
pub fn enqueue(
    c: &Connection,
    fx: &mut Effects,
    a: &ActionRecord,
    event: EventType,
    extra: Map<String, Value>,
    now: &str,
) -> Result<Option<String>> {
    let Some(url) = a.spec.callback_url.as_deref() else {
        return Ok(None);
    };
    debug_assert!(!extra.contains_key("action"), "data.action is the Action");
    let body = serde_json::to_string(&Message {
        kind: event.as_str(),
        timestamp: now,
        data: Data {
            action: ActionOut::from(a),
            extra,
        },
    })?;
    let id = ids::new_ordered_id(ids::DELIVERY);
    deliveries::insert(
        c,
        &NewDelivery {
            id: &id,
            workspace_id: &a.workspace_id,
            source_id: &a.source_id,
            action_id: &a.id,
            environment: a.environment.as_str(),
            event_type: event.as_str(),
            url,
            body: &body,
            now,
        },
    )?;
    jobs::insert(c, Kind::Webhook, &id, now, now)?;
    fx.queued_job();
    Ok(Some(id))
}

/// Queues the webhook of a closing event for the Action `action_id` (read
/// as it now is, receipt included), if it has a callback_url.
pub fn enqueue_for_event(
    c: &Connection,
    fx: &mut Effects,
    action_id: &str,
    event: &ActionEvent,
    now: &str,
) -> Result<()> {
    let Some(kind) = event_type_of(event) else {
        return Ok(());
    };
    // Most Actions have no callback_url: a look at one JSON member, not a
    // full read of the Action, tells.
    if !actions::has_callback(c, action_id)? {
        return Ok(());
    }
    if let Some(a) = actions::get(c, action_id)?
        && a.spec.callback_url.is_some()
    {
        enqueue(c, fx, &a, kind, Map::new(), now)?;
    }
    Ok(())
}

/// Most deliveries one page lists.
pub const MAX_PAGE: i64 = 100;

/// The Source `source_id` of the caller's workspace, for its owners and
/// admins: the log names Actions (restricted ones too) and their URLs, so it
/// is read, like every Source change, by those who manage Sources.
fn source_in_workspace(c: &Connection, user: &UserCaller, source_id: &str) -> Result<String> {
    let ws = sources_svc::workspace(user, true)?;
    sources_svc::still_manages(c, &ws, &user.user_id)?;
    match sources::name(c, &ws, source_id)? {
        Some(_) => Ok(source_id.to_owned()),
        None => Err(sources_svc::not_found()),
    }
}

/// Whose delivery log a request reads: a Source's manager (every
/// environment of the Source named in the path) or the Source itself (its
/// key's environment; guide: "The Source's own deliveries").
pub enum Reader {
    Manager(UserCaller, String),
    Source(SourceCaller),
}

/// The deliveries a reader may see: one Source's, of one environment or both.
struct Scope {
    source_id: String,
    environment: Option<&'static str>,
}

impl Scope {
    fn of(c: &Connection, reader: &Reader) -> Result<Self> {
        Ok(match reader {
            Reader::Manager(user, source_id) => Self {
                source_id: source_in_workspace(c, user, source_id)?,
                environment: None,
            },
            Reader::Source(src) => Self {
                source_id: src.source_id.clone(),
                environment: Some(src.environment.as_str()),
            },
        })
    }

    /// One delivery in the scope.
    fn find(&self, c: &Connection, id: &str) -> Result<Option<Delivery>> {
        Ok(deliveries::get(c, &self.source_id, id)?
            .filter(|d| self.environment.is_none_or(|e| d.environment == e)))
    }
}

/// GET /v1/sources/{id}/deliveries and GET /v1/source/deliveries: newest
/// first, `before` a delivery id; `failed_only` (a Source's `status=failed`)
/// keeps the given-up ones.
pub async fn list(
    s: &Services,
    reader: Reader,
    failed_only: bool,
    before: Option<ids::Cursor>,
    limit: i64,
) -> Result<Vec<Delivery>> {
    let now = s.clock.now();
    s.db.read(move |c| {
        let scope = Scope::of(c, &reader)?;
        let before = before.as_ref();
        if let Some(b) = before
            && scope.find(c, &b.id)?.is_none()
            && !crate::domain::ids::older_than(&b.id, deliveries::KEEP_DAYS, now)
        {
            let what = match scope.environment {
                None => "a delivery of this Source",
                Some(_) => "a delivery of this Source in this key's environment",
            };
            return Err(Error::unknown_cursor(b, what));
        }
        let before = before.map(|b| b.id.as_str());
        match scope.environment {
            None => deliveries::list_for_source(c, &scope.source_id, before, limit),
            Some(env) => deliveries::list_for_source_env(
                c,
                &scope.source_id,
                env,
                failed_only,
                before,
                limit,
            ),
        }
    })
    .await
}

/// GET …/deliveries/{delivery_id}: one delivery and its attempts.
pub async fn get(
    s: &Services,
    reader: Reader,
    delivery_id: String,
) -> Result<(Delivery, Vec<Attempt>)> {
    s.db.read(move |c| {
        let scope = Scope::of(c, &reader)?;
        let d = scope
            .find(c, &delivery_id)?
            .ok_or_else(Error::delivery_not_found)?;
        let attempts = deliveries::attempts(c, &d.id)?;
        Ok((d, attempts))
    })
    .await
}

/// POST …/deliveries/{delivery_id}/resend: the same message (same
/// `webhook-id`, same body, signed afresh) is sent again now, with a new
/// round of retries. A pending delivery is made due now.
pub async fn resend(s: &Services, reader: Reader, delivery_id: String) -> Result<Delivery> {
    let now = crate::domain::time::format(s.clock.now());
    s.write(move |c, fx| {
        if let Reader::Source(src) = &reader {
            sources_svc::check_not_revoked(c, &src.source_id)?;
        }
        let scope = Scope::of(c, &reader)?;
        let d = scope
            .find(c, &delivery_id)?
            .ok_or_else(Error::delivery_not_found)?;
        restart(c, &d, &now)?;
        fx.queued_job();
        scope.find(c, &d.id)?.ok_or_else(Error::delivery_not_found)
    })
    .await
}

/// Starts a new round of attempts of `d`, due now.
fn restart(c: &Connection, d: &Delivery, now: &str) -> Result<()> {
    restart_id(c, &d.id, d.status == "pending", now)
}

/// Starts a new round of attempts of the delivery `id`, due now; `pending`:
/// it is still waiting for a retry (or being sent).
fn restart_id(c: &Connection, id: &str, pending: bool, now: &str) -> Result<()> {
    if pending {
        // Waiting for a retry: due now. Already being sent: that attempt
        // is the resend (what it comes to sets when the job runs next).
        jobs::hurry(c, Kind::Webhook, id, now)?;
        deliveries::restart(c, id, now)?;
    } else {
        deliveries::restart(c, id, now)?;
        if !jobs::exists(c, Kind::Webhook, id)? {
            jobs::insert(c, Kind::Webhook, id, now, now)?;
        }
    }
    Ok(())
}

/// Most given-up deliveries one recovery resends.
pub const MAX_RECOVER: usize = 1000;

/// What a recovery did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Recovery {
    /// Always `webhook_recovery`.
    pub object: &'static str,
    /// Given-up deliveries made pending again, due now.
    pub resent: usize,
    /// More given-up deliveries since `since` wait: send the same request
    /// again with `starting_after` set to `last_id`.
    pub has_more: bool,
    /// The last delivery resent (null when none was).
    pub last_id: Option<String>,
}

/// POST /v1/source/deliveries/recover: every given-up delivery of the
/// Source (its key's environment) made at or after `since` is sent again,
/// oldest first, at most `MAX_RECOVER` per request (Svix's "recover"),
/// after `after` (the `last_id` of the previous request) when given: one that
/// fails again at once is not taken again by the next request.
pub async fn recover(
    s: &Services,
    src: SourceCaller,
    since: crate::domain::time::Timestamp,
    after: Option<String>,
) -> Result<Recovery> {
    let now = crate::domain::time::format(s.clock.now());
    let from = ids::first_at(ids::DELIVERY, since);
    s.write(move |c, fx| {
        sources_svc::check_not_revoked(c, &src.source_id)?;
        let env = src.environment.as_str();
        let limit = i64::try_from(MAX_RECOVER + 1).unwrap_or(i64::MAX);
        let mut failed =
            deliveries::failed_since(c, &src.source_id, env, &from, after.as_deref(), limit)?;
        let has_more = failed.len() > MAX_RECOVER;
        failed.truncate(MAX_RECOVER);
        for id in &failed {
            restart_id(c, id, false, &now)?;
        }
        if !failed.is_empty() {
            fx.queued_job();
        }
        Ok(Recovery {
            object: "webhook_recovery",
            resent: failed.len(),
            has_more,
            last_id: failed.last().cloned(),
        })
    })
    .await
}
