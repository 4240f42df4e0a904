//! Runs as use cases (guide: "Runs"; DESIGN §13): a Source creates a run,
//! reports progress and completes it; people read their workspace's runs.
//! A finished run refuses every change (409 RUN_NOT_ACTIVE); a failed one
//! notifies (`run.failed`). Every write declares `fx.workspace_changed`, so open run
//! pages refresh.

use crate::domain::billing::Resource;
use crate::service::billing;
use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::domain::access;
use crate::domain::action::Environment;
use crate::domain::run::{self, Progress, Run, RunEvent};
use crate::domain::{ids, time};
use crate::error::{Code, Error, FieldError, Result};
use crate::service::Services;
use crate::service::actions::EnvFilter;
use crate::service::caller::{SourceCaller, UserCaller};
use crate::service::idempotency::{self, Reply};
use crate::service::inbox::string_enum;
use crate::service::notifications;
use crate::store::runs as store;

/// Largest page of GET /v1/runs.
pub const MAX_PAGE: i64 = 200;

/// POST /v1/runs
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCreate {
    /// 1-200 characters, one line.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069][^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*$"
    )]
    pub name: String,
    /// `queued` (default) or `running` (sets started_at).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = create_status_schema)]
    pub status: Option<String>,
    /// How many steps the run has, when known.
    #[serde(
        default,
        deserialize_with = "crate::domain::strict_json::optional_integer",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(minimum = 0, maximum = 9007199254740991_i64)]
    pub total: Option<i64>,
    /// Any JSON object, at most 32 KB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
}

fn create_status_schema() -> utoipa::openapi::Object {
    string_enum(&["queued", "running"])
}

/// PATCH /v1/source/runs/{run_id}/progress: every field optional; a given
/// one replaces the stored one.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunProgress {
    /// Steps done; at most `total` when both are known.
    #[serde(
        default,
        deserialize_with = "crate::domain::strict_json::optional_integer"
    )]
    #[schema(minimum = 0, maximum = 9007199254740991_i64)]
    pub completed: Option<i64>,
    #[serde(
        default,
        deserialize_with = "crate::domain::strict_json::optional_integer"
    )]
    #[schema(minimum = 0, maximum = 9007199254740991_i64)]
    pub total: Option<i64>,
    /// What the run is doing now; at most 2,000 characters, no NUL.
    #[serde(default)]
    #[schema(max_length = 2000, pattern = "^[^\\u0000]*$")]
    pub message: Option<String>,
    /// `running` (the first one sets started_at) or `waiting`.
    #[serde(default)]
    #[schema(schema_with = progress_status_schema)]
    pub status: Option<String>,
}

fn progress_status_schema() -> utoipa::openapi::Object {
    string_enum(&["running", "waiting"])
}

/// POST /v1/source/runs/{run_id}/complete
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunComplete {
    /// `succeeded`, `failed` or `cancelled`.
    #[schema(schema_with = complete_status_schema)]
    pub status: String,
    /// Any JSON value (an object, a string, a number…), at most 32 KB.
    #[serde(default)]
    #[schema(value_type = Value)]
    pub result: Option<Value>,
    /// What went wrong; at most 2,000 characters, no NUL.
    #[serde(default)]
    #[schema(max_length = 2000, pattern = "^[^\\u0000]*$")]
    pub error: Option<String>,
}

fn complete_status_schema() -> utoipa::openapi::Object {
    string_enum(&["succeeded", "failed", "cancelled"])
}

fn refuse(errs: Vec<FieldError>) -> Result<()> {
    if errs.is_empty() {
        Ok(())
    } else {
        Err(Error::validation(errs))
    }
}

fn not_active(r: &Run) -> Error {
    Error::new(
        Code::RunNotActive,
        format!(
            "run {} already {}; a finished run takes no more progress or completion",
            r.id, r.status
        ),
    )
    .with_detail("status", r.status.clone())
}

