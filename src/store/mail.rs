//! The e-mail outbox (migration 0011; guide: "E-mail"): one row per mail,
//! rendered when queued; its job in `jobs` (kind `email`) says when the next
//! attempt is due. The row stays, without the bodies of a secret mail, as the
//! log owners and admins read, until housekeeping forgets it.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::Result;

/// A mail as the admin list shows it: never its bodies.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct Mail {
    /// `mail_…`; also the left part of its `Message-ID`.
    pub id: String,
    /// Always `email`.
    pub object: &'static str,
    /// `notification`, `digest` or `invitation`.
    pub kind: String,
    /// The recipient's address.
    pub to: String,
    pub subject: String,
    /// `pending` (an attempt is due), `sent` (the mail server accepted it)
    /// or `failed` (given up: see `last_error`).
    pub status: String,
    pub attempts: i64,
    /// The mail server's reply or why no connection was made; null until an
    /// attempt failed.
    pub last_error: Option<String>,
    pub last_attempt_at: Option<String>,
    pub sent_at: Option<String>,
    pub created_at: String,
}

/// A new mail, rendered, as the queueing transaction writes it.
pub struct NewMail<'a> {
    pub id: &'a str,
    pub workspace_id: Option<&'a str>,
    pub user_id: Option<&'a str>,
    pub to: &'a str,
    pub kind: &'a str,
    pub subject: &'a str,
    pub text_body: &'a str,
    pub html_body: &'a str,
    pub secret: bool,
    pub unsubscribable: bool,
    pub now: &'a str,
}

/// Stores a pending mail.
pub fn insert(c: &Connection, m: &NewMail) -> Result<()> {
    c.prepare_cached(
        "INSERT INTO mail_outbox(id, workspace_id, user_id, to_addr, kind, subject, text_body,
            html_body, secret, status, created_at, unsubscribable)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'pending', ?10, ?11)",
    )?
    .execute(params![
        m.id,
        m.workspace_id,
        m.user_id,
        m.to,
        m.kind,
        m.subject,
        m.text_body,
        m.html_body,
        m.secret,
        m.now,
        m.unsubscribable
    ])?;
    Ok(())
}

/// What the worker needs to send one attempt. No `Debug`: the bodies may
/// hold a secret link.
#[derive(Clone)]
pub struct Outgoing {
    pub id: String,
    pub to: String,
    pub subject: String,
    pub text_body: String,
    pub html_body: String,
    pub created_at: String,
    /// Attempts made so far (this one is `attempts + 1`).
    pub attempts: i64,
    /// For a notification mail or a digest: the token of its one-click
    /// unsubscribe link (`domain::unsubscribe`), filled by the worker.
    pub unsubscribe_token: Option<String>,
    /// The person and workspace a mail that unsubscribing would stop is
    /// for, whose link that is (`unsubscribable`); None for any other.
    pub list: Option<(String, String)>,
}

/// The instance's key of unsubscribe links (made with the database, schema
/// v31).
pub fn unsubscribe_key(c: &Connection) -> Result<[u8; 32]> {
    let v: Vec<u8> = c
        .prepare_cached("SELECT value FROM instance_secrets WHERE name = 'mail_unsubscribe'")?
        .query_row([], |r| r.get(0))?;
    v.try_into().map_err(|_| {
        crate::error::Error::internal(anyhow::anyhow!(
            "instance_secrets.mail_unsubscribe is not 32 bytes"
        ))
    })
}

/// The pending mail to attempt; None when it is no longer pending (sent or
/// failed meanwhile) or its bodies are gone.
pub fn outgoing(c: &Connection, id: &str) -> Result<Option<Outgoing>> {
    Ok(c.prepare_cached(
        "SELECT id, to_addr, subject, text_body, html_body, created_at, attempts,
                CASE WHEN unsubscribable = 1 THEN user_id END, workspace_id
         FROM mail_outbox WHERE id = ?1 AND status = 'pending'
           AND text_body IS NOT NULL AND html_body IS NOT NULL",
    )?
    .query_row([id], |r| {
        let (user, workspace): (Option<String>, Option<String>) = (r.get(7)?, r.get(8)?);
        Ok(Outgoing {
            unsubscribe_token: None,
            list: user.zip(workspace),
            id: r.get(0)?,
            to: r.get(1)?,
            subject: r.get(2)?,
            text_body: r.get(3)?,
            html_body: r.get(4)?,
            created_at: r.get(5)?,
            attempts: r.get(6)?,
        })
    })
    .optional()?)
}

/// Why a pending sign-in mail is given up unsent: its link is dead.
pub const LAPSED: &str =
    "not sent: the sign-in link it carries lives 15 minutes, and would be dead by its next attempt";

/// Whether `id` is a pending sign-in mail queued at or before `cutoff` (its
/// link's lifetime before the time it would be sent): sending it would
/// deliver a dead link.
pub fn signin_lapsed(c: &Connection, id: &str, cutoff: &str) -> Result<bool> {
    Ok(c.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM mail_outbox
          WHERE id = ?1 AND status = 'pending' AND kind = 'signin' AND created_at <= ?2)",
    )?
    .query_row(params![id, cutoff], |r| r.get(0))?)
}

