//! Action use cases up to the decision: create (idempotent, deduplicated),
//! read (with the long poll), patch (versioned). Terminal transitions live in
//! `decisions`. Also the visibility rules both share.

use std::time::Duration;

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::domain::access::{ActionAccess, Role};
use crate::domain::action::{
    ActionOut, ActionRecord, Actor, Environment, Status, ValidationContext, Work, validate_spec,
};
use crate::domain::billing::Resource;
use crate::domain::decision::{self, MAX_REASON};
use crate::domain::event::{ActionEvent, HistoryEntry};
use crate::domain::validate::{apply_patch, parse_create_bytes};
use crate::domain::{fingerprint, ids, time};
use crate::error::{Code, Error, FieldError, Result};
use crate::service::Services;
use crate::service::billing;
use crate::service::caller::{Caller, SourceCaller, UserCaller};
use crate::service::effects::{self, On};
use crate::service::idempotency::{self, Outcome, Reply, Serialised};
use crate::service::notifications;
use crate::store::{actions as store, events, workspaces};

/// Longest a long poll or blocking create may hold (guide: "Limits").
pub const MAX_WAIT: Duration = Duration::from_secs(30);

fn validation_ctx(
    s: &Services,
    now: time::Timestamp,
    team: bool,
    patched: Option<Vec<String>>,
) -> ValidationContext {
    ValidationContext {
        now,
        allow_private_callbacks: s.config.allow_private_callbacks,
        team_workspace: team,
        patched,
    }
}

/// `{data: Action, idempotent_replay}` as a value, for replies the
/// idempotency store keeps and replays.
pub(crate) fn envelope(a: &ActionRecord, replay: bool) -> Value {
    json!({ "data": ActionOut::from(a), "idempotent_replay": replay })
}

/// `envelope` as JSON text, serialised straight from the record (a create
/// sends and stores this text): no `Value` map built and dropped between.
fn envelope_json(a: &ActionRecord, replay: bool) -> Result<String> {
    Ok(crate::domain::action::envelope_json(a, replay)?)
}

/// Reads an Action the Source owns, in the key's environment; 404 otherwise.
pub(crate) fn owned(c: &Connection, src: &SourceCaller, id: &str) -> Result<ActionRecord> {
    match store::get(c, id)? {
        Some(a) if a.source_id == src.source_id && a.environment == src.environment => Ok(a),
        _ => Err(Error::action_not_found()),
    }
}

/// The person's relation to the Action, when they may see it (the rules are
/// in `domain::access`).
pub(crate) fn access(a: &ActionRecord, u: &UserCaller) -> Option<ActionAccess> {
    let role = u.role_in(&a.workspace_id)?;
    let access = access_of(a, role, &u.user_id, &u.email, &u.account_created_at);
    access.can_see().then_some(access)
}

/// The person's relation to the Action with their role as it is in this
/// transaction, when they may see it. Writes decide with it: the role read
/// at authentication may be stale by the time the writer runs the job (a
/// demotion or removal committed in between), as the member and invitation
/// routes already assume.
pub(crate) fn access_now(
    c: &Connection,
    a: &ActionRecord,
    u: &UserCaller,
) -> Result<Option<ActionAccess>> {
    let Some(role) = workspaces::role_of(c, &a.workspace_id, &u.user_id)? else {
        return Ok(None);
    };
    let access = access_of(a, role, &u.user_id, &u.email, &u.account_created_at);
    Ok(access.can_see().then_some(access))
}

/// The 403 for work on an Action the caller may see but not do: a viewer's
/// names `details.required_role: "reviewer"` (their role is what stands in
/// the way); anyone else's is refused because only the Action's listed
/// reviewers work on it (restricted, or voted on), which the message says
/// and `details.listed: false` marks: no role would help.
pub(crate) fn refused(acc: ActionAccess, message: &str) -> Error {
    match crate::domain::access::required_for_decision(acc.role) {
        Some(role) => {
            Error::new(Code::Forbidden, message).with_detail("required_role", role.as_str())
        }
        None => Error::new(
            Code::Forbidden,
            format!("{message}: only the reviewers listed on this Action do"),
        )
        .with_detail("listed", false),
    }
}

