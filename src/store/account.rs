//! What hds holds about one person, read for the account export, and the
//! erasure of their personal data when they delete their account (guide:
//! "Account: export and deletion"). Never a secret or a hash.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::error::Result;

/// One workspace the person belongs to.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportMembership {
    pub workspace_id: String,
    pub workspace_name: String,
    pub role: String,
    #[schema(format = DateTime)]
    pub joined_at: String,
}

/// A sign-in identity: who an identity provider says the person is.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportIdentity {
    pub issuer: String,
    pub subject: String,
    pub email: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub last_seen_at: String,
}

/// A session or API token, without its secret or hash.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportCredential {
    pub id: String,
    /// `session` or `api`.
    pub kind: String,
    pub label: String,
    /// How a session began (`link`, `invitation`, a provider); null for a token.
    pub method: Option<String>,
    pub client: Option<String>,
    pub user_agent: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub last_used_at: Option<String>,
    #[schema(format = DateTime)]
    pub expires_at: Option<String>,
    #[schema(format = DateTime)]
    pub revoked_at: Option<String>,
}

/// An Action the person decided.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportDecision {
    pub action_id: String,
    pub workspace_id: String,
    pub title: String,
    pub option_id: Option<String>,
    /// The typed answer; null for a decision by option.
    #[schema(value_type = Option<Object>)]
    pub response: Option<Value>,
    pub reason: Option<String>,
    #[schema(format = DateTime)]
    pub decided_at: String,
    pub receipt_id: Option<String>,
}

/// An approval vote.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportVote {
    pub action_id: String,
    /// The version of the Action the vote was cast on.
    pub action_version: i64,
    pub vote: String,
    pub reason: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// Work the person did on an Action: a claim, an assignment (of anyone,
/// themselves included, or a release) or a snooze, as its history records it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportWork {
    pub action_id: String,
    /// `claimed`, `assigned` or `snoozed`.
    pub kind: String,
    /// The event's data, as the Action's `history` shows it.
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// A control the person pressed.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportControlRequest {
    pub id: String,
    pub action_id: String,
    pub control_key: String,
    pub status: String,
    pub message: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// A question the person asked a Source.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportContextRequest {
    pub id: String,
    pub action_id: String,
    pub question: String,
    pub status: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub answered_at: Option<String>,
}

/// A dashboard usage event recorded for the person (kept 90 days).
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportUsageEvent {
    pub name: String,
    #[schema(value_type = Object)]
    pub properties: serde_json::Value,
    #[schema(format = DateTime)]
    pub occurred_at: String,
}

/// A comment the person wrote.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportComment {
    pub id: String,
    pub action_id: String,
    pub body: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    /// When you last edited it; null: never.
    #[schema(format = DateTime)]
    pub edited_at: Option<String>,
}

/// A notification addressed to the person.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportNotification {
    pub id: String,
    pub workspace_id: String,
    pub kind: String,
    pub title: String,
    pub body: String,
    pub path: String,
    #[schema(format = DateTime)]
    pub read_at: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// Notification preferences in one workspace.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportPreferences {
    pub workspace_id: String,
    #[schema(value_type = Object)]
    pub preferences: Value,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

/// An invitation the person sent (never its link's secret).
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportInvitation {
    pub id: String,
    pub workspace_id: String,
    pub email: String,
    pub role: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub expires_at: String,
    #[schema(format = DateTime)]
    pub accepted_at: Option<String>,
    #[schema(format = DateTime)]
    pub revoked_at: Option<String>,
}

