//! Working on an Action (guide: "Claim, assignment, snooze and comments"):
//! its assignee (the `assignee_user_id` column and the spec's `assignee_*`
//! fields, which the inbox's scope filter reads), its snooze time and its
//! comments (`action_comments`). Nothing here touches the binding.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

use crate::domain::access::Role;
use crate::domain::action::{ActionRecord, Person};
use crate::domain::requests::ContextMode;
use crate::error::Result;

/// A comment as stored, with its author's name.
#[derive(Clone, Debug, PartialEq)]
pub struct Comment {
    pub id: String,
    pub action_id: String,
    pub author_user_id: String,
    /// The author's address (`deleted-…@invalid` once they deleted their account).
    pub author_email: String,
    pub author_name: Option<String>,
    pub body: String,
    pub mentions: Vec<String>,
    pub created_at: String,
    /// When its author last changed the body; None: never.
    pub edited_at: Option<String>,
}

/// A workspace member as the assignment and mention rules need them.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub user_id: String,
    pub email: String,
    pub name: Option<String>,
    pub role: Role,
    /// When the account was created (see `UserCaller::account_created_at`).
    pub created_at: String,
}

/// People an Action names, looked up among its workspace's members: by id
/// when the spec gives one, else by e-mail (case-insensitive). One query for
/// a whole page: `?1` is a JSON array of `[workspace_id, user_id, email]`.
/// Plan: json_each, then the `memberships` primary key and `users` primary
/// key for ids, the `users` e-mail index and the `memberships` primary key
/// for e-mails (`annotate_queries_use_indexes`).
const PEOPLE: &str = "\
    SELECT j.value ->> 0, 'id', u.id, u.id, u.email, u.name FROM json_each(?1) j \
      JOIN memberships m ON m.workspace_id = j.value ->> 0 AND m.user_id = j.value ->> 1 \
      JOIN users u ON u.id = m.user_id \
     WHERE j.value ->> 1 IS NOT NULL \
    UNION ALL \
    SELECT j.value ->> 0, 'email', lower(j.value ->> 2), u.id, u.email, u.name FROM json_each(?1) j \
      JOIN users u ON u.email = j.value ->> 2 \
      JOIN memberships m ON m.workspace_id = j.value ->> 0 AND m.user_id = u.id \
     WHERE j.value ->> 1 IS NULL AND j.value ->> 2 IS NOT NULL";

/// Comment counts of a page of Actions (`?1`: JSON array of ids), through
/// `action_comments_by_action`.
const COMMENT_COUNTS: &str = "\
    SELECT action_id, count(*) FROM action_comments \
     WHERE action_id IN (SELECT value FROM json_each(?1)) GROUP BY action_id";

