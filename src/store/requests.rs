//! Control requests and context requests (guide: "Controls", "Context
//! requests"): rows of `control_requests` and `context_requests`, each read
//! with the requester's name. The rules (who may, which transitions) are in
//! `domain::requests` and `service::controls`.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::domain::requests::{ContextRequest, ControlRequest, RequestedBy};
use crate::error::Result;

const CONTROL: &str = "SELECT r.id, r.action_id, r.control_key, r.status, r.message, \
    r.requested_by, u.name, r.action_version, r.created_at, r.updated_at \
    FROM control_requests r LEFT JOIN users u ON u.id = r.requested_by";

fn control_row(r: &Row) -> rusqlite::Result<ControlRequest> {
    Ok(ControlRequest {
        id: r.get(0)?,
        object: "control_request",
        action_id: r.get(1)?,
        control_key: r.get(2)?,
        status: r.get(3)?,
        message: r.get(4)?,
        requested_by: RequestedBy {
            user_id: r.get(5)?,
            name: r.get(6)?,
        },
        action_version: r.get(7)?,
        created_at: r.get(8)?,
        updated_at: r.get(9)?,
    })
}

/// A new control request, with the invoker's Idempotency-Key if they sent one.
pub struct NewControl<'a> {
    pub request: &'a ControlRequest,
    pub idempotency_key: Option<&'a str>,
    pub request_hash: Option<&'a str>,
}

pub fn insert_control(c: &Connection, n: &NewControl) -> Result<()> {
    let r = n.request;
    c.prepare_cached(
        "INSERT INTO control_requests(id, action_id, control_key, status, message, requested_by,
            action_version, created_at, updated_at, idempotency_key, request_hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9, ?10)",
    )?
    .execute(params![
        r.id,
        r.action_id,
        r.control_key,
        r.status,
        r.message,
        r.requested_by.user_id,
        r.action_version,
        r.created_at,
        n.idempotency_key,
        n.request_hash
    ])?;
    Ok(())
}

pub fn control(c: &Connection, id: &str) -> Result<Option<ControlRequest>> {
    Ok(c.prepare_cached(&format!("{CONTROL} WHERE r.id = ?1"))?
        .query_row([id], control_row)
        .optional()?)
}

/// The request this user made with this Idempotency-Key, with its request hash.
pub fn control_by_key(
    c: &Connection,
    user_id: &str,
    key: &str,
) -> Result<Option<(ControlRequest, String)>> {
    let id_hash: Option<(String, String)> = c
        .prepare_cached(
            "SELECT id, coalesce(request_hash, '') FROM control_requests
              WHERE requested_by = ?1 AND idempotency_key = ?2",
        )?
        .query_row(params![user_id, key], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((id, hash)) = id_hash else {
        return Ok(None);
    };
    Ok(control(c, &id)?.map(|r| (r, hash)))
}

const CONTROLS_OF: &str = "WHERE r.action_id = ?1 ORDER BY r.created_at DESC, r.id DESC LIMIT ?2";

/// The page after a request: the index seeks to its time.
const CONTROLS_AFTER: &str = "WHERE r.action_id = ?1
       AND r.created_at <= ?2 AND (r.created_at < ?2 OR r.id < ?3)
     ORDER BY r.created_at DESC, r.id DESC LIMIT ?4";

/// An Action's control requests, newest first (ids are time-sortable ULIDs),
/// at most `limit`; after `after` (a request of this Action) when given.
/// `control_requests_by_action` seeks to the Action, and to the cursor's
/// time on a later page; requests of the same millisecond are ordered by id.
pub fn controls_of(
    c: &Connection,
    action_id: &str,
    after: Option<&ControlRequest>,
    limit: i64,
) -> Result<Vec<ControlRequest>> {
    let rows = match after {
        None => c
            .prepare_cached(&format!("{CONTROL} {CONTROLS_OF}"))?
            .query_map(params![action_id, limit], control_row)?
            .collect::<rusqlite::Result<_>>()?,
        Some(a) => c
            .prepare_cached(&format!("{CONTROL} {CONTROLS_AFTER}"))?
            .query_map(params![action_id, a.created_at, a.id, limit], control_row)?
            .collect::<rusqlite::Result<_>>()?,
    };
    Ok(rows)
}

/// Sets a request's status and message.
pub fn set_result(
    c: &Connection,
    id: &str,
    status: &str,
    message: Option<&str>,
    now: &str,
) -> Result<()> {
    c.prepare_cached(
        "UPDATE control_requests SET status = ?2, message = ?3, updated_at = ?4 WHERE id = ?1",
    )?
    .execute(params![id, status, message, now])?;
    Ok(())
}

const CONTEXT: &str = "SELECT r.id, r.action_id, r.question, r.status, r.requested_by, u.name, \
    r.created_at, r.answered_at, r.answered_in_version \
    FROM context_requests r LEFT JOIN users u ON u.id = r.requested_by";

fn context_row(r: &Row) -> rusqlite::Result<ContextRequest> {
    Ok(ContextRequest {
        id: r.get(0)?,
        object: "context_request",
        action_id: r.get(1)?,
        question: r.get(2)?,
        status: r.get(3)?,
        requested_by: RequestedBy {
            user_id: r.get(4)?,
            name: r.get(5)?,
        },
        created_at: r.get(6)?,
        answered_at: r.get(7)?,
        answered_in_version: r.get(8)?,
    })
}

/// A new context request, with its asker's Idempotency-Key and the hash
/// of what was asked, when given.
pub fn insert_context(
    c: &Connection,
    r: &ContextRequest,
    idempotency_key: Option<&str>,
    request_hash: Option<&str>,
) -> Result<()> {
    c.prepare_cached(
        "INSERT INTO context_requests(id, action_id, question, status, requested_by, created_at,
                                      idempotency_key, request_hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        r.id,
        r.action_id,
        r.question,
        r.status,
        r.requested_by.user_id,
        r.created_at,
        idempotency_key,
        request_hash
    ])?;
    Ok(())
}

