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

/// The person's vote on this version of the Action and its reason, if they
/// voted (the primary key).
pub fn cast(
    c: &Connection,
    action_id: &str,
    action_version: i64,
    user_id: &str,
) -> Result<Option<(String, Option<String>)>> {
    Ok(c
        .prepare_cached(
            "SELECT vote, reason FROM action_votes WHERE action_id = ?1 AND action_version = ?2 AND user_id = ?3",
        )?
        .query_row(params![action_id, action_version, user_id], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
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

/// A vote on a version of an Action.
pub struct Vote {
    pub user_id: String,
    pub vote: String,
    pub reason: Option<String>,
    /// An approval withdrawn because its voter may no longer vote.
    pub withdrawn: bool,
}

/// Every vote on this version of the Action, oldest first, for the tally
/// and the receipt of a quorum.
pub fn on_version(c: &Connection, action_id: &str, action_version: i64) -> Result<Vec<Vote>> {
    let mut st = c.prepare_cached(
        "SELECT user_id, vote, reason, withdrawn_at IS NOT NULL FROM action_votes
          WHERE action_id = ?1 AND action_version = ?2
         ORDER BY created_at, user_id",
    )?;
    let rows = st.query_map(params![action_id, action_version], |r| {
        Ok(Vote {
            user_id: r.get(0)?,
            vote: r.get(1)?,
            reason: r.get(2)?,
            withdrawn: r.get(3)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A vote as `GET /v1/actions/{id}/votes` lists it, with its voter's
/// address and name as they are now.
pub struct Listed {
    pub vote: Vote,
    pub created_at: String,
    pub email: Option<String>,
    pub name: Option<String>,
}

/// By the primary key (the Action's version), each voter by theirs; the
/// sort is over one version's votes, at most one per listed reviewer (15).
const LISTED: &str =
    "SELECT v.user_id, v.vote, v.reason, v.withdrawn_at IS NOT NULL, v.created_at, u.email, u.name
       FROM action_votes v LEFT JOIN users u ON u.id = v.user_id
      WHERE v.action_id = ?1 AND v.action_version = ?2
     ORDER BY v.created_at, v.user_id";

/// Every vote on this version of the Action, oldest first, with its voter.
pub fn listed(c: &Connection, action_id: &str, action_version: i64) -> Result<Vec<Listed>> {
    let mut st = c.prepare_cached(LISTED)?;
    let rows = st.query_map(params![action_id, action_version], |r| {
        Ok(Listed {
            vote: Vote {
                user_id: r.get(0)?,
                vote: r.get(1)?,
                reason: r.get(2)?,
                withdrawn: r.get(3)?,
            },
            created_at: r.get(4)?,
            email: r.get(5)?,
            name: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Withdraws the approvals `user_id` cast on the open Actions of
/// `workspace_id` (they may no longer vote there): through
/// `action_votes_by_user`, each Action read by its key. Answers how many.
pub fn withdraw_approvals(
    c: &Connection,
    workspace_id: &str,
    user_id: &str,
    now: &str,
) -> Result<usize> {
    Ok(c.prepare_cached(WITHDRAW_APPROVALS)?
        .execute(params![workspace_id, user_id, now])?)
}

const WITHDRAW_APPROVALS: &str = "UPDATE action_votes SET withdrawn_at = ?3
  WHERE user_id = ?2 AND vote = 'approve' AND withdrawn_at IS NULL
    AND EXISTS (SELECT 1 FROM actions a
                 WHERE a.id = action_votes.action_id
                   AND a.workspace_id = ?1 AND a.status = 'open')";

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

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    /// The votes of one version are sought by the key, their voters by theirs.
    #[test]
    fn the_votes_of_a_version_are_sought_by_key() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        let plan = crate::store::query_plan(&c, super::LISTED).join("\n");
        assert!(
            plan.contains("SEARCH v USING INDEX sqlite_autoindex_action_votes")
                && plan.contains("SEARCH u USING INDEX sqlite_autoindex_users")
                    | plan.contains("SEARCH u USING INTEGER PRIMARY KEY")
                    | plan.contains("SEARCH u USING PRIMARY KEY")
                && !plan.contains("SCAN"),
            "{plan}"
        );
    }

    /// Withdrawing a member's approvals seeks their votes by user and reads
    /// each Action by its key: no scan, however many votes the instance holds.
    #[test]
    fn withdrawing_approvals_seeks_the_voters_votes() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        let text = crate::store::query_plan(&c, super::WITHDRAW_APPROVALS).join("\n");
        assert!(
            text.contains("SEARCH action_votes USING INDEX action_votes_by_user (user_id=?)"),
            "{text}"
        );
        assert!(text.contains("SEARCH a USING INDEX"), "{text}");
        assert!(!text.contains("SCAN"), "{text}");
    }
}