/// The relation to the Action of any member (`role` in its workspace),
/// whether or not they may see it: the assignment rules ask it of the
/// person being assigned. `account_created_at`: when their account was
/// created (see [`is_listed`]).
pub(crate) fn access_of(
    a: &ActionRecord,
    role: Role,
    user_id: &str,
    email: &str,
    account_created_at: &str,
) -> ActionAccess {
    ActionAccess {
        role,
        visibility: a.spec.visibility(),
        listed: is_listed(a, user_id, email, account_created_at),
        approval: a.spec.approval_policy.is_some(),
        own_request: a.spec.forbids_self_approval(user_id, email),
    }
}

/// Whether the Action's reviewer list names the person: by user id, or by
/// their address if their account already existed when the Action was
/// created. Everyone a list names was a member then (the create checks
/// it), so a later account with that address (one made after its holder
/// deleted theirs, or an address handed to someone new) is not the person
/// listed and inherits nothing. (Being the requester still goes by the
/// address alone: that only ever refuses.)
fn is_listed(a: &ActionRecord, user_id: &str, email: &str, account_created_at: &str) -> bool {
    a.spec
        .reviewer_user_ids
        .as_ref()
        .is_some_and(|l| l.iter().any(|id| id == user_id))
        || (account_created_at <= a.created_at.as_str()
            && a.spec
                .reviewer_emails
                .as_ref()
                .is_some_and(|l| l.iter().any(|e| e.eq_ignore_ascii_case(email))))
}

pub(crate) fn check_reason(reason: &Option<String>) -> Result<()> {
    check_note("reason", reason.as_deref())
}

/// A free text a person reads beside the Action (a reason, an outcome's
/// message): at most `MAX_REASON` characters and no direction control, as
/// other reviewers, the Source, the receipt's reader and e-mails show it.
pub(crate) fn check_note(field: &str, text: Option<&str>) -> Result<()> {
    if text.is_some_and(|r| r.chars().count() > MAX_REASON) {
        return Err(Error::field(
            field,
            format!("{field} is longer than {MAX_REASON} characters"),
        ));
    }
    if text.is_some_and(crate::domain::validate::has_direction_override) {
        return Err(Error::field(
            field,
            crate::domain::validate::direction_refused(field),
        ));
    }
    Ok(())
}

/// What POST /v1/actions answers. A fresh create carries its body as the JSON
/// text that was serialised once, before the write, and also stored for
/// replays; anything else (a replay, a dedupe match, a held create) a value.
pub enum Created {
    Fresh(Serialised),
    Reply(Reply),
}

/// The route a create's request hash covers.
const ROUTE: &str = "POST /v1/actions";

/// The create's hash as stored before documented defaults were left out, to
/// compare a retry with such a row (rare: the body is parsed again).
fn typed_hash_v1(body: &[u8]) -> Option<String> {
    let request = parse_create_bytes(body).ok()?;
    idempotency::typed_request_hash_v1(ROUTE, &request).ok()
}

