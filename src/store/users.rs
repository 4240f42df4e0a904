//! Users and their bearer tokens (`svc_usr_…`, stored hashed).

use rusqlite::{Connection, OptionalExtension, params};

use crate::domain::credentials::{self, hashes_match};
use crate::domain::{ids, time};
use crate::error::Result;

#[derive(Clone, Debug, serde::Serialize)]
pub struct User {
    pub id: String,
    pub email: String,
    pub name: Option<String>,
    pub created_at: String,
}

pub fn create(c: &Connection, email: &str, name: Option<&str>) -> Result<User> {
    let u = User {
        id: ids::new_id(ids::USER),
        email: email.to_owned(),
        name: name.map(str::to_owned),
        created_at: time::format(time::now()),
    };
    c.execute(
        "INSERT INTO users(id, email, name, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![u.id, u.email, u.name, u.created_at],
    )?;
    Ok(u)
}

pub fn by_email(c: &Connection, email: &str) -> Result<Option<User>> {
    Ok(c.query_row(
        "SELECT id, email, name, created_at FROM users WHERE email = ?1",
        [email],
        |r| {
            Ok(User {
                id: r.get(0)?,
                email: r.get(1)?,
                name: r.get(2)?,
                created_at: r.get(3)?,
            })
        },
    )
    .optional()?)
}

/// Issues a new token; returns it in clear (shown once) and its id.
pub fn issue_token(
    c: &Connection,
    user_id: &str,
    name: &str,
    expires_at: Option<&str>,
) -> Result<(String, String)> {
    let token = credentials::new_user_token();
    let id = ids::new_id(ids::TOKEN);
    c.execute(
        "INSERT INTO user_tokens(id, token_hash, user_id, name, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![id, credentials::hash_secret(&token), user_id, name, time::format(time::now()), expires_at],
    )?;
    Ok((token, id))
}

/// The user a token belongs to, if the token is known, unrevoked and unexpired.
pub fn by_token(c: &Connection, token: &str, now: &str) -> Result<Option<User>> {
    let hash = credentials::hash_secret(token);
    let row = c
        .prepare_cached(
            "SELECT t.token_hash, t.expires_at, t.revoked_at, u.id, u.email, u.name, u.created_at
             FROM user_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = ?1",
        )?
        .query_row([&hash], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Option<String>>(2)?,
                User {
                    id: r.get(3)?,
                    email: r.get(4)?,
                    name: r.get(5)?,
                    created_at: r.get(6)?,
                },
            ))
        })
        .optional()?;
    Ok(row.and_then(|(stored, expires, revoked, user)| {
        let live = revoked.is_none() && expires.is_none_or(|e| e.as_str() > now);
        (live && hashes_match(&stored, &hash)).then_some(user)
    }))
}
