//! "Something you can see changed", for open dashboards (`GET /app/events`).
//!
//! Each committed write names what it changed: a workspace (its Actions,
//! runs, control requests, broadcast notices) or a person (their own
//! notices, invitations, settings). Every topic has a counter; a person's
//! *view* is the sum of the counters of their workspaces and of themselves,
//! plus this process's start time in milliseconds, so a number a page saw
//! before a restart is not mistaken for the current one. A page carries its
//! view as `data-version`; the event stream answers when the person's view
//! differs from it.
//!
//! So a page is told of the changes its reader may see, and of nothing else:
//! the activity of a workspace someone does not belong to never reaches
//! their pages, not even as the timing of a refresh.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::watch;

use crate::service::caller::UserCaller;

/// What a write changed, as far as open pages are concerned.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Topic {
    /// An Action, run, control request or broadcast notice of the workspace.
    Workspace(String),
    /// The person's own notices, invitations or settings.
    User(String),
}

pub struct Changes {
    /// Added to every view (see the module's doc).
    base: u64,
    counters: Mutex<HashMap<Topic, u64>>,
    /// Bumped after any topic moved: the event streams wake and compare
    /// their reader's view again.
    tick: watch::Sender<u64>,
}

impl Changes {
    pub fn new(base: u64) -> Self {
        Self {
            base,
            counters: Mutex::default(),
            tick: watch::Sender::new(0),
        }
    }

    /// After a commit: moves each topic once and wakes the event streams.
    pub fn bump(&self, topics: &[Topic]) {
        if topics.is_empty() {
            return;
        }
        {
            let mut counters = self.counters.lock().unwrap_or_else(|e| e.into_inner());
            for t in topics {
                let n = counters.entry(t.clone()).or_default();
                *n = n.wrapping_add(1);
            }
        }
        self.tick.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The person's view now: it moves whenever something they may see
    /// changes (a page that held an older one refreshes).
    pub fn view(&self, user: &UserCaller) -> u64 {
        let counters = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        let of = |t: &Topic| counters.get(t).copied().unwrap_or(0);
        let mut sum = self
            .base
            .wrapping_add(of(&Topic::User(user.user_id.clone())));
        for m in &user.memberships {
            sum = sum.wrapping_add(of(&Topic::Workspace(m.workspace_id.clone())));
        }
        sum
    }

    /// Wakes after any `bump` made once it was called (borrow the receiver
    /// before reading a view, then wait on it).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.tick.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::access::Role;
    use crate::service::caller::Membership;

    fn person(id: &str, workspaces: &[&str]) -> UserCaller {
        let memberships = workspaces
            .iter()
            .map(|w| Membership {
                workspace_id: (*w).to_owned(),
                role: Role::Reviewer,
            })
            .collect();
        UserCaller::new(
            id.into(),
            "ses_x".into(),
            "x@example.com".into(),
            "2026-01-01T00:00:00.000Z".into(),
            memberships,
            None,
        )
    }

    #[test]
    fn a_view_moves_with_the_workspaces_and_the_person_it_covers_only() {
        let changes = Changes::new(1_000);
        let ann = person("usr_ann", &["ws_a"]);
        let bob = person("usr_bob", &["ws_b"]);
        let both = person("usr_cy", &["ws_a", "ws_b"]);
        let (a0, b0, c0) = (changes.view(&ann), changes.view(&bob), changes.view(&both));
        assert_eq!((a0, b0, c0), (1_000, 1_000, 1_000));

        changes.bump(&[Topic::Workspace("ws_b".into())]);
        assert_eq!(changes.view(&ann), a0, "another workspace's change");
        assert_eq!(changes.view(&bob), b0 + 1);
        assert_eq!(changes.view(&both), c0 + 1);

        changes.bump(&[Topic::User("usr_ann".into())]);
        assert_eq!(changes.view(&ann), a0 + 1);
        assert_eq!(changes.view(&bob), b0 + 1, "another person's notice");
    }

    #[test]
    fn a_bump_wakes_a_stream_that_subscribed_before_it() {
        let changes = Changes::new(0);
        let mut rx = changes.subscribe();
        rx.borrow_and_update();
        assert!(!rx.has_changed().unwrap());
        changes.bump(&[]);
        assert!(!rx.has_changed().unwrap(), "nothing changed, nobody woken");
        changes.bump(&[Topic::Workspace("ws_a".into())]);
        assert!(rx.has_changed().unwrap());
    }
}