/// POST /v1/actions. With `hold` (X-Service-Blocking), waits up to that long for
/// a decision; the idempotency key stays in flight meanwhile, so a retry gets
/// IDEMPOTENCY_CONFLICT rather than a second answer.
pub async fn create(
    s: &Services,
    src: SourceCaller,
    body: &[u8],
    key: Option<String>,
    hold: Option<Duration>,
) -> Result<Created> {
    // Held from here until the answer is sent, the blocking hold included.
    let _guard = key
        .as_deref()
        .map(|k| s.inflight.acquire(&src, k))
        .transpose()?;
    // A stored answer is looked up inside the write (below), so a keyed create
    // costs no extra read. Only a body that fails validation looks first: an
    // exact retry then still gets the original response even when
    // re-validating it now fails (e.g. an `expires_at` that has passed since).
    // With a key, the request is identified by the hash of what was parsed.
    let clock_now = s.clock.now();
    let ctx = validation_ctx(s, clock_now, src.team_workspace, None);
    let parsed = parse_create_bytes(body);
    let request_hash = match (&key, &parsed) {
        (Some(_), Ok(request)) => Some(idempotency::typed_request_hash(
            ROUTE,
            &*crate::domain::validate::without_defaults(request),
        )?),
        _ => None,
    };
    let spec = match parsed
        .and_then(|spec| validate_spec(crate::domain::validate::empty_as_absent(spec), &ctx))
    {
        Ok(spec) => spec,
        Err(invalid) => {
            // Without a key there is nothing to replay; a body that is not
            // JSON at all cannot be a retry of anything.
            if key.is_none()
                || request_hash.is_none()
                    && serde_json::from_slice::<serde::de::IgnoredAny>(body).is_err()
            {
                return Err(invalid);
            }
            return match idempotency::lookup(&s.db, &src, key.as_deref(), request_hash.as_deref())
                .await?
            {
                Some(earlier) => {
                    let reply = idempotency::replay_typed(
                        earlier,
                        request_hash.as_deref(),
                        ROUTE,
                        body,
                        || typed_hash_v1(body),
                    )?;
                    held(s, src, reply, hold).await
                }
                None => Err(invalid),
            };
        }
    };
    let request_hash = request_hash.unwrap_or_default();
    // Everything that needs no database is prepared here, so the single writer
    // thread only runs SQL: id, fingerprint, stored JSON and the response text
    // (sent as the HTTP body and, with a key, stored as is).
    let now = time::format(clock_now);
    let work = Work::from_spec(&spec);
    let a = ActionRecord {
        id: ids::new_ordered_id(ids::ACTION),
        workspace_id: src.workspace_id.clone(),
        source_id: src.source_id.clone(),
        environment: src.environment,
        status: Status::Open,
        action_version: 1,
        fingerprint: fingerprint::fingerprint(&spec),
        spec,
        resolution: None,
        receipt: None,
        outcome: None,
        snoozed_until: None,
        created_at: now.clone(),
        updated_at: now,
        closed_at: None,
        work,
    };
    let spec_json = serde_json::to_string(&a.spec)?;
    // Serialised before the write unless the Action names people, whom the
    // answer completes from the workspace's members as GET does.
    let names_people = a.work.assignee.is_some() || a.work.requested_by.is_some();
    let created = match names_people {
        true => None,
        false => Some(envelope_json(&a, false)?),
    };
    let id = a.id.clone();
    let writer_src = src.clone();
    let writer_hash = request_hash.clone();
    let nctx = notifications::Ctx::of(s);
    let config = s.config.clone();
    // Every check comes before the first write (a replay, a reused key,
    // people, run, dedupe, plan): no savepoint.
    let outcome = s
        .write_checks_first(move |c, fx| {
            let src = writer_src;
            crate::service::sources::check_not_revoked(c, &src.source_id)?;
            idempotency::run_serialised(c, fx, &src, key.as_deref(), &writer_hash, &a.created_at, |c, fx| {
                if let Some(dk) = &a.spec.dedupe_key
                    && let Some(open) = store::open_by_dedupe_key(c, &src.source_id, src.environment, dk)?
                {
                    // An Action stored before `empty_as_absent` kept
                    // `[]`, `{}` or `""` in its fingerprint: a retry of that
                    // create matches it still.
                    if open.fingerprint == a.fingerprint
                        || fingerprint::fingerprint(&crate::domain::validate::empty_as_absent(
                            open.spec.clone(),
                        )) == a.fingerprint
                    {
                        let json = envelope_json(&open, true)?;
                        return Ok(Serialised { status: 200, json, rebuilt_from: None });
                    }
                    return Err(Error::new(Code::DedupeConflict, "an open Action with this dedupe_key has different content; cancel or resolve it first, or use another dedupe_key")
                        .with_detail("action_id", open.id.clone())
                        .with_detail("fingerprint", open.fingerprint));
                }
                // After the dedupe match: a retry of what is already open is
                // answered with it whatever became of its people or run since.
                if let Some(run_id) = &a.spec.run_id {
                    crate::service::runs::check_attachable(c, &src, run_id)?;
                }
                check_people(c, &a)?;
                // Inside the writer, so concurrent creates cannot overshoot
                // the plan (guide: "Plans and billing").
                billing::check(c, &config.billing, &src.workspace_id, Resource::Actions, clock_now)?;
                // A replay rebuilds the answer from the Action (only its
                // id is stored) unless people are completed into it; the
                // Action then keeps the key, to find that row by.
                let answer_key = key.as_deref().filter(|_| created.is_some());
                store::insert(c, &a, &spec_json, answer_key)?;
                billing::record_use(c, &src.workspace_id, Resource::Actions, clock_now)?;
                let event = ActionEvent::Created { fingerprint: a.fingerprint.clone() };
                effects::record(c, fx, On::of(&a), &Actor::source(&src.source_id), 1, event, &a.created_at)?;
                notifications::action_created(c, fx, &nctx, &a, &a.created_at)?;
                // People named by id or e-mail are shown as GET shows them
                // (completed from the members); only then is the answer
                // serialised here, in the writer.
                // A replay rebuilds the answer from the Action (only
                // its id is stored) unless people were completed into it.
                let (json, rebuilt_from) = match created {
                    None => {
                        let mut shown = a.clone();
                        crate::store::work::annotate(c, std::slice::from_mut(&mut shown))?;
                        (envelope_json(&shown, false)?, None)
                    }
                    Some(json) => (json, Some(a.id.clone())),
                };
                Ok(Serialised { status: 201, json, rebuilt_from })
            })
        })
        .await?;
    match outcome {
        Outcome::Fresh(fresh) if fresh.status == 201 => match hold {
            Some(wait) => hold_open(s, src, id, 201, false, wait)
                .await
                .map(Created::Reply),
            None => Ok(Created::Fresh(fresh)),
        },
        // A dedupe match (rare): back to a value, to hold on the open Action.
        Outcome::Fresh(other) => {
            let reply = Reply {
                status: other.status,
                body: serde_json::from_str(&other.json)?,
                replayed: false,
            };
            held(s, src, reply, hold).await
        }
        Outcome::Replayed(earlier) => held(s, src, earlier, hold).await,
        Outcome::Mismatch(earlier) => {
            let reply =
                idempotency::replay_typed(earlier, Some(&request_hash), ROUTE, body, || {
                    typed_hash_v1(body)
                })?;
            held(s, src, reply, hold).await
        }
    }
}