fn all<T>(
    c: &Connection,
    sql: &str,
    user_id: &str,
    f: impl FnMut(&Row) -> rusqlite::Result<T>,
) -> Result<Vec<T>> {
    let mut st = c.prepare_cached(sql)?;
    let rows = st.query_map([user_id], f)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn json(s: Option<String>) -> Option<Value> {
    s.and_then(|s| serde_json::from_str(&s).ok())
}

pub fn memberships(c: &Connection, user_id: &str) -> Result<Vec<ExportMembership>> {
    all(
        c,
        "SELECT w.id, w.name, m.role, m.created_at FROM memberships m
         JOIN workspaces w ON w.id = m.workspace_id WHERE m.user_id = ?1 ORDER BY m.created_at",
        user_id,
        |r| {
            Ok(ExportMembership {
                workspace_id: r.get(0)?,
                workspace_name: r.get(1)?,
                role: r.get(2)?,
                joined_at: r.get(3)?,
            })
        },
    )
}

pub fn identities(c: &Connection, user_id: &str) -> Result<Vec<ExportIdentity>> {
    all(
        c,
        "SELECT issuer, subject, email, created_at, last_seen_at FROM identities
         WHERE user_id = ?1 ORDER BY created_at",
        user_id,
        |r| {
            Ok(ExportIdentity {
                issuer: r.get(0)?,
                subject: r.get(1)?,
                email: r.get(2)?,
                created_at: r.get(3)?,
                last_seen_at: r.get(4)?,
            })
        },
    )
}

/// Every credential, ended ones included; the columns chosen exclude `token_hash`.
pub fn credentials(c: &Connection, user_id: &str) -> Result<Vec<ExportCredential>> {
    all(
        c,
        "SELECT id, kind, name, method, client, user_agent, created_at, last_used_at, expires_at, revoked_at
         FROM user_tokens WHERE user_id = ?1 ORDER BY created_at",
        user_id,
        |r| {
            Ok(ExportCredential {
                id: r.get(0)?,
                kind: r.get(1)?,
                label: r.get(2)?,
                method: r.get(3)?,
                client: r.get(4)?,
                user_agent: r.get(5)?,
                created_at: r.get(6)?,
                last_used_at: r.get(7)?,
                expires_at: r.get(8)?,
                revoked_at: r.get(9)?,
            })
        },
    )
}

/// Actions the person decided (index `actions_decided_by_user`).
pub fn decisions(c: &Connection, user_id: &str) -> Result<Vec<ExportDecision>> {
    all(
        c,
        "SELECT id, workspace_id, title, resolution, receipt_id FROM actions
         WHERE json_extract(resolution, '$.decided_by.type') = 'user'
           AND json_extract(resolution, '$.decided_by.id') = ?1
         ORDER BY closed_at",
        user_id,
        |r| {
            let res = json(r.get(3)?).unwrap_or(Value::Null);
            let text = |k: &str| res.get(k).and_then(Value::as_str).map(str::to_owned);
            Ok(ExportDecision {
                action_id: r.get(0)?,
                workspace_id: r.get(1)?,
                title: r.get(2)?,
                option_id: text("option_id"),
                response: res.get("response").filter(|v| !v.is_null()).cloned(),
                reason: text("reason"),
                decided_at: text("decided_at").unwrap_or_default(),
                receipt_id: r.get(4)?,
            })
        },
    )
}

pub fn votes(c: &Connection, user_id: &str) -> Result<Vec<ExportVote>> {
    all(
        c,
        "SELECT action_id, action_version, vote, reason, created_at FROM action_votes WHERE user_id = ?1 ORDER BY created_at",
        user_id,
        |r| {
            Ok(ExportVote {
                action_id: r.get(0)?,
                action_version: r.get(1)?,
                vote: r.get(2)?,
                reason: r.get(3)?,
                created_at: r.get(4)?,
            })
        },
    )
}

pub fn work(c: &Connection, user_id: &str) -> Result<Vec<ExportWork>> {
    all(
        c,
        "SELECT action_id, kind, data, created_at FROM action_events
          WHERE actor_type = 'user' AND kind IN ('claimed', 'assigned', 'snoozed', 'comment_edited', 'comment_deleted') AND actor_id = ?1
          ORDER BY id",
        user_id,
        |r| {
            Ok(ExportWork {
                action_id: r.get(0)?,
                kind: r.get(1)?,
                data: serde_json::from_str(&r.get::<_, String>(2)?).unwrap_or_default(),
                created_at: r.get(3)?,
            })
        },
    )
}

pub fn control_requests(c: &Connection, user_id: &str) -> Result<Vec<ExportControlRequest>> {
    all(
        c,
        "SELECT id, action_id, control_key, status, message, created_at FROM control_requests
          WHERE requested_by = ?1 ORDER BY created_at",
        user_id,
        |r| {
            Ok(ExportControlRequest {
                id: r.get(0)?,
                action_id: r.get(1)?,
                control_key: r.get(2)?,
                status: r.get(3)?,
                message: r.get(4)?,
                created_at: r.get(5)?,
            })
        },
    )
}

pub fn context_requests(c: &Connection, user_id: &str) -> Result<Vec<ExportContextRequest>> {
    all(
        c,
        "SELECT id, action_id, question, status, created_at, answered_at FROM context_requests
          WHERE requested_by = ?1 ORDER BY created_at",
        user_id,
        |r| {
            Ok(ExportContextRequest {
                id: r.get(0)?,
                action_id: r.get(1)?,
                question: r.get(2)?,
                status: r.get(3)?,
                created_at: r.get(4)?,
                answered_at: r.get(5)?,
            })
        },
    )
}

pub fn usage_events(c: &Connection, user_id: &str) -> Result<Vec<ExportUsageEvent>> {
    all(
        c,
        "SELECT name, properties, occurred_at FROM analytics_events WHERE user_id = ?1 ORDER BY id",
        user_id,
        |r| {
            Ok(ExportUsageEvent {
                name: r.get(0)?,
                properties: serde_json::from_str(&r.get::<_, String>(1)?).unwrap_or_default(),
                occurred_at: r.get(2)?,
            })
        },
    )
}

pub fn comments(c: &Connection, user_id: &str) -> Result<Vec<ExportComment>> {
    all(
        c,
        "SELECT id, action_id, body, created_at, edited_at FROM action_comments WHERE author_user_id = ?1 ORDER BY id",
        user_id,
        |r| {
            Ok(ExportComment {
                id: r.get(0)?,
                action_id: r.get(1)?,
                body: r.get(2)?,
                created_at: r.get(3)?,
                edited_at: r.get(4)?,
            })
        },
    )
}

pub fn notifications(c: &Connection, user_id: &str) -> Result<Vec<ExportNotification>> {
    all(
        c,
        "SELECT id, workspace_id, kind, title, body, path, read_at, created_at FROM notifications
         WHERE user_id = ?1 ORDER BY id",
        user_id,
        |r| {
            Ok(ExportNotification {
                id: r.get(0)?,
                workspace_id: r.get(1)?,
                kind: r.get(2)?,
                title: r.get(3)?,
                body: r.get(4)?,
                path: r.get(5)?,
                read_at: r.get(6)?,
                created_at: r.get(7)?,
            })
        },
    )
}

pub fn preferences(c: &Connection, user_id: &str) -> Result<Vec<ExportPreferences>> {
    all(
        c,
        "SELECT workspace_id, prefs, updated_at FROM notification_preferences WHERE user_id = ?1",
        user_id,
        |r| {
            Ok(ExportPreferences {
                workspace_id: r.get(0)?,
                preferences: json(r.get(1)?).unwrap_or(Value::Null),
                updated_at: r.get(2)?,
            })
        },
    )
}

pub fn invitations_sent(c: &Connection, user_id: &str) -> Result<Vec<ExportInvitation>> {
    all(
        c,
        "SELECT id, workspace_id, email, role, created_at, expires_at, accepted_at, revoked_at
         FROM invitations WHERE invited_by = ?1 ORDER BY created_at",
        user_id,
        |r| {
            Ok(ExportInvitation {
                id: r.get(0)?,
                workspace_id: r.get(1)?,
                email: r.get(2)?,
                role: r.get(3)?,
                created_at: r.get(4)?,
                expires_at: r.get(5)?,
                accepted_at: r.get(6)?,
                revoked_at: r.get(7)?,
            })
        },
    )
}

/// How many members a workspace has.
pub fn member_count(c: &Connection, workspace_id: &str) -> Result<i64> {
    Ok(c.query_row(
        "SELECT count(*) FROM memberships WHERE workspace_id = ?1",
        [workspace_id],
        |r| r.get(0),
    )?)
}

/// Takes the person's e-mail address and name out of what hds keeps for
/// the people of `workspaces` (those the person belonged to): their
/// notifications ("ana@… commented on …"), the workspace-wide notices and
/// the e-mails sent to them, where `instead` takes its place. The address
/// is replaced wherever it stands as a whole address (not inside a longer
/// one); the name only where hds put it, at the start of a title, subject
/// or body before a space. A pass over those workspaces' rows: an account
/// is deleted rarely, and these tables hold 30 to 90 days.
pub fn scrub_mentions(
    c: &Connection,
    user_id: &str,
    email: &str,
    workspaces: &[String],
    instead: &str,
) -> Result<()> {
    let name: Option<String> = c
        .query_row("SELECT name FROM users WHERE id = ?1", [user_id], |r| {
            r.get(0)
        })
        .optional()?
        .flatten()
        .map(|n: String| n.trim().to_owned())
        .filter(|n| !n.is_empty());
    let scrub = |text: &str| scrubbed(text, email, name.as_deref(), instead);
    let ws = serde_json::to_string(workspaces)?;
    let name_prefix = name.as_deref().map(|n| format!("{n} ")).unwrap_or_default();
    // (select, update): rows of those workspaces that may name the person.
    let tables = [
        (
            "SELECT user_id || ' ' || id, title, body, NULL FROM notifications
              WHERE workspace_id IN (SELECT value FROM json_each(?1))
                AND (instr(title, ?2) > 0 OR instr(body, ?2) > 0 OR (?3 <> '' AND (substr(title, 1, length(?3)) = ?3 OR substr(body, 1, length(?3)) = ?3)))",
            "UPDATE notifications SET title = ?2, body = ?3 WHERE user_id || ' ' || id = ?1",
        ),
        (
            "SELECT CAST(seq AS TEXT), title, body, NULL FROM notification_broadcasts
              WHERE workspace_id IN (SELECT value FROM json_each(?1))
                AND (instr(title, ?2) > 0 OR instr(body, ?2) > 0 OR (?3 <> '' AND (substr(title, 1, length(?3)) = ?3 OR substr(body, 1, length(?3)) = ?3)))",
            "UPDATE notification_broadcasts SET title = ?2, body = ?3 WHERE seq = CAST(?1 AS INTEGER)",
        ),
        (
            "SELECT CAST(id AS TEXT), title, body, NULL FROM notification_digest_items
              WHERE workspace_id IN (SELECT value FROM json_each(?1))
                AND (instr(title, ?2) > 0 OR instr(body, ?2) > 0 OR (?3 <> '' AND (substr(title, 1, length(?3)) = ?3 OR substr(body, 1, length(?3)) = ?3)))",
            "UPDATE notification_digest_items SET title = ?2, body = ?3 WHERE id = CAST(?1 AS INTEGER)",
        ),
        (
            "SELECT id, subject, text_body, html_body FROM mail_outbox
              WHERE workspace_id IN (SELECT value FROM json_each(?1))
                AND (instr(subject, ?2) > 0 OR instr(text_body, ?2) > 0 OR instr(html_body, ?2) > 0
                     OR (?3 <> '' AND (substr(subject, 1, length(?3)) = ?3 OR substr(text_body, 1, length(?3)) = ?3)))",
            "UPDATE mail_outbox SET subject = ?2, text_body = ?3, html_body = ?4 WHERE id = ?1",
        ),
    ];
    for (select, update) in tables {
        let rows: Vec<(String, String, Option<String>, Option<String>)> = {
            let mut st = c.prepare_cached(select)?;
            let rows = st.query_map(params![ws, email, name_prefix], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let mut st = c.prepare_cached(update)?;
        for (key, first, second, third) in rows {
            let (first, second) = (scrub(&first), second.as_deref().map(scrub));
            if update.contains("?4") {
                st.execute(params![key, first, second, third.as_deref().map(scrub)])?;
            } else {
                st.execute(params![key, first, second])?;
            }
        }
    }
    // Run timelines: "Cancelled by ana@example.com", or a Source's message
    // that names the person.
    let lines: Vec<(String, i64, String)> = {
        let mut st = c.prepare_cached(
            "SELECT e.run_id, e.seq, e.message FROM run_events e
              WHERE e.run_id IN (SELECT r.id FROM runs r
                                  WHERE r.workspace_id IN (SELECT value FROM json_each(?1)))
                AND instr(e.message, ?2) > 0",
        )?;
        let rows = st.query_map(params![ws, email], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let mut st =
        c.prepare_cached("UPDATE run_events SET message = ?3 WHERE run_id = ?1 AND seq = ?2")?;
    for (run_id, seq, message) in lines {
        st.execute(params![run_id, seq, scrub(&message)])?;
    }
    // A run's `error`: "Cancelled by ana@example.com: …" when a person
    // cancelled it, or a Source's text that names the person.
    let errors: Vec<(String, String)> = {
        let mut st = c.prepare_cached(
            "SELECT id, error FROM runs
              WHERE workspace_id IN (SELECT value FROM json_each(?1))
                AND instr(error, ?2) > 0",
        )?;
        let rows = st.query_map(params![ws, email], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let mut st = c.prepare_cached("UPDATE runs SET error = ?2 WHERE id = ?1")?;
    for (run_id, error) in errors {
        st.execute(params![run_id, scrub(&error)])?;
    }
    Ok(())
}

/// `s` as the mail templates write it into HTML (askama's escaping).
fn html_escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&#38;"),
            '<' => out.push_str("&#60;"),
            '>' => out.push_str("&#62;"),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(ch),
        }
    }
    out
}

/// `text` with each whole `email` (not part of a longer address or word)
/// and a leading `name ` replaced by `instead`.
fn scrubbed(text: &str, email: &str, name: Option<&str>, instead: &str) -> String {
    // "Name <address>", as notices and mails name a person with a name,
    // goes whole: as written, and as a mail's HTML part escapes it (the
    // name's own `&`, `'` and `"` too). An address with such characters
    // is replaced in its escaped form as well.
    let replaced;
    let text = match name {
        Some(n) => {
            let (n_html, email_html) = (html_escaped(n), html_escaped(email));
            let mut t = text.replace(&format!("{n} <{email}>"), instead);
            t = t.replace(&format!("{n_html} &#60;{email_html}&#62;"), instead);
            if email_html != email {
                t = t.replace(&email_html, instead);
            }
            replaced = t;
            replaced.as_str()
        }
        None => text,
    };
    let part_of_address =
        |ch: Option<char>| ch.is_some_and(|c| c.is_alphanumeric() || "._%+-@".contains(c));
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(email) {
        let before = if at > 0 {
            rest[..at].chars().last()
        } else {
            out.chars().last()
        };
        let tail = &rest[at + email.len()..];
        // A sentence's full stop ends the address; `.au` would continue it.
        let after = match tail.chars().next() {
            Some('.') => tail[1..].chars().next().filter(|c| c.is_alphanumeric()),
            other => other,
        };
        out.push_str(&rest[..at]);
        if part_of_address(before) || part_of_address(after) {
            out.push_str(email);
        } else {
            out.push_str(instead);
        }
        rest = &rest[at + email.len()..];
    }
    out.push_str(rest);
    match name
        .and_then(|n| out.strip_prefix(n))
        .filter(|r| r.starts_with(' '))
    {
        Some(r) => format!("{instead}{r}"),
        None => out,
    }
}

/// The workspace's Actions assigned to a person whose account is being
/// deleted (closed ones: the open ones were released), by id or by their
/// address: pinned to their user id and showing `placeholder`, so the
/// address no longer names them and a later account with the same address
/// inherits none of them. The assignee is not part of the fingerprint:
/// receipts are untouched. Through `actions_assignee_user` and
/// `actions_assignee_email`.
pub fn pin_assignments(
    c: &Connection,
    workspace_id: &str,
    user_id: &str,
    email: &str,
    placeholder: &str,
) -> Result<()> {
    c.prepare_cached(
        "UPDATE actions SET assignee_user_id = ?2, assignee_email = lower(?4),
                spec = json_set(spec, '$.assignee_user_id', ?2, '$.assignee_email', ?4)
          WHERE workspace_id = ?1 AND assignee_user_id IS NULL AND assignee_email = lower(?3)
            AND status <> 'open'",
    )?
    .execute(params![workspace_id, user_id, email, placeholder])?;
    c.prepare_cached(
        "UPDATE actions SET assignee_email = lower(?3),
                spec = json_set(spec, '$.assignee_email', ?3)
          WHERE workspace_id = ?1 AND assignee_user_id = ?2 AND status <> 'open'",
    )?
    .execute(params![workspace_id, user_id, placeholder])?;
    Ok(())
}

/// Erases the person's personal data once their memberships are gone: every
/// credential revoked, identities, sign-in links and the sign-in page's
/// requests for their address deleted, what they were
/// told and their preferences deleted, mail to them stopped and its address
/// and bodies erased, their e-mail replaced by `placeholder` and their name
/// cleared. Decisions, votes, comments and history keep the user id.
pub fn erase(c: &Connection, user_id: &str, placeholder: &str, now: &str) -> Result<()> {
    // The sign-in page's requests for their address (kept by its hash).
    let email: Option<String> = c
        .prepare_cached("SELECT email FROM users WHERE id = ?1")?
        .query_row([user_id], |r| r.get(0))
        .optional()?;
    if let Some(email) = email {
        crate::store::signin::forget_requests(c, &email)?;
    }
    let statements = [
        "UPDATE user_tokens SET revoked_at = ?3 WHERE user_id = ?1 AND revoked_at IS NULL",
        "DELETE FROM identities WHERE user_id = ?1",
        "DELETE FROM signin_links WHERE user_id = ?1",
        "DELETE FROM notifications WHERE user_id = ?1",
        "DELETE FROM notification_digest_items WHERE user_id = ?1",
        "DELETE FROM notification_broadcast_reads WHERE user_id = ?1",
        "DELETE FROM notification_preferences WHERE user_id = ?1",
        "DELETE FROM former_members WHERE user_id = ?1",
        "DELETE FROM notification_timers WHERE user_id = ?1",
        "DELETE FROM analytics_events WHERE user_id = ?1",
        "UPDATE mail_outbox SET to_addr = ?2, text_body = NULL, html_body = NULL,
                status = CASE status WHEN 'pending' THEN 'failed' ELSE status END,
                last_error = CASE status WHEN 'pending' THEN 'account deleted' ELSE last_error END
          WHERE user_id = ?1",
        "UPDATE invitations SET email = ?2 WHERE accepted_by = ?1",
        "UPDATE users SET email = ?2, name = NULL WHERE id = ?1",
    ];
    for sql in statements {
        let mut st = c.prepare_cached(sql)?;
        let needs = st.parameter_count();
        let args: [&dyn rusqlite::ToSql; 3] = [&user_id, &placeholder, &now];
        st.execute(&args[..needs])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whole addresses and the leading name go; the same letters inside a
    /// longer address, word or URL stay.
    #[test]
    fn only_the_person_is_scrubbed() {
        let gone = "a deleted account";
        let s = |t: &str, name: Option<&str>| scrubbed(t, "ana@example.com", name, gone);
        assert_eq!(
            s("ana@example.com commented on Deploy", None),
            "a deleted account commented on Deploy"
        );
        assert_eq!(s("Ask ana@example.com.", None), "Ask a deleted account.");
        assert_eq!(
            s("<b>ana@example.com</b>", None),
            "<b>a deleted account</b>"
        );
        for kept in [
            "diana@example.com commented",
            "ana@example.com.au commented",
            "xana@example.com",
            "ana@example.community",
        ] {
            assert_eq!(s(kept, None), kept);
        }
        assert_eq!(
            s("Ana commented on Analytics", Some("Ana")),
            "a deleted account commented on Analytics"
        );
        assert_eq!(s("Analytics by Ana", Some("Ana")), "Analytics by Ana");
        assert_eq!(
            s("Ana Lee <ana@example.com> commented on X", Some("Ana Lee")),
            "a deleted account commented on X"
        );
        assert_eq!(
            s(
                "<h1>Ana Lee &#60;ana@example.com&#62; commented</h1>",
                Some("Ana Lee")
            ),
            "<h1>a deleted account commented</h1>"
        );
        assert_eq!(
            s(
                "<p>Dan O&#39;Brien &#60;ana@example.com&#62; invited you</p>",
                Some("Dan O'Brien")
            ),
            "<p>a deleted account invited you</p>"
        );
        assert_eq!(
            s("https://x.example/y", Some("https")),
            "https://x.example/y"
        );
    }

    /// The export reads each list through an index on the person, never a
    /// scan of the instance's Actions, votes, comments or invitations.
    #[test]
    fn export_lists_use_their_indexes() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        for (table, sql, wants) in [
            (
                "actions",
                "SELECT id FROM actions WHERE json_extract(resolution, '$.decided_by.type') = 'user'
                   AND json_extract(resolution, '$.decided_by.id') = ?1 ORDER BY closed_at",
                "actions_decided_by_user",
            ),
            ("action_votes", "SELECT action_id FROM action_votes WHERE user_id = ?1 ORDER BY created_at", "action_votes_by_user"),
            ("action_comments", "SELECT id FROM action_comments WHERE author_user_id = ?1 ORDER BY id", "action_comments_by_author"),
            ("invitations", "SELECT id FROM invitations WHERE invited_by = ?1 ORDER BY created_at", "invitations_by_inviter"),
            (
                "action_events",
                "SELECT action_id FROM action_events WHERE actor_type = 'user' AND kind IN ('claimed', 'assigned', 'snoozed', 'comment_edited', 'comment_deleted') AND actor_id = ?1 ORDER BY id",
                "action_events_work_by_user",
            ),
            ("control_requests", "SELECT id FROM control_requests WHERE requested_by = ?1 ORDER BY created_at", "control_requests_by_person"),
            ("context_requests", "SELECT id FROM context_requests WHERE requested_by = ?1 ORDER BY created_at", "context_requests_by_person"),
            ("analytics_events", "SELECT name FROM analytics_events WHERE user_id = ?1 ORDER BY id", "analytics_events_by_user"),
        ] {
            let plan = crate::store::query_plan(&c, sql);
            let text = plan.join("\n");
            assert!(text.contains(wants), "{table}: {text}");
            assert!(!plan.iter().any(|l| l.starts_with(&format!("SCAN {table}"))), "{table}: {text}");
        }
    }

    /// Pinning a deleted person's assignments seeks them in the workspace
    /// through the assignee indexes, never a scan of the instance's Actions.
    #[test]
    fn pinning_assignments_uses_the_assignee_indexes() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        for (sql, wants) in [
            (
                "UPDATE actions SET assignee_user_id = ?2 WHERE workspace_id = ?1 AND assignee_user_id IS NULL AND assignee_email = lower(?3)",
                "actions_assignee_email",
            ),
            (
                "UPDATE actions SET assignee_email = ?3 WHERE workspace_id = ?1 AND assignee_user_id = ?2",
                "actions_assignee_user",
            ),
        ] {
            let plan = crate::store::query_plan(&c, sql);
            let text = plan.join("\n");
            assert!(text.contains(wants), "{text}");
            assert!(
                !plan.iter().any(|l| l.starts_with("SCAN actions")),
                "{text}"
            );
        }
    }
}
