//! The inbox: `GET /app` (the page), `GET /app/inbox/rows` (the same list as
//! an HTML fragment, for the script to swap in) and `GET /app/events` (a
//! server-sent event each time an Action changes). Without JavaScript the page
//! is an ordinary GET form; a reload shows new Actions.

use std::collections::HashMap;

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::app::AppState;
use crate::domain::access::Role;
use crate::domain::action::{
    ActionRecord, ActionSpec, ActorKind, Environment, Interaction, Status,
};
use crate::domain::{time, words};
use crate::error::{Code, Result};
use crate::http::session::PageUser;
use crate::http::ui::action_view;
use crate::http::ui::inbox_batch::{self, BatchQuery, BatchResultVm};
use crate::http::ui::view::{Layout, PageQuery, UiError, When, see_other};
use crate::service::actions::{MAX_WAIT, access_of};
use crate::service::caller::UserCaller;
use crate::service::dashboard;
use crate::service::inbox::{self, InboxParams};
use crate::service::{Services, sources};
use crate::store::actions::InboxCounts;

/// The inbox's query string. Empty fields (an untouched select) mean "any".
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Filters {
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub q: String,
    #[serde(default)]
    pub source_id: String,
    #[serde(default)]
    pub priority: String,
    #[serde(default)]
    pub environment: String,
    #[serde(default)]
    pub scope: String,
    /// The Actions of one run (the run page's "Decide them in the inbox").
    #[serde(default)]
    pub run_id: String,
    /// The page after this Action (`starting_after`); empty: the first page.
    #[serde(default)]
    pub starting_after: String,
}

fn some(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_owned())
}

impl Filters {
    pub(crate) fn status(&self) -> &str {
        if self.status.is_empty() {
            "open"
        } else {
            &self.status
        }
    }
    fn environment(&self) -> &str {
        if self.environment.is_empty() {
            "live"
        } else {
            &self.environment
        }
    }
    fn scope(&self) -> &str {
        if self.scope.is_empty() {
            "all"
        } else {
            &self.scope
        }
    }
    fn params(&self) -> InboxParams {
        InboxParams {
            status: Some(self.status().to_owned()),
            search: some(&self.q),
            source_id: some(&self.source_id),
            priority: some(&self.priority),
            environment: Some(self.environment().to_owned()),
            scope: Some(self.scope().to_owned()),
            run_id: some(&self.run_id),
            routing: None,
            limit: Some(PAGE),
            starting_after: some(&self.starting_after),
        }
    }
    /// The query string of this very page: the filters and, past the first
    /// page, where it starts.
    pub(crate) fn page_query(&self) -> String {
        let mut q = self.query(self.status());
        if let Some(after) = some(&self.starting_after) {
            let mut s = form_urlencoded::Serializer::for_suffix(q, 0);
            s.append_pair("starting_after", &after);
            q = s.finish();
        }
        q
    }
    /// The query string of these filters with another status.
    pub(crate) fn query(&self, status: &str) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for (k, v) in [
            ("status", status),
            ("q", self.q.trim()),
            ("source_id", &self.source_id),
            ("priority", &self.priority),
            ("environment", &self.environment),
            ("scope", &self.scope),
            ("run_id", &self.run_id),
        ] {
            if !v.is_empty() {
                q.append_pair(k, v);
            }
        }
        q.finish()
    }
}

/// Actions per page of the inbox.
const PAGE: i64 = 100;

/// One line of the list.
pub struct Row {
    pub id: String,
    pub title: String,
    pub source: String,
    pub priority: String,
    pub status: String,
    pub test: bool,
    pub created: When,
    pub assignee: Option<String>,
    /// How it is answered: "3 options", "Yes / No", "Approval vote"…
    pub kind: String,
    /// When an open Action expires ("in 3 h"); none once it is closed.
    pub deadline: Option<When>,
    /// What a resolved Action's decision was and who made it:
    /// ("Approve", "dana@example.com").
    pub decided: Option<(String, String)>,
    /// Set on open rows with options the viewer may decide in a batch.
    pub pick: Option<Pick>,
}

