//! Notifications' tables (migration 0012; guide: "Notifications"): a
//! person's own rows, the workspace broadcasts every reviewer reads against
//! their watermarks, the unread counters, preferences, policy and digest
//! items. Every query names the person: no one reads another's.

use rusqlite::{Connection, OptionalExtension, params};

use crate::domain::notification::{Kind, Policy, Preferences};
use crate::error::Result;

/// A notification as a person sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Notification {
    pub id: String,
    pub workspace_id: String,
    pub kind: String,
    pub title: String,
    pub body: String,
    pub action_id: Option<String>,
    /// A dashboard path (`/app/actions/act_…`).
    pub path: String,
    pub read_at: Option<String>,
    pub created_at: String,
    /// Where the Action it is about stands now (`open`, `resolved`,
    /// `cancelled`, `expired`), filled by `service::notifications` for a
    /// reader who may still see that Action; None otherwise.
    pub action_status: Option<String>,
}

/// A new notification, for one person or (a broadcast) for a workspace.
#[derive(Clone, Debug)]
pub struct New<'a> {
    pub id: &'a str,
    pub workspace_id: &'a str,
    pub kind: Kind,
    pub title: &'a str,
    pub body: &'a str,
    pub action_id: Option<&'a str>,
    pub path: &'a str,
    pub created_at: &'a str,
}

/// A person's place in one workspace's broadcasts.
#[derive(Clone, Debug)]
pub struct Watermark {
    pub workspace_id: String,
    /// Broadcasts above it are theirs (the last one before they joined).
    pub from: i64,
    /// Broadcasts up to it are read ("read all").
    pub read_through: i64,
    pub read_at: Option<String>,
}

impl Watermark {
    fn unread_above(&self) -> i64 {
        self.from.max(self.read_through)
    }
}

/// The person's own notifications, a page (the table's primary key, in
/// order; `~` sorts after every id, so the first page seeks the same way).
pub const PERSONAL_PAGE: &str =
    "SELECT id, workspace_id, kind, title, body, action_id, path, read_at, created_at
     FROM notifications WHERE user_id = ?1 AND id < coalesce(?2, '~') ORDER BY id DESC LIMIT ?3";
/// The same, unread only: `notifications_unread` (named: with no
/// statistics the planner would walk the person's read ones too).
pub const PERSONAL_UNREAD_PAGE: &str =
    "SELECT id, workspace_id, kind, title, body, action_id, path, read_at, created_at
     FROM notifications INDEXED BY notifications_unread
     WHERE user_id = ?1 AND read_at IS NULL AND id < coalesce(?2, '~')
     ORDER BY id DESC LIMIT ?3";
/// The ordinal of the last broadcast before a cursor (`notification_broadcasts_by_id`).
pub const BROADCAST_CURSOR: &str =
    "SELECT n FROM notification_broadcasts WHERE workspace_id = ?1 AND id < ?2
     ORDER BY id DESC LIMIT 1";
/// A page of one workspace's broadcasts for one person, by ordinal
/// (the `(workspace_id, n)` unique index), with their read marks.
pub const BROADCAST_PAGE: &str =
    "SELECT b.id, b.workspace_id, b.kind, b.title, b.body, b.action_id, b.path,
            CASE WHEN b.n <= ?4 THEN ?5 ELSE r.read_at END, b.created_at
     FROM notification_broadcasts b
     LEFT JOIN notification_broadcast_reads r
            ON r.user_id = ?6 AND r.workspace_id = b.workspace_id AND r.n = b.n
     WHERE b.workspace_id = ?1 AND b.n > ?2 AND b.n <= ?3
       AND coalesce(r.hidden, 0) = 0 AND (?7 = 0 OR r.n IS NULL)
     ORDER BY b.n DESC LIMIT ?8";
/// The person's unread counters.
pub const UNREAD_COUNTS: &str =
    "SELECT kind, n FROM notification_unread WHERE user_id = ?1 AND n > 0 ORDER BY kind";
/// Broadcasts above a watermark the person read one by one (or never sees).
pub const BROADCAST_MARKED: &str = "SELECT count(*) FROM notification_broadcast_reads
     WHERE user_id = ?1 AND workspace_id = ?2 AND n > ?3";
/// The last broadcast ordinal of the workspace whose id is the SQL
/// expression `$ws`: the newest broadcast's, or `ntf_last_n` when
/// housekeeping removed it (migration 0018: a create no longer updates the
/// workspace's row, only a prune does; its membership triggers say the same).
macro_rules! last_broadcast_of {
    ($ws:literal) => {
        concat!(
            "SELECT max(w.ntf_last_n, coalesce(
                 (SELECT max(b.n) FROM notification_broadcasts b WHERE b.workspace_id = w.id), 0))
             FROM workspaces w WHERE w.id = ",
            $ws
        )
    };
}
/// A workspace's last broadcast ordinal.
pub const LAST_BROADCAST: &str = last_broadcast_of!("?1");

