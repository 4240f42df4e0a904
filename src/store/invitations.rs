//! Invitations to a workspace (guide: "Invitations"): created with a secret
//! whose SHA-256 alone is stored, listed, revoked, and accepted once by a
//! compare-and-set on their pending state.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::domain::access::Role;
use crate::domain::credentials::{hash_secret, hashes_match};
use crate::domain::ids;
use crate::error::Result;

/// One invitation as stored, with the inviter's e-mail and the workspace's name.
#[derive(Clone, Debug)]
pub struct Invitation {
    pub id: String,
    pub workspace_id: String,
    pub workspace_name: String,
    pub email: String,
    pub role: Role,
    pub invited_by: Option<String>,
    pub invited_by_email: Option<String>,
    pub created_at: String,
    pub expires_at: String,
    pub accepted_at: Option<String>,
    pub revoked_at: Option<String>,
    /// hds e-mailed it (a mail link exists): the invited person has a link
    /// in their mail. Otherwise only whoever invited was shown one.
    pub mailed: bool,
}

impl Invitation {
    /// `pending`, `accepted`, `revoked` or `expired` at `now` (RFC 3339
    /// strings compare in time order).
    pub fn status(&self, now: &str) -> &'static str {
        if self.accepted_at.is_some() {
            "accepted"
        } else if self.revoked_at.is_some() {
            "revoked"
        } else if self.expires_at.as_str() <= now {
            "expired"
        } else {
            "pending"
        }
    }
}

/// What a new invitation records.
pub struct NewInvitation<'a> {
    pub workspace_id: &'a str,
    pub email: &'a str,
    pub role: Role,
    pub invited_by: &'a str,
    pub created_at: &'a str,
    pub expires_at: &'a str,
}

const COLS: &str = "i.id, i.workspace_id, w.name, i.email, i.role, i.invited_by, u.email, \
     i.created_at, i.expires_at, i.accepted_at, i.revoked_at, i.mail_token_hash IS NOT NULL";
const FROM: &str = "invitations i JOIN workspaces w ON w.id = i.workspace_id \
     LEFT JOIN users u ON u.id = i.invited_by";

fn row_at(r: &Row, at: usize) -> rusqlite::Result<Invitation> {
    let role: String = r.get(at + 4)?;
    Ok(Invitation {
        id: r.get(at)?,
        workspace_id: r.get(at + 1)?,
        workspace_name: r.get(at + 2)?,
        email: r.get(at + 3)?,
        // The table's CHECK admits only the four role names.
        role: Role::parse(&role).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(
                at + 4,
                rusqlite::types::Type::Text,
                format!("unknown role `{role}`").into(),
            )
        })?,
        invited_by: r.get(at + 5)?,
        invited_by_email: r.get(at + 6)?,
        created_at: r.get(at + 7)?,
        expires_at: r.get(at + 8)?,
        accepted_at: r.get(at + 9)?,
        revoked_at: r.get(at + 10)?,
        mailed: r.get(at + 11)?,
    })
}

/// Stores a new invitation under the hash of `secret`; returns its id.
pub fn insert(c: &Connection, n: &NewInvitation, secret: &str) -> Result<String> {
    let id = ids::new_id(ids::INVITATION);
    c.execute(
        "INSERT INTO invitations(id, workspace_id, email, role, invited_by, token_hash, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            id,
            n.workspace_id,
            n.email,
            n.role.as_str(),
            n.invited_by,
            hash_secret(secret),
            n.created_at,
            n.expires_at
        ],
    )?;
    Ok(id)
}

/// One invitation of a workspace.
pub fn get(c: &Connection, workspace_id: &str, id: &str) -> Result<Option<Invitation>> {
    Ok(c.prepare_cached(&format!(
        "SELECT {COLS} FROM {FROM} WHERE i.id = ?1 AND i.workspace_id = ?2"
    ))?
    .query_row([id, workspace_id], |r| row_at(r, 0))
    .optional()?)
}