/// The context request this user made with this Idempotency-Key, with its
/// request hash (through `context_requests_by_key`).
pub fn context_by_key(
    c: &Connection,
    user_id: &str,
    key: &str,
) -> Result<Option<(ContextRequest, String)>> {
    let id_hash: Option<(String, String)> = c
        .prepare_cached(
            "SELECT id, coalesce(request_hash, '') FROM context_requests
              WHERE requested_by = ?1 AND idempotency_key = ?2",
        )?
        .query_row(params![user_id, key], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((id, hash)) = id_hash else {
        return Ok(None);
    };
    let request = c
        .prepare_cached(&format!("{CONTEXT} WHERE r.id = ?1"))?
        .query_row([&id], context_row)
        .optional()?;
    Ok(request.map(|r| (r, hash)))
}

/// The context requests of several Actions (`ids`), oldest first per
/// Action: one query for a page, through `context_requests_by_action`.
pub fn contexts_of(c: &Connection, ids: &[&str]) -> Result<HashMap<String, Vec<ContextRequest>>> {
    let mut out: HashMap<String, Vec<ContextRequest>> = HashMap::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let mut st = c.prepare_cached(&format!(
        "{CONTEXT} WHERE r.action_id IN (SELECT value FROM json_each(?1)) \
         ORDER BY r.action_id, r.created_at, r.id"
    ))?;
    let rows = st.query_map([serde_json::to_string(ids)?], context_row)?;
    for row in rows {
        let r = row?;
        out.entry(r.action_id.clone()).or_default().push(r);
    }
    Ok(out)
}

/// How many context requests an Action has.
pub fn count_contexts(c: &Connection, action_id: &str) -> Result<i64> {
    Ok(
        c.prepare_cached("SELECT count(*) FROM context_requests WHERE action_id = ?1")?
            .query_row([action_id], |r| r.get(0))?,
    )
}

/// Answers every open context request of an Action with `version`; returns
/// how many it answered.
pub fn answer_open(c: &Connection, action_id: &str, version: i64, now: &str) -> Result<usize> {
    Ok(c.prepare_cached(
        "UPDATE context_requests SET status = 'answered', answered_at = ?2, answered_in_version = ?3
          WHERE action_id = ?1 AND status = 'open'",
    )?
    .execute(params![action_id, now, version])?)
}

#[cfg(test)]
mod tests {
    /// A page of an Action's control requests seeks its index; only the
    /// requests of one millisecond are sorted by id.
    #[test]
    fn a_page_of_control_requests_reads_its_index() {
        let mut c = rusqlite::Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        for (tail, seek) in [
            (super::CONTROLS_OF, "(action_id=?)"),
            (super::CONTROLS_AFTER, "(action_id=? AND created_at<?)"),
        ] {
            let sql = format!("{} {tail}", super::CONTROL);
            let text = crate::store::query_plan(&c, &sql).join("\n");
            assert!(
                text.contains(&format!(
                    "SEARCH r USING INDEX control_requests_by_action {seek}"
                )),
                "{text}"
            );
            assert!(!text.contains("SCAN r"), "{text}");
            assert!(
                !text.contains("USE TEMP B-TREE FOR ORDER BY"),
                "only ties are sorted: {text}"
            );
        }
    }
}