/// A row's checkbox for batch decisions: the binding it was rendered with
/// and its options, so the bar offers only options every picked row has.
pub struct Pick {
    /// `{id} {action_version} {fingerprint}`, posted as `pick`.
    pub value: String,
    /// `[{id, label, destructive}]` as JSON, read by static/app.js.
    pub options_json: String,
    pub options: Vec<BatchOption>,
    /// Still picked after a refused batch.
    pub checked: bool,
}

/// One option of the batch bar.
#[derive(Clone, PartialEq)]
pub struct BatchOption {
    pub id: String,
    pub label: String,
    /// CSS class of the button.
    pub class: &'static str,
}

pub struct Tab {
    pub label: &'static str,
    /// None when a search is too broad to count.
    pub count: Option<String>,
    pub query: String,
    pub current: bool,
}

/// The part of the page the script refreshes.
pub struct InboxList {
    pub tabs: Vec<Tab>,
    pub rows: Vec<Row>,
    /// The query string of the next page, when there is one.
    pub next: Option<String>,
    /// The query string of the first page, on a later one.
    pub first: Option<String>,
    /// Every option of the pickable rows, once: the batch bar without
    /// JavaScript (the script offers only those the picked rows share).
    pub batch_options: Vec<BatchOption>,
    /// `services.changes` when the list was read, so the script knows whether
    /// an event is news.
    pub version: u64,
    /// The nav's number, as `count_label` spells it.
    pub open_count: String,
    /// Why the filters matched nothing usable, in words.
    pub error: Option<String>,
    pub filtered: bool,
    /// The status shown (`open`, `snoozed`, `resolved`…), for the words of
    /// an empty list.
    pub status: String,
}

impl InboxList {
    /// Whether the tabs carry no numbers: a search matching more than
    /// `SEARCH_DRIVE_LIMIT` Actions is listed, not counted.
    pub fn uncounted(&self) -> bool {
        !self.tabs.is_empty() && self.tabs.iter().all(|t| t.count.is_none())
    }
}

pub struct SourceChoice {
    pub id: String,
    pub name: String,
}

#[derive(Template, WebTemplate)]
#[template(path = "inbox.html")]
pub struct InboxPage {
    layout: Layout,
    filters: Filters,
    sources: Vec<SourceChoice>,
    list: InboxList,
    rows_url: String,
    /// The filters' query, posted back by the batch form.
    back: String,
    /// The result of the batch just decided, in words.
    batch: Option<BatchResultVm>,
    /// The reason typed in a refused batch, put back in its box.
    batch_reason: String,
    /// The run the list is narrowed to: its name, and the query of these
    /// filters without it.
    run: Option<(String, String)>,
}

#[derive(Template, WebTemplate)]
#[template(path = "inbox_list.html")]
pub struct InboxFragment {
    list: InboxList,
}

/// Source ids → names, for the rows and the filter.
async fn source_names(s: &Services, user: &UserCaller) -> Result<Vec<SourceChoice>> {
    let listed = sources::list(s, user.clone()).await?;
    Ok(listed
        .into_iter()
        .map(|src| SourceChoice {
            id: src.id,
            name: src.name,
        })
        .collect())
}

/// The filter's environment when it is one, else `live`.
fn valid_environment(f: &Filters) -> &str {
    match f.environment() {
        e @ ("live" | "test" | "all") => e,
        _ => "live",
    }
}