/// A run the Source owns, in the key's environment; RUN_NOT_FOUND otherwise.
fn owned(c: &Connection, src: &SourceCaller, id: &str) -> Result<Run> {
    match store::get(c, id)? {
        Some(r) if r.source_id == src.source_id && r.environment == src.environment => Ok(r),
        _ => Err(Error::run_not_found()),
    }
}

/// POST /v1/runs. `key`: the Idempotency-Key, as on Action create (scoped to
/// the Source and environment): an exact retry answers the first response.
pub async fn create(
    s: &Services,
    src: SourceCaller,
    req: RunCreate,
    key: Option<String>,
) -> Result<Reply> {
    let mut errs = Vec::new();
    let name = run::check_name(&req.name).map_err(|e| errs.push(e)).ok();
    let status = req.status.clone().unwrap_or_else(|| "queued".into());
    if !matches!(status.as_str(), "queued" | "running") {
        errs.push(FieldError::new(
            "status",
            run::status_refused(&status, "`queued` or `running`"),
        ));
    }
    if req.total.is_some_and(|t| t < 0) {
        errs.push(FieldError::new("total", "total must be 0 or more"));
    }
    if let Some(e) = req
        .metadata
        .as_ref()
        .and_then(|m| run::check_size("metadata", m))
    {
        errs.push(e);
    }
    refuse(errs)?;
    let name = name.unwrap_or_default();
    let request = serde_json::to_value(&req)?;
    let clock_now = s.clock.now();
    let now = time::format(clock_now);
    let owner = src.clone();
    let config = s.config.clone();
    idempotency::write(
        s,
        &owner,
        key,
        "POST /v1/runs",
        request,
        clock_now,
        move |c, fx| {
            crate::service::sources::check_not_revoked(c, &src.source_id)?;
            let started = status == "running";
            let r = Run {
                id: ids::new_ordered_id(ids::RUN),
                object: "run",
                workspace_id: src.workspace_id.clone(),
                source_id: src.source_id.clone(),
                environment: src.environment,
                name,
                status,
                progress: Progress {
                    completed: None,
                    total: req.total,
                    message: None,
                },
                metadata: req.metadata,
                action_ids: Vec::new(),
                result: None,
                error: None,
                created_at: now.clone(),
                started_at: started.then(|| now.clone()),
                updated_at: now.clone(),
                completed_at: None,
            };
            // The plan's runs per month, checked in the writer (guide: "Plans and billing").
            billing::check(
                c,
                &config.billing,
                &src.workspace_id,
                Resource::Runs,
                clock_now,
            )?;
            store::insert(c, &r)?;
            billing::record_use(c, &src.workspace_id, Resource::Runs, clock_now)?;
            store::add_event(c, &r.id, "created", "queued", None, &now)?;
            if started {
                store::add_event(c, &r.id, "started", "running", None, &now)?;
            }
            fx.workspace_changed(&src.workspace_id);
            Ok((201, serde_json::json!({ "data": r })))
        },
    )
    .await
}

/// GET /v1/source/runs/{id}: the Source's own run in the key's environment.
pub async fn get_for_source(s: &Services, src: SourceCaller, id: String) -> Result<Run> {
    s.db.read(move |c| owned(c, &src, &id)).await
}

/// GET /v1/runs/{id}: a run of a workspace the person belongs to, with its
/// timeline (the dashboard's run page shows it).
pub async fn get_for_user(
    s: &Services,
    user: UserCaller,
    id: String,
) -> Result<(Run, Vec<RunEvent>)> {
    s.db.read(move |c| {
        let r = store::get(c, &id)?.ok_or_else(Error::run_not_found)?;
        match user.role_in(&r.workspace_id) {
            Some(role) if access::can_read_runs(role) => {}
            _ => return Err(Error::run_not_found()),
        }
        let events = store::events(c, &r.id)?;
        Ok((r, events))
    })
    .await
}