/// Fails a pending sign-in mail whose link lapsed before its next attempt
/// came: nothing was attempted now, so the last attempt's time and error
/// stay (the error after LAPSED); a settled row always has
/// `last_attempt_at` (the prune reads it), so a mail never tried gets `now`.
pub fn give_up_lapsed(c: &Connection, id: &str, now: &str) -> Result<()> {
    c.prepare_cached(
        "UPDATE mail_outbox SET status = 'failed',
            last_error = ?2 || coalesce('; the last attempt: ' || last_error, ''),
            last_attempt_at = coalesce(last_attempt_at, ?3),
            text_body = CASE WHEN secret = 1 THEN NULL ELSE text_body END,
            html_body = CASE WHEN secret = 1 THEN NULL ELSE html_body END
         WHERE id = ?1 AND status = 'pending'",
    )?
    .execute(params![id, LAPSED, now])?;
    Ok(())
}

/// Attempts made so far, for a mail still pending.
pub fn pending_attempts(c: &Connection, id: &str) -> Result<Option<i64>> {
    Ok(
        c.prepare_cached("SELECT attempts FROM mail_outbox WHERE id = ?1 AND status = 'pending'")?
            .query_row([id], |r| r.get(0))
            .optional()?,
    )
}

/// What an attempt (or a refusal before any) came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    Sent,
    /// Another attempt is due (its job says when).
    Retry,
    Failed,
}

/// Records attempt number `attempt`, started at `at`, and the mail's new
/// state; a sent or failed secret mail loses its bodies here.
///
/// An attempt that ends after the mail was cancelled (its invitation
/// revoked, its person removed) leaves the cancellation in place, unless
/// the mail went out after all: the log then says so.
pub fn record_attempt(
    c: &Connection,
    id: &str,
    attempt: i64,
    at: &str,
    outcome: Settled,
    error: Option<&str>,
) -> Result<()> {
    let status = match outcome {
        Settled::Sent => "sent",
        Settled::Retry => "pending",
        Settled::Failed => "failed",
    };
    c.prepare_cached(
        "UPDATE mail_outbox SET status = ?2, attempts = ?3, last_error = ?4, last_attempt_at = ?5,
            sent_at = CASE WHEN ?2 = 'sent' THEN ?5 END,
            text_body = CASE WHEN secret = 1 AND ?2 <> 'pending' THEN NULL ELSE text_body END,
            html_body = CASE WHEN secret = 1 AND ?2 <> 'pending' THEN NULL ELSE html_body END
         WHERE id = ?1 AND (status = 'pending' OR ?2 = 'sent')",
    )?
    .execute(params![id, status, attempt, error, at])?;
    Ok(())
}

const FIELDS: &str = "id, kind, to_addr, subject, status, attempts, last_error, last_attempt_at,
    sent_at, created_at";

fn map_row(r: &rusqlite::Row) -> rusqlite::Result<Mail> {
    Ok(Mail {
        id: r.get(0)?,
        object: "email",
        kind: r.get(1)?,
        to: r.get(2)?,
        subject: r.get(3)?,
        status: r.get(4)?,
        attempts: r.get(5)?,
        last_error: r.get(6)?,
        last_attempt_at: r.get(7)?,
        sent_at: r.get(8)?,
        created_at: r.get(9)?,
    })
}

/// Whether `id` is a mail of the workspace's log (a page may start after it).
pub fn in_log(c: &Connection, workspace_id: &str, id: &str) -> Result<bool> {
    Ok(
        c.prepare_cached("SELECT 1 FROM mail_outbox WHERE id = ?1 AND workspace_id = ?2")?
            .exists(rusqlite::params![id, workspace_id])?,
    )
}

