//! An Action turned into what its page prints: every value already in words,
//! Markdown already made safe, so the template only lays things out.

use crate::domain::action::{ActionRecord, Actor, ActorKind, ContextBlock, Outcome, Status};
use crate::domain::event::{ActionEvent, HistoryEntry};
use crate::domain::time::Timestamp;
use crate::domain::words;
use crate::http::ui::markdown::{self, safe_url};
use crate::http::ui::view::When;
use crate::service::caller::UserCaller;
use crate::service::dashboard::ActionView;

use crate::http::ui::action_answer::answer;
pub use crate::http::ui::action_answer::{AnswerVm, answer_text, confirm_question, plain};

pub struct DiffLine {
    pub class: &'static str,
    pub text: String,
}

/// One evidence block; `kind` picks the fields the template reads.
pub struct BlockVm {
    pub kind: &'static str,
    pub text: String,
    pub html: String,
    pub label: String,
    pub url: Option<String>,
    pub lines: Vec<DiffLine>,
    pub items: Vec<(String, String)>,
}

pub struct EventVm {
    pub kind: String,
    pub what: String,
    pub detail: Option<String>,
    pub when: When,
}

pub struct ReceiptVm {
    pub id: String,
    pub kid: String,
    pub alg: String,
    pub seq: String,
    pub verified: bool,
    pub problem: String,
}

pub struct OutcomeVm {
    pub status: String,
    pub duration: String,
    pub rollback: bool,
    pub message: Option<String>,
    pub reported: Option<When>,
}

pub struct ResolutionVm {
    pub answer: String,
    pub by: String,
    pub at: When,
    pub reason: Option<String>,
}

pub struct ApprovalVm {
    /// "Needs 2 approvals; 1 rejection rejects it."
    pub needs: String,
    pub approvals: usize,
    pub rejections: usize,
    pub my_vote: Option<String>,
    /// The person's approval was withdrawn (their role changed after they
    /// voted): it counts no more, and their vote on this version is used.
    pub my_vote_withdrawn: bool,
    /// The question asked before a vote that stands for a destructive
    /// option, for (approve, reject).
    pub confirm_approve: Option<String>,
    pub confirm_reject: Option<String>,
}

pub struct LinkVm {
    pub label: String,
    pub url: String,
}

/// A control as the page offers it.
pub struct ControlVm {
    pub key: String,
    pub label: String,
    /// A link control's URL (only safe http(s) URLs are shown).
    pub url: Option<String>,
    /// Asked before pressing: the Source's `confirm` text, or a default for
    /// a mutating control.
    pub confirm: Option<String>,
}

/// One control request or context request, as the live list shows it.
pub struct RequestVm {
    pub id: String,
    pub what: String,
    pub status: String,
    pub message: Option<String>,
    pub by: String,
    pub when: When,
}

/// The part of the page that refreshes itself: control requests (newest
/// first) and context requests (oldest first).
pub struct RequestsVm {
    pub controls: Vec<RequestVm>,
    /// None: the Action does not take context requests.
    pub context: Option<Vec<RequestVm>>,
}

pub struct ActionVm {
    pub id: String,
    pub title: String,
    pub description_html: Option<String>,
    pub status: &'static str,
    pub open: bool,
    pub priority: &'static str,
    pub test: bool,
    pub source: String,
    /// The run it was raised in: (id, name, status).
    pub run: Option<(String, String, String)>,
    pub created: When,
    pub expires: Option<When>,
    pub version: i64,
    pub fingerprint: String,
    pub answer: AnswerVm,
    pub context: Vec<BlockVm>,
    pub links: Vec<LinkVm>,
    pub history: Vec<EventVm>,
    pub receipt: Option<ReceiptVm>,
    pub outcome: Option<OutcomeVm>,
    pub resolution: Option<ResolutionVm>,
    pub approval: Option<ApprovalVm>,
    pub may_decide: bool,
    /// Why no decision is offered (empty when one is).
    pub no_decision: &'static str,
    pub work: WorkVm,
    /// Callback controls (buttons; empty when this user may not press them).
    pub callbacks: Vec<ControlVm>,
    /// Link controls (plain links, always shown).
    pub link_controls: Vec<ControlVm>,
    pub may_ask: bool,
    pub requests: RequestsVm,
}