/// `reply`, or with `hold`, what it holds for (see `wait_for_close`).
async fn held(
    s: &Services,
    src: SourceCaller,
    reply: Reply,
    hold: Option<Duration>,
) -> Result<Created> {
    match hold {
        Some(wait) => wait_for_close(s, src, reply, wait)
            .await
            .map(Created::Reply),
        None => Ok(Created::Reply(reply)),
    }
}

/// The people an Action names, checked against the workspace's members
/// before it is made, so that someone can decide it (guide: "The Action
/// object"): its requester (by id) and every listed reviewer are members;
/// someone listed may decide it, and enough of them to meet an approval
/// policy may vote; an assignee is a member who may decide it, as an
/// assignment requires (a viewer, someone not listed on a restricted
/// Action or the requester would hold it and no one else could claim it).
fn check_people(c: &Connection, a: &ActionRecord) -> Result<()> {
    let spec = &a.spec;
    if spec.assignee_user_id.is_none()
        && spec.assignee_email.is_none()
        && spec.reviewer_user_ids.is_none()
        && spec.reviewer_emails.is_none()
        && spec.requested_by_user_id.is_none()
    {
        return Ok(());
    }
    let ws = &a.workspace_id;
    let mut errs = Vec::new();
    if let Some(id) = &spec.requested_by_user_id
        && workspaces::role_of(c, ws, id)?.is_none()
    {
        errs.push(FieldError::new(
            "requested_by_user_id",
            format!(
                "`{id}` is not a member of this workspace: name a member, or give requested_by_email instead"
            ),
        ));
    } else if let (Some(id), Some(email)) = (&spec.requested_by_user_id, &spec.requested_by_email)
        && let Some(m) = crate::store::work::member(c, ws, id)?
        && !m.email.eq_ignore_ascii_case(email)
    {
        // One requester: separation of duties and the receipt name one.
        errs.push(FieldError::new(
            "requested_by_email",
            format!(
                "requested_by_user_id is {} and requested_by_email `{email}`: two different people; give one",
                m.email
            ),
        ));
    }
    let mut listed: Vec<crate::store::work::Member> = Vec::new();
    for (field, entries, by_id) in [
        ("reviewer_user_ids", &spec.reviewer_user_ids, true),
        ("reviewer_emails", &spec.reviewer_emails, false),
    ] {
        for (i, v) in entries.iter().flatten().enumerate() {
            let m = if by_id {
                crate::store::work::member(c, ws, v)?
            } else {
                crate::store::work::member_by_email(c, ws, v)?
            };
            match m {
                Some(m) if listed.iter().any(|l| l.user_id == m.user_id) => {}
                // An address lists only an account as old as the Action
                // (`is_listed`): one made while this create waited for the
                // writer (or before a clock step back) would be named and
                // never listed.
                Some(m) if !by_id && m.created_at.as_str() > a.created_at.as_str() => {
                    errs.push(FieldError::new(
                        format!("{field}[{i}]"),
                        format!(
                            "`{v}` became an account while this request was being made: send it again"
                        ),
                    ))
                }
                Some(m) => listed.push(m),
                None => errs.push(FieldError::new(
                    format!("{field}[{i}]"),
                    format!(
                        "`{v}` is not a member of this workspace: invite them first, or list someone who is"
                    ),
                )),
            }
        }
    }
    let list_field = if spec.reviewer_user_ids.is_some() {
        "reviewer_user_ids"
    } else {
        "reviewer_emails"
    };
    if errs.is_empty() && !listed.is_empty() {
        let deciders = listed
            .iter()
            .filter(|m| access_of(a, m.role, &m.user_id, &m.email, &m.created_at).offers_decision())
            .count();
        if deciders == 0 {
            errs.push(FieldError::new(
                list_field,
                "no one listed may decide this Action: viewers only read it, and the person it is requested by may not decide their own request; list a reviewer, admin or owner",
            ));
        } else if let Some(p) = &spec.approval_policy
            && usize::try_from(p.required_approvals).unwrap_or(usize::MAX) > deciders
        {
            errs.push(FieldError::new(
                "approval_policy.required_approvals",
                format!(
                    "{} approvals are required but only {deciders} of the listed reviewers may vote (viewers and the person it is requested by may not): it could never be approved",
                    p.required_approvals
                ),
            ));
        } else if let Some(p) = &spec.approval_policy
            && let Some(stall) = crate::domain::approval::can_stall(p, deciders)
        {
            errs.push(FieldError::new("approval_policy.reject_threshold", stall));
        }
    }
    if !errs.is_empty() {
        return Err(Error::validation(errs));
    }
    crate::service::work::assignee_of(
        c,
        a,
        spec.assignee_user_id.as_ref(),
        spec.assignee_email.as_ref(),
    )?;
    Ok(())
}

