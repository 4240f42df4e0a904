//! One path after a commit. A write job records its Action events through
//! `record` (or `record_closed`, when it holds the closed Action), which writes the history row and declares what the commit must
//! trigger; `Services::write` applies those effects only once the writer has
//! committed, so no call site can forget one and a rolled-back job triggers
//! nothing. Work for later (webhooks now; e-mail and reminders next) is a row
//! of the job queue written in the same transaction (`store::jobs`); the
//! effect only wakes the worker once the commit has made the row visible.

use rusqlite::Connection;

use crate::domain::action::{ActionRecord, Actor};
use crate::domain::event::ActionEvent;
use crate::error::Result;
use crate::service::changes::Topic;
use crate::store::events;

/// What a committed write must trigger.
#[derive(Debug, Default)]
pub struct Effects {
    /// Actions that closed or were asked a question
    /// (`ActionEvent::wakes_waiters`): their long polls answer now.
    woken: Vec<String>,
    /// What open pages show that changed (`service::changes`): they refresh.
    changed: Vec<Topic>,
    /// A job row was written: the worker runs it now rather than at its next tick.
    jobs_queued: bool,
}

impl Effects {
    pub fn woken(&self) -> &[String] {
        &self.woken
    }
    pub fn changed_topics(&self) -> &[Topic] {
        &self.changed
    }
    pub fn jobs_queued(&self) -> bool {
        self.jobs_queued
    }
    /// Declares a change that the workspace's open pages show but that
    /// records no history event (a control request's result, a run, a
    /// notice to every member).
    pub fn workspace_changed(&mut self, workspace_id: &str) {
        self.touch(Topic::Workspace(workspace_id.to_owned()));
    }
    /// Declares a change that only this person's open pages show (their
    /// notices, invitations, settings).
    pub fn user_changed(&mut self, user_id: &str) {
        self.touch(Topic::User(user_id.to_owned()));
    }
    fn touch(&mut self, t: Topic) {
        if !self.changed.contains(&t) {
            self.changed.push(t);
        }
    }
    /// Declares that the transaction wrote a job row.
    pub fn queued_job(&mut self) {
        self.jobs_queued = true;
    }
    /// Takes over the effects of a nested step that succeeded (a batch item).
    pub fn absorb(&mut self, other: Effects) {
        for id in other.woken {
            if !self.woken.contains(&id) {
                self.woken.push(id);
            }
        }
        for t in other.changed {
            self.touch(t);
        }
        self.jobs_queued |= other.jobs_queued;
    }
    fn note(&mut self, on: On<'_>, event: &ActionEvent) {
        // Every event changes what an inbox row or Action page shows, the
        // execution outcome included.
        self.workspace_changed(on.workspace_id);
        if event.wakes_waiters() && !self.woken.iter().any(|id| id == on.action_id) {
            self.woken.push(on.action_id.to_owned());
        }
    }
}

/// The Action an event is about: its id, and its workspace (whose open
/// pages are told).
#[derive(Clone, Copy)]
pub struct On<'a> {
    pub action_id: &'a str,
    pub workspace_id: &'a str,
}

impl<'a> On<'a> {
    pub fn new(action_id: &'a str, workspace_id: &'a str) -> Self {
        Self {
            action_id,
            workspace_id,
        }
    }
    /// The Action itself.
    pub fn of(a: &'a ActionRecord) -> Self {
        Self::new(&a.id, &a.workspace_id)
    }
}

/// Records an event in the Action's history and declares its effects; a
/// closing event also queues its webhook (`action.resolved`, `.cancelled`,
/// `.expired`) when the Action has a callback_url.
pub fn record(
    c: &Connection,
    fx: &mut Effects,
    on: On<'_>,
    actor: &Actor,
    version: i64,
    event: ActionEvent,
    at: &str,
) -> Result<()> {
    events::insert(c, on.action_id, actor, version, &event, at)?;
    if event.closes() {
        crate::service::webhooks::enqueue_for_event(c, fx, on.action_id, &event, at)?;
    }
    fx.note(on, &event);
    Ok(())
}

/// `record` for a closing event whose caller holds the Action as it now is
/// (status, resolution and receipt): its webhook is built from `closed`
/// rather than from a fresh read of the row.
pub fn record_closed(
    c: &Connection,
    fx: &mut Effects,
    closed: &ActionRecord,
    actor: &Actor,
    version: i64,
    event: ActionEvent,
    at: &str,
) -> Result<()> {
    events::insert(c, &closed.id, actor, version, &event, at)?;
    if let Some(kind) = crate::service::webhooks::event_type_of(&event) {
        crate::service::webhooks::enqueue(c, fx, closed, kind, Default::default(), at)?;
    }
    fx.note(On::new(&closed.id, &closed.workspace_id), &event);
    Ok(())
}
