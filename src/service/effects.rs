//! One path after a commit. A write job records its Action events through
//! `record`, which writes the history row and declares what the commit must
//! trigger; `Services::write` applies those effects only once the writer has
//! committed, so no call site can forget one and a rolled-back job triggers
//! nothing. Jobs for later (webhooks, e-mail, reminders) will be rows written
//! here in the same transaction.

use rusqlite::Connection;

use crate::domain::action::Actor;
use crate::domain::event::ActionEvent;
use crate::error::Result;
use crate::store::events;

/// What a committed write must trigger.
#[derive(Debug, Default)]
pub struct Effects {
    /// Actions that closed: their long polls answer now.
    closed: Vec<String>,
    /// Some Action changed: open dashboards refresh their inbox.
    inbox_changed: bool,
}

impl Effects {
    pub fn closed(&self) -> &[String] {
        &self.closed
    }
    pub fn inbox_changed(&self) -> bool {
        self.inbox_changed
    }
    fn note(&mut self, action_id: &str, event: &ActionEvent) {
        // Every event changes what an inbox row or Action page shows, the
        // execution outcome included.
        self.inbox_changed = true;
        if event.closes() && !self.closed.iter().any(|id| id == action_id) {
            self.closed.push(action_id.to_owned());
        }
    }
}

/// Records an event in the Action's history and declares its effects.
pub fn record(
    c: &Connection,
    fx: &mut Effects,
    action_id: &str,
    actor: &Actor,
    version: i64,
    event: ActionEvent,
    at: &str,
) -> Result<()> {
    events::insert(c, action_id, actor, version, &event, at)?;
    fx.note(action_id, &event);
    Ok(())
}