/// Waits until the Action leaves `open`, a reviewer asks its Source a
/// question (a context request), or `wait` passes, then returns it as it is.
pub async fn get_for_source(
    s: &Services,
    src: SourceCaller,
    id: String,
    wait: Duration,
) -> Result<ActionRecord> {
    let sub = s.waiters.subscribe(&id);
    let notified = sub.notified();
    tokio::pin!(notified);
    notified.as_mut().enable();
    let read = |src: SourceCaller, id: String| s.db.read(move |c| owned(c, &src, &id));
    let a = read(src.clone(), id.clone()).await?;
    if a.status != Status::Open || wait.is_zero() {
        return Ok(a);
    }
    // Not kept while waiting: a held poll should cost as little as possible.
    drop(a);
    // Woken, timed out or stopping, the answer is the Action as it is now,
    // to a key that still works: one that ended meanwhile (rotated away with
    // no overlap, after a leak) gets the 401 a new request would.
    tokio::select! {
        _ = tokio::time::timeout(wait.min(MAX_WAIT), notified) => {}
        () = s.stopping() => {}
    }
    // The key cache answers for a key in use (every rotation or revocation
    // clears it); only a miss costs a read.
    let now = s.clock.now();
    let works = match s.key_cache.get(&src.key_hash.0) {
        Some(owner) => owner.works_at(now),
        None => {
            let (hash, at) = (src.key_hash.0.clone(), time::format(now));
            s.db.read(move |c| crate::store::sources::by_key_hash(c, &hash, &at))
                .await?
                .is_some()
        }
    };
    if !works {
        s.key_cache.forget(&src.key_hash.0);
        return Err(Error::new(
            Code::InvalidApiKey,
            "unknown or rotated Source key: it ended while this request waited",
        ));
    }
    read(src, id).await
}

