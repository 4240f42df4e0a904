//! Users and their credentials: `api` tokens and `session` rows (`user_tokens`,
//! secrets stored as SHA-256).

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::domain::credentials::{self, hashes_match};
use crate::domain::{ids, session, time};
use crate::error::Result;

#[derive(Clone, Debug, serde::Serialize)]
pub struct User {
    pub id: String,
    pub email: String,
    pub name: Option<String>,
    pub created_at: String,
}

/// A credential as listed on the account page; never its secret.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Credential {
    pub id: String,
    pub user_id: String,
    pub name: String,
    /// `api` or `session`.
    pub kind: String,
    pub method: Option<String>,
    pub client: Option<String>,
    pub user_agent: Option<String>,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub last_used_at: Option<String>,
    pub revoked_at: Option<String>,
    /// The workspace this credential acts on; None means the oldest membership.
    pub workspace_id: Option<String>,
}

impl Credential {
    pub fn is_live(&self, now: time::Timestamp) -> bool {
        session::is_live(
            &self.kind,
            &self.created_at,
            self.expires_at.as_deref(),
            self.last_used_at.as_deref(),
            self.revoked_at.as_deref(),
            now,
        )
    }
}

/// What a new credential records about itself.
pub struct NewCredential<'a> {
    pub user_id: &'a str,
    pub name: &'a str,
    pub kind: &'a str,
    pub method: Option<&'a str>,
    pub client: Option<&'a str>,
    pub user_agent: Option<&'a str>,
    pub expires_at: Option<&'a str>,
    pub created_at: &'a str,
}

const USER_COLS: &str = "u.id, u.email, u.name, u.created_at";
const CRED_COLS: &str = "t.id, t.user_id, t.name, t.kind, t.method, t.client, t.user_agent, t.created_at, t.expires_at, t.last_used_at, t.revoked_at, t.workspace_id";

fn user_at(r: &Row, at: usize) -> rusqlite::Result<User> {
    Ok(User {
        id: r.get(at)?,
        email: r.get(at + 1)?,
        name: r.get(at + 2)?,
        created_at: r.get(at + 3)?,
    })
}

fn credential_at(r: &Row, at: usize) -> rusqlite::Result<Credential> {
    Ok(Credential {
        id: r.get(at)?,
        user_id: r.get(at + 1)?,
        name: r.get(at + 2)?,
        kind: r.get(at + 3)?,
        method: r.get(at + 4)?,
        client: r.get(at + 5)?,
        user_agent: r.get(at + 6)?,
        created_at: r.get(at + 7)?,
        expires_at: r.get(at + 8)?,
        last_used_at: r.get(at + 9)?,
        revoked_at: r.get(at + 10)?,
        workspace_id: r.get(at + 11)?,
    })
}

pub fn create(c: &Connection, email: &str, name: Option<&str>, now: &str) -> Result<User> {
    let u = User {
        id: ids::new_id(ids::USER),
        email: email.to_owned(),
        name: name.map(str::to_owned),
        created_at: now.to_owned(),
    };
    c.execute(
        "INSERT INTO users(id, email, name, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![u.id, u.email, u.name, u.created_at],
    )?;
    Ok(u)
}

/// The person with this address. Never a deleted account: its address is
/// a placeholder (`service::account::placeholder_email`) that no sign-in,
/// link or ownership may reach, so erasure cannot be undone by naming it.
pub fn by_email(c: &Connection, email: &str) -> Result<Option<User>> {
    Ok(c.query_row(
        &format!(
            "SELECT {USER_COLS} FROM users u WHERE u.email = ?1 AND u.email NOT LIKE 'deleted-%@invalid'"
        ),
        [email],
        |r| user_at(r, 0),
    )
    .optional()?)
}

pub fn by_id(c: &Connection, id: &str) -> Result<Option<User>> {
    Ok(c.query_row(
        &format!("SELECT {USER_COLS} FROM users u WHERE u.id = ?1"),
        [id],
        |r| user_at(r, 0),
    )
    .optional()?)
}

/// Sets (or, with None, clears) the person's name.
pub fn set_name(c: &Connection, id: &str, name: Option<&str>) -> Result<()> {
    c.prepare_cached("UPDATE users SET name = ?2 WHERE id = ?1")?
        .execute(params![id, name])?;
    Ok(())
}

/// Fills in a missing display name (from the identity provider).
pub fn set_name_if_missing(c: &Connection, id: &str, name: &str) -> Result<()> {
    let name = name.trim();
    if name.is_empty() {
        return Ok(());
    }
    c.execute(
        "UPDATE users SET name = ?2 WHERE id = ?1 AND name IS NULL",
        params![id, name],
    )?;
    Ok(())
}