/// The name of a run of the person's active workspace (the inbox's run
/// filter names it); None for any other id.
pub async fn name_in_active_workspace(
    s: &Services,
    user: &UserCaller,
    id: String,
) -> Result<Option<String>> {
    let Some(ws) = user.active_workspace().map(|m| m.workspace_id.clone()) else {
        return Ok(None);
    };
    s.db.read(move |c| {
        Ok(store::get(c, &id)?
            .filter(|r| r.workspace_id == ws)
            .map(|r| r.name))
    })
    .await
}

/// One Action of a run as the run page lists it.
pub struct RunAction {
    pub id: String,
    /// None for a restricted Action the reader may not see (its title is
    /// for its listed reviewers, owners and admins).
    pub title: Option<String>,
    pub status: String,
}

/// The run page: the run, its timeline and its newest Actions.
/// The run page's content: the run, its timeline (oldest first) and its
/// newest Actions, each with whether older ones were left out.
pub struct RunPage {
    pub run: Run,
    pub events: Vec<RunEvent>,
    pub earlier_events: bool,
    pub actions: Vec<RunAction>,
    pub more_actions: bool,
}

pub async fn page(s: &Services, user: UserCaller, id: String) -> Result<RunPage> {
    let (r, mut events) = get_for_user(s, user.clone(), id).await?;
    let earlier_events = events.len() > store::TIMELINE as usize;
    if earlier_events {
        events.remove(0);
    }
    let run_id = r.id.clone();
    // Owners and admins see every restricted Action; anyone else sees those
    // they are listed on, read per restricted Action (at most the run's
    // newest LISTED_ACTIONS, without the Action's annotations).
    let sees_all = user
        .role_in(&r.workspace_id)
        .is_some_and(access::manages_workspace);
    let actions =
        s.db.read(move |c| {
            let mut out = Vec::new();
            let mut rows = store::actions_of(c, &run_id)?;
            let more = rows.len() > crate::domain::run::LISTED_ACTIONS;
            rows.truncate(crate::domain::run::LISTED_ACTIONS);
            for (id, title, status, visibility) in rows {
                let shown = visibility != "restricted"
                    || sees_all
                    || crate::store::actions::get_plain(c, &id)?
                        .is_some_and(|a| crate::service::actions::access(&a, &user).is_some());
                out.push(RunAction {
                    id,
                    title: shown.then_some(title),
                    status,
                });
            }
            Ok((out, more))
        })
        .await?;
    Ok(RunPage {
        run: r,
        events,
        earlier_events,
        actions: actions.0,
        more_actions: actions.1,
    })
}

/// GET /v1/runs: the active workspace's runs in one environment, newest
/// first; `limit` + 1 are read, so the caller can tell `has_more`. A
/// person in no workspace gets 404 WORKSPACE_NOT_FOUND, as from billing
/// and analytics.
pub async fn list(
    s: &Services,
    user: UserCaller,
    environment: EnvFilter,
    status: Option<String>,
    starting_after: Option<String>,
    limit: i64,
) -> Result<(Vec<Run>, bool)> {
    let m = user.active_or_404()?.clone();
    if !access::can_read_runs(m.role) {
        return Ok((Vec::new(), false));
    }
    let environments = match environment {
        EnvFilter::Only(e) => vec![e],
        EnvFilter::All => vec![Environment::Live, Environment::Test],
    };
    let mut runs =
        s.db.read(move |c| {
            // An item of this list: this workspace's, in a listed environment.
            if let Some(after) = starting_after.as_deref()
                && store::get(c, after)?.is_none_or(|r| {
                    r.workspace_id != m.workspace_id || !environments.contains(&r.environment)
                })
            {
                return Err(Error::unknown_cursor(
                    &ids::Cursor::starting_after(after),
                    "a run of this workspace in the listed environment",
                ));
            }
            // Both environments: a page of each by its index, merged by id
            // (ids sort by creation), newest first.
            let mut runs = Vec::new();
            for env in environments {
                runs.extend(store::page(
                    c,
                    store::Owner::Workspace(&m.workspace_id),
                    env,
                    status.as_deref(),
                    starting_after.as_deref(),
                    limit + 1,
                )?);
            }
            runs.sort_by(|a, b| b.id.cmp(&a.id));
            Ok(runs)
        })
        .await?;
    let more = runs.len() as i64 > limit;
    runs.truncate(limit as usize);
    Ok((runs, more))
}

