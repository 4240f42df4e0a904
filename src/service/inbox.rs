//! GET /v1/me/actions: the reviewer's inbox, with every filter and bound of
//! the guide's "GET /v1/me/actions"; and GET /v1/source/actions, the same
//! list of one Source's own Actions.

use serde::Deserialize;
use utoipa::IntoParams;

use crate::domain::access;
use crate::domain::action::{ActionRecord, Environment, Priority};
use crate::domain::time;
use crate::error::{Error, FieldError, Result};
use crate::service::Services;
use crate::service::caller::{SourceCaller, UserCaller};
use crate::store::actions::{self as store, InboxQuery};

pub const MAX_SEARCH: usize = 120;

/// Query string of GET /v1/me/actions.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct InboxParams {
    /// open (default), snoozed, resolved, cancelled, expired, all
    #[param(schema_with = status_schema)]
    pub status: Option<String>,
    /// Matches the title; at most 120 characters.
    #[param(max_length = 120)]
    pub search: Option<String>,
    /// Only the Actions of this Source of the active workspace (revoked
    /// ones too; else 422); empty: no filter.
    #[param(pattern = "^(src_[0-7][0-9A-HJKMNP-TV-Z]{25})?$")]
    pub source_id: Option<String>,
    /// Only the Actions raised in this run (`run_…`), a run of the active
    /// workspace (else 422); empty: no filter.
    #[param(pattern = "^(run_[0-7][0-9A-HJKMNP-TV-Z]{25})?$")]
    pub run_id: Option<String>,
    /// low, normal, high, urgent
    #[param(schema_with = priority_schema)]
    pub priority: Option<String>,
    /// live (default), test, all
    #[param(schema_with = environment_schema)]
    pub environment: Option<String>,
    /// mine, unassigned, needs_my_vote, all (default)
    #[param(schema_with = scope_schema)]
    pub scope: Option<String>,
    /// Alias of `scope`, kept for SPEC compatibility; `scope` wins when both are given.
    #[param(schema_with = scope_schema)]
    pub routing: Option<String>,
    /// 1..200, default 100
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// The id of the last Action of the previous page: the page that
    /// follows it in this list's order. An Action of the active workspace
    /// that the caller may see, else 422. Empty: the first page.
    #[param(pattern = "^(act_[0-7][0-9A-HJKMNP-TV-Z]{25})?$")]
    pub starting_after: Option<String>,
}

const STATUSES: &[&str] = &["open", "snoozed", "resolved", "cancelled", "expired", "all"];
/// A Source lists one status at a time: each is read in order from the
/// index on the Source (`actions_source_inbox`); `all` would need another
/// index, a cost on every create.
const SOURCE_STATUSES: &[&str] = &["open", "snoozed", "resolved", "cancelled", "expired"];
pub const ENVIRONMENTS: &[&str] = &["live", "test", "all"];
const SCOPES: &[&str] = &["mine", "unassigned", store::NEEDS_MY_VOTE, "all"];
const PRIORITIES: &[&str] = &["low", "normal", "high", "urgent"];

/// A string parameter limited to `values`, the same list `query` checks.
pub fn string_enum(values: &[&str]) -> utoipa::openapi::Object {
    use utoipa::openapi::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.iter().copied()))
        .build()
}

fn status_schema() -> utoipa::openapi::Object {
    string_enum(STATUSES)
}

fn source_status_schema() -> utoipa::openapi::Object {
    string_enum(SOURCE_STATUSES)
}
fn priority_schema() -> utoipa::openapi::Object {
    string_enum(PRIORITIES)
}
pub fn environment_schema() -> utoipa::openapi::Object {
    string_enum(ENVIRONMENTS)
}
fn scope_schema() -> utoipa::openapi::Object {
    string_enum(SCOPES)
}

fn one_of(
    field: &str,
    value: Option<&str>,
    allowed: &[&str],
    default: &str,
    errs: &mut Vec<FieldError>,
) -> String {
    let v = value.unwrap_or(default);
    if !allowed.contains(&v) {
        errs.push(FieldError::new(
            field,
            format!("`{v}` is not valid; use one of {}", allowed.join(", ")),
        ));
    }
    v.to_owned()
}