/// Holds until the Action is closed or `wait` passes (X-Service-Blocking).
async fn wait_for_close(
    s: &Services,
    src: SourceCaller,
    reply: Reply,
    wait: Duration,
) -> Result<Reply> {
    let Some(id) = reply.body["data"]["id"].as_str().map(str::to_owned) else {
        return Ok(reply);
    };
    if reply.body["data"]["status"] != "open" {
        return Ok(reply);
    }
    hold_open(s, src, id, reply.status, reply.replayed, wait).await
}

/// Holds on the open Action `id`; answers with it as it is when the wait ends.
async fn hold_open(
    s: &Services,
    src: SourceCaller,
    id: String,
    status: u16,
    replayed: bool,
    wait: Duration,
) -> Result<Reply> {
    let a = get_for_source(s, src, id, wait).await?;
    Ok(Reply {
        status,
        body: envelope(&a, replayed),
        replayed,
    })
}

/// `environment` query of GET /v1/actions/{id}: live (default), test or all.
#[derive(Clone, Copy, Debug)]
pub enum EnvFilter {
    Only(Environment),
    All,
}

impl EnvFilter {
    pub fn parse(raw: Option<&str>) -> Result<Self> {
        match raw.unwrap_or("live") {
            "all" => Ok(Self::All),
            other => Environment::parse(other).map(Self::Only).ok_or_else(|| {
                Error::field(
                    "environment",
                    format!("unknown environment `{other}`; use live, test or all"),
                )
            }),
        }
    }
    pub fn admits(self, env: Environment) -> bool {
        match self {
            Self::All => true,
            Self::Only(e) => e == env,
        }
    }
}

/// GET /v1/actions/{id}: the Action and its history, for its Source or a member.
pub async fn get(
    s: &Services,
    caller: Caller,
    id: String,
    env: EnvFilter,
) -> Result<(ActionRecord, Vec<HistoryEntry>)> {
    s.db.read(move |c| {
        let a = match &caller {
            Caller::Source(src) => owned(c, src, &id)?,
            Caller::User(u) => match store::get(c, &id)? {
                Some(a) if access(&a, u).is_some() => {
                    if !env.admits(a.environment) {
                        // Theirs to see, in the other environment: say how.
                        let other = a.environment.as_str();
                        return Err(Error::new(
                            Code::ActionNotFound,
                            format!(
                                "no Action with that id in this environment: it is a {other} Action; read it with ?environment={other} (or all)"
                            ),
                        )
                        .with_detail("environment", other));
                    }
                    a
                }
                _ => return Err(Error::action_not_found()),
            },
        };
        let history = events::history(c, &a.id)?;
        Ok((a, history))
    })
    .await
}