/// GET /v1/source/runs: the Source's own runs in its key's environment,
/// newest first; `limit` + 1 are read, so the caller can tell `has_more`.
/// A cursor that is not one of them is 422 on `starting_after`.
pub async fn list_for_source(
    s: &Services,
    src: SourceCaller,
    status: Option<String>,
    starting_after: Option<String>,
    limit: i64,
) -> Result<(Vec<Run>, bool)> {
    let mut runs =
        s.db.read(move |c| {
            if let Some(after) = starting_after.as_deref()
                && let Err(e) = owned(c, &src, after)
            {
                // Only "not this Source's": a failed read is not the caller's.
                if e.code != crate::error::Code::RunNotFound {
                    return Err(e);
                }
                return Err(Error::unknown_cursor(
                    &ids::Cursor::starting_after(after),
                    &format!(
                        "a run of this Source in the {} environment (its key's)",
                        src.environment.as_str()
                    ),
                ));
            }
            store::page(
                c,
                store::Owner::Source(&src.source_id),
                src.environment,
                status.as_deref(),
                starting_after.as_deref(),
                limit + 1,
            )
        })
        .await?;
    let more = runs.len() as i64 > limit;
    runs.truncate(limit as usize);
    Ok((runs, more))
}

/// PATCH /v1/source/runs/{id}/progress.
pub async fn progress(
    s: &Services,
    src: SourceCaller,
    id: String,
    req: RunProgress,
) -> Result<Run> {
    let mut errs = Vec::new();
    if let Some(st) = &req.status
        && !matches!(st.as_str(), "running" | "waiting")
    {
        errs.push(FieldError::new(
            "status",
            format!(
                "{}; finish a run with POST …/complete",
                run::status_refused(st, "`running` or `waiting`")
            ),
        ));
    }
    for (f, v) in [("completed", req.completed), ("total", req.total)] {
        if v.is_some_and(|n| n < 0) {
            errs.push(FieldError::new(f, format!("{f} must be 0 or more")));
        }
    }
    if let Some(e) = req
        .message
        .as_deref()
        .and_then(|m| run::check_text("message", m))
    {
        errs.push(e);
    }
    refuse(errs)?;
    let now = time::format(s.clock.now());
    s.write(move |c, fx| {
        let mut r = owned(c, &src, &id)?;
        if run::is_final(&r.status) {
            return Err(not_active(&r));
        }
        let (completed, total) = run::next_counts(
            (r.progress.completed, r.progress.total),
            req.completed,
            req.total,
        )
        .map_err(|e| Error::validation(vec![e]))?;
        let before = r.status.clone();
        if let Some(st) = req.status {
            r.status = st;
        }
        // A run starts with its first move out of `queued`: to `running`,
        // or straight to `waiting` (it started, and waits on a person).
        let first_start =
            matches!(r.status.as_str(), "running" | "waiting") && r.started_at.is_none();
        if first_start {
            r.started_at = Some(now.clone());
        }
        let new_message = req
            .message
            .filter(|m| r.progress.message.as_ref() != Some(m));
        if let Some(m) = &new_message {
            r.progress.message = Some(m.clone());
        }
        r.progress.completed = completed;
        r.progress.total = total;
        r.updated_at = now.clone();
        store::set_progress(c, &r)?;
        // A message blanked (`""`) is no news for the timeline: a line
        // would say nothing.
        let new_message = new_message.filter(|m| !m.trim().is_empty());
        let kind = if first_start {
            Some("started")
        } else if r.status != before && r.status == "waiting" {
            Some("waiting")
        } else if r.status != before || new_message.is_some() {
            Some("progress")
        } else {
            None
        };
        // A run that starts by waiting: its timeline says both, and the
        // message goes with the wait (what it waits for).
        let starts_waiting = first_start && r.status == "waiting";
        if let Some(kind) = kind {
            let message = new_message.as_deref().filter(|_| !starts_waiting);
            store::add_event(c, &r.id, kind, &r.status, message, &now)?;
        }
        if starts_waiting {
            store::add_event(c, &r.id, "waiting", &r.status, new_message.as_deref(), &now)?;
        }
        fx.workspace_changed(&r.workspace_id);
        Ok(r)
    })
    .await
}

