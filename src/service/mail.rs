//! E-mail as a use case (guide: "E-mail"): other use cases queue a `Letter`
//! inside their own writer transaction with `enqueue`, which renders it (a
//! plain-text and an HTML part), stores it in the outbox and queues its job,
//! so the mail exists exactly when what causes it commits. Sending is the
//! worker's (`workers::mail`); the log owners and admins read is `list`.
//!
//! With no `[smtp]` in hds.toml nothing is mailed: callers ask `enabled`
//! first and keep to in-app notifications.

use askama::Template;
use rusqlite::Connection;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::config::Config;
use crate::domain::access;
use crate::domain::ids;
use crate::error::{Code, Error, FieldError, Result};
use crate::service::Services;
use crate::service::caller::{self, UserCaller};
use crate::service::effects::Effects;
use crate::store::jobs::{self, Kind};
use crate::store::mail::{self as store, Mail, NewMail, Settled};
use crate::store::workspaces;

/// What a mail is, as the outbox and the admin list name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MailKind {
    /// One notification (assigned, mentioned, expiring, …).
    Notification,
    /// Several notifications gathered in one mail.
    Digest,
    /// An invitation with its accept link.
    Invitation,
    /// A one-time sign-in link the person asked for on the sign-in page.
    Signin,
}

impl MailKind {
    pub const ALL: [MailKind; 4] = [
        Self::Notification,
        Self::Digest,
        Self::Invitation,
        Self::Signin,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Notification => "notification",
            Self::Digest => "digest",
            Self::Invitation => "invitation",
            Self::Signin => "signin",
        }
    }
}

/// One e-mail to write. Every string is plain text: the HTML part escapes it.
#[derive(Clone, Debug)]
pub struct Letter {
    /// The recipient's address (`ana@example.com`).
    pub to: String,
    /// One line; control characters become spaces.
    pub subject: String,
    /// Paragraphs, in order.
    pub lines: Vec<String>,
    /// `(title, absolute URL)` list, for digests; may be empty.
    pub items: Vec<(String, String)>,
    /// `(label, absolute URL)`: the button, with the URL written out below it.
    pub link: Option<(String, String)>,
    /// Where the person chooses what reaches them (absolute URL): a line
    /// after the button, a link in HTML.
    pub settings: Option<String>,
    pub kind: MailKind,
    /// The workspace the mail is about: the admin list of that workspace shows it.
    pub workspace_id: Option<String>,
    /// The person it is for, when they have an account.
    pub user_id: Option<String>,
    /// The bodies carry a secret (an accept link): they are erased once the
    /// mail is sent or failed, and never logged.
    pub secret: bool,
    /// Unsubscribing would stop it: it carries the one-click link
    /// (`List-Unsubscribe`). Not for a kind its workspace makes mandatory,
    /// which is mailed whatever the person chose, nor for an invitation.
    pub unsubscribable: bool,
}

/// Whether hds sends e-mail at all (`[smtp]` is configured). Callers that
/// would queue a mail ask this first.
pub fn enabled(config: &Config) -> bool {
    config.smtp.is_some()
}

/// Whether hds can send to `to` (an address SMTP accepts: a dotted domain
/// or an address literal, an RFC 5321 local part).
pub fn sendable(to: &str) -> bool {
    unsendable_because(to).is_none()
}

/// Why SMTP cannot take `to`, in words for the e-mail log; None when it can.
pub fn unsendable_because(to: &str) -> Option<&'static str> {
    use lettre::address::AddressError as E;
    match to.trim().parse::<lettre::Address>() {
        Ok(_) => None,
        Err(E::InvalidUser) => Some(
            "its local part (before the @) is not one SMTP takes: a doubled dot, a dot at either end, or a space",
        ),
        Err(E::InvalidDomain) => Some("its domain (after the @) is not a domain name SMTP takes"),
        Err(E::MissingParts) => Some("it lacks a local part or a domain"),
        Err(_) => Some("it holds characters an address cannot (angle brackets, say)"),
    }
}

#[derive(Template)]
#[template(path = "mail.html")]
struct MailHtml<'a> {
    subject: &'a str,
    lines: &'a [String],
    items: &'a [(String, String)],
    link: Option<(&'a str, &'a str)>,
    settings: Option<&'a str>,
}

/// One line: every control character (a CR LF that would end a header
/// included) becomes a space.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_owned()
}

