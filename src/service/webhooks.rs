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
use crate::service::caller::UserCaller;
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

/// GET /v1/sources/{id}/deliveries: newest first, `before` a delivery id.
pub async fn list(
    s: &Services,
    user: UserCaller,
    source_id: String,
    before: Option<ids::Cursor>,
    limit: i64,
) -> Result<Vec<Delivery>> {
    let now = s.clock.now();
    s.db.read(move |c| {
        let id = source_in_workspace(c, &user, &source_id)?;
        let before = before.as_ref();
        if let Some(b) = before
            && deliveries::get(c, &id, &b.id)?.is_none()
            && !crate::domain::ids::older_than(&b.id, deliveries::KEEP_DAYS, now)
        {
            return Err(Error::unknown_cursor(b, "a delivery of this Source"));
        }
        deliveries::list_for_source(c, &id, before.map(|b| b.id.as_str()), limit)
    })
    .await
}

/// GET /v1/sources/{id}/deliveries/{delivery_id}: one delivery and its attempts.
pub async fn get(
    s: &Services,
    user: UserCaller,
    source_id: String,
    delivery_id: String,
) -> Result<(Delivery, Vec<Attempt>)> {
    s.db.read(move |c| {
        let id = source_in_workspace(c, &user, &source_id)?;
        let d = deliveries::get(c, &id, &delivery_id)?.ok_or_else(Error::delivery_not_found)?;
        let attempts = deliveries::attempts(c, &d.id)?;
        Ok((d, attempts))
    })
    .await
}

/// POST …/deliveries/{delivery_id}/resend: the same message (same
/// `webhook-id`, same body, signed afresh) is sent again now, with a new
/// round of retries. A pending delivery is made due now.
pub async fn resend(
    s: &Services,
    user: UserCaller,
    source_id: String,
    delivery_id: String,
) -> Result<Delivery> {
    let now = crate::domain::time::format(s.clock.now());
    s.write(move |c, fx| {
        let id = source_in_workspace(c, &user, &source_id)?;
        let d = deliveries::get(c, &id, &delivery_id)?.ok_or_else(Error::delivery_not_found)?;
        if d.status == "pending" {
            // Waiting for a retry: due now. Already being sent: that attempt
            // is the resend (what it comes to sets when the job runs next).
            jobs::hurry(c, Kind::Webhook, &d.id, &now)?;
            deliveries::restart(c, &d.id, &now)?;
        } else {
            deliveries::restart(c, &d.id, &now)?;
            if !jobs::exists(c, Kind::Webhook, &d.id)? {
                jobs::insert(c, Kind::Webhook, &d.id, &now, &now)?;
            }
        }
        fx.queued_job();
        deliveries::get(c, &id, &d.id)?.ok_or_else(Error::delivery_not_found)
    })
    .await
}