/// POST /v1/source/runs/{id}/complete. An exact repeat of the completion
/// answers the run again (`true`: replayed); anything else on a finished
/// run is RUN_NOT_ACTIVE.
pub async fn complete(
    s: &Services,
    src: SourceCaller,
    id: String,
    req: RunComplete,
) -> Result<(Run, bool)> {
    let mut errs = Vec::new();
    if !matches!(req.status.as_str(), "succeeded" | "failed" | "cancelled") {
        errs.push(FieldError::new(
            "status",
            run::status_refused(&req.status, "`succeeded`, `failed` or `cancelled`"),
        ));
    }
    if let Some(e) = req
        .result
        .as_ref()
        .and_then(|v| run::check_size("result", v))
    {
        errs.push(e);
    }
    if let Some(e) = req
        .error
        .as_deref()
        .and_then(|m| run::check_text("error", m))
    {
        errs.push(e);
    }
    refuse(errs)?;
    let now = time::format(s.clock.now());
    let nctx = notifications::Ctx::of(s);
    s.write(move |c, fx| {
        let r = owned(c, &src, &id)?;
        if run::is_final(&r.status) {
            // The same result by RFC 8785 (`1` and `1.0` are one number).
            let same_result = match (&r.result, &req.result) {
                (Some(a), Some(b)) => crate::domain::jcs::same(a, b),
                (a, b) => a == b,
            };
            if r.status == req.status && same_result && r.error == req.error {
                return Ok((r, true));
            }
            return Err(not_active(&r));
        }
        let result = req.result.as_ref();
        store::complete(c, &r.id, &req.status, result, req.error.as_deref(), &now)?;
        // A blank error says nothing: no detail on the timeline, and the
        // failure notice's own words instead of an empty body.
        let said = req.error.as_deref().filter(|e| !e.trim().is_empty());
        store::add_event(c, &r.id, "completed", &req.status, said, &now)?;
        if req.status == "failed" {
            // A test run's failure never reads as real work (as test Actions).
            let name = if r.environment == crate::domain::action::Environment::Test {
                format!("[test] {}", r.name)
            } else {
                r.name.clone()
            };
            notifications::run_failed(c, fx, &nctx, &r.workspace_id, &r.id, &name, said, &now)?;
        }
        fx.workspace_changed(&r.workspace_id);
        let r = store::get(c, &r.id)?.ok_or_else(Error::run_not_found)?;
        Ok((r, false))
    })
    .await
}

/// POST /v1/runs/{id}/cancel: body of a person's cancel.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCancel {
    /// Why, for the timeline; at most 2,000 characters, no NUL.
    #[serde(default)]
    #[schema(max_length = 2000, pattern = "^[^\\u0000]*$")]
    pub reason: Option<String>,
}