/// Writes one person's notification (the triggers count it unread).
pub fn insert(c: &Connection, user_id: &str, n: &New) -> Result<()> {
    c.prepare_cached(
        "INSERT INTO notifications(user_id, id, workspace_id, kind, title, body, action_id, path, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        user_id,
        n.id,
        n.workspace_id,
        n.kind.as_str(),
        n.title,
        n.body,
        n.action_id,
        n.path,
        n.created_at
    ])?;
    Ok(())
}

/// Writes a broadcast to the workspace's members who may decide; `hidden`
/// are people it must not reach (they hear of it otherwise, or asked for
/// it). Answers its ordinal.
pub fn broadcast(c: &Connection, n: &New, hidden: &[&str]) -> Result<i64> {
    let ord = last_broadcast(c, n.workspace_id)? + 1;
    c.prepare_cached(
        "INSERT INTO notification_broadcasts(id, workspace_id, n, kind, title, body, action_id, path, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        n.id,
        n.workspace_id,
        ord,
        n.kind.as_str(),
        n.title,
        n.body,
        n.action_id,
        n.path,
        n.created_at
    ])?;
    for u in hidden {
        c.prepare_cached(
            "INSERT OR IGNORE INTO notification_broadcast_reads(user_id, workspace_id, n, read_at, hidden)
             VALUES (?1, ?2, ?3, ?4, 1)",
        )?
        .execute(params![u, n.workspace_id, ord, n.created_at])?;
    }
    Ok(ord)
}