/// Issues a new API token; returns it in clear (shown once) and its id.
pub fn issue_token(
    c: &Connection,
    user_id: &str,
    name: &str,
    expires_at: Option<&str>,
    now: &str,
) -> Result<(String, String)> {
    insert_credential(
        c,
        &NewCredential {
            user_id,
            name,
            kind: "api",
            method: None,
            client: None,
            user_agent: None,
            expires_at,
            created_at: now,
        },
    )
}

/// Stores a credential; returns its secret (`svc_usr_…`, shown once) and id.
pub fn insert_credential(c: &Connection, n: &NewCredential) -> Result<(String, String)> {
    let token = credentials::new_user_token();
    let prefix = if n.kind == "session" {
        ids::SESSION
    } else {
        ids::TOKEN
    };
    let id = ids::new_id(prefix);
    c.execute(
        "INSERT INTO user_tokens(id, token_hash, user_id, name, kind, method, client, user_agent, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            id,
            credentials::hash_secret(&token),
            n.user_id,
            n.name,
            n.kind,
            n.method,
            n.client,
            n.user_agent,
            n.created_at,
            n.expires_at
        ],
    )?;
    Ok((token, id))
}

/// The user and credential a bearer token belongs to, if it is live.
pub fn by_token(
    c: &Connection,
    token: &str,
    now: time::Timestamp,
) -> Result<Option<(User, Credential)>> {
    let hash = credentials::hash_secret(token);
    let row = c
        .prepare_cached(&format!(
            "SELECT t.token_hash, {USER_COLS}, {CRED_COLS}
             FROM user_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = ?1"
        ))?
        .query_row([&hash], |r| {
            Ok((r.get::<_, String>(0)?, user_at(r, 1)?, credential_at(r, 5)?))
        })
        .optional()?;
    Ok(row.and_then(|(stored, user, cred)| {
        (hashes_match(&stored, &hash) && cred.is_live(now)).then_some((user, cred))
    }))
}

/// The user and credential of a browser session's row, if it is live.
pub fn by_credential_id(
    c: &Connection,
    id: &str,
    now: time::Timestamp,
) -> Result<Option<(User, Credential)>> {
    let row = c
        .prepare_cached(&format!(
            "SELECT {USER_COLS}, {CRED_COLS}
             FROM user_tokens t JOIN users u ON u.id = t.user_id WHERE t.id = ?1"
        ))?
        .query_row([id], |r| Ok((user_at(r, 0)?, credential_at(r, 4)?)))
        .optional()?;
    Ok(row.filter(|(_, cred)| cred.is_live(now)))
}

/// How many live sessions the account page lists (newest first); API
/// tokens are all listed.
pub const SESSIONS_LISTED: i64 = 200;

/// The credentials of a user that work at `now`, newest first: every API
/// token, then the newest [`SESSIONS_LISTED`] sessions. Ended ones are left
/// out here, in SQL, so that however many sessions ended (each app sign-in
/// makes one), no working token is crowded out of the list.
pub fn live_credentials(
    c: &Connection,
    user_id: &str,
    now: time::Timestamp,
) -> Result<Vec<Credential>> {
    let now_s = time::format(now);
    let idle = time::format(now - session::SESSION_IDLE);
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {CRED_COLS} FROM user_tokens t
          WHERE t.user_id = ?1 AND t.revoked_at IS NULL
            AND (t.expires_at IS NULL OR t.expires_at > ?2) AND t.kind <> 'session'
          ORDER BY t.created_at DESC"
    ))?;
    let mut all: Vec<Credential> = stmt
        .query_map(params![user_id, now_s], |r| credential_at(r, 0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {CRED_COLS} FROM user_tokens t
          WHERE t.user_id = ?1 AND t.revoked_at IS NULL
            AND (t.expires_at IS NULL OR t.expires_at > ?2) AND t.kind = 'session'
            AND coalesce(t.last_used_at, t.created_at) > ?3
          ORDER BY t.created_at DESC LIMIT ?4"
    ))?;
    let sessions = stmt.query_map(params![user_id, now_s, idle, SESSIONS_LISTED], |r| {
        credential_at(r, 0)
    })?;
    for s in sessions {
        all.push(s?);
    }
    // The clock's string form and `is_live` agree; this keeps them so.
    all.retain(|c| c.is_live(now));
    Ok(all)
}