/// Whether `a` is snoozed (at `now`) to a time at or after its `expires_at`.
fn snooze_outlasts_expiry(a: &ActionRecord, now: &str) -> bool {
    let (Some(until), Some(expires)) = (a.snoozed_until.as_deref(), a.spec.expires_at.as_deref())
    else {
        return false;
    };
    until > now
        && matches!(
            (time::parse(until), time::parse(expires)),
            (Some(u), Some(e)) if u >= e
        )
}

/// PATCH /v1/actions/{id}: a material change advances the version (guide: "Binding: action_version and fingerprint").
pub async fn patch(
    s: &Services,
    src: SourceCaller,
    id: String,
    mut body: Value,
) -> Result<ActionRecord> {
    // The version the change is based on: a precondition, not a field.
    let base = decision::patch_base(&mut body)?;
    let fields = body.as_object().map(|o| o.keys().cloned().collect());
    let now = s.clock.now();
    let vctx = validation_ctx(s, now, src.team_workspace, fields);
    let svc = s.clone();
    s.write(move |c, fx| {
        let mut a = owned(c, &src, &id)?;
        decision::ensure_open(&a, &time::format(now))?;
        let spec = validate_spec(apply_patch(&a.spec, body.clone())?, &vctx)?;
        // Already as asked (a retry of a change that was made): nothing to
        // refuse, whatever version it was based on.
        if spec == a.spec {
            return Ok(a);
        }
        decision::check_patch_base(&a, base)?;
        let fp = fingerprint::fingerprint(&spec);
        let material = fp != a.fingerprint;
        // What the reviewer saw before, so a stale decision can be shown the
        // difference (only fields whose value changed).
        let (old, new) = (serde_json::to_value(&a.spec)?, serde_json::to_value(&spec)?);
        let before: serde_json::Map<String, Value> = body
            .as_object()
            .map(|o| {
                o.keys()
                    .filter(|k| old.get(k.as_str()) != new.get(k.as_str()))
                    .map(|k| {
                        (
                            k.clone(),
                            old.get(k.as_str()).cloned().unwrap_or(Value::Null),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        if material {
            a.action_version += 1;
        }
        a.fingerprint = fp;
        a.spec = spec;
        a.updated_at = time::format(now);
        store::update_spec(c, &a)?;
        if material {
            // The new content answers what reviewers asked (guide: "Context requests").
            let at = a.updated_at.clone();
            crate::service::controls::answer_context_requests(c, &mut a, &at)?;
            // Whoever voted on the version before, and the assignee, hear
            // that it asks something else now.
            let changed: Vec<String> = before
                .keys()
                .filter(|k| fingerprint::MATERIAL_FIELDS.contains(&k.as_str()))
                .cloned()
                .collect();
            notifications::action_changed(c, fx, &svc, &a, &changed, &at)?;
        }
        let fields = body
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        let event = ActionEvent::Updated {
            fields,
            material,
            fingerprint: a.fingerprint.clone(),
            before: before.clone(),
        };
        let actor = Actor::source(&src.source_id);
        effects::record(
            c,
            fx,
            On::of(&a),
            &actor,
            a.action_version,
            event,
            &a.updated_at,
        )?;
        if before.contains_key("expires_at") {
            notifications::action_updated(c, &a, &a.updated_at)?;
            // Snoozed past its new deadline, it would expire out of
            // everyone's sight (what a snooze may not do): the snooze ends
            // now, and whoever snoozed it hears it is back.
            if snooze_outlasts_expiry(&a, &a.updated_at) {
                let at = a.updated_at.clone();
                crate::store::work::set_snooze(c, &a.id, Some(&at), &at)?;
                a.snoozed_until = Some(at.clone());
                notifications::snooze_cut_short(c, &a.id, &at)?;
                let event = ActionEvent::Snoozed {
                    until: None,
                    reason: Some(format!(
                        "the Source moved expires_at to {}, before the snooze's end",
                        a.spec.expires_at.as_deref().unwrap_or_default()
                    )),
                };
                effects::record(c, fx, On::of(&a), &actor, a.action_version, event, &at)?;
            }
        }
        Ok(a)
    })
    .await
}