/// A page of the inbox and whether more matched than the limit.
pub async fn list(
    s: &Services,
    user: UserCaller,
    p: InboxParams,
    now: time::Timestamp,
) -> Result<(Vec<ActionRecord>, bool)> {
    let Some(q) = query(&user, p, now)? else {
        return Ok((Vec::new(), false));
    };
    let limit = q.limit;
    let mut rows =
        s.db.read(move |c| {
            let matches = store::matches(c, &q)?;
            let mut rows = store::inbox(c, &q, &matches)?;
            crate::store::work::annotate(c, &mut rows)?;
            Ok(rows)
        })
        .await?;
    let has_more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    Ok((rows, has_more))
}

/// How far down the inbox the "next" link looks for a request the person
/// can act on, a page at a time.
const NEXT_PAGE: i64 = 50;
pub const NEXT_LOOKS_AT: i64 = 200;

/// What follows a decision in the inbox (`next_to_decide`).
#[derive(Debug, PartialEq)]
pub enum Next {
    /// The next request the person can act on: (id, title).
    Request(String, String),
    /// Nothing else open that they can act on.
    Nothing,
    /// None among the first `NEXT_LOOKS_AT` open requests, and more follow.
    NotNear,
}

/// The first open request of the inbox (its default order, in
/// `environment`) other than `except` that the person can act on now: one
/// the Action page offers them a decision on (not their own request, not
/// restricted to others; `access::ActionAccess::offers_decision`) and, under
/// an approval policy, whose current version they have not voted on. Looks
/// at the first `NEXT_LOOKS_AT`.
pub async fn next_to_decide(
    s: &Services,
    user: UserCaller,
    environment: Environment,
    except: String,
) -> Result<Next> {
    let Ok(me) = user.active_or_404().cloned() else {
        return Ok(Next::Nothing);
    };
    let mut after: Option<String> = None;
    for _ in 0..NEXT_LOOKS_AT / NEXT_PAGE {
        let after_page = after.is_some();
        let params = InboxParams {
            environment: Some(environment.as_str().to_owned()),
            limit: Some(NEXT_PAGE),
            starting_after: after.take(),
            ..Default::default()
        };
        let (rows, more) = match list(s, user.clone(), params, s.clock.now()).await {
            Ok(page) => page,
            // The last row of the page before left the person's inbox
            // meanwhile (restricted to others, say): say it looked no further.
            Err(e) if after_page && e.code == crate::error::Code::ValidationError => {
                return Ok(Next::NotNear);
            }
            Err(e) => return Err(e),
        };
        after = rows.last().map(|a| a.id.clone());
        let candidates: Vec<ActionRecord> = rows
            .into_iter()
            .filter(|a| {
                a.id != except
                    && crate::service::actions::access_of(
                        a,
                        me.role,
                        &user.user_id,
                        &user.email,
                        &user.account_created_at,
                    )
                    .offers_decision()
            })
            .collect();
        let user_id = user.user_id.clone();
        let found =
            s.db.read(move |c| {
                for a in candidates {
                    let voted = a.spec.approval_policy.is_some()
                        && crate::store::votes::of_user(c, &a.id, a.action_version, &user_id)?
                            .is_some();
                    if !voted {
                        return Ok(Some((a.id, a.spec.title)));
                    }
                }
                Ok(None)
            })
            .await?;
        if let Some((id, title)) = found {
            return Ok(Next::Request(id, title));
        }
        if !more || after.is_none() {
            return Ok(Next::Nothing);
        }
    }
    Ok(Next::NotNear)
}

/// Query string of GET /v1/source/actions: the Source's own Actions.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct SourceActionParams {
    /// open (default), snoozed, resolved, cancelled, expired
    #[param(schema_with = source_status_schema)]
    pub status: Option<String>,
    /// low, normal, high, urgent
    #[param(schema_with = priority_schema)]
    pub priority: Option<String>,
    /// 1..200, default 100
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// The id of the last Action of the previous page: the page that
    /// follows it in this list's order. One of this Source's Actions in the
    /// key's environment, else 422. Empty: the first page.
    #[param(pattern = "^(act_[0-7][0-9A-HJKMNP-TV-Z]{25})?$")]
    pub starting_after: Option<String>,
}