/// The assignee, the snooze, the controls this user is offered and the thread.
pub struct WorkVm {
    /// Who holds it, as the page names them; None when nobody does.
    pub assignee: Option<String>,
    pub requested_by: Option<String>,
    /// A restricted Action's listed reviewers, joined for the page.
    pub reviewers: Option<String>,
    pub snoozed_until: Option<When>,
    pub may_claim: bool,
    pub may_assign: bool,
    pub may_snooze: bool,
    /// The snooze buttons that end before the Action expires: (value, label).
    pub snooze_presets: Vec<(&'static str, &'static str)>,
    pub may_comment: bool,
    pub may_withdraw: bool,
    /// (user id, label, selected) per member who may hold it.
    pub assignable: Vec<(String, String, bool)>,
    pub comments: Vec<CommentVm>,
}

pub struct CommentVm {
    pub id: String,
    pub author: String,
    pub when: When,
    /// Rendered like the description: raw HTML escaped, safe links only.
    pub body_html: String,
    /// The Markdown, for the edit form.
    pub body: String,
    /// When its author last changed it.
    pub edited: Option<When>,
    /// Its author, who may still comment: the edit form.
    pub may_edit: bool,
    /// Its author, or an owner or admin: the delete button.
    pub may_delete: bool,
}

fn person_label(p: &crate::domain::action::Person, me: &UserCaller) -> String {
    if p.user_id.as_deref() == Some(me.user_id.as_str()) {
        return "you".into();
    }
    match (&p.name, &p.email) {
        (Some(n), Some(e)) => format!("{n} <{e}>"),
        (Some(n), None) => n.clone(),
        (None, Some(e)) => crate::service::account::shown_address(e.clone()),
        (None, None) => p.user_id.clone().unwrap_or_default(),
    }
}

fn work(v: &ActionView, me: &UserCaller, now: Timestamp) -> WorkVm {
    let a = &v.action;
    let held = a.work.assignee.as_ref().and_then(|p| p.user_id.clone());
    let snoozed = a
        .snoozed_until
        .as_deref()
        .filter(|t| crate::domain::time::parse(t).is_some_and(|t| t > now));
    WorkVm {
        assignee: a.work.assignee.as_ref().map(|p| person_label(p, me)),
        requested_by: a.work.requested_by.as_ref().map(|p| person_label(p, me)),
        reviewers: v.work.reviewers.as_ref().map(|l| l.join(", ")),
        snoozed_until: snoozed.map(|t| When::new(t, now)),
        may_claim: v.work.may_claim && held.as_deref() != Some(me.user_id.as_str()),
        may_assign: v.work.may_assign,
        may_snooze: v.work.may_snooze,
        snooze_presets: crate::http::ui::action_work::presets_before(
            a.spec
                .expires_at
                .as_deref()
                .and_then(crate::domain::time::parse),
            now,
        ),
        may_comment: v.work.may_comment,
        may_withdraw: v.work.may_withdraw,
        assignable: v
            .work
            .assignable
            .iter()
            .map(|m| {
                let label = match &m.name {
                    Some(n) => format!("{n} <{}>", m.email),
                    None => m.email.clone(),
                };
                (
                    m.user_id.clone(),
                    label,
                    held.as_deref() == Some(m.user_id.as_str()),
                )
            })
            .collect(),
        comments: v
            .work
            .comments
            .iter()
            .map(|c| CommentVm {
                id: c.id.clone(),
                author: if c.author_user_id == me.user_id {
                    "you".into()
                } else {
                    // A name is chosen by its owner: never without the address.
                    match (&c.author_name, v.people.get(&c.author_user_id)) {
                        (Some(n), Some(e)) => format!("{n} <{e}>"),
                        (Some(n), None) => n.clone(),
                        (None, Some(e)) => e.clone(),
                        (None, None) => c.author_user_id.clone(),
                    }
                },
                when: When::new(&c.created_at, now),
                body_html: markdown::render(&c.body),
                body: c.body.clone(),
                edited: c.edited_at.as_deref().map(|t| When::new(t, now)),
                may_edit: c.author_user_id == me.user_id && v.work.may_comment,
                may_delete: (c.author_user_id == me.user_id && v.work.may_comment)
                    || v.work.moderates_comments,
            })
            .collect(),
    }
}