async fn read_list(
    s: &Services,
    user: &UserCaller,
    f: &Filters,
    names: &HashMap<String, String>,
) -> Result<InboxList> {
    // Read the version first: a change committed during the read bumps it
    // again, so the script refreshes once more rather than missing it.
    let version = s.changes.view(user);
    let now = s.clock.now();
    let filtered = !(f.q.trim().is_empty()
        && f.source_id.is_empty()
        && f.priority.is_empty()
        && f.run_id.is_empty())
        || f.environment() != "live"
        || f.scope() != "all";
    let (listed, has_more, counts) =
        match inbox::list_with_counts(s, user.clone(), f.params(), now).await {
            Ok(v) => v,
            Err(e) if e.code == Code::ValidationError => {
                return Ok(InboxList {
                    tabs: Vec::new(),
                    rows: Vec::new(),
                    batch_options: Vec::new(),
                    next: None,
                    // A page that cannot be read (its Action gone from
                    // view) still leads back to the first.
                    first: some(&f.starting_after).map(|_| f.query(f.status())),
                    version,
                    // The count of an environment that is one (the refused
                    // value may be the environment itself).
                    open_count: inbox::count_label(
                        dashboard::open_count_in(s, user, valid_environment(f)).await?,
                    ),
                    error: Some(e.message.clone()),
                    filtered,
                    status: f.status().to_owned(),
                });
            }
            Err(e) => return Err(e),
        };
    let people = dashboard::deciders(s, &listed).await?;
    // Which rows get a checkbox is the access module's (`offers_batch_decision`).
    let role = user.active.as_ref().map(|m| m.role);
    let rows: Vec<Row> = listed
        .iter()
        .map(|a| row(a, names, &people, user, now, role))
        .collect();
    let pick = |f: fn(&InboxCounts) -> i64| counts.as_ref().map(f);
    let counted = [
        pick(|c| c.open),
        pick(|c| c.snoozed),
        pick(|c| c.resolved),
        pick(|c| c.cancelled),
        pick(|c| c.expired),
    ];
    let tabs = STATUS_TABS
        .into_iter()
        .zip(counted)
        .map(|((status, label), count)| Tab {
            label,
            count: count.map(inbox::count_label),
            query: f.query(status),
            current: f.status() == status,
        })
        .collect();
    // The nav's number counts the environment the inbox lists, so with
    // only the environment chosen it is the Open tab's; otherwise count again.
    let only_environment = f.q.trim().is_empty()
        && f.source_id.is_empty()
        && f.priority.is_empty()
        && f.run_id.is_empty()
        && f.scope() == "all";
    let open_count = match counts {
        Some(c) if only_environment => c.open,
        _ => dashboard::open_count_in(s, user, f.environment()).await?,
    };
    let mut batch_options: Vec<BatchOption> = Vec::new();
    for o in rows
        .iter()
        .filter_map(|r| r.pick.as_ref())
        .flat_map(|p| &p.options)
    {
        // Once per option (id and label): the style one row gave it does
        // not make it another option.
        if !batch_options
            .iter()
            .any(|b| b.id == o.id && b.label == o.label)
        {
            batch_options.push(o.clone());
        }
    }
    let first_page = f.query(f.status());
    let next = rows.last().filter(|_| has_more).map(|last| {
        let mut q = form_urlencoded::Serializer::for_suffix(first_page.clone(), 0);
        q.append_pair("starting_after", &last.id);
        q.finish()
    });
    Ok(InboxList {
        tabs,
        rows,
        batch_options,
        next,
        first: some(&f.starting_after).map(|_| first_page),
        version,
        open_count: inbox::count_label(open_count),
        error: None,
        filtered,
        status: f.status().to_owned(),
    })
}