/// A workspace's invitations, newest first.
pub fn list(c: &Connection, workspace_id: &str) -> Result<Vec<Invitation>> {
    let mut st = c.prepare_cached(&format!(
        "SELECT {COLS} FROM {FROM} WHERE i.workspace_id = ?1 ORDER BY i.created_at DESC, i.id DESC"
    ))?;
    let rows = st.query_map([workspace_id], |r| row_at(r, 0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The pending invitations to `email` (compared without case), newest
/// first, at most `limit`, with the workspaces `user_id` already belongs to
/// left out (`invitations_by_email`).
pub fn pending_for(
    c: &Connection,
    email: &str,
    user_id: &str,
    now: &str,
    limit: i64,
) -> Result<Vec<Invitation>> {
    let mut st = c.prepare_cached(&pending_for_sql())?;
    let rows = st.query_map(params![email, now, user_id, limit], |r| row_at(r, 0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn pending_for_sql() -> String {
    format!(
        "SELECT {COLS} FROM {FROM} WHERE i.email = ?1 AND i.accepted_at IS NULL
           AND i.revoked_at IS NULL AND i.expires_at > ?2
           AND NOT EXISTS (SELECT 1 FROM memberships m
                            WHERE m.workspace_id = i.workspace_id AND m.user_id = ?3)
         ORDER BY i.created_at DESC, i.id DESC LIMIT ?4"
    )
}

/// How many invitations `user_id` created since `since`, in every
/// workspace (`invitations_by_inviter`).
pub fn created_by_since(c: &Connection, user_id: &str, since: &str) -> Result<i64> {
    Ok(c.prepare_cached(
        "SELECT count(*) FROM invitations WHERE invited_by = ?1 AND created_at > ?2",
    )?
    .query_row([user_id, since], |r| r.get(0))?)
}

/// The time the `n`-th newest invitation of `user_id` was created (n = 1:
/// the newest), for when a daily cap frees a place.
pub fn nth_newest_by(c: &Connection, user_id: &str, n: i64) -> Result<Option<String>> {
    Ok(c.prepare_cached(
        "SELECT created_at FROM invitations WHERE invited_by = ?1
          ORDER BY created_at DESC LIMIT 1 OFFSET ?2",
    )?
    .query_row(params![user_id, (n - 1).max(0)], |r| r.get(0))
    .optional()?)
}

/// Which of an invitation's links a secret is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// The link shown to whoever invited (`accept_url`).
    Shown,
    /// The link in the e-mail hds sent to the invited address.
    Mailed,
}

/// Gives an invitation the secret of the link e-mailed to its address.
pub fn set_mail_secret(c: &Connection, id: &str, secret: &str) -> Result<()> {
    c.execute(
        "UPDATE invitations SET mail_token_hash = ?2 WHERE id = ?1",
        params![id, hash_secret(secret)],
    )?;
    Ok(())
}

/// The invitation a secret belongs to, whatever its state, and which of its
/// links the secret is. The row is found by the secret's hash, then the
/// hashes are compared again in constant time.
pub fn by_secret(c: &Connection, secret: &str) -> Result<Option<(Invitation, Link)>> {
    let hash = hash_secret(secret);
    for (column, link) in [
        ("token_hash", Link::Shown),
        ("mail_token_hash", Link::Mailed),
    ] {
        let row = c
            .prepare_cached(&format!(
                "SELECT i.{column}, {COLS} FROM {FROM} WHERE i.{column} = ?1"
            ))?
            .query_row([&hash], |r| Ok((r.get::<_, String>(0)?, row_at(r, 1)?)))
            .optional()?;
        if let Some((stored, inv)) = row
            && hashes_match(&stored, &hash)
        {
            return Ok(Some((inv, link)));
        }
    }
    Ok(None)
}

/// Revokes an invitation that was neither accepted nor revoked (an expired
/// one included); false otherwise.
pub fn revoke(c: &Connection, workspace_id: &str, id: &str, now: &str) -> Result<bool> {
    Ok(c.execute(
        "UPDATE invitations SET revoked_at = ?3 WHERE id = ?1 AND workspace_id = ?2
           AND accepted_at IS NULL AND revoked_at IS NULL",
        params![id, workspace_id, now],
    )? == 1)
}

/// Whether a pending invitation of the workspace offers `email` the owner
/// role (only an owner may replace it).
pub fn pending_offers_owner(
    c: &Connection,
    workspace_id: &str,
    email: &str,
    now: &str,
) -> Result<bool> {
    Ok(c.prepare_cached(
        "SELECT 1 FROM invitations WHERE workspace_id = ?1 AND email = ?2 AND role = 'owner'
           AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > ?3",
    )?
    .exists(params![workspace_id, email, now])?)
}

/// Revokes every pending invitation of `email` to a workspace (a new one
/// replaces them); returns how many.
pub fn revoke_pending_for(
    c: &Connection,
    workspace_id: &str,
    email: &str,
    now: &str,
) -> Result<usize> {
    Ok(c.execute(
        "UPDATE invitations SET revoked_at = ?3 WHERE workspace_id = ?1 AND email = ?2
           AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > ?3",
        params![workspace_id, email, now],
    )?)
}

/// The pending invitations of a workspace that `invited_by` created (not
/// accepted, not revoked, not expired at `now`). Read when that member's
/// role changes or they leave; rare, so a scan of the workspace's
/// invitations is fine.
pub fn pending_by_inviter(
    c: &Connection,
    workspace_id: &str,
    invited_by: &str,
    now: &str,
) -> Result<Vec<Invitation>> {
    let mut st = c.prepare_cached(&format!(
        "SELECT {COLS} FROM {FROM} WHERE i.workspace_id = ?1 AND i.invited_by = ?2
           AND i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > ?3"
    ))?;
    let rows = st.query_map(params![workspace_id, invited_by, now], |r| row_at(r, 0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Accepts a pending invitation: pending → accepted, once. False when it was
/// no longer pending (accepted, revoked or expired meanwhile), so two
/// concurrent accepts of one token cannot both succeed.
pub fn accept(c: &Connection, id: &str, user_id: &str, now: &str) -> Result<bool> {
    Ok(c.execute(
        "UPDATE invitations SET accepted_at = ?3, accepted_by = ?2 WHERE id = ?1
           AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > ?3",
        params![id, user_id, now],
    )? == 1)
}

/// The workspace a credential selected (None: its oldest membership), to say
/// whether an accepted invitation's workspace is now the active one.
pub fn credential_workspace(c: &Connection, credential_id: &str) -> Result<Option<String>> {
    Ok(c.query_row(
        "SELECT workspace_id FROM user_tokens WHERE id = ?1",
        [credential_id],
        |r| r.get::<_, Option<String>>(0),
    )
    .optional()?
    .flatten())
}

#[cfg(test)]
mod tests {
    /// The daily cap counts by `invitations_by_inviter`, not by reading the
    /// table; the secrets are found by their indexes.
    #[test]
    fn the_cap_and_the_secrets_read_their_indexes() {
        let mut c = rusqlite::Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        for (sql, index) in [
            (
                "SELECT count(*) FROM invitations WHERE invited_by = 'u' AND created_at > 't'",
                "invitations_by_inviter (invited_by=? AND created_at>?)",
            ),
            (
                "SELECT created_at FROM invitations WHERE invited_by = 'u' ORDER BY created_at DESC LIMIT 1 OFFSET 99",
                "invitations_by_inviter (invited_by=?)",
            ),
            (
                "SELECT id FROM invitations WHERE mail_token_hash = 'h'",
                "invitations_by_mail_token",
            ),
        ] {
            let plan = crate::store::query_plan(&c, sql).join("\n");
            assert!(plan.contains(index), "{sql}:\n{plan}");
            assert!(!plan.contains("TEMP B-TREE"), "{sql}:\n{plan}");
        }
    }

    /// A person's waiting invitations are found by their address; each
    /// membership and workspace by its key.
    #[test]
    fn the_invitations_waiting_for_a_person_are_found_by_address() {
        let mut c = rusqlite::Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        let plan = crate::store::query_plan(&c, &super::pending_for_sql()).join("\n");
        assert!(
            plan.contains("SEARCH i USING INDEX invitations_by_email (email=?)"),
            "{plan}"
        );
        assert!(!plan.contains("SCAN"), "{plan}");
    }
}