impl ActionVm {
    pub fn new(v: &ActionView, me: &UserCaller, now: Timestamp) -> Self {
        let a = &v.action;
        let source = v.source_name.clone().unwrap_or_else(|| a.source_id.clone());
        let who = |actor: &Actor| actor_name(actor, me, v, &source);
        Self {
            id: a.id.clone(),
            title: a.spec.title.clone(),
            description_html: a.spec.description.as_deref().map(markdown::render),
            status: a.status.as_str(),
            open: a.status == Status::Open,
            priority: a.spec.priority.as_str(),
            test: a.environment.as_str() == "test",
            created: When::new(&a.created_at, now),
            expires: When::opt(a.spec.expires_at.as_deref(), now),
            version: a.action_version,
            fingerprint: a.fingerprint.clone(),
            answer: answer(a),
            context: a.spec.context.iter().flatten().map(block).collect(),
            links: links(a, &source),
            callbacks: if v.work.may_invoke {
                controls(a, "callback")
            } else {
                Vec::new()
            },
            link_controls: controls(a, "link"),
            may_ask: v.work.may_ask,
            requests: requests(v, me, now),
            history: v
                .history
                .iter()
                .map(|e| {
                    let mut vm = event(e, a, &who, now);
                    // An approval on this version that no longer counts.
                    if let (ActionEvent::VoteCast { .. }, Some(voter)) =
                        (&e.event, e.actor.id.as_deref())
                        && e.action_version == a.action_version
                        && v.votes.iter().any(|(u, _, counts)| u == voter && !counts)
                    {
                        vm.what.push_str(
                            " (withdrawn: they may no longer vote, so it does not count)",
                        );
                    }
                    vm
                })
                .collect(),
            receipt: receipt(a, v),
            outcome: a.outcome.as_ref().map(|o| outcome(o, now)),
            resolution: a.resolution.as_ref().map(|r| ResolutionVm {
                answer: answer_text(a, r.option_id.as_deref(), r.response.as_ref()),
                by: who(&r.decided_by),
                at: When::new(&r.decided_at, now),
                reason: r.reason.clone(),
            }),
            approval: a.spec.approval_policy.as_ref().map(|p| ApprovalVm {
                needs: approval_needs(p.required_approvals, p.reject_threshold.unwrap_or(1)),
                approvals: v
                    .votes
                    .iter()
                    .filter(|(_, x, counts)| *counts && x == "approve")
                    .count(),
                rejections: v
                    .votes
                    .iter()
                    .filter(|(_, x, counts)| *counts && x == "reject")
                    .count(),
                my_vote: v
                    .votes
                    .iter()
                    .find(|(u, _, _)| *u == me.user_id)
                    .map(|(_, x, _)| x.clone()),
                my_vote_withdrawn: v
                    .votes
                    .iter()
                    .any(|(u, _, counts)| *u == me.user_id && !counts),
                confirm_approve: vote_confirm(a, true),
                confirm_reject: vote_confirm(a, false),
            }),
            may_decide: v.may_decide,
            no_decision: v.no_decision.unwrap_or(""),
            work: work(v, me, now),
            run: v.run.clone(),
            source,
        }
    }
}

fn actor_name(actor: &Actor, me: &UserCaller, v: &ActionView, source: &str) -> String {
    let id = actor.id.as_deref().unwrap_or_default();
    match actor.kind {
        ActorKind::User if id == me.user_id => "you".into(),
        ActorKind::User => v.people.get(id).cloned().unwrap_or_else(|| id.to_owned()),
        ActorKind::Source => source.to_owned(),
        _ if id == "approval_policy" => "the approval policy".into(),
        _ => "hds".into(),
    }
}

/// What an approval policy needs, in words.
fn approval_needs(required: u32, reject_threshold: u32) -> String {
    let rejects = if reject_threshold == 1 {
        "rejects"
    } else {
        "reject"
    };
    format!(
        "Needs {}; {} {rejects} it.",
        words::count(required, "approval", "approvals"),
        words::count(reject_threshold, "rejection", "rejections")
    )
}

fn empty_block(kind: &'static str) -> BlockVm {
    BlockVm {
        kind,
        text: String::new(),
        html: String::new(),
        label: String::new(),
        url: None,
        lines: Vec::new(),
        items: Vec::new(),
    }
}

/// Image data a page may show inline (the CSP allows `data:` images); other
/// images are links, so opening the page contacts no remote host.
fn inline_image(url: &str) -> bool {
    ["png", "jpeg", "gif", "webp"]
        .iter()
        .any(|t| url.starts_with(&format!("data:image/{t};base64,")))
}

