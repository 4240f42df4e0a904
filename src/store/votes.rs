//! Approval votes: one per reviewer per Action, never rewritten.

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;

/// The reviewer's earlier vote on this Action, if any.
pub fn of_user(c: &Connection, action_id: &str, user_id: &str) -> Result<Option<String>> {
    Ok(
        c.prepare_cached("SELECT vote FROM action_votes WHERE action_id = ?1 AND user_id = ?2")?
            .query_row([action_id, user_id], |r| r.get(0))
            .optional()?,
    )
}

pub fn insert(
    c: &Connection,
    action_id: &str,
    user_id: &str,
    vote: &str,
    reason: Option<&str>,
    now: &str,
) -> Result<()> {
    c.prepare_cached("INSERT INTO action_votes(action_id, user_id, vote, reason, created_at) VALUES (?1, ?2, ?3, ?4, ?5)")?
        .execute(params![action_id, user_id, vote, reason, now])?;
    Ok(())
}

/// Every vote, oldest first: (user id, vote).
pub fn all(c: &Connection, action_id: &str) -> Result<Vec<(String, String)>> {
    let mut st = c.prepare_cached(
        "SELECT user_id, vote FROM action_votes WHERE action_id = ?1 ORDER BY created_at, user_id",
    )?;
    let rows = st.query_map([action_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