/// A workspace's mail newest first (ids are ULIDs: id order is creation
/// order), `starting_after` a mail id to page on from, optionally of one
/// status (`mail_outbox_by_workspace`, `mail_outbox_by_status`).
pub fn list(
    c: &Connection,
    workspace_id: &str,
    status: Option<&str>,
    starting_after: Option<&str>,
    limit: i64,
) -> Result<Vec<Mail>> {
    let mut st = match status {
        Some(_) => c.prepare_cached(&format!(
            "SELECT {FIELDS} FROM mail_outbox
             WHERE workspace_id = ?1 AND status = ?2 AND (?3 IS NULL OR id < ?3)
             ORDER BY id DESC LIMIT ?4"
        ))?,
        None => c.prepare_cached(&format!(
            "SELECT {FIELDS} FROM mail_outbox
             WHERE workspace_id = ?1 AND ?2 IS NULL AND (?3 IS NULL OR id < ?3)
             ORDER BY id DESC LIMIT ?4"
        ))?,
    };
    let rows = st.query_map(
        params![workspace_id, status, starting_after, limit],
        map_row,
    )?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Days a sent or failed mail stays in the log.
pub const KEEP_DAYS: i64 = 30;

/// Forgets mail settled before `before`; at most 10,000 a call (the oldest,
/// The pending invitation mails to `to` in a workspace stop (the
/// invitation was revoked or replaced): failed, with their bodies, and the
/// accept link in them, erased. Their jobs find them no longer pending.
pub fn cancel_invitations(
    c: &Connection,
    workspace_id: &str,
    to: &str,
    now: &str,
) -> Result<usize> {
    Ok(c.prepare_cached(
        "UPDATE mail_outbox SET status = 'failed', text_body = NULL, html_body = NULL,
                last_error = 'the invitation was revoked before this mail went out',
                last_attempt_at = ?3
         WHERE workspace_id = ?1 AND status = 'pending' AND kind = 'invitation'
           AND to_addr = ?2 COLLATE NOCASE",
    )?
    .execute(params![workspace_id, to, now])?)
}

/// Fails, unsent, the notification e-mails and digests waiting for a
/// person who was removed from the workspace: what they were told about it
/// goes with them, mail included. Answers how many.
pub fn cancel_for_member(
    c: &Connection,
    workspace_id: &str,
    user_id: &str,
    now: &str,
) -> Result<usize> {
    Ok(c.prepare_cached(
        "UPDATE mail_outbox SET status = 'failed', text_body = NULL, html_body = NULL,
                last_error = 'the person left the workspace before this mail went out',
                last_attempt_at = ?3
         WHERE workspace_id = ?1 AND status = 'pending' AND user_id = ?2
           AND kind IN ('notification', 'digest')",
    )?
    .execute(params![workspace_id, user_id, now])?)
}

/// Deletes up to 10,000 settled e-mails last tried before `before` (found
/// by `mail_outbox_settled`), so the writer is never held long.
pub fn prune(c: &Connection, before: &str) -> Result<usize> {
    Ok(c.execute(
        "DELETE FROM mail_outbox WHERE id IN (
             SELECT id FROM mail_outbox WHERE status <> 'pending' AND last_attempt_at < ?1
             ORDER BY last_attempt_at, id LIMIT 10000)",
        [before],
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(c: &Connection, sql: &str) -> String {
        crate::store::query_plan(c, sql).join("\n")
    }

    /// The admin list reads its indexes in order (no sort), with and
    /// without a status, and the prune reads `mail_outbox_settled`.
    #[test]
    fn the_list_and_the_prune_use_their_indexes() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        for (sql, index) in [
            (
                format!(
                    "SELECT {FIELDS} FROM mail_outbox WHERE workspace_id = 'ws_1' AND 'failed' IS NOT NULL AND status = 'failed' AND ('mail_9' IS NULL OR id < 'mail_9') ORDER BY id DESC LIMIT 101"
                ),
                "mail_outbox_by_status",
            ),
            (
                format!(
                    "SELECT {FIELDS} FROM mail_outbox WHERE workspace_id = 'ws_1' AND NULL IS NULL AND ('mail_9' IS NULL OR id < 'mail_9') ORDER BY id DESC LIMIT 101"
                ),
                "mail_outbox_by_workspace",
            ),
            (
                "SELECT id FROM mail_outbox WHERE status <> 'pending' AND last_attempt_at < '2026' ORDER BY last_attempt_at, id LIMIT 10000".into(),
                "mail_outbox_settled",
            ),
            // The sign-in page's throttle (store::signin::requests_since).
            (
                "SELECT count(*), max(requested_at) FROM signin_requests
                  WHERE address_hash = 'ab' AND requested_at > '2026'"
                    .into(),
                "signin_requests_by_address",
            ),
            // Its housekeeping (store::signin::prune_requests).
            (
                "DELETE FROM signin_requests WHERE requested_at <= '2026'".into(),
                "signin_requests_by_age",
            ),
        ] {
            let text = plan(&c, &sql);
            assert!(text.contains(index), "{sql}:\n{text}");
            assert!(!text.contains("TEMP B-TREE"), "{sql} sorts:\n{text}");
        }
    }

    /// A secret mail loses its bodies once settled, not while it retries.
    #[test]
    fn secret_bodies_go_once_settled() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        let t = "2026-11-23T10:00:00.000Z";
        for (id, secret) in [("mail_a", true), ("mail_b", false)] {
            insert(
                &c,
                &NewMail {
                    id,
                    workspace_id: None,
                    user_id: None,
                    to: "ana@example.com",
                    kind: "invitation",
                    subject: "s",
                    text_body: "link",
                    html_body: "<p>link</p>",
                    secret,
                    unsubscribable: false,
                    now: t,
                },
            )
            .unwrap();
            record_attempt(&c, id, 1, t, Settled::Retry, Some("451")).unwrap();
            assert!(outgoing(&c, id).unwrap().is_some());
            record_attempt(&c, id, 2, t, Settled::Sent, None).unwrap();
        }
        let bodies = |id: &str| -> (Option<String>, Option<String>, String) {
            c.query_row(
                "SELECT text_body, html_body, status FROM mail_outbox WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap()
        };
        assert_eq!(bodies("mail_a"), (None, None, "sent".into()));
        assert_eq!(bodies("mail_b").0.as_deref(), Some("link"));
        assert!(outgoing(&c, "mail_a").unwrap().is_none());
        assert_eq!(prune(&c, "2026-11-24").unwrap(), 2);
    }
}