fn block(b: &ContextBlock) -> BlockVm {
    match b {
        ContextBlock::Text { text } => BlockVm {
            text: text.clone(),
            ..empty_block("text")
        },
        ContextBlock::Markdown { markdown: md } => BlockVm {
            html: markdown::render(md),
            ..empty_block("markdown")
        },
        ContextBlock::Code { code, language } => BlockVm {
            text: code.clone(),
            label: language.clone().unwrap_or_default(),
            ..empty_block("code")
        },
        ContextBlock::Diff { diff } => BlockVm {
            lines: diff
                .lines()
                .map(|l| DiffLine {
                    class: if l.starts_with("+++") || l.starts_with("---") {
                        "line"
                    } else if l.starts_with('+') {
                        "add"
                    } else if l.starts_with('-') {
                        "del"
                    } else if l.starts_with("@@") {
                        "hunk"
                    } else {
                        "line"
                    },
                    text: l.to_owned(),
                })
                .collect(),
            ..empty_block("diff")
        },
        ContextBlock::Link { url, label } => {
            // What the link opens, as a browser's address bar would show it:
            // an international host in its ASCII form, so `https://аpple.com/`
            // (a Cyrillic а) does not read as apple.com; beside a label, the
            // host.
            let parsed = url::Url::parse(url).ok();
            let host = parsed
                .as_ref()
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_default();
            let shown = parsed
                .as_ref()
                .map_or_else(|| url.clone(), |u| u.to_string());
            BlockVm {
                // Always beside a label: one that merely contains a host
                // ("apple.com login" on https://pple.com/) proves nothing.
                text: if label.is_some() { host } else { String::new() },
                label: label.clone().unwrap_or(shown),
                url: safe_url(url).then(|| url.clone()),
                ..empty_block("link")
            }
        }
        ContextBlock::Kv { items } => BlockVm {
            items: items
                .iter()
                .map(|i| (i.key.clone(), i.value.clone()))
                .collect(),
            ..empty_block("kv")
        },
        ContextBlock::Image { url, alt } => BlockVm {
            label: alt.clone(),
            // A linked image opens its URL: its host beside the alt text.
            text: if inline_image(url) {
                String::new()
            } else {
                url::Url::parse(url)
                    .ok()
                    .and_then(|u| u.host_str().map(str::to_owned))
                    .unwrap_or_default()
            },
            url: (inline_image(url) || safe_url(url)).then(|| url.clone()),
            ..empty_block(if inline_image(url) {
                "image"
            } else {
                "image_link"
            })
        },
    }
}

fn links(a: &ActionRecord, source: &str) -> Vec<LinkVm> {
    let open = a
        .spec
        .open_url
        .iter()
        .filter(|u| safe_url(u))
        .map(|u| LinkVm {
            label: format!("Open in {source}"),
            url: u.clone(),
        });
    open.collect()
}

fn controls(a: &ActionRecord, kind: &str) -> Vec<ControlVm> {
    a.spec
        .controls
        .iter()
        .flatten()
        .filter(|c| c.kind == kind)
        .filter_map(|c| {
            let url = match kind {
                "link" => Some(c.url.clone().filter(|u| safe_url(u))?),
                _ => None,
            };
            let confirm = c.confirmation();
            Some(ControlVm {
                key: c.key.clone(),
                label: c.label.clone(),
                url,
                confirm,
            })
        })
        .collect()
}

/// The control and context requests, named as the page names people.
pub fn requests(v: &ActionView, me: &UserCaller, now: Timestamp) -> RequestsVm {
    let a = &v.action;
    let by = |r: &crate::domain::requests::RequestedBy| {
        if r.user_id == me.user_id {
            "you".to_owned()
        } else {
            // A name is chosen by its owner: never without the address.
            match (&r.name, v.people.get(&r.user_id)) {
                (Some(n), Some(e)) => format!("{n} <{e}>"),
                (Some(n), None) => n.clone(),
                (None, Some(e)) => e.clone(),
                (None, None) => r.user_id.clone(),
            }
        }
    };
    let label = |key: &str| {
        a.spec
            .controls
            .iter()
            .flatten()
            .find(|c| c.key == key)
            .map_or(key.to_owned(), |c| c.label.clone())
    };
    RequestsVm {
        controls: v
            .work
            .control_requests
            .iter()
            .map(|r| RequestVm {
                id: r.id.clone(),
                what: label(&r.control_key),
                status: r.status.clone(),
                message: r.message.clone(),
                by: by(&r.requested_by),
                when: When::new(&r.updated_at, now),
            })
            .collect(),
        context: a.work.context_requests.as_ref().map(|list| {
            list.iter()
                .map(|r| RequestVm {
                    id: r.id.clone(),
                    what: r.question.clone(),
                    status: r.status.clone(),
                    message: r
                        .answered_in_version
                        .map(|v| format!("Answered by version {v}")),
                    by: by(&r.requested_by),
                    when: When::new(&r.created_at, now),
                })
                .collect()
        }),
    }
}

