//! /v1/runs and /v1/source/runs (guide: "Runs"; SPEC §4.7): each handler is
//! one call to `service::runs`.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::app::AppState;
use crate::domain::action::Environment;
use crate::domain::ids;
use crate::domain::run::{self, Run};
use crate::error::{Error, FieldError, Result};
use crate::http::api::actions::idempotency_key;
use crate::http::api::wire::{Data, List};
use crate::http::api::{replayable, reply};
use crate::http::auth::{SourceAuth, UserAuth};
use crate::http::extract::{ApiJson, ApiPath, ApiQuery};
use crate::service::actions::EnvFilter;
use crate::service::inbox::string_enum;
use crate::service::runs::{self, MAX_PAGE, RunCancel, RunComplete, RunCreate, RunProgress};

/// Query of GET /v1/runs.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct RunParams {
    /// Only runs in this status.
    #[param(schema_with = status_schema)]
    pub status: Option<String>,
    /// `live` (default), `test`, or `all` (both, merged newest first).
    #[param(schema_with = environment_schema)]
    pub environment: Option<String>,
    /// 1..200, default 100.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// A run id, the last of the previous page: the page after it (older
    /// runs). Empty: the first page.
    #[param(pattern = "^(run_[0-7][0-9A-HJKMNP-TV-Z]{25})?$")]
    pub starting_after: Option<String>,
}

/// Query of GET /v1/source/runs.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct SourceRunParams {
    /// Only runs in this status.
    #[param(schema_with = status_schema)]
    pub status: Option<String>,
    /// 1..200, default 100.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// A run id, the last of the previous page: the page after it (older
    /// runs). Empty: the first page.
    #[param(pattern = "^(run_[0-7][0-9A-HJKMNP-TV-Z]{25})?$")]
    pub starting_after: Option<String>,
}

/// The checks both run lists make: `limit`, `status` and the cursor's
/// shape (an empty cursor is the first page, as an absent one).
fn page_query(
    errs: &mut Vec<FieldError>,
    limit: Option<i64>,
    status: Option<&str>,
    starting_after: Option<String>,
) -> (i64, Option<String>) {
    let limit = limit.unwrap_or(100);
    if !(1..=MAX_PAGE).contains(&limit) {
        errs.push(FieldError::new("limit", "limit must be between 1 and 200"));
    }
    if status.is_some_and(|s| !run::STATUSES.contains(&s)) {
        errs.push(FieldError::new(
            "status",
            format!("status must be one of {}", run::STATUSES.join(", ")),
        ));
    }
    let starting_after = starting_after.filter(|s| !s.is_empty());
    if let Some(e) = starting_after
        .as_deref()
        .and_then(|id| ids::cursor_problem("starting_after", id, ids::RUN, "a run"))
    {
        errs.push(e);
    }
    (limit, starting_after)
}

fn status_schema() -> utoipa::openapi::Object {
    string_enum(run::STATUSES)
}
fn environment_schema() -> utoipa::openapi::Object {
    string_enum(&["live", "test", "all"])
}

/// Create a run (`queued`, or `running` with started_at set).
#[utoipa::path(post, path = "/v1/runs", tag = "runs",
    params(("Idempotency-Key" = Option<String>, Header, description = "1-255 printable ASCII characters, scoped to the Source and environment: an exact retry answers the first response")),
    request_body = RunCreate,
    responses((status = 201, description = "the run (an exact retry with the same Idempotency-Key answers it again, with `Idempotent-Replayed: true`)", body = Data<Run>),
              (status = 400, description = "INVALID_IDEMPOTENCY_KEY", body = crate::http::openapi::ErrorBody),
              (status = 403, description = "PLAN_LIMIT_REACHED: the workspace's plan allows no more runs this month (details.resource, details.limit, details.used, details.period_end)", body = crate::http::openapi::ErrorBody),
              (status = 409, description = "IDEMPOTENCY_KEY_REUSED, IDEMPOTENCY_CONFLICT", body = crate::http::openapi::ErrorBody),
              (status = 422, description = "VALIDATION_ERROR: name, status, total or metadata (details.errors)", body = crate::http::openapi::ErrorBody)),
    security(("source_key" = [])))]
pub async fn create_run(
    State(st): State<AppState>,
    SourceAuth(src): SourceAuth,
    headers: HeaderMap,
    ApiJson(req): ApiJson<RunCreate>,
) -> Result<Response> {
    let key = idempotency_key(&headers)?;
    Ok(reply(runs::create(&st.services, src, req, key).await?))
}

