//! Approval votes: one per reviewer per version of an Action, never
//! rewritten. A vote counts for the version it was cast on (schema v23):
//! a material change of the Action starts a new count.

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;

/// The reviewer's vote on this version of the Action, if any.
pub fn of_user(
    c: &Connection,
    action_id: &str,
    action_version: i64,
    user_id: &str,
) -> Result<Option<String>> {
    Ok(c
        .prepare_cached(
            "SELECT vote FROM action_votes WHERE action_id = ?1 AND action_version = ?2 AND user_id = ?3",
        )?
        .query_row(params![action_id, action_version, user_id], |r| r.get(0))
        .optional()?)
}

/// A new vote.
pub struct NewVote<'a> {
    pub action_id: &'a str,
    pub action_version: i64,
    pub user_id: &'a str,
    pub vote: &'a str,
    pub reason: Option<&'a str>,
    pub created_at: &'a str,
}

pub fn insert(c: &Connection, v: &NewVote) -> Result<()> {
    c.prepare_cached("INSERT INTO action_votes(action_id, action_version, user_id, vote, reason, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?
        .execute(params![v.action_id, v.action_version, v.user_id, v.vote, v.reason, v.created_at])?;
    Ok(())
}

/// Every vote on this version of the Action with its reason, oldest
/// first: (user id, vote, reason), for the receipt of a quorum.
pub fn with_reasons(
    c: &Connection,
    action_id: &str,
    action_version: i64,
) -> Result<Vec<(String, String, Option<String>)>> {
    let mut st = c.prepare_cached(
        "SELECT user_id, vote, reason FROM action_votes WHERE action_id = ?1 AND action_version = ?2
         ORDER BY created_at, user_id",
    )?;
    let rows = st.query_map(params![action_id, action_version], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Every vote on this version of the Action, oldest first: (user id, vote).
pub fn all(c: &Connection, action_id: &str, action_version: i64) -> Result<Vec<(String, String)>> {
    let mut st = c.prepare_cached(
        "SELECT user_id, vote FROM action_votes WHERE action_id = ?1 AND action_version = ?2
         ORDER BY created_at, user_id",
    )?;
    let rows = st.query_map(params![action_id, action_version], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