/// How a named person is looked up: workspace, then `id` or `email` and the
/// value (e-mails lower-cased).
type PersonKey = (String, &'static str, String);

fn key_of(workspace: &str, p: &Person) -> Option<PersonKey> {
    match (&p.user_id, &p.email) {
        (Some(id), _) => Some((workspace.to_owned(), "id", id.clone())),
        (None, Some(e)) => Some((workspace.to_owned(), "email", e.to_ascii_lowercase())),
        (None, None) => None,
    }
}

/// Fills in the assignee's and requester's e-mail and name and the comment
/// count of each Action (`ActionRecord::work`): people from the Action's
/// workspace members (anyone else stays exactly as sent, so an Action cannot
/// reveal who has an account elsewhere). Two queries per call, whatever the
/// number of Actions.
pub fn annotate(c: &Connection, actions: &mut [ActionRecord]) -> Result<()> {
    if actions.is_empty() {
        return Ok(());
    }
    let mut wanted = Vec::new();
    for a in actions.iter() {
        for p in [&a.work.assignee, &a.work.requested_by]
            .into_iter()
            .flatten()
        {
            if p.user_id.is_some() || p.email.is_some() {
                wanted.push(serde_json::json!([a.workspace_id, p.user_id, p.email]));
            }
        }
    }
    let mut found: HashMap<PersonKey, Person> = HashMap::new();
    if !wanted.is_empty() {
        let mut st = c.prepare_cached(PEOPLE)?;
        let rows = st.query_map([serde_json::to_string(&wanted)?], |r| {
            let by: String = r.get(1)?;
            let key = (
                r.get(0)?,
                if by == "id" { "id" } else { "email" },
                r.get(2)?,
            );
            let person = Person {
                user_id: r.get(3)?,
                email: r.get(4)?,
                name: r.get(5)?,
            };
            Ok((key, person))
        })?;
        for row in rows {
            let (k, p) = row?;
            found.insert(k, p);
        }
    }
    let ids: Vec<&str> = actions.iter().map(|a| a.id.as_str()).collect();
    let mut counts: HashMap<String, i64> = HashMap::new();
    let mut st = c.prepare_cached(COMMENT_COUNTS)?;
    let rows = st.query_map([serde_json::to_string(&ids)?], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?;
    for row in rows {
        let (id, n) = row?;
        counts.insert(id, n);
    }
    for a in actions.iter_mut() {
        let ws = a.workspace_id.clone();
        for p in [&mut a.work.assignee, &mut a.work.requested_by]
            .into_iter()
            .flatten()
        {
            if let Some(m) = key_of(&ws, p).and_then(|k| found.get(&k)) {
                *p = m.clone();
            }
        }
        a.work.comment_count = counts.get(&a.id).copied().unwrap_or(0);
    }
    // Context requests, for the Actions that take them (none by default:
    // then no query at all).
    let listing: Vec<String> = actions
        .iter()
        .filter(|a| ContextMode::of(a.spec.context_request_mode.as_deref()).lists())
        .map(|a| a.id.clone())
        .collect();
    if !listing.is_empty() {
        let ids: Vec<&str> = listing.iter().map(String::as_str).collect();
        let mut found = crate::store::requests::contexts_of(c, &ids)?;
        for a in actions.iter_mut() {
            if ContextMode::of(a.spec.context_request_mode.as_deref()).lists() {
                a.work.context_requests = Some(found.remove(&a.id).unwrap_or_default());
            }
        }
    }
    Ok(())
}

/// Sets (or with None clears) the assignee of an open Action. The spec's
/// `assignee_user_id` and `assignee_email` are rewritten to name the same
/// person (or removed), and so are the columns of the same names that the
/// inbox's `scope=mine|unassigned` filters read. Returns false when it is
/// not open.
pub fn set_assignee(
    c: &Connection,
    action_id: &str,
    to: Option<&Member>,
    now: &str,
) -> Result<bool> {
    // The assignee goes into the spec, from which a replay of a keyed create
    // would rebuild its answer: that answer is kept as text first.
    crate::store::idempotency::keep_answer(c, action_id)?;
    let n = match to {
        Some(m) => c
            .prepare_cached(
                "UPDATE actions SET assignee_user_id = ?1, assignee_email = lower(?2),
                    spec = json_set(spec, '$.assignee_user_id', ?1, '$.assignee_email', ?2),
                    updated_at = ?3
                 WHERE id = ?4 AND status = 'open'",
            )?
            .execute(params![m.user_id, m.email, now, action_id])?,
        None => c
            .prepare_cached(
                "UPDATE actions SET assignee_user_id = NULL, assignee_email = NULL,
                    spec = json_remove(spec, '$.assignee_user_id', '$.assignee_email'),
                    updated_at = ?1
                 WHERE id = ?2 AND status = 'open'",
            )?
            .execute(params![now, action_id])?,
    };
    Ok(n == 1)
}

/// The open Actions of `workspace` held by a person: by user id, or by an
/// e-mail (create-time `assignee_email`) while no user id holds them. Served
/// by the partial indexes `actions_assignee_user` and `actions_assignee_email`
/// (the latter holds exactly the e-mail-only assignments, migration 0009).
pub fn held_open(
    c: &Connection,
    workspace: &str,
    user_id: &str,
    email: &str,
) -> Result<Vec<String>> {
    let mut st = c.prepare_cached(
        "SELECT id FROM actions WHERE workspace_id = ?1 AND assignee_user_id = ?2 AND status = 'open'
         UNION ALL
         SELECT id FROM actions WHERE workspace_id = ?1 AND assignee_email = lower(?3)
            AND assignee_user_id IS NULL AND status = 'open'",
    )?;
    let rows = st.query_map(params![workspace, user_id, email], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Sets (or with None clears) when an open Action comes back to the inbox.
pub fn set_snooze(c: &Connection, action_id: &str, until: Option<&str>, now: &str) -> Result<bool> {
    let n = c
        .prepare_cached(
            "UPDATE actions SET snoozed_until = ?1, updated_at = ?2 WHERE id = ?3 AND status = 'open'",
        )?
        .execute(params![until, now, action_id])?;
    Ok(n == 1)
}

/// One member of a workspace, by user id.
pub fn member(c: &Connection, workspace_id: &str, user_id: &str) -> Result<Option<Member>> {
    Ok(c.prepare_cached(
        "SELECT u.id, u.email, u.name, m.role, u.created_at FROM memberships m JOIN users u ON u.id = m.user_id
             WHERE m.workspace_id = ?1 AND m.user_id = ?2",
    )?
    .query_row([workspace_id, user_id], member_row)
    .optional()?)
}

/// One member of a workspace, by e-mail (case-insensitive).
pub fn member_by_email(c: &Connection, workspace_id: &str, email: &str) -> Result<Option<Member>> {
    Ok(c.prepare_cached(
        "SELECT u.id, u.email, u.name, m.role, u.created_at FROM memberships m JOIN users u ON u.id = m.user_id
             WHERE m.workspace_id = ?1 AND u.email = ?2",
    )?
    .query_row([workspace_id, email], member_row)
    .optional()?)
}

/// Every member of a workspace, by name then e-mail.
pub fn members(c: &Connection, workspace_id: &str) -> Result<Vec<Member>> {
    let mut st = c.prepare_cached(
        "SELECT u.id, u.email, u.name, m.role, u.created_at FROM memberships m JOIN users u ON u.id = m.user_id
         WHERE m.workspace_id = ?1 ORDER BY coalesce(u.name, u.email), u.email",
    )?;
    let rows = st.query_map([workspace_id], member_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn member_row(r: &rusqlite::Row) -> rusqlite::Result<Member> {
    let role: String = r.get(3)?;
    Ok(Member {
        user_id: r.get(0)?,
        email: r.get(1)?,
        name: r.get(2)?,
        role: Role::parse(&role).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(
                3,
                rusqlite::types::Type::Text,
                "role".to_owned().into(),
            )
        })?,
        created_at: r.get(4)?,
    })
}

pub fn insert_comment(c: &Connection, cm: &Comment) -> Result<()> {
    c.prepare_cached(
        "INSERT INTO action_comments(id, action_id, author_user_id, body, mentions, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        cm.id,
        cm.action_id,
        cm.author_user_id,
        cm.body,
        serde_json::to_string(&cm.mentions)?,
        cm.created_at
    ])?;
    Ok(())
}

const COMMENT_COLS: &str = "cm.id, cm.action_id, cm.author_user_id, u.name, cm.body, cm.mentions, \
    cm.created_at, u.email, cm.edited_at FROM action_comments cm JOIN users u ON u.id = cm.author_user_id";

/// The comments of an Action, oldest first.
pub fn comments(c: &Connection, action_id: &str) -> Result<Vec<Comment>> {
    let mut st = c.prepare_cached(&format!(
        "SELECT {COMMENT_COLS} WHERE cm.action_id = ?1 ORDER BY cm.rowid"
    ))?;
    let rows = st.query_map([action_id], comment_at)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// One comment of an Action, by its id (the primary key).
pub fn comment(c: &Connection, action_id: &str, id: &str) -> Result<Option<Comment>> {
    Ok(c.prepare_cached(&format!(
        "SELECT {COMMENT_COLS} WHERE cm.id = ?1 AND cm.action_id = ?2"
    ))?
    .query_row([id, action_id], comment_at)
    .optional()?)
}

/// Replaces a comment's body and mentions; `edited_at` is `now`.
pub fn edit_comment(
    c: &Connection,
    id: &str,
    body: &str,
    mentions: &[String],
    now: &str,
) -> Result<()> {
    c.prepare_cached(
        "UPDATE action_comments SET body = ?2, mentions = ?3, edited_at = ?4 WHERE id = ?1",
    )?
    .execute(params![id, body, serde_json::to_string(mentions)?, now])?;
    Ok(())
}

/// Removes a comment, body and all.
pub fn delete_comment(c: &Connection, id: &str) -> Result<()> {
    c.prepare_cached("DELETE FROM action_comments WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

fn comment_at(r: &rusqlite::Row) -> rusqlite::Result<Comment> {
    let mentions: String = r.get(5)?;
    Ok(Comment {
        id: r.get(0)?,
        action_id: r.get(1)?,
        author_user_id: r.get(2)?,
        author_email: r.get(7)?,
        author_name: r.get(3)?,
        body: r.get(4)?,
        // Written only by `insert_comment`; anything else is a broken
        // row, reported as such rather than read as "no mentions".
        mentions: serde_json::from_str(&mentions).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(
                5,
                rusqlite::types::Type::Text,
                format!("action_comments.mentions is not a JSON array of user ids: {e}").into(),
            )
        })?,
        created_at: r.get(6)?,
        edited_at: r.get(8)?,
    })
}

/// The distinct people who commented on an Action (`action_comments_by_action`).
pub fn commenters(c: &Connection, action_id: &str) -> Result<Vec<String>> {
    let mut st = c.prepare_cached(
        "SELECT DISTINCT author_user_id FROM action_comments WHERE action_id = ?1",
    )?;
    let rows = st.query_map([action_id], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Connection {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        c
    }

    fn plan(c: &Connection, sql: &str) -> Vec<String> {
        let mut st = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let rows = st
            .query_map(["[]"], |r| r.get::<_, String>(3))
            .unwrap()
            .map(Result::unwrap);
        rows.collect()
    }

    #[test]
    fn annotate_queries_use_indexes() {
        let c = db();
        let people = plan(&c, PEOPLE);
        for table in ["m", "u"] {
            assert!(
                people
                    .iter()
                    .all(|l| !l.starts_with(&format!("SCAN {table}"))),
                "{people:?}"
            );
        }
        assert!(
            people.iter().any(|l| l.contains("sqlite_autoindex_users")),
            "the e-mail lookup uses the users e-mail index: {people:?}"
        );
        let counts = plan(&c, COMMENT_COUNTS);
        assert!(
            counts
                .iter()
                .any(|l| l.contains("action_comments_by_action")),
            "{counts:?}"
        );
        assert!(
            counts
                .iter()
                .all(|l| !l.starts_with("SCAN action_comments")),
            "{counts:?}"
        );
    }
}