/// GET /v1/source/actions: the Source's own Actions in its key's
/// environment, in the inbox's order (most pressing first, then oldest),
/// by the same query as `GET /v1/me/actions?source_id=` for an owner, so
/// restricted ones included. A cursor that is not one of them is 422.
pub async fn list_for_source(
    s: &Services,
    src: SourceCaller,
    p: SourceActionParams,
    now: time::Timestamp,
) -> Result<(Vec<ActionRecord>, bool)> {
    let mut errs = Vec::new();
    let status = one_of(
        "status",
        p.status.as_deref(),
        SOURCE_STATUSES,
        "open",
        &mut errs,
    );
    if let Some(pr) = &p.priority
        && Priority::parse(pr).is_none()
    {
        errs.push(FieldError::new(
            "priority",
            format!("`{pr}` is not valid; use one of low, normal, high, urgent"),
        ));
    }
    let limit = p.limit.unwrap_or(100);
    if !(1..=200).contains(&limit) {
        errs.push(FieldError::new("limit", "limit must be between 1 and 200"));
    }
    let after = p.starting_after.filter(|s| !s.is_empty());
    if let Some(e) = after.as_deref().and_then(|a| {
        crate::domain::ids::cursor_problem(
            "starting_after",
            a,
            crate::domain::ids::ACTION,
            "an Action",
        )
    }) {
        errs.push(e);
    }
    if !errs.is_empty() {
        return Err(Error::validation(errs));
    }
    let q = InboxQuery {
        workspace_id: src.workspace_id.clone(),
        user_id: String::new(),
        user_email: String::new(),
        user_since: String::new(),
        sees_restricted: true,
        may_vote: false,
        status,
        search: None,
        source_id: Some(src.source_id.clone()),
        run_id: None,
        priority: p.priority,
        environment: Some(src.environment),
        scope: "all".into(),
        limit,
        now: time::format(now),
        after,
    };
    let mut rows =
        s.db.read(move |c| {
            if let Some(a) = &q.after
                && let Err(e) = crate::service::actions::owned(c, &src, a)
            {
                // Only "not this Source's": a failed read is not the caller's.
                if e.code != crate::error::Code::ActionNotFound {
                    return Err(e);
                }
                return Err(Error::unknown_cursor(
                    &crate::domain::ids::Cursor::starting_after(a.as_str()),
                    &format!(
                        "an Action of this Source in the {} environment (its key's)",
                        src.environment.as_str()
                    ),
                ));
            }
            let matches = store::matches(c, &q)?;
            let mut rows = store::inbox(c, &q, &matches)?;
            crate::store::work::annotate(c, &mut rows)?;
            Ok(rows)
        })
        .await?;
    let has_more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    Ok((rows, has_more))
}

/// A page of the inbox, whether more matched, and the tab counts under the
/// same filters (None for a search too broad to count): the dashboard's
/// list, read in one go so a search is looked up in the index once.
pub async fn list_with_counts(
    s: &Services,
    user: UserCaller,
    p: InboxParams,
    now: time::Timestamp,
) -> Result<(Vec<ActionRecord>, bool, Option<store::InboxCounts>)> {
    let Some(q) = query(&user, p, now)? else {
        return Ok((Vec::new(), false, Some(store::InboxCounts::default())));
    };
    let limit = q.limit;
    let (mut rows, counts) =
        s.db.read(move |c| {
            let matches = store::matches(c, &q)?;
            let mut rows = store::inbox(c, &q, &matches)?;
            crate::store::work::annotate(c, &mut rows)?;
            let counts = store::inbox_counts(c, &q, &matches)?;
            Ok((rows, counts))
        })
        .await?;
    let has_more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    Ok((rows, has_more, counts))
}

/// How many Actions each status tab holds under the same filters (the
/// dashboard's tabs, `GET /v1/bootstrap`), each up to `store::COUNT_CAP`;
/// None for a search too broad to count (`store::inbox_counts`).
/// `now` decides which snoozed Actions are back; pass the list's own.
pub async fn counts(
    s: &Services,
    user: &UserCaller,
    p: InboxParams,
    now: time::Timestamp,
) -> Result<Option<store::InboxCounts>> {
    let Some(q) = query(user, p, now)? else {
        return Ok(Some(store::InboxCounts::default()));
    };
    s.db.read(move |c| {
        let matches = store::matches(c, &q)?;
        store::inbox_counts(c, &q, &matches)
    })
    .await
}

