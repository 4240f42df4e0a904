//! Notifications as types (guide: "Notifications"; DESIGN §12): the kinds,
//! a person's preferences and a workspace's policy, their defaults, their
//! update bodies and the one rule that combines them (`Channels::of`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What a notification is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Kind {
    #[serde(rename = "action.assigned")]
    Assigned,
    #[serde(rename = "action.new")]
    New,
    #[serde(rename = "action.mentioned")]
    Mentioned,
    #[serde(rename = "action.commented")]
    Commented,
    #[serde(rename = "action.expiring")]
    Expiring,
    #[serde(rename = "action.returned")]
    Returned,
    #[serde(rename = "action.closed")]
    Closed,
    #[serde(rename = "action.changed")]
    Changed,
    #[serde(rename = "control_request.finished")]
    ControlRequestFinished,
    #[serde(rename = "outcome.failed")]
    OutcomeFailed,
    #[serde(rename = "run.failed")]
    RunFailed,
    #[serde(rename = "invitation.received")]
    InvitationReceived,
}

impl Kind {
    pub const ALL: [Kind; 12] = [
        Kind::Assigned,
        Kind::New,
        Kind::Mentioned,
        Kind::Commented,
        Kind::Expiring,
        Kind::Returned,
        Kind::Closed,
        Kind::Changed,
        Kind::ControlRequestFinished,
        Kind::OutcomeFailed,
        Kind::RunFailed,
        Kind::InvitationReceived,
    ];

    pub const NAMES: [&'static str; 12] = [
        "action.assigned",
        "action.new",
        "action.mentioned",
        "action.commented",
        "action.expiring",
        "action.returned",
        "action.closed",
        "action.changed",
        "control_request.finished",
        "outcome.failed",
        "run.failed",
        "invitation.received",
    ];

    pub fn as_str(self) -> &'static str {
        Self::NAMES[Self::ALL.iter().position(|k| *k == self).unwrap_or(0)]
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Self::NAMES
            .iter()
            .position(|n| *n == s)
            .map(|i| Self::ALL[i])
    }

    /// A few words for the preferences page.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Assigned => "An Action is assigned to me",
            Kind::New => "A new Action I may decide",
            Kind::Mentioned => "Someone @mentions me",
            Kind::Commented => "A comment on an Action I hold, commented on or am listed on",
            Kind::Expiring => {
                "An Action I hold is about to expire (with no holder: its listed reviewers hear of it; with neither: owners and admins)"
            }
            Kind::Returned => "An Action I snoozed is back",
            Kind::Closed => "An Action I requested or hold was decided, cancelled or expired",
            Kind::Changed => "An Action I voted on or hold was changed by its Source",
            Kind::ControlRequestFinished => "A control I pressed finished",
            Kind::OutcomeFailed => "An Action I decided or hold failed when carried out",
            Kind::RunFailed => "A run failed",
            Kind::InvitationReceived => "I am invited to a workspace",
        }
    }

    /// The same, for the workspace's policy page, which speaks of every
    /// member rather than of the reader.
    pub fn policy_label(self) -> &'static str {
        match self {
            Kind::Assigned => "An Action is assigned to a member",
            Kind::New => "A new Action a member may decide",
            Kind::Mentioned => "A member is @mentioned",
            Kind::Commented => {
                "A comment on an Action a member holds, commented on or is listed on"
            }
            Kind::Expiring => {
                "An Action a member holds is about to expire (with no holder: its listed reviewers hear of it; with neither: owners and admins)"
            }
            Kind::Returned => "An Action a member snoozed is back",
            Kind::Closed => {
                "An Action a member requested or holds was decided, cancelled or expired"
            }
            Kind::Changed => "An Action a member voted on or holds was changed by its Source",
            Kind::ControlRequestFinished => "A control a member pressed finished",
            Kind::OutcomeFailed => "An Action a member decided or holds failed when carried out",
            Kind::RunFailed => "A run failed",
            Kind::InvitationReceived => "A person is invited to a workspace",
        }
    }

    /// E-mail is on by default except for the kinds that come often.
    fn email_default(self) -> bool {
        !matches!(
            self,
            Kind::New | Kind::Commented | Kind::Closed | Kind::Changed
        )
    }
}

/// How often a person's e-mail arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Digest {
    /// One e-mail per notification.
    Off,
    /// One e-mail an hour at most, gathering the hour's notifications.
    Hourly,
    /// One e-mail a day at most (at 08:00 UTC).
    Daily,
}

/// One kind's two channels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Channels {
    pub in_app: bool,
    pub email: bool,
}