fn row(
    a: &ActionRecord,
    names: &HashMap<String, String>,
    people: &HashMap<String, String>,
    me: &UserCaller,
    now: time::Timestamp,
    role: Option<Role>,
) -> Row {
    // A checkbox only where the batch would not refuse it.
    let may_pick = role.is_some_and(|role| {
        access_of(a, role, &me.user_id, &me.email, &me.account_created_at).offers_batch_decision()
    });
    let open = a.status == Status::Open;
    // Cancelled and expired Actions carry a resolution too (no answer, by
    // the Source or by hds): only a resolved one says what was decided.
    let resolved = a
        .resolution
        .as_ref()
        .filter(|_| a.status == Status::Resolved);
    let decided = resolved.map(|r| {
        let by = match (r.decided_by.kind, r.decided_by.id.as_deref()) {
            (ActorKind::User, Some(id)) if id == me.user_id => "you".to_owned(),
            (ActorKind::User, Some(id)) => people
                .get(id)
                .cloned()
                .unwrap_or_else(|| "a former member".to_owned()),
            (ActorKind::Source, _) => "the Source".to_owned(),
            (ActorKind::System, Some("approval_policy")) => "the approval policy".to_owned(),
            _ => "hds".to_owned(),
        };
        (
            action_view::answer_text(a, r.option_id.as_deref(), r.response.as_ref()),
            by,
        )
    });
    Row {
        pick: may_pick.then(|| pick(a)).flatten(),
        deadline: if open {
            When::opt(a.spec.expires_at.as_deref(), now)
        } else {
            None
        },
        decided,
        id: a.id.clone(),
        title: a.spec.title.clone(),
        source: names
            .get(&a.source_id)
            .cloned()
            .unwrap_or_else(|| a.source_id.clone()),
        priority: a.spec.priority.as_str().to_owned(),
        status: a.status.as_str().to_owned(),
        test: a.environment == Environment::Test,
        created: When::new(&a.created_at, now),
        // "you", as the Action page and the resolved rows say.
        assignee: a.spec.assignee_email.as_ref().map(|e| {
            if e.eq_ignore_ascii_case(&me.email) {
                "you".to_owned()
            } else {
                crate::service::account::shown_address(e.clone())
            }
        }),
        kind: answer_kind(&a.spec),
    }
}

/// Open Actions answered by one of their options can be decided in a batch
/// (votes, typed answers and closed Actions cannot).
fn pick(a: &ActionRecord) -> Option<Pick> {
    if a.status != Status::Open || a.spec.approval_policy.is_some() {
        return None;
    }
    let options: Vec<BatchOption> = a
        .spec
        .options
        .as_ref()?
        .iter()
        .map(|o| BatchOption {
            id: o.id.clone().unwrap_or_default(),
            label: o.label.clone(),
            class: match o.style.as_deref() {
                Some("primary") => "btn btn-primary",
                Some("destructive") => "btn btn-danger",
                _ => "btn",
            },
        })
        .collect();
    let json: Vec<serde_json::Value> = options
        .iter()
        .map(|o| serde_json::json!({"id": o.id, "label": o.label, "class": o.class}))
        .collect();
    Some(Pick {
        value: format!("{} {} {}", a.id, a.action_version, a.fingerprint),
        options_json: serde_json::Value::Array(json).to_string(),
        options,
        checked: false,
    })
}

fn answer_kind(spec: &ActionSpec) -> String {
    if spec.approval_policy.is_some() {
        return "Approval vote".into();
    }
    if let Some(options) = &spec.options {
        return words::count(options.len() as i64, "option", "options");
    }
    match spec.interaction {
        Some(Interaction::Boolean {}) => "Yes / No",
        Some(Interaction::Text { .. }) => "Written answer",
        Some(Interaction::Number { .. }) => "Number",
        Some(Interaction::Choice { .. }) => "Choice",
        Some(Interaction::Form { .. }) => "Form",
        None => "",
    }
    .into()
}

/// The inbox's tabs, in order: the status each lists and its label. The
/// first (open) is the inbox itself.
const STATUS_TABS: [(&str, &str); 5] = [
    ("open", "Open"),
    ("snoozed", "Snoozed"),
    ("resolved", "Resolved"),
    ("cancelled", "Cancelled"),
    ("expired", "Expired"),
];