/// The URLs a letter links to must be absolute http(s): anything else in an
/// `href` is a caller's mistake, refused before anything is stored.
fn check_url(url: &str) -> Result<()> {
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(()),
        _ => Err(Error::internal(anyhow::anyhow!(
            "a mail links to {url:?}, not an absolute http(s) URL"
        ))),
    }
}

/// The text/plain part: paragraphs, the list with each URL below its
/// title, the link's label and URL.
pub fn render_text(letter: &Letter) -> String {
    let mut out = String::new();
    for line in &letter.lines {
        out.push_str(line.trim_end());
        out.push_str("\n\n");
    }
    for (title, url) in &letter.items {
        out.push_str(&format!("- {}\n  {url}\n", one_line(title)));
    }
    if !letter.items.is_empty() {
        out.push('\n');
    }
    if let Some((label, url)) = &letter.link {
        out.push_str(&format!("{}:\n{url}\n\n", one_line(label)));
    }
    if let Some(url) = &letter.settings {
        out.push_str(&format!("Choose what reaches you:\n{url}\n\n"));
    }
    out.push_str("-- \nSent by hds, the Human-Decision Service.\n");
    out
}

/// The text/html part, from `templates/mail.html`: everything escaped.
pub fn render_html(letter: &Letter, subject: &str) -> Result<String> {
    MailHtml {
        subject,
        lines: &letter.lines,
        items: &letter.items,
        link: letter.link.as_ref().map(|(l, u)| (l.as_str(), u.as_str())),
        settings: letter.settings.as_deref(),
    }
    .render()
    .map_err(|e| Error::internal(anyhow::anyhow!("rendering a mail: {e}")))
}

/// Renders `letter`, stores it in the outbox and queues its job, in the
/// caller's transaction (the worker wakes once it commits). Answers the mail
/// id (`mail_…`). An address hds cannot send to (`sendable`) is stored as
/// `failed` at once, with the reason, for the admin list; no job is queued.
pub fn enqueue(c: &Connection, fx: &mut Effects, letter: &Letter, now: &str) -> Result<String> {
    for (_, url) in letter.items.iter().chain(letter.link.iter()) {
        check_url(url)?;
    }
    if let Some(url) = &letter.settings {
        check_url(url)?;
    }
    let subject = one_line(&letter.subject);
    let to = letter.to.trim();
    let id = ids::new_ordered_id(ids::MAIL);
    let text = render_text(letter);
    let html = render_html(letter, &subject)?;
    store::insert(
        c,
        &NewMail {
            id: &id,
            workspace_id: letter.workspace_id.as_deref(),
            user_id: letter.user_id.as_deref(),
            to,
            kind: letter.kind.as_str(),
            subject: &subject,
            text_body: &text,
            html_body: &html,
            secret: letter.secret,
            unsubscribable: letter.unsubscribable,
            now,
        },
    )?;
    if let Some(because) = unsendable_because(to) {
        let why = format!("not sent: SMTP cannot deliver to this address: {because}");
        store::record_attempt(c, &id, 0, now, Settled::Failed, Some(&why))?;
        return Ok(id);
    }
    jobs::insert(c, Kind::Email, &id, now, now)?;
    fx.queued_job();
    Ok(id)
}

/// Most mails one page lists, and the default.
pub const MAX_PAGE: i64 = 200;
pub const DEFAULT_PAGE: i64 = 100;

/// Every `status` a mail has.
pub const STATUSES: [&str; 3] = ["pending", "sent", "failed"];

fn status_schema() -> utoipa::openapi::Object {
    crate::service::inbox::string_enum(&STATUSES)
}

/// Query string of GET /v1/workspaces/emails.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct MailListParams {
    /// pending, sent or failed; every status when absent
    #[param(schema_with = status_schema)]
    pub status: Option<String>,
    /// 1..200, default 100
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// A mail id (the last of the previous page): list the older ones.
    #[param(pattern = "^(mail_[0-7][0-9A-HJKMNP-TV-Z]{25})?$")]
    pub starting_after: Option<String>,
}