/// A person who manages the workspace (owner, admin) cancels a run that is
/// still active: a Source that crashed or was forgotten would leave it
/// running for ever. Cancelling a cancelled run answers it again (`true`:
/// nothing changed); a run that succeeded or failed is RUN_NOT_ACTIVE. The
/// Source learns it at its next progress or completion (409
/// RUN_NOT_ACTIVE). The run's open Actions stay open: they are decided or
/// cancelled on their own.
pub async fn cancel_for_user(
    s: &Services,
    user: UserCaller,
    id: String,
    req: RunCancel,
) -> Result<(Run, bool)> {
    let now = time::format(s.clock.now());
    s.write(move |c, fx| {
        let r = store::get(c, &id)?.ok_or_else(Error::run_not_found)?;
        // The role as it is now, not as it was at sign-in.
        let role = match crate::store::workspaces::role_of(c, &r.workspace_id, &user.user_id)? {
            Some(role) if access::can_read_runs(role) => role,
            _ => return Err(Error::run_not_found()),
        };
        if !access::can_cancel_runs(role) {
            return Err(cancel_refused());
        }
        // The body is judged for those who may cancel: anyone else is told
        // only that they may not.
        if let Some(e) = req
            .reason
            .as_deref()
            .and_then(|m| run::check_text("reason", m))
        {
            refuse(vec![e])?;
        }
        if r.status == "cancelled" {
            return Ok((r, true));
        }
        if run::is_final(&r.status) {
            return Err(Error::new(
                Code::RunNotActive,
                format!(
                    "run {} already {}: there is nothing left to cancel",
                    r.id, r.status
                ),
            )
            .with_detail("status", r.status.clone()));
        }
        // A reason of only blanks or invisible characters gives none; the
        // run's `error` keeps to its limit (MAX_TEXT), the reason shortened
        // with "…" when the words before it leave too little room.
        let why = match req.reason.as_deref().map(str::trim) {
            Some(reason) if !crate::domain::validate::says_nothing(reason) => {
                run::cancelled_by(&user.email, reason)
            }
            _ => format!("Cancelled by {}", user.email),
        };
        cancel_in(c, fx, (&r.workspace_id, &r.id), &why, &now)?;
        let r = store::get(c, &r.id)?.ok_or_else(Error::run_not_found)?;
        Ok((r, false))
    })
    .await
}

/// 403 to someone who may read a run but not cancel it.
pub fn cancel_refused() -> Error {
    Error::new(
        Code::Forbidden,
        "only the workspace's owners and admins cancel a run",
    )
    .with_detail("required_role", access::Role::Admin.as_str())
}

/// Cancels an active run in the caller's transaction, with `why` on its
/// timeline and as its `error`, so the Source that reads it learns why.
fn cancel_in(
    c: &Connection,
    fx: &mut crate::service::effects::Effects,
    (workspace_id, run_id): (&str, &str),
    why: &str,
    now: &str,
) -> Result<()> {
    store::complete(c, run_id, "cancelled", None, Some(why), now)?;
    store::add_event(c, run_id, "completed", "cancelled", Some(why), now)?;
    fx.workspace_changed(workspace_id);
    Ok(())
}

/// In a Source revocation's transaction: its active runs end `cancelled`,
/// since nothing can report on them any more. Answers how many.
pub fn cancel_of_revoked_source(
    c: &Connection,
    fx: &mut crate::service::effects::Effects,
    workspace_id: &str,
    source_id: &str,
    now: &str,
) -> Result<usize> {
    let ids = store::active_of_source(c, workspace_id, source_id)?;
    for id in &ids {
        cancel_in(
            c,
            fx,
            (workspace_id, id),
            "Cancelled: its Source was revoked",
            now,
        )?;
    }
    Ok(ids.len())
}

/// In Action create's transaction, when the body names a `run_id`: the
/// Source's own run in the same environment, still active. One indexed
/// lookup; 422 on `run_id` naming why otherwise.
pub fn check_attachable(c: &Connection, src: &SourceCaller, run_id: &str) -> Result<()> {
    match store::owner_of(c, run_id)? {
        Some((source, env, _)) if source != src.source_id || env != src.environment.as_str() => {
            Err(Error::field(
                "run_id",
                format!(
                    "`{run_id}` is not a run of this Source in the {} environment",
                    src.environment.as_str()
                ),
            ))
        }
        None => Err(Error::field(
            "run_id",
            format!(
                "`{run_id}` is not a run of this Source in the {} environment",
                src.environment.as_str()
            ),
        )),
        Some((_, _, status)) if run::is_final(&status) => Err(Error::field(
            "run_id",
            format!("run `{run_id}` already {status}; a finished run takes no more Actions"),
        )),
        Some(_) => Ok(()),
    }
}