/// One credential of a user, whatever its state.
pub fn credential_of(c: &Connection, user_id: &str, id: &str) -> Result<Option<Credential>> {
    Ok(c.prepare_cached(&format!(
        "SELECT {CRED_COLS} FROM user_tokens t WHERE t.id = ?1 AND t.user_id = ?2"
    ))?
    .query_row([id, user_id], |r| credential_at(r, 0))
    .optional()?)
}

/// Revokes every live session of a user but `keep`; answers how many.
pub fn revoke_other_sessions(
    c: &Connection,
    user_id: &str,
    keep: &str,
    now: &str,
) -> Result<usize> {
    Ok(c.execute(
        "UPDATE user_tokens SET revoked_at = ?3
          WHERE user_id = ?1 AND kind = 'session' AND id <> ?2 AND revoked_at IS NULL",
        params![user_id, keep, now],
    )?)
}

/// Revokes one of the user's credentials; false when it is not theirs or
/// already revoked.
pub fn revoke_credential(c: &Connection, user_id: &str, id: &str, now: &str) -> Result<bool> {
    Ok(c.execute(
        "UPDATE user_tokens SET revoked_at = ?3 WHERE id = ?1 AND user_id = ?2 AND revoked_at IS NULL",
        params![id, user_id, now],
    )? == 1)
}

/// Revokes a browser session's credential whatever its user: the browser
/// that held it has signed in again and can no longer present it.
pub fn revoke_session(c: &Connection, id: &str, now: &str) -> Result<bool> {
    Ok(c.execute(
        "UPDATE user_tokens SET revoked_at = ?2 WHERE id = ?1 AND kind = 'session' AND revoked_at IS NULL",
        params![id, now],
    )? == 1)
}

/// Revokes every live session of a user that began by `method`; returns how
/// many.
pub fn revoke_sessions_by_method(
    c: &Connection,
    user_id: &str,
    method: &str,
    now: &str,
) -> Result<usize> {
    Ok(c.execute(
        "UPDATE user_tokens SET revoked_at = ?3
         WHERE user_id = ?1 AND kind = 'session' AND method = ?2 AND revoked_at IS NULL",
        params![user_id, method, now],
    )?)
}

/// How a credential began (`link`, `invitation`, a provider's name); None
/// for an API token or an unknown id.
pub fn credential_method(c: &Connection, id: &str) -> Result<Option<String>> {
    Ok(
        c.query_row("SELECT method FROM user_tokens WHERE id = ?1", [id], |r| {
            r.get::<_, Option<String>>(0)
        })
        .optional()?
        .flatten(),
    )
}

pub fn touch_credential(c: &Connection, id: &str, now: &str) -> Result<()> {
    c.execute(
        "UPDATE user_tokens SET last_used_at = ?2 WHERE id = ?1",
        params![id, now],
    )?;
    Ok(())
}

/// Makes `workspace_id` the active workspace of one credential (the caller
/// checks membership). Returns false when the credential is not the user's.
pub fn select_workspace(
    c: &Connection,
    user_id: &str,
    credential_id: &str,
    workspace_id: &str,
) -> Result<bool> {
    let n = c.execute(
        "UPDATE user_tokens SET workspace_id = ?1 WHERE id = ?2 AND user_id = ?3 AND revoked_at IS NULL",
        params![workspace_id, credential_id, user_id],
    )?;
    Ok(n == 1)
}

#[cfg(test)]
mod tests {
    /// The account page's two lists read `user_tokens_by_user` in order (no
    /// sort), whatever the number of ended credentials.
    #[test]
    fn live_credentials_read_the_users_index_in_order() {
        let mut c = rusqlite::Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        for sql in [
            "SELECT t.id FROM user_tokens t
              WHERE t.user_id = 'u' AND t.revoked_at IS NULL
                AND (t.expires_at IS NULL OR t.expires_at > 'n') AND t.kind <> 'session'
              ORDER BY t.created_at DESC",
            "SELECT t.id FROM user_tokens t
              WHERE t.user_id = 'u' AND t.revoked_at IS NULL
                AND (t.expires_at IS NULL OR t.expires_at > 'n') AND t.kind = 'session'
                AND coalesce(t.last_used_at, t.created_at) > 'i'
              ORDER BY t.created_at DESC LIMIT 200",
        ] {
            let plan = crate::store::query_plan(&c, sql).join("\n");
            assert!(
                plan.contains("USING INDEX user_tokens_by_user (user_id=?)"),
                "{plan}"
            );
            assert!(!plan.contains("TEMP B-TREE"), "{plan}");
        }
    }
}