/// GET /app
pub async fn inbox_page(
    State(st): State<AppState>,
    page: PageUser,
    PageQuery(filters): PageQuery<Filters>,
    PageQuery(done): PageQuery<BatchQuery>,
) -> Result<Response, UiError> {
    // A person in no workspace (removed from their last one) has no inbox:
    // the Workspaces page says so and offers to create one.
    if page.user.active_workspace().is_none() {
        return Ok(see_other("/app/workspaces"));
    }
    let s = &st.services;
    let batch = inbox_batch::result(s, &page, &done).await?;
    let sources = source_names(s, &page.user).await?;
    let names = sources
        .iter()
        .map(|c| (c.id.clone(), c.name.clone()))
        .collect();
    let mut list = read_list(s, &page.user, &filters, &names).await?;
    // After a refused batch, its rows are still picked.
    let mut batch_reason = String::new();
    if let Some(b) = &batch {
        for r in &mut list.rows {
            if let Some(p) = &mut r.pick {
                p.checked = b.kept.picks.contains(&r.id);
            }
        }
        batch_reason = b.kept.reason.clone();
    }
    // Each tab and search has a title of its own (WCAG 2.4.2): a browser's
    // history and a screen reader tell "Inbox – Resolved" from "Inbox".
    let tab = STATUS_TABS
        .iter()
        .skip(1)
        .find(|(status, _)| *status == filters.status)
        .map(|(_, label)| *label);
    let search = some(&filters.q);
    let title = match (tab, search) {
        (None, None) => "Inbox".to_owned(),
        (Some(t), None) => format!("Inbox – {t}"),
        (None, Some(q)) => format!("Inbox – “{q}”"),
        (Some(t), Some(q)) => format!("Inbox – {t} – “{q}”"),
    };
    let run = match some(&filters.run_id) {
        Some(id) => {
            let name = crate::service::runs::name_in_active_workspace(s, &page.user, id.clone())
                .await?
                .unwrap_or(id);
            let without = Filters {
                run_id: String::new(),
                ..filters.clone()
            };
            Some((name, without.query(filters.status())))
        }
        None => None,
    };
    let mut layout = Layout::with_count(&page, title, "inbox", list.open_count.clone());
    layout.header(&st, &page).await?;
    Ok(InboxPage {
        run,
        rows_url: format!("/app/inbox/rows?{}", filters.page_query()),
        back: filters.page_query(),
        batch,
        batch_reason,
        layout,
        filters,
        sources,
        list,
    }
    .into_response())
}

/// GET /app/inbox/rows: the list part of the page, for the script.
pub async fn inbox_rows(
    State(st): State<AppState>,
    page: PageUser,
    PageQuery(filters): PageQuery<Filters>,
) -> Result<InboxFragment, UiError> {
    let s = &st.services;
    let names = source_names(s, &page.user)
        .await?
        .into_iter()
        .map(|c| (c.id, c.name))
        .collect();
    Ok(InboxFragment {
        list: read_list(s, &page.user, &filters, &names).await?,
    })
}

#[derive(Deserialize)]
pub struct Since {
    since: Option<u64>,
}

/// GET /app/events: server-sent events saying "something you can see
/// changed" (`service::changes`: the Actions, runs and notices of the
/// reader's workspaces and their own notices, never another workspace's).
/// Each response carries at most one event and ends; EventSource reconnects
/// by itself (`retry`) and sends the last event's id back as
/// `Last-Event-ID`, so a change made between two connections is reported at
/// once rather than missed, and no connection outlives the long-poll ceiling
/// (a server shutdown never waits on an open dashboard).
pub async fn inbox_events(
    State(st): State<AppState>,
    page: PageUser,
    headers: HeaderMap,
    PageQuery(q): PageQuery<Since>,
) -> Response {
    let changes = &st.services.changes;
    let mut rx = changes.subscribe();
    let seen = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .or(q.since);
    let deadline = tokio::time::Instant::now() + MAX_WAIT;
    let stopping = st.services.stopping();
    tokio::pin!(stopping);
    // Bounded: each turn waits for a change or ends at the deadline.
    let changed = loop {
        rx.borrow_and_update();
        let current = changes.view(&page.user);
        if seen != Some(current) {
            break Some(current);
        }
        tokio::select! {
            r = tokio::time::timeout_at(deadline, rx.changed()) => match r {
                Ok(Ok(())) => continue,
                _ => break None,
            },
            () = &mut stopping => break None,
        }
    };
    let body = match changed {
        Some(v) => format!("retry: 500\nid: {v}\nevent: changed\ndata: {v}\n\n"),
        None => "retry: 500\n: nothing changed\n\n".to_owned(),
    };
    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}