/// A count as the dashboard shows it: "1,000+" from the cap on.
const _: () = assert!(store::COUNT_CAP == 1000, "count_label spells the cap out");
pub fn count_label(n: i64) -> String {
    if n >= store::COUNT_CAP {
        "1,000+".to_owned()
    } else {
        n.to_string()
    }
}

/// Validates the filters into a query on the caller's active workspace;
/// None when the caller belongs to no workspace.
pub fn query(
    user: &UserCaller,
    mut p: InboxParams,
    now: time::Timestamp,
) -> Result<Option<InboxQuery>> {
    let mut errs = Vec::new();
    let status = one_of("status", p.status.as_deref(), STATUSES, "open", &mut errs);
    let env = one_of(
        "environment",
        p.environment.as_deref(),
        ENVIRONMENTS,
        "live",
        &mut errs,
    );
    // `routing` is an older name of `scope`: an error names the one sent.
    let scope = one_of(
        if p.scope.is_some() {
            "scope"
        } else {
            "routing"
        },
        p.scope.as_deref().or(p.routing.as_deref()),
        SCOPES,
        "all",
        &mut errs,
    );
    if p.scope.is_some()
        && let Some(r) = &p.routing
    {
        one_of("routing", Some(r), SCOPES, "all", &mut errs);
    }
    if p.search
        .as_ref()
        .is_some_and(|q| q.chars().count() > MAX_SEARCH)
    {
        errs.push(FieldError::new(
            "search",
            format!("search is longer than {MAX_SEARCH} characters"),
        ));
    }
    if let Some(pr) = &p.priority
        && Priority::parse(pr).is_none()
    {
        errs.push(FieldError::new(
            "priority",
            format!("`{pr}` is not valid; use one of low, normal, high, urgent"),
        ));
    }
    let limit = p.limit.unwrap_or(100);
    if !(1..=200).contains(&limit) {
        errs.push(FieldError::new("limit", "limit must be between 1 and 200"));
    }
    // An empty cursor is the first page, as an absent one (as on runs).
    p.starting_after = p.starting_after.filter(|s| !s.is_empty());
    if let Some(e) = p.starting_after.as_deref().and_then(|a| {
        crate::domain::ids::cursor_problem(
            "starting_after",
            a,
            crate::domain::ids::ACTION,
            "an Action",
        )
    }) {
        errs.push(e);
    }
    // An empty `source_id` is no filter, as an empty search or cursor; one
    // that is no Source id is refused here, one of no Source of the
    // workspace when the list is read (`store::check_source_filter`).
    p.source_id = p.source_id.filter(|s| !s.is_empty());
    if let Some(id) = &p.source_id
        && !crate::domain::ids::is_id(id, crate::domain::ids::SOURCE)
    {
        errs.push(FieldError::new(
            "source_id",
            "source_id must be a Source id (src_ and 26 upper-case letters and digits), as GET /v1/sources lists them",
        ));
    }
    p.run_id = p.run_id.filter(|s| !s.is_empty());
    if let Some(id) = &p.run_id
        && !crate::domain::ids::is_id(id, crate::domain::ids::RUN)
    {
        errs.push(FieldError::new(
            "run_id",
            "run_id must be a run id (run_ and 26 upper-case letters and digits), as GET /v1/runs lists them",
        ));
    }
    if !errs.is_empty() {
        return Err(Error::validation(errs));
    }
    let Some(m) = user.active_workspace() else {
        // No workspace, no list: and no Action to continue after.
        return match &p.starting_after {
            Some(id) => Err(store::unknown_after(id)),
            None => Ok(None),
        };
    };
    let q = InboxQuery {
        workspace_id: m.workspace_id.clone(),
        user_id: user.user_id.clone(),
        user_email: user.email.clone(),
        user_since: user.account_created_at.clone(),
        sees_restricted: access::manages_workspace(m.role),
        may_vote: access::may_vote(m.role),
        status,
        search: p.search.filter(|q| !q.trim().is_empty()),
        source_id: p.source_id,
        run_id: p.run_id,
        priority: p.priority,
        environment: Environment::parse(&env),
        scope,
        limit,
        now: time::format(now),
        after: p.starting_after,
    };
    Ok(Some(q))
}