/// The person's broadcast watermarks in the given workspaces.
pub fn watermarks(c: &Connection, user_id: &str, workspaces: &[String]) -> Result<Vec<Watermark>> {
    let mut out = Vec::with_capacity(workspaces.len());
    let mut st = c.prepare_cached(
        "SELECT ntf_from, ntf_read_through, ntf_read_at FROM memberships
         WHERE workspace_id = ?1 AND user_id = ?2",
    )?;
    for w in workspaces {
        if let Some((from, read_through, read_at)) = st
            .query_row(params![w, user_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()?
        {
            out.push(Watermark {
                workspace_id: w.clone(),
                from,
                read_through,
                read_at,
            });
        }
    }
    Ok(out)
}

fn last_broadcast(c: &Connection, workspace_id: &str) -> Result<i64> {
    Ok(c.prepare_cached(LAST_BROADCAST)?
        .query_row([workspace_id], |r| r.get(0))?)
}

fn personal_row(r: &rusqlite::Row) -> rusqlite::Result<Notification> {
    Ok(Notification {
        id: r.get(0)?,
        workspace_id: r.get(1)?,
        kind: r.get(2)?,
        title: r.get(3)?,
        body: r.get(4)?,
        action_id: r.get(5)?,
        path: r.get(6)?,
        read_at: r.get(7)?,
        created_at: r.get(8)?,
        action_status: None,
    })
}

/// A page of the person's notifications, newest first: their own rows and
/// the broadcasts of `broadcasts` (the workspaces whose new Actions they
/// hear of), merged by id; `before` is the id the previous page ended at.
pub fn list(
    c: &Connection,
    user_id: &str,
    broadcasts: &[Watermark],
    unread_only: bool,
    before: Option<&str>,
    limit: usize,
) -> Result<Vec<Notification>> {
    let lim = i64::try_from(limit).unwrap_or(i64::MAX);
    let sql = if unread_only {
        PERSONAL_UNREAD_PAGE
    } else {
        PERSONAL_PAGE
    };
    let mut out: Vec<Notification> = c
        .prepare_cached(sql)?
        .query_map(params![user_id, before, lim], personal_row)?
        .collect::<rusqlite::Result<_>>()?;
    for w in broadcasts {
        // Broadcast ids rise with their ordinal: the page's upper end is
        // the ordinal of the last broadcast before the cursor.
        let upper: i64 = match before {
            None => i64::MAX,
            Some(b) => c
                .prepare_cached(BROADCAST_CURSOR)?
                .query_row(params![w.workspace_id, b], |r| r.get(0))
                .optional()?
                .unwrap_or(0),
        };
        let lower = if unread_only {
            w.unread_above()
        } else {
            w.from
        };
        if upper <= lower {
            continue;
        }
        let mut st = c.prepare_cached(BROADCAST_PAGE)?;
        let rows = st.query_map(
            params![
                w.workspace_id,
                lower,
                upper,
                w.read_through,
                w.read_at,
                user_id,
                unread_only,
                lim
            ],
            personal_row,
        )?;
        for r in rows {
            out.push(r?);
        }
    }
    out.sort_by(|a, b| b.id.cmp(&a.id));
    out.truncate(limit);
    Ok(out)
}

/// Whether `id` is one of the person's notifications, so a page may start
/// after it: their own row, or a broadcast of a workspace they belong to
/// (whether or not they hear of its new Actions now: a settings change
/// between two pages does not break the second).
pub fn is_cursor(c: &Connection, user_id: &str, workspaces: &[&str], id: &str) -> Result<bool> {
    let own = c
        .prepare_cached("SELECT 1 FROM notifications WHERE user_id = ?1 AND id = ?2")?
        .exists(params![user_id, id])?;
    if own {
        return Ok(true);
    }
    let of: Option<String> = c
        .prepare_cached("SELECT workspace_id FROM notification_broadcasts WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?;
    Ok(of.is_some_and(|ws| workspaces.contains(&ws.as_str())))
}

/// Unread counts by kind: the person's counters plus their unread broadcasts.
pub fn unread(
    c: &Connection,
    user_id: &str,
    broadcasts: &[Watermark],
) -> Result<Vec<(String, i64)>> {
    let mut out: Vec<(String, i64)> = c
        .prepare_cached(UNREAD_COUNTS)?
        .query_map([user_id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut new = 0;
    for w in broadcasts {
        let above = w.unread_above();
        let last = last_broadcast(c, &w.workspace_id)?;
        if last <= above {
            continue;
        }
        let marked: i64 = c
            .prepare_cached(BROADCAST_MARKED)?
            .query_row(params![user_id, w.workspace_id, above], |r| r.get(0))?;
        new += (last - above - marked).max(0);
    }
    if new > 0 {
        let name = Kind::New.as_str();
        match out.iter_mut().find(|(k, _)| k == name) {
            Some((_, n)) => *n += new,
            None => out.push((name.to_owned(), new)),
        }
        out.sort();
    }
    Ok(out)
}

/// Marks one of the person's notifications read (again: unchanged) and
/// returns it; None when it is not theirs.
pub fn read_one(
    c: &Connection,
    user_id: &str,
    broadcasts: &[Watermark],
    id: &str,
    now: &str,
) -> Result<Option<Notification>> {
    c.prepare_cached(
        "UPDATE notifications SET read_at = ?3 WHERE user_id = ?1 AND id = ?2 AND read_at IS NULL",
    )?
    .execute(params![user_id, id, now])?;
    let own = c
        .prepare_cached(
            "SELECT id, workspace_id, kind, title, body, action_id, path, read_at, created_at
             FROM notifications WHERE user_id = ?1 AND id = ?2",
        )?
        .query_row(params![user_id, id], personal_row)
        .optional()?;
    if own.is_some() {
        return Ok(own);
    }
    let Some((ws, n)) = c
        .prepare_cached("SELECT workspace_id, n FROM notification_broadcasts WHERE id = ?1")?
        .query_row([id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .optional()?
    else {
        return Ok(None);
    };
    let Some(w) = broadcasts.iter().find(|w| w.workspace_id == ws) else {
        return Ok(None);
    };
    if n <= w.from {
        return Ok(None);
    }
    if n > w.read_through {
        c.prepare_cached(
            "INSERT OR IGNORE INTO notification_broadcast_reads(user_id, workspace_id, n, read_at)
             VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![user_id, ws, n, now])?;
    }
    let row = c
        .prepare_cached(
            "SELECT b.id, b.workspace_id, b.kind, b.title, b.body, b.action_id, b.path,
                    CASE WHEN b.n <= ?3 THEN ?4 ELSE r.read_at END, b.created_at, coalesce(r.hidden, 0)
             FROM notification_broadcasts b
             LEFT JOIN notification_broadcast_reads r
                    ON r.user_id = ?2 AND r.workspace_id = b.workspace_id AND r.n = b.n
             WHERE b.id = ?1",
        )?
        .query_row(params![id, user_id, w.read_through, w.read_at], |r| {
            Ok((personal_row(r)?, r.get::<_, i64>(9)? == 1))
        })
        .optional()?;
    Ok(row.and_then(|(n, hidden)| (!hidden).then_some(n)))
}

/// Marks read the person's unread notifications about one Action (they
/// decided or voted on it: what told them of it is done with). Through
/// `notifications_unread`: their unread ones only. Answers how many.
pub fn read_about(c: &Connection, user_id: &str, action_id: &str, now: &str) -> Result<usize> {
    Ok(c.prepare_cached(READ_ABOUT)?
        .execute(params![user_id, action_id, now])?)
}

/// Rewrites the quote of a comment in the notices and held digest items
/// about Action `action_id` that quote it (`action.mentioned`,
/// `action.commented` whose body is `old`), for each member of the
/// workspace (by the primary key and `notification_digest_items_by_user`).
pub fn requote(
    c: &Connection,
    workspace_id: &str,
    action_id: &str,
    old: &str,
    new: &str,
) -> Result<()> {
    let members: Vec<String> = c
        .prepare_cached("SELECT user_id FROM memberships WHERE workspace_id = ?1")?
        .query_map([workspace_id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let path = format!("/app/actions/{action_id}");
    for user in members {
        c.prepare_cached(
            "UPDATE notifications SET body = ?4
              WHERE user_id = ?1 AND action_id = ?2 AND body = ?3
                AND kind IN ('action.mentioned', 'action.commented')",
        )?
        .execute(params![user, action_id, old, new])?;
        c.prepare_cached(
            "UPDATE notification_digest_items SET body = ?5
              WHERE user_id = ?1 AND workspace_id = ?2 AND path = ?3 AND body = ?4
                AND kind IN ('action.mentioned', 'action.commented')",
        )?
        .execute(params![user, workspace_id, path, old, new])?;
    }
    Ok(())
}

const READ_ABOUT: &str = "UPDATE notifications INDEXED BY notifications_unread SET read_at = ?3
      WHERE user_id = ?1 AND read_at IS NULL AND action_id = ?2";

/// Marks read a person's unread `invitation.received` notices of a
/// workspace: the invitation they were about was accepted, revoked or
/// replaced. Answers how many.
pub fn read_invitation_notices(
    c: &Connection,
    user_id: &str,
    workspace_id: &str,
    now: &str,
) -> Result<usize> {
    Ok(c.prepare_cached(
        "UPDATE notifications SET read_at = ?3
          WHERE user_id = ?1 AND workspace_id = ?2 AND kind = 'invitation.received' AND read_at IS NULL",
    )?
    .execute(params![user_id, workspace_id, now])?)
}

/// Marks everything of the person's read: their rows, and every broadcast
/// of each of their workspaces up to now. Answers how many were unread.
pub fn read_all(c: &Connection, user_id: &str, broadcasts: &[Watermark], now: &str) -> Result<i64> {
    let before: i64 = unread(c, user_id, broadcasts)?.iter().map(|(_, n)| n).sum();
    c.prepare_cached(
        "UPDATE notifications SET read_at = ?2 WHERE user_id = ?1 AND read_at IS NULL",
    )?
    .execute(params![user_id, now])?;
    c.prepare_cached(concat!(
        "UPDATE memberships SET ntf_read_at = ?2, ntf_read_through = (",
        last_broadcast_of!("memberships.workspace_id"),
        ") WHERE user_id = ?1"
    ))?
    .execute(params![user_id, now])?;
    // Marks of single reads the watermark now covers mean nothing; the
    // `hidden` ones still hide.
    c.prepare_cached(
        "DELETE FROM notification_broadcast_reads WHERE user_id = ?1 AND hidden = 0
           AND n <= (SELECT m.ntf_read_through FROM memberships m
                      WHERE m.user_id = ?1 AND m.workspace_id = notification_broadcast_reads.workspace_id)",
    )?
    .execute([user_id])?;
    Ok(before)
}

/// A broadcast as stored.
#[derive(Clone, Debug)]
pub struct Broadcast {
    pub id: String,
    pub workspace_id: String,
    pub n: i64,
    pub title: String,
    pub body: String,
    pub action_id: Option<String>,
    pub path: String,
}

pub fn broadcast_by_id(c: &Connection, id: &str) -> Result<Option<Broadcast>> {
    Ok(c.prepare_cached(
        "SELECT id, workspace_id, n, title, body, action_id, path FROM notification_broadcasts WHERE id = ?1",
    )?
    .query_row([id], |r| {
        Ok(Broadcast {
            id: r.get(0)?,
            workspace_id: r.get(1)?,
            n: r.get(2)?,
            title: r.get(3)?,
            body: r.get(4)?,
            action_id: r.get(5)?,
            path: r.get(6)?,
        })
    })
    .optional()?)
}

/// Whether broadcast `n` of the workspace is the person's to hear of: they
/// were a member before it, and it is not hidden from them.
pub fn receives_broadcast(
    c: &Connection,
    user_id: &str,
    workspace_id: &str,
    n: i64,
) -> Result<bool> {
    let from: Option<i64> = c
        .prepare_cached(
            "SELECT ntf_from FROM memberships WHERE workspace_id = ?1 AND user_id = ?2",
        )?
        .query_row(params![workspace_id, user_id], |r| r.get(0))
        .optional()?;
    if from.is_none_or(|f| f >= n) {
        return Ok(false);
    }
    let hidden: Option<i64> = c
        .prepare_cached(
            "SELECT hidden FROM notification_broadcast_reads WHERE user_id = ?1 AND workspace_id = ?2 AND n = ?3",
        )?
        .query_row(params![user_id, workspace_id, n], |r| r.get(0))
        .optional()?;
    Ok(hidden != Some(1))
}

/// A person's preferences in a workspace (the defaults when never set).
pub fn preferences(c: &Connection, user_id: &str, workspace_id: &str) -> Result<Preferences> {
    let raw: Option<String> = c
        .prepare_cached(
            "SELECT prefs FROM notification_preferences WHERE user_id = ?1 AND workspace_id = ?2",
        )?
        .query_row(params![user_id, workspace_id], |r| r.get(0))
        .optional()?;
    Ok(raw
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default())
}

pub fn set_preferences(
    c: &Connection,
    user_id: &str,
    workspace_id: &str,
    p: &Preferences,
    now: &str,
) -> Result<()> {
    let json = serde_json::to_string(p).map_err(anyhow::Error::from)?;
    c.prepare_cached(
        "INSERT INTO notification_preferences(user_id, workspace_id, prefs, updated_at)
         VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(user_id, workspace_id) DO UPDATE SET prefs = excluded.prefs, updated_at = excluded.updated_at",
    )?
    .execute(params![user_id, workspace_id, json, now])?;
    Ok(())
}

/// The people of a workspace whose preferences ask for new Actions by
/// e-mail (the default does not).
pub fn wanting_new_by_email(c: &Connection, workspace_id: &str) -> Result<Vec<String>> {
    let mut st = c.prepare_cached(
        "SELECT user_id FROM notification_preferences WHERE workspace_id = ?1
           AND prefs ->> '$.email' = 1 AND prefs ->> '$.events.\"action.new\".email' = 1",
    )?;
    let rows = st.query_map([workspace_id], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A workspace's policy (the defaults when never set).
pub fn policy(c: &Connection, workspace_id: &str) -> Result<Policy> {
    let raw: Option<String> = c
        .prepare_cached("SELECT policy FROM notification_policies WHERE workspace_id = ?1")?
        .query_row([workspace_id], |r| r.get(0))
        .optional()?;
    Ok(raw
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default())
}

pub fn set_policy(
    c: &Connection,
    workspace_id: &str,
    p: &Policy,
    by: &str,
    now: &str,
) -> Result<()> {
    let json = serde_json::to_string(p).map_err(anyhow::Error::from)?;
    c.prepare_cached(
        "INSERT INTO notification_policies(workspace_id, policy, updated_by, updated_at)
         VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(workspace_id) DO UPDATE SET policy = excluded.policy,
             updated_by = excluded.updated_by, updated_at = excluded.updated_at",
    )?
    .execute(params![workspace_id, json, by, now])?;
    Ok(())
}

/// A notification waiting for the person's digest e-mail.
pub fn add_digest_item(c: &Connection, user_id: &str, n: &New) -> Result<()> {
    c.prepare_cached(
        "INSERT INTO notification_digest_items(user_id, workspace_id, kind, title, body, path, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        user_id,
        n.workspace_id,
        n.kind.as_str(),
        n.title,
        n.body,
        n.path,
        n.created_at
    ])?;
    Ok(())
}

/// A digest item: kind, title, body, path, created_at.
pub type DigestItem = (String, String, String, String, String);

/// Takes (reads and deletes) the person's waiting digest items in a workspace, oldest first.
pub fn take_digest_items(
    c: &Connection,
    user_id: &str,
    workspace_id: &str,
) -> Result<Vec<DigestItem>> {
    let items: Vec<DigestItem> = c
        .prepare_cached(
            "DELETE FROM notification_digest_items WHERE user_id = ?1 AND workspace_id = ?2
             RETURNING kind, title, body, path, created_at, id",
        )?
        .query_map(params![user_id, workspace_id], |r| {
            Ok((
                (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?),
                r.get::<_, i64>(5)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?
        .into_iter()
        .map(|(item, id)| (id, item))
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_values()
        .collect();
    Ok(items)
}

/// How long notifications are kept (housekeeping): read ones and broadcasts.
pub const KEEP_DAYS: i64 = 90;

/// Housekeeping: read notifications created before `before` go, and so do
/// broadcasts; each member's broadcast watermark moves past the removed
/// ones, so the unread arithmetic stays exact. Answers how many rows went.
pub fn prune(c: &Connection, before: &str) -> Result<usize> {
    let mut n = c
        .prepare_cached("DELETE FROM notifications WHERE read_at IS NOT NULL AND created_at < ?1")?
        .execute([before])?;
    // Broadcasts are numbered in time order (`seq`): the oldest come first,
    // so each batch is read from the start of the table, never scanned.
    for _ in 0..100 {
        let batch: Vec<(i64, String, i64)> = c
            .prepare_cached(
                "SELECT seq, workspace_id, n FROM notification_broadcasts
                 WHERE seq <= (SELECT coalesce(max(seq), 0) FROM
                     (SELECT seq, created_at FROM notification_broadcasts ORDER BY seq LIMIT 1000)
                     WHERE created_at < ?1)
                 ORDER BY seq LIMIT 1000",
            )?
            .query_map([before], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let Some(last) = batch.last().map(|b| b.0) else {
            break;
        };
        let mut upto: std::collections::BTreeMap<String, i64> = Default::default();
        for (_, ws, ord) in batch {
            let e = upto.entry(ws).or_insert(ord);
            *e = (*e).max(ord);
        }
        n += c
            .prepare_cached("DELETE FROM notification_broadcasts WHERE seq <= ?1")?
            .execute([last])?;
        for (ws, ord) in upto {
            // The ordinal counts on from here should these be the newest.
            c.prepare_cached(
                "UPDATE workspaces SET ntf_last_n = max(ntf_last_n, ?2) WHERE id = ?1",
            )?
            .execute(params![ws, ord])?;
            c.prepare_cached(
                "UPDATE memberships SET ntf_from = max(ntf_from, ?2) WHERE workspace_id = ?1",
            )?
            .execute(params![ws, ord])?;
            c.prepare_cached(
                "DELETE FROM notification_broadcast_reads WHERE workspace_id = ?1 AND n <= ?2",
            )?
            .execute(params![ws, ord])?;
        }
    }
    Ok(n)
}

/// The person stops hearing of new Actions of the workspace (switched
/// `action.new` off, or the policy let go of it while their choice is off):
/// where, so that hearing of them again knows which notices came meanwhile.
pub fn stop_hearing_broadcasts(c: &Connection, user_id: &str, workspace_id: &str) -> Result<()> {
    c.prepare_cached(concat!(
        "UPDATE memberships SET ntf_muted_at = (",
        last_broadcast_of!("memberships.workspace_id"),
        ") WHERE user_id = ?1 AND workspace_id = ?2 AND ntf_muted_at IS NULL"
    ))?
    .execute(params![user_id, workspace_id])?;
    Ok(())
}

/// The person hears of new Actions of the workspace again (switched
/// `action.new` back on, or the policy made it mandatory): the notices made
/// while they did not are marked read, one by one, so they do not come
/// back as unread; those from before keep their state, and none is
/// removed. Without a recorded start (muted before hds kept one), every
/// notice so far is marked read.
pub fn hear_broadcasts_from_now(
    c: &Connection,
    user_id: &str,
    workspace_id: &str,
    now: &str,
) -> Result<()> {
    let muted: Option<Option<i64>> = c
        .prepare_cached(
            "SELECT ntf_muted_at FROM memberships WHERE user_id = ?1 AND workspace_id = ?2",
        )?
        .query_row(params![user_id, workspace_id], |r| r.get(0))
        .optional()?;
    match muted.flatten() {
        Some(at) => {
            c.prepare_cached(MARK_MUTED_READ)?
                .execute(params![user_id, workspace_id, now, at])?;
        }
        None => {
            c.prepare_cached(concat!(
                "UPDATE memberships SET
                    ntf_read_at = CASE WHEN (",
                last_broadcast_of!("memberships.workspace_id"),
                ") > ntf_read_through THEN ?3 ELSE ntf_read_at END,
                    ntf_read_through = max(ntf_read_through, (",
                last_broadcast_of!("memberships.workspace_id"),
                ")) WHERE user_id = ?1 AND workspace_id = ?2"
            ))?
            .execute(params![user_id, workspace_id, now])?;
        }
    }
    c.prepare_cached(
        "UPDATE memberships SET ntf_muted_at = NULL WHERE user_id = ?1 AND workspace_id = ?2",
    )?
    .execute(params![user_id, workspace_id])?;
    Ok(())
}

/// The workspace's broadcasts after the mute (`UNIQUE (workspace_id, n)`),
/// each marked read for the person unless marked already.
const MARK_MUTED_READ: &str =
    "INSERT OR IGNORE INTO notification_broadcast_reads(user_id, workspace_id, n, read_at)
    SELECT ?1, ?2, b.n, ?3 FROM notification_broadcasts b
     WHERE b.workspace_id = ?2 AND b.n > ?4";

/// A notification that falls due later (`notification_timers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerKind {
    Expiring,
    Returned,
    Digest,
    /// E-mail a broadcast's recipients who want it (`subject`: its id).
    Broadcast,
}

impl TimerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Expiring => "expiring",
            Self::Returned => "returned",
            Self::Digest => "digest",
            Self::Broadcast => "broadcast",
        }
    }
    fn parse(s: &str) -> Option<Self> {
        [
            Self::Expiring,
            Self::Returned,
            Self::Digest,
            Self::Broadcast,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// A due timer.
#[derive(Clone, Debug)]
pub struct Timer {
    pub kind: TimerKind,
    pub subject: String,
    pub due_at: String,
    pub user_id: Option<String>,
}

/// Sets (or moves) a timer.
pub fn set_timer(
    c: &Connection,
    kind: TimerKind,
    subject: &str,
    due_at: &str,
    user_id: Option<&str>,
) -> Result<()> {
    c.prepare_cached(
        "INSERT INTO notification_timers(kind, subject, due_at, user_id) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(kind, subject) DO UPDATE SET due_at = excluded.due_at, user_id = excluded.user_id",
    )?
    .execute(params![kind.as_str(), subject, due_at, user_id])?;
    Ok(())
}

/// Sets a timer unless one is set (a digest keeps its first due time).
pub fn set_timer_once(c: &Connection, kind: TimerKind, subject: &str, due_at: &str) -> Result<()> {
    c.prepare_cached(
        "INSERT OR IGNORE INTO notification_timers(kind, subject, due_at) VALUES (?1, ?2, ?3)",
    )?
    .execute(params![kind.as_str(), subject, due_at])?;
    Ok(())
}

/// Moves a timer that is set; sets none.
pub fn move_timer(c: &Connection, kind: TimerKind, subject: &str, due_at: &str) -> Result<()> {
    c.prepare_cached(
        "UPDATE notification_timers SET due_at = ?3 WHERE kind = ?1 AND subject = ?2",
    )?
    .execute(params![kind.as_str(), subject, due_at])?;
    Ok(())
}

pub fn clear_timer(c: &Connection, kind: TimerKind, subject: &str) -> Result<()> {
    c.prepare_cached("DELETE FROM notification_timers WHERE kind = ?1 AND subject = ?2")?
        .execute(params![kind.as_str(), subject])?;
    Ok(())
}

/// Whether a timer is due by `now` (`notification_timers_due`).
pub fn any_timer_due(c: &Connection, now: &str) -> Result<bool> {
    Ok(c.prepare_cached(ANY_TIMER_DUE)?
        .query_row([now], |r| r.get(0))?)
}

const ANY_TIMER_DUE: &str = "SELECT EXISTS (SELECT 1 FROM notification_timers WHERE due_at <= ?1)";

/// Takes (deletes and answers) up to `limit` timers due by `now`, oldest first.
pub fn take_due_timers(c: &Connection, now: &str, limit: i64) -> Result<Vec<Timer>> {
    let mut st = c.prepare_cached(
        "DELETE FROM notification_timers WHERE (kind, subject) IN (
             SELECT kind, subject FROM notification_timers WHERE due_at <= ?1 ORDER BY due_at LIMIT ?2)
         RETURNING kind, subject, due_at, user_id",
    )?;
    let rows = st.query_map(params![now, limit], |r| {
        Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (kind, subject, due_at, user_id) = row?;
        if let Some(kind) = TimerKind::parse(&kind) {
            out.push(Timer {
                kind,
                subject,
                due_at,
                user_id,
            });
        }
    }
    Ok(out)
}

/// A person left a workspace: their notifications about it (and digest
/// items waiting) go; an invitation to it stays.
pub fn forget_workspace(c: &Connection, user_id: &str, workspace_id: &str) -> Result<()> {
    c.prepare_cached(
        "DELETE FROM notifications WHERE user_id = ?1 AND workspace_id = ?2
           AND kind <> 'invitation.received'",
    )?
    .execute(params![user_id, workspace_id])?;
    c.prepare_cached(
        "DELETE FROM notification_digest_items WHERE user_id = ?1 AND workspace_id = ?2",
    )?
    .execute(params![user_id, workspace_id])?;
    c.prepare_cached(
        "DELETE FROM notification_broadcast_reads WHERE user_id = ?1 AND workspace_id = ?2",
    )?
    .execute(params![user_id, workspace_id])?;
    Ok(())
}

#[cfg(test)]
mod tests {

    /// The notices made during a mute are found by the workspace's ordinal.
    #[test]
    fn the_notices_of_a_mute_are_sought_by_ordinal() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        let plan = crate::store::query_plan(&c, super::MARK_MUTED_READ).join("\n");
        assert!(
            plan.contains("SEARCH b USING") && plan.contains("(workspace_id=? AND n>?)"),
            "{plan}"
        );
    }

    /// Reading one Action's notices seeks the person's unread ones only.
    #[test]
    fn reading_an_actions_notices_seeks_the_unread_ones() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        let plan = crate::store::query_plan(&c, super::READ_ABOUT).join("\n");
        assert!(
            plan.contains("USING INDEX notifications_unread (user_id=?)"),
            "{plan}"
        );
    }
    use super::*;

    /// Pruning old broadcasts moves the members' watermarks past them: what
    /// is left is listed and counted alike.
    #[test]
    fn pruned_broadcasts_leave_the_counts_exact() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        c.execute_batch(
            "INSERT INTO workspaces(id, name, kind, created_at) VALUES ('ws_1', 'W', 'team', '2026-01-01');
             INSERT INTO users(id, email, created_at) VALUES ('usr_1', 'a@example.com', '2026-01-01');
             INSERT INTO memberships(workspace_id, user_id, role, created_at) VALUES ('ws_1', 'usr_1', 'reviewer', '2026-01-01');",
        )
        .unwrap();
        for (i, day) in ["2026-02-01", "2026-02-02", "2026-06-01"]
            .iter()
            .enumerate()
        {
            let id = format!("ntf_{i}");
            let n = New {
                id: &id,
                workspace_id: "ws_1",
                kind: Kind::New,
                title: "t",
                body: "b",
                action_id: None,
                path: "/app",
                created_at: day,
            };
            broadcast(&c, &n, &[]).unwrap();
        }
        let marks = || watermarks(&c, "usr_1", &["ws_1".to_owned()]).unwrap();
        assert_eq!(
            unread(&c, "usr_1", &marks()).unwrap(),
            [("action.new".to_owned(), 3)]
        );
        assert_eq!(prune(&c, "2026-03-01").unwrap(), 2);
        assert_eq!(
            unread(&c, "usr_1", &marks()).unwrap(),
            [("action.new".to_owned(), 1)]
        );
        let page = list(&c, "usr_1", &marks(), false, None, 10).unwrap();
        assert_eq!(page.len(), 1);
        assert_eq!(page[0].id, "ntf_2");
        // Everything pruned, then a new one: numbered on, heard of.
        assert_eq!(prune(&c, "2026-07-01").unwrap(), 1);
        assert!(unread(&c, "usr_1", &marks()).unwrap().is_empty());
        // A member who joins now starts after the pruned ones.
        c.execute_batch(
            "INSERT INTO users(id, email, created_at) VALUES ('usr_2', 'b@example.com', '2026-07-01');
             INSERT INTO memberships(workspace_id, user_id, role, created_at) VALUES ('ws_1', 'usr_2', 'reviewer', '2026-07-01');",
        )
        .unwrap();
        let from: (i64, i64) = c
            .query_row(
                "SELECT ntf_from, ntf_read_through FROM memberships WHERE user_id = 'usr_2'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(from, (3, 3));
        let n = New {
            id: "ntf_3",
            workspace_id: "ws_1",
            kind: Kind::New,
            title: "t",
            body: "b",
            action_id: None,
            path: "/app",
            created_at: "2026-07-02",
        };
        assert_eq!(broadcast(&c, &n, &[]).unwrap(), 4);
        assert_eq!(
            unread(&c, "usr_1", &marks()).unwrap(),
            [("action.new".to_owned(), 1)]
        );
        assert_eq!(
            list(&c, "usr_1", &marks(), true, None, 10).unwrap()[0].id,
            "ntf_3"
        );
        let theirs = watermarks(&c, "usr_2", &["ws_1".to_owned()]).unwrap();
        assert_eq!(
            unread(&c, "usr_2", &theirs).unwrap(),
            [("action.new".to_owned(), 1)]
        );
    }

    /// Every query of a page and of the bell is a seek on an index or a
    /// primary key, never a scan of a table.
    #[test]
    fn pages_and_counts_use_their_indexes() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        for (sql, wants) in [
            (
                PERSONAL_PAGE,
                "SEARCH notifications USING PRIMARY KEY (user_id=? AND id<?)",
            ),
            (
                PERSONAL_UNREAD_PAGE,
                "SEARCH notifications USING INDEX notifications_unread (user_id=? AND id<?)",
            ),
            (
                BROADCAST_CURSOR,
                "SEARCH notification_broadcasts USING INDEX notification_broadcasts_by_id (workspace_id=? AND id<?)",
            ),
            (
                BROADCAST_PAGE,
                "SEARCH b USING INDEX sqlite_autoindex_notification_broadcasts_2 (workspace_id=? AND n>? AND n<?)",
            ),
            (
                UNREAD_COUNTS,
                "SEARCH notification_unread USING PRIMARY KEY (user_id=?)",
            ),
            (
                BROADCAST_MARKED,
                "SEARCH notification_broadcast_reads USING PRIMARY KEY (user_id=? AND workspace_id=? AND n>?)",
            ),
            (
                LAST_BROADCAST,
                "SEARCH b USING COVERING INDEX sqlite_autoindex_notification_broadcasts_2 (workspace_id=?)",
            ),
        ] {
            let plan = crate::store::query_plan(&c, sql);
            let text = plan.join("\n");
            assert!(text.contains(wants), "{sql}:\n{text}");
            assert!(
                !plan.iter().any(|l| l.starts_with("SCAN")),
                "{sql}:\n{text}"
            );
        }
        // The expiry pass's first read: one seek of the timers by due time.
        let text = crate::store::query_plan(&c, ANY_TIMER_DUE).join("\n");
        assert!(
            text.contains(
                "SEARCH notification_timers USING COVERING INDEX notification_timers_due (due_at<?)"
            ),
            "{text}"
        );
        assert!(!text.contains("SCAN notification_timers"), "{text}");
    }
}