/// A person's preferences in one workspace (stored as JSON; no row = `default()`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Preferences {
    /// E-mail at all (the master switch; mandatory kinds are e-mailed anyway).
    pub email: bool,
    pub email_digest: Digest,
    pub events: BTreeMap<Kind, Channels>,
}

impl Default for Preferences {
    fn default() -> Self {
        Self {
            email: true,
            email_digest: Digest::Off,
            events: Kind::ALL
                .iter()
                .map(|k| {
                    (
                        *k,
                        Channels {
                            in_app: true,
                            email: k.email_default(),
                        },
                    )
                })
                .collect(),
        }
    }
}

impl Preferences {
    pub fn channels(&self, kind: Kind) -> Channels {
        self.events.get(&kind).copied().unwrap_or(Channels {
            in_app: true,
            email: kind.email_default(),
        })
    }
}

/// Who hears of a new Action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum NewActionAudience {
    /// Every member who may decide it.
    AllReviewers,
    /// Only its assignee (as `action.assigned`).
    AssignedOnly,
    None,
}

/// A workspace's notification policy (no row = `default()`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    pub new_action: NewActionAudience,
    pub email_enabled: bool,
    pub expiry_warning_minutes: i64,
    pub mandatory: Vec<Kind>,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            new_action: NewActionAudience::AllReviewers,
            email_enabled: true,
            expiry_warning_minutes: 60,
            mandatory: Vec::new(),
        }
    }
}

/// The longest expiry warning, in minutes (a day).
pub const MAX_EXPIRY_WARNING_MINUTES: i64 = 1440;

/// Where one notification goes for one person.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    pub in_app: bool,
    /// None: no e-mail; Some(true): at once; Some(false): into the digest.
    pub email_now: Option<bool>,
}

impl Route {
    /// The one rule: a mandatory kind goes to both channels and is e-mailed
    /// at once; otherwise the person's choices hold, and their e-mail waits
    /// for their digest when they chose one. No e-mail at all when the
    /// workspace turned e-mail off or hds has no SMTP server.
    pub fn of(kind: Kind, prefs: &Preferences, policy: &Policy, smtp: bool) -> Route {
        let email_possible = smtp && policy.email_enabled;
        if policy.mandatory.contains(&kind) {
            return Route {
                in_app: true,
                email_now: email_possible.then_some(true),
            };
        }
        let ch = prefs.channels(kind);
        let email = email_possible && prefs.email && ch.email;
        Route {
            in_app: ch.in_app,
            email_now: email.then_some(prefs.email_digest == Digest::Off),
        }
    }
}

/// PATCH body of one kind: either channel may be left out.
#[derive(Clone, Copy, Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelsUpdate {
    pub in_app: Option<bool>,
    pub email: Option<bool>,
}

/// PATCH body's `events`: any subset of the kinds.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsUpdate {
    #[serde(rename = "action.assigned")]
    pub assigned: Option<ChannelsUpdate>,
    #[serde(rename = "action.new")]
    pub new: Option<ChannelsUpdate>,
    #[serde(rename = "action.mentioned")]
    pub mentioned: Option<ChannelsUpdate>,
    #[serde(rename = "action.commented")]
    pub commented: Option<ChannelsUpdate>,
    #[serde(rename = "action.expiring")]
    pub expiring: Option<ChannelsUpdate>,
    #[serde(rename = "action.returned")]
    pub returned: Option<ChannelsUpdate>,
    #[serde(rename = "action.closed")]
    pub closed: Option<ChannelsUpdate>,
    #[serde(rename = "action.changed")]
    pub changed: Option<ChannelsUpdate>,
    #[serde(rename = "control_request.finished")]
    pub control_request_finished: Option<ChannelsUpdate>,
    #[serde(rename = "outcome.failed")]
    pub outcome_failed: Option<ChannelsUpdate>,
    #[serde(rename = "run.failed")]
    pub run_failed: Option<ChannelsUpdate>,
    #[serde(rename = "invitation.received")]
    pub invitation_received: Option<ChannelsUpdate>,
}

impl EventsUpdate {
    /// The kinds the body names, in `Kind::ALL` order.
    pub fn entries(&self) -> Vec<(Kind, ChannelsUpdate)> {
        [
            self.assigned,
            self.new,
            self.mentioned,
            self.commented,
            self.expiring,
            self.returned,
            self.closed,
            self.changed,
            self.control_request_finished,
            self.outcome_failed,
            self.run_failed,
            self.invitation_received,
        ]
        .into_iter()
        .zip(Kind::ALL)
        .filter_map(|(u, k)| u.map(|u| (k, u)))
        .collect()
    }
}

/// PATCH /v1/notification-preferences: any subset of the fields.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NotificationPreferenceUpdate {
    /// E-mail at all; mandatory kinds are e-mailed anyway.
    pub email: Option<bool>,
    pub email_digest: Option<Digest>,
    pub events: Option<EventsUpdate>,
}

