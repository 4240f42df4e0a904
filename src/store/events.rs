//! The Action history table (`action_events`): typed events in, typed entries
//! out. Services record events through `service::effects::record`, which also
//! declares what must happen after the commit.

use rusqlite::{Connection, params};
use serde_json::Value;

use crate::domain::action::{Actor, ActorKind};
use crate::domain::event::{ActionEvent, HistoryEntry};
use crate::error::Result;

pub fn insert(
    c: &Connection,
    action_id: &str,
    actor: &Actor,
    version: i64,
    event: &ActionEvent,
    at: &str,
) -> Result<()> {
    c.prepare_cached(
        "INSERT INTO action_events(action_id, kind, actor_type, actor_id, action_version, data, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![action_id, event.kind(), actor.kind.as_str(), actor.id, version, event.data().to_string(), at])?;
    Ok(())
}

/// The history of an Action, oldest first.
pub fn history(c: &Connection, action_id: &str) -> Result<Vec<HistoryEntry>> {
    let mut st = c.prepare_cached(
        "SELECT kind, actor_type, actor_id, action_version, data, created_at FROM action_events WHERE action_id = ?1 ORDER BY id",
    )?;
    let rows = st.query_map([action_id], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, Option<String>>(2)?,
            r.get::<_, i64>(3)?,
            r.get::<_, String>(4)?,
            r.get::<_, String>(5)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (kind, actor_type, actor_id, action_version, data, created_at) = row?;
        let data: Value = serde_json::from_str(&data)?;
        let event = match ActionEvent::from_stored(&kind, data) {
            Ok(event) => event,
            Err(e) => {
                // Only a newer hds writes kinds this one does not know (after a
                // downgrade): the rest of the history still reads.
                tracing::warn!(action.id = %action_id, event.kind = %kind, error = %e, "history event skipped");
                continue;
            }
        };
        let kind = match actor_type.as_str() {
            "user" => ActorKind::User,
            "source" => ActorKind::Source,
            _ => ActorKind::System,
        };
        out.push(HistoryEntry {
            event,
            actor: Actor { kind, id: actor_id },
            action_version,
            created_at,
        });
    }
    Ok(out)
}
