//! Workspaces and memberships (guide: "Workspaces and members").

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

/// How many workspaces on plan `plan_id` the person owns
/// (`memberships_by_user`, then each workspace by its key).
pub fn owned_on_plan(c: &Connection, user_id: &str, plan_id: &str) -> Result<i64> {
    Ok(c.prepare_cached(
        "SELECT count(*) FROM memberships m JOIN workspaces w ON w.id = m.workspace_id
          WHERE m.user_id = ?1 AND m.role = 'owner' AND w.plan_id = ?2",
    )?
    .query_row(params![user_id, plan_id], |r| r.get(0))?)
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

/// Every workspace the user belongs to, in the order they joined them
/// (the first is the active workspace of a credential that selected none),
/// with the user's role.
pub fn of_user(c: &Connection, user_id: &str) -> Result<Vec<(Workspace, Role)>> {
    let mut st = c.prepare_cached(
        "SELECT w.id, w.name, w.kind, w.created_at, m.role FROM memberships m JOIN workspaces w ON w.id = m.workspace_id
         WHERE m.user_id = ?1 ORDER BY m.created_at, w.created_at, w.id",
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

/// A member of a workspace as listed: the person and their role there.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Member {
    pub user_id: String,
    pub email: String,
    pub name: Option<String>,
    pub role: Role,
    /// When the membership began.
    pub joined_at: String,
}

const MEMBER_COLS: &str = "u.id, u.email, u.name, m.role, m.created_at";

fn member_at(r: &rusqlite::Row) -> rusqlite::Result<Member> {
    Ok(Member {
        user_id: r.get(0)?,
        email: r.get(1)?,
        name: r.get(2)?,
        role: role_at(r, 3)?,
        joined_at: r.get(4)?,
    })
}

/// Every member of a workspace, owners first, then by e-mail.
pub fn members(c: &Connection, workspace_id: &str) -> Result<Vec<Member>> {
    let mut st = c.prepare_cached(&format!(
        "SELECT {MEMBER_COLS} FROM memberships m JOIN users u ON u.id = m.user_id
         WHERE m.workspace_id = ?1
         ORDER BY CASE m.role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 WHEN 'reviewer' THEN 2 ELSE 3 END, u.email"
    ))?;
    let rows = st.query_map([workspace_id], member_at)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// One member of a workspace, if `user_id` is one.
pub fn member(c: &Connection, workspace_id: &str, user_id: &str) -> Result<Option<Member>> {
    Ok(c.prepare_cached(&format!(
        "SELECT {MEMBER_COLS} FROM memberships m JOIN users u ON u.id = m.user_id
             WHERE m.workspace_id = ?1 AND m.user_id = ?2"
    ))?
    .query_row([workspace_id, user_id], member_at)
    .optional()?)
}

/// How many owners a workspace has.
pub fn owner_count(c: &Connection, workspace_id: &str) -> Result<i64> {
    Ok(c.query_row(
        "SELECT count(*) FROM memberships WHERE workspace_id = ?1 AND role = 'owner'",
        [workspace_id],
        |r| r.get(0),
    )?)
}

/// Changes a member's role; false when they are not a member.
pub fn set_role(c: &Connection, workspace_id: &str, user_id: &str, role: Role) -> Result<bool> {
    Ok(c.execute(
        "UPDATE memberships SET role = ?3 WHERE workspace_id = ?1 AND user_id = ?2",
        params![workspace_id, user_id, role.as_str()],
    )? == 1)
}

/// Removes a member and ends every selection of this workspace by their
/// sessions and tokens (they fall back to their oldest membership); false
/// when they were not a member.
pub fn remove_member(c: &Connection, workspace_id: &str, user_id: &str, now: &str) -> Result<bool> {
    let n = c.execute(
        "DELETE FROM memberships WHERE workspace_id = ?1 AND user_id = ?2",
        params![workspace_id, user_id],
    )?;
    // Remembered, so that deleting the account later scrubs this workspace too.
    c.prepare_cached(
        "INSERT OR REPLACE INTO former_members(user_id, workspace_id, left_at) VALUES (?1, ?2, ?3)",
    )?
    .execute(params![user_id, workspace_id, now])?;
    c.execute(
        "UPDATE user_tokens SET workspace_id = NULL WHERE user_id = ?2 AND workspace_id = ?1",
        params![workspace_id, user_id],
    )?;
    Ok(n == 1)
}

/// By the primary key, in its order.
const LEFT_BY: &str =
    "SELECT workspace_id FROM former_members WHERE user_id = ?1 ORDER BY workspace_id";

/// The workspaces the person has left or was removed from.
pub fn left_by(c: &Connection, user_id: &str) -> Result<Vec<String>> {
    let mut st = c.prepare_cached(LEFT_BY)?;
    let rows = st.query_map([user_id], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A workspace as `hds workspaces list` shows it.
#[derive(Clone, Debug)]
pub struct Summary {
    pub workspace: Workspace,
    pub members: i64,
    /// The owners' e-mails.
    pub owners: Vec<String>,
}

/// Every workspace, oldest first, with its member count and owners.
pub fn all(c: &Connection) -> Result<Vec<Summary>> {
    let mut st = c.prepare(
        "SELECT w.id, w.name, w.kind, w.created_at,
                (SELECT count(*) FROM memberships m WHERE m.workspace_id = w.id),
                (SELECT group_concat(u.email, ' ') FROM memberships m JOIN users u ON u.id = m.user_id
                  WHERE m.workspace_id = w.id AND m.role = 'owner')
         FROM workspaces w ORDER BY w.created_at, w.id",
    )?;
    let rows = st.query_map([], |r| {
        let owners: Option<String> = r.get(5)?;
        Ok(Summary {
            workspace: Workspace {
                id: r.get(0)?,
                name: r.get(1)?,
                kind: r.get(2)?,
                created_at: r.get(3)?,
            },
            members: r.get(4)?,
            owners: owners
                .map(|o| o.split(' ').map(str::to_owned).collect())
                .unwrap_or_default(),
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[cfg(test)]
mod tests {
    /// The workspaces a person left are read by the key, in order.
    #[test]
    fn left_workspaces_are_read_by_key() {
        let mut c = rusqlite::Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        let plan = crate::store::query_plan(&c, super::LEFT_BY).join("\n");
        assert!(
            plan.contains("SEARCH former_members USING PRIMARY KEY (user_id=?)")
                && !plan.contains("TEMP B-TREE"),
            "{plan}"
        );
    }
}