/// The active workspace's runs in one environment, newest first.
#[utoipa::path(get, path = "/v1/runs", tag = "runs", params(RunParams),
    responses((status = 200, description = "the runs, newest first", body = List<Run>),
              (status = 404, description = "WORKSPACE_NOT_FOUND: the caller belongs to no workspace", body = crate::http::openapi::ErrorBody),
              (status = 422, description = "VALIDATION_ERROR: status, environment, limit or starting_after (not a run id)", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn list_runs(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiQuery(p): ApiQuery<RunParams>,
) -> Result<Json<List<Run>>> {
    let mut errs = Vec::new();
    let environment = match EnvFilter::parse(p.environment.as_deref()) {
        Ok(e) => Some(e),
        Err(_) => {
            errs.push(FieldError::new(
                "environment",
                "environment must be `live`, `test` or `all`",
            ));
            None
        }
    };
    let (limit, starting_after) =
        page_query(&mut errs, p.limit, p.status.as_deref(), p.starting_after);
    if !errs.is_empty() {
        return Err(Error::validation(errs));
    }
    let env = environment.unwrap_or(EnvFilter::Only(Environment::Live));
    let (runs, more) = runs::list(&st.services, user, env, p.status, starting_after, limit).await?;
    Ok(Json(List::new(runs, more)))
}

/// One run of a workspace you belong to.
#[utoipa::path(get, path = "/v1/runs/{run_id}", tag = "runs", params(("run_id" = String, Path)),
    responses((status = 200, description = "the run", body = Data<Run>),
              (status = 404, description = "RUN_NOT_FOUND", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn get_run(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Data<Run>>> {
    let (data, _) = runs::get_for_user(&st.services, user, id).await?;
    Ok(Json(Data { data }))
}

/// One of the Source's own runs, in the key's environment.
#[utoipa::path(get, path = "/v1/source/runs/{run_id}", tag = "runs", params(("run_id" = String, Path)),
    responses((status = 200, description = "the run", body = Data<Run>),
              (status = 404, description = "RUN_NOT_FOUND (unknown, another Source's, or the other environment's)", body = crate::http::openapi::ErrorBody)),
    security(("source_key" = [])))]
pub async fn get_source_run(
    State(st): State<AppState>,
    SourceAuth(src): SourceAuth,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Data<Run>>> {
    let data = runs::get_for_source(&st.services, src, id).await?;
    Ok(Json(Data { data }))
}

/// The Source's own runs in its key's environment, newest first: what a
/// runner that restarted reads to find the runs it left active.
#[utoipa::path(get, path = "/v1/source/runs", tag = "runs", params(SourceRunParams),
    responses((status = 200, description = "the Source's runs, newest first", body = List<Run>),
              (status = 422, description = "VALIDATION_ERROR: status, limit or starting_after (not a run of this Source)", body = crate::http::openapi::ErrorBody)),
    security(("source_key" = [])))]
pub async fn list_source_runs(
    State(st): State<AppState>,
    SourceAuth(src): SourceAuth,
    ApiQuery(p): ApiQuery<SourceRunParams>,
) -> Result<Json<List<Run>>> {
    let mut errs = Vec::new();
    let (limit, starting_after) =
        page_query(&mut errs, p.limit, p.status.as_deref(), p.starting_after);
    if !errs.is_empty() {
        return Err(Error::validation(errs));
    }
    let (runs, more) =
        runs::list_for_source(&st.services, src, p.status, starting_after, limit).await?;
    Ok(Json(List::new(runs, more)))
}

/// Report progress: counts, a message, `running` or `waiting`.
#[utoipa::path(patch, path = "/v1/source/runs/{run_id}/progress", tag = "runs", params(("run_id" = String, Path)),
    request_body = RunProgress,
    responses((status = 200, description = "the run as it now is", body = Data<Run>),
              (status = 404, description = "RUN_NOT_FOUND", body = crate::http::openapi::ErrorBody),
              (status = 409, description = "RUN_NOT_ACTIVE: the run is finished (details.status)", body = crate::http::openapi::ErrorBody),
              (status = 422, description = "VALIDATION_ERROR: completed above total, a status other than running/waiting, message too long", body = crate::http::openapi::ErrorBody)),
    security(("source_key" = [])))]
pub async fn report_run_progress(
    State(st): State<AppState>,
    SourceAuth(src): SourceAuth,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<RunProgress>,
) -> Result<Json<Data<Run>>> {
    let data = runs::progress(&st.services, src, id, req).await?;
    Ok(Json(Data { data }))
}

/// Finish a run: `succeeded`, `failed` (notifies) or `cancelled`.
#[utoipa::path(post, path = "/v1/source/runs/{run_id}/complete", tag = "runs", params(("run_id" = String, Path)),
    request_body = RunComplete,
    responses((status = 200, description = "the finished run (an exact repeat answers it again, with `Idempotent-Replayed: true`)", body = Data<Run>),
              (status = 404, description = "RUN_NOT_FOUND", body = crate::http::openapi::ErrorBody),
              (status = 409, description = "RUN_NOT_ACTIVE: already finished otherwise (details.status)", body = crate::http::openapi::ErrorBody),
              (status = 422, description = "VALIDATION_ERROR: status, result over 32 KB, error too long", body = crate::http::openapi::ErrorBody)),
    security(("source_key" = [])))]
pub async fn complete_run(
    State(st): State<AppState>,
    SourceAuth(src): SourceAuth,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<RunComplete>,
) -> Result<Response> {
    let (r, replayed) = runs::complete(&st.services, src, id, req).await?;
    Ok(replayable(StatusCode::OK, Data { data: r }, replayed))
}

/// Cancel a run its Source left active (owners and admins).
#[utoipa::path(post, path = "/v1/runs/{run_id}/cancel", tag = "runs", params(("run_id" = String, Path)),
    request_body = RunCancel,
    responses((status = 200, description = "the cancelled run (one cancelled already is answered again, with `Idempotent-Replayed: true`)", body = Data<Run>),
              (status = 403, description = "FORBIDDEN: only owners and admins cancel a run; details.required_role", body = crate::http::openapi::ErrorBody),
              (status = 404, description = "RUN_NOT_FOUND: no run with that id in a workspace of yours", body = crate::http::openapi::ErrorBody),
              (status = 409, description = "RUN_NOT_ACTIVE: the run succeeded or failed (details.status)", body = crate::http::openapi::ErrorBody),
              (status = 422, description = "VALIDATION_ERROR: reason too long, unknown fields", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn cancel_run(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiPath(id): ApiPath<String>,
    crate::http::extract::OptionalJson(req): crate::http::extract::OptionalJson<RunCancel>,
) -> Result<Response> {
    let (r, replayed) = runs::cancel_for_user(&st.services, user, id, req).await?;
    Ok(replayable(StatusCode::OK, Data { data: r }, replayed))
}
