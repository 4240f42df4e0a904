//! Workspaces and memberships.

use rusqlite::{Connection, OptionalExtension, params};

use crate::domain::access::Role;
use crate::domain::ids;
use crate::error::Result;

#[derive(Clone, Debug, serde::Serialize)]
pub struct Workspace {
    pub id: String,
    pub name: String,
    pub kind: String,
    pub created_at: String,
}

pub fn create(c: &Connection, name: &str, kind: &str, now: &str) -> Result<Workspace> {
    let w = Workspace {
        id: ids::new_id(ids::WORKSPACE),
        name: name.to_owned(),
        kind: kind.to_owned(),
        created_at: now.to_owned(),
    };
    c.execute(
        "INSERT INTO workspaces(id, name, kind, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![w.id, w.name, w.kind, w.created_at],
    )?;
    Ok(w)
}

pub fn get(c: &Connection, id: &str) -> Result<Option<Workspace>> {
    Ok(c.query_row(
        "SELECT id, name, kind, created_at FROM workspaces WHERE id = ?1",
        [id],
        |r| {
            Ok(Workspace {
                id: r.get(0)?,
                name: r.get(1)?,
                kind: r.get(2)?,
                created_at: r.get(3)?,
            })
        },
    )
    .optional()?)
}

pub fn add_member(
    c: &Connection,
    workspace_id: &str,
    user_id: &str,
    role: Role,
    now: &str,
) -> Result<()> {
    c.execute(
        "INSERT INTO memberships(workspace_id, user_id, role, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![workspace_id, user_id, role.as_str(), now],
    )?;
    Ok(())
}

/// A stored role; the table's CHECK constraint admits only the four names.
fn role_at(r: &rusqlite::Row, i: usize) -> rusqlite::Result<Role> {
    let s: String = r.get(i)?;
    Role::parse(&s).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            i,
            rusqlite::types::Type::Text,
            format!("unknown role `{s}`").into(),
        )
    })
}

/// The oldest workspace: where people admitted by an allowed e-mail domain
/// (or added by `hds users link --create-as`) join.
pub fn oldest(c: &Connection) -> Result<Option<String>> {
    Ok(c.query_row(
        "SELECT id FROM workspaces ORDER BY created_at, id LIMIT 1",
        [],
        |r| r.get(0),
    )
    .optional()?)
}

/// The user's role in a workspace, if a member.
pub fn role_of(c: &Connection, workspace_id: &str, user_id: &str) -> Result<Option<Role>> {
    Ok(
        c.prepare_cached("SELECT role FROM memberships WHERE workspace_id = ?1 AND user_id = ?2")?
            .query_row([workspace_id, user_id], |r| role_at(r, 0))
            .optional()?,
    )
}

/// Every workspace the user belongs to, oldest first, with the user's role.
pub fn of_user(c: &Connection, user_id: &str) -> Result<Vec<(Workspace, Role)>> {
    let mut st = c.prepare_cached(
        "SELECT w.id, w.name, w.kind, w.created_at, m.role FROM memberships m JOIN workspaces w ON w.id = m.workspace_id
         WHERE m.user_id = ?1 ORDER BY w.created_at",
    )?;
    let rows = st.query_map([user_id], |r| {
        Ok((
            Workspace {
                id: r.get(0)?,
                name: r.get(1)?,
                kind: r.get(2)?,
                created_at: r.get(3)?,
            },
            role_at(r, 4)?,
        ))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