/// Every problem with the query, in `details.errors`.
fn check(p: &MailListParams) -> Result<i64> {
    let mut errs = Vec::new();
    if let Some(st) = &p.status
        && !STATUSES.contains(&st.as_str())
    {
        errs.push(FieldError::new(
            "status",
            format!(
                "status `{st}` is not valid; use one of {}",
                STATUSES.join(", ")
            ),
        ));
    }
    let limit = p.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        errs.push(FieldError::new(
            "limit",
            format!("limit must be between 1 and {MAX_PAGE}"),
        ));
    }
    // An empty cursor is the first page, as an absent one (as on runs).
    if let Some(e) = p
        .starting_after
        .as_deref()
        .filter(|s| !s.is_empty())
        .and_then(|id| ids::cursor_problem("starting_after", id, ids::MAIL, "a mail"))
    {
        errs.push(e);
    }
    if errs.is_empty() {
        Ok(limit)
    } else {
        Err(Error::validation(errs))
    }
}

/// GET /v1/workspaces/emails: a page of the active workspace's mail, newest
/// first, and whether older ones remain; for its owners and admins (the role
/// read afresh, not as at sign-in).
pub async fn list(s: &Services, user: &UserCaller, p: MailListParams) -> Result<(Vec<Mail>, bool)> {
    let m = user.active_or_404()?;
    caller::require_manager(m.role, access::can_read_email_log, "the e-mail log")?;
    let limit = check(&p)?;
    let (ws, uid) = (m.workspace_id.clone(), user.user_id.clone());
    let now = s.clock.now();
    let mut rows =
        s.db.read(move |c| {
            let role = workspaces::role_of(c, &ws, &uid)?.ok_or_else(|| {
                Error::new(
                    Code::WorkspaceNotFound,
                    "you are no longer a member of this workspace",
                )
            })?;
            caller::require_manager(role, access::can_read_email_log, "the e-mail log")?;
            if let Some(after) = p.starting_after.as_deref().filter(|s| !s.is_empty())
                && !store::in_log(c, &ws, after)?
                && !ids::older_than(after, store::KEEP_DAYS, now)
            {
                return Err(Error::unknown_cursor(
                    &ids::Cursor::starting_after(after),
                    "a mail of this workspace's log",
                ));
            }
            store::list(
                c,
                &ws,
                p.status.as_deref(),
                p.starting_after.as_deref().filter(|s| !s.is_empty()),
                limit + 1,
            )
        })
        .await?;
    let has_more = rows.len() as i64 > limit;
    rows.truncate(usize::try_from(limit).unwrap_or(0));
    Ok((rows, has_more))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn letter() -> Letter {
        Letter {
            to: "ana@example.com".into(),
            subject: "Ana <b>invited</b>\r\nBcc: you".into(),
            lines: vec!["Hello <script>alert(1)</script> & co.".into()],
            items: vec![(
                "Deploy \"api\"".into(),
                "https://hds.example.com/app/actions/act_1?a=1&b=2".into(),
            )],
            link: Some((
                "Accept".into(),
                "https://hds.example.com/app/invitations/tok".into(),
            )),
            settings: None,
            kind: MailKind::Invitation,
            workspace_id: None,
            user_id: None,
            secret: true,
            unsubscribable: false,
        }
    }

    #[test]
    fn both_parts_carry_the_text_and_the_urls_and_the_html_escapes_everything() {
        let l = letter();
        let subject = one_line(&l.subject);
        assert_eq!(subject, "Ana <b>invited</b>  Bcc: you");
        let text = render_text(&l);
        assert!(text.contains("Hello <script>alert(1)</script> & co."));
        assert!(
            text.contains(
                "- Deploy \"api\"\n  https://hds.example.com/app/actions/act_1?a=1&b=2\n"
            )
        );
        assert!(text.contains("Accept:\nhttps://hds.example.com/app/invitations/tok\n"));
        let html = render_html(&l, &subject).unwrap();
        assert!(
            !html.contains("<script>") && !html.contains("<b>"),
            "{html}"
        );
        assert!(
            html.contains("Hello &#60;script&#62;alert(1)&#60;/script&#62; &#38; co."),
            "{html}"
        );
        assert!(html.contains("href=\"https://hds.example.com/app/invitations/tok\""));
        assert!(html.contains(">https://hds.example.com/app/invitations/tok</a>"));
        assert!(
            html.contains("href=\"https://hds.example.com/app/actions/act_1?a=1&#38;b=2\""),
            "{html}"
        );
    }

    #[test]
    fn links_must_be_absolute_http() {
        assert!(check_url("https://x.example/a").is_ok());
        assert!(check_url("javascript:alert(1)").is_err());
        assert!(check_url("/app/actions/act_1").is_err());
        assert!(sendable("ana@example.com"));
        assert!(!sendable("(ana@example.com"));
    }
}