fn event(
    e: &HistoryEntry,
    a: &ActionRecord,
    who: &dyn Fn(&Actor) -> String,
    now: Timestamp,
) -> EventVm {
    let by = who(&e.actor);
    let reason = |r: &Option<String>| r.as_ref().map(|r| format!("Reason: {r}"));
    let (what, detail) = match &e.event {
        ActionEvent::Created { .. } => (format!("Sent by {by}"), None),
        ActionEvent::Updated {
            fields, material, ..
        } => {
            let what = if *material {
                format!("Changed by {by}: now version {}", e.action_version)
            } else {
                format!("Updated by {by}")
            };
            let fields = fields.join(", ");
            (
                what,
                (!fields.is_empty()).then(|| format!("Fields: {fields}")),
            )
        }
        ActionEvent::Resolved {
            option_id,
            response,
            reason: why,
            ..
        } => (
            format!(
                "Decided by {by}: {}",
                answer_text(a, option_id.as_deref(), response.as_ref())
            ),
            reason(why),
        ),
        ActionEvent::VoteCast { vote, reason: why } => {
            (format!("{by} voted to {vote}"), reason(why))
        }
        ActionEvent::Cancelled { reason: why } => (format!("Cancelled by {by}"), reason(why)),
        ActionEvent::Expired { .. } => ("Expired without a decision".into(), None),
        ActionEvent::OutcomeReported(o) => (
            format!("Outcome reported by {by}: {}", o.status),
            o.message.clone(),
        ),
        ActionEvent::Claimed { .. } => (format!("Claimed by {by}"), None),
        ActionEvent::Assigned {
            assignee_user_id: Some(to),
            ..
        } => (
            format!("Assigned to {} by {by}", who(&Actor::user(to))),
            None,
        ),
        ActionEvent::Assigned { reason: why, .. } => (format!("Unassigned by {by}"), reason(why)),
        ActionEvent::Snoozed { until: Some(t), .. } => (
            format!("Snoozed by {by} until {}", When::new(t, now).exact),
            None,
        ),
        ActionEvent::Snoozed {
            until: None,
            reason: None,
        } => (format!("Back in the inbox: {by} un-snoozed it"), None),
        ActionEvent::Snoozed {
            until: None,
            reason: why,
        } => (
            "Back in the inbox: the snooze ended early".to_owned(),
            reason(why),
        ),
        ActionEvent::Commented { .. } => (format!("{by} commented"), None),
        ActionEvent::CommentEdited { .. } => (format!("{by} edited a comment"), None),
        ActionEvent::CommentDeleted { .. } => (format!("{by} deleted a comment"), None),
        ActionEvent::ControlRequested { control_key, .. } => {
            let label = a
                .spec
                .controls
                .iter()
                .flatten()
                .find(|c| &c.key == control_key)
                .map_or(control_key.as_str(), |c| c.label.as_str());
            (format!("{by} pressed “{label}”"), None)
        }
        ActionEvent::ContextRequested { .. } => {
            (format!("{by} asked the Source for more context"), None)
        }
    };
    EventVm {
        when: When::new(&e.created_at, now),
        kind: e.event.kind().to_owned(),
        what,
        detail,
    }
}

fn receipt(a: &ActionRecord, v: &ActionView) -> Option<ReceiptVm> {
    let r = a.receipt.as_ref()?;
    let (verified, problem) = match &v.receipt_check {
        Some(Ok(())) => (true, String::new()),
        Some(Err(why)) => (false, why.clone()),
        None => (false, "not checked".into()),
    };
    Some(ReceiptVm {
        id: r.id.clone(),
        kid: r.kid.clone(),
        alg: r.alg.clone(),
        seq: r.payload["seq"].to_string(),
        verified,
        problem,
    })
}

fn outcome(o: &Outcome, now: Timestamp) -> OutcomeVm {
    let ms = o.duration_ms;
    OutcomeVm {
        status: o.status.clone(),
        duration: if ms < 10_000 {
            format!("{ms} ms")
        } else {
            format!("{:.1} s", ms as f64 / 1000.0)
        },
        rollback: o.rollback,
        message: o.message.clone(),
        reported: Some(When::new(&o.reported_at, now)),
    }
}

/// The confirmation asked before a vote whose option is destructive.
fn vote_confirm(a: &ActionRecord, approve: bool) -> Option<String> {
    crate::domain::approval::voted_option(&a.spec, approve)
        .filter(|o| o.style.as_deref() == Some("destructive"))
        .map(|o| confirm_question(&a.spec.title, &o.label))
}