impl NotificationPreferenceUpdate {
    /// The preferences after this update, and the kinds it tried to switch
    /// off that the policy makes mandatory (refused by the caller).
    pub fn apply(&self, mut p: Preferences, policy: &Policy) -> (Preferences, Vec<String>) {
        let mut refused = Vec::new();
        if let Some(e) = self.email {
            p.email = e;
        }
        if let Some(d) = self.email_digest {
            p.email_digest = d;
        }
        if let Some(events) = &self.events {
            for (kind, u) in events.entries() {
                let mut ch = p.channels(kind);
                for (name, v, slot) in [
                    ("in_app", u.in_app, &mut ch.in_app),
                    ("email", u.email, &mut ch.email),
                ] {
                    if let Some(v) = v {
                        // Switching a mandatory kind off is refused; the
                        // person's own `false` sent back unchanged is not a
                        // switch, and stays their choice for when the policy
                        // lets go of the kind.
                        if !v && *slot && policy.mandatory.contains(&kind) {
                            refused.push(format!("events.{}.{name}", kind.as_str()));
                        }
                        *slot = v;
                    }
                }
                p.events.insert(kind, ch);
            }
        }
        (p, refused)
    }
}

/// PATCH /v1/workspaces/notification-policy: any subset of the fields.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceNotificationPolicyUpdate {
    pub new_action: Option<NewActionAudience>,
    /// E-mail for this workspace at all.
    pub email_enabled: Option<bool>,
    /// How long before `expires_at` the people holding an Action hear of it; 0 turns the warning off.
    #[serde(
        default,
        deserialize_with = "crate::domain::strict_json::optional_integer"
    )]
    #[schema(minimum = 0, maximum = 1440)]
    pub expiry_warning_minutes: Option<i64>,
    /// Kinds no member may switch off (each at most once).
    #[schema(schema_with = kinds_schema)]
    pub mandatory: Option<Vec<Kind>>,
}

/// `mandatory`'s schema: a list of kind names.
fn kinds_schema() -> utoipa::openapi::Array {
    utoipa::openapi::ArrayBuilder::new()
        .items(crate::service::inbox::string_enum(&Kind::NAMES))
        .build()
}

impl WorkspaceNotificationPolicyUpdate {
    /// The policy after this update, or the fields that are wrong.
    pub fn apply(&self, mut p: Policy) -> Result<Policy, Vec<(String, String)>> {
        let mut errs = Vec::new();
        if let Some(v) = self.new_action {
            p.new_action = v;
        }
        if let Some(v) = self.email_enabled {
            p.email_enabled = v;
        }
        if let Some(m) = self.expiry_warning_minutes {
            if !(0..=MAX_EXPIRY_WARNING_MINUTES).contains(&m) {
                errs.push((
                    "expiry_warning_minutes".to_owned(),
                    format!("expiry_warning_minutes must be 0-{MAX_EXPIRY_WARNING_MINUTES} (0 turns the warning off); got {m}"),
                ));
            }
            p.expiry_warning_minutes = m;
        }
        if let Some(list) = &self.mandatory {
            let mut kinds: Vec<Kind> = Vec::new();
            for k in list {
                if !kinds.contains(k) {
                    kinds.push(*k);
                }
            }
            kinds.sort();
            p.mandatory = kinds;
        }
        if errs.is_empty() { Ok(p) } else { Err(errs) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_serde() {
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.as_str()), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
    }

    #[test]
    fn mandatory_beats_opt_out_and_digest() {
        let mut prefs = Preferences {
            email: false,
            email_digest: Digest::Daily,
            ..Default::default()
        };
        prefs.events.insert(
            Kind::Assigned,
            Channels {
                in_app: false,
                email: false,
            },
        );
        let mut policy = Policy::default();
        assert_eq!(
            Route::of(Kind::Assigned, &prefs, &policy, true),
            Route {
                in_app: false,
                email_now: None
            }
        );
        policy.mandatory = vec![Kind::Assigned];
        assert_eq!(
            Route::of(Kind::Assigned, &prefs, &policy, true),
            Route {
                in_app: true,
                email_now: Some(true)
            }
        );
        // No SMTP, or e-mail off for the workspace: in-app only.
        assert_eq!(
            Route::of(Kind::Assigned, &prefs, &policy, false).email_now,
            None
        );
        prefs.email = true;
        policy.mandatory.clear();
        prefs.events.insert(
            Kind::Mentioned,
            Channels {
                in_app: true,
                email: true,
            },
        );
        assert_eq!(
            Route::of(Kind::Mentioned, &prefs, &policy, true).email_now,
            Some(false)
        );
    }
}
