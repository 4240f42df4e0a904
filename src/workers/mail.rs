//! Sends one e-mail attempt over SMTP (guide: "E-mail"): the stored parts
//! become a multipart/alternative message from `[smtp] from`, with a stable
//! `Message-ID` (the mail id, the same on every attempt, so a repeat after a
//! crash can be recognised) and the `Date` it was queued. One connection per
//! attempt, a timeout on each step. What the server answered decides what
//! happens next (`Outcome`); the body is never logged.

use std::time::{Duration, Instant, SystemTime};

use lettre::message::header::{self, HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::config::{SmtpConfig, SmtpTls};
use crate::domain::time;
use crate::store::mail::Outgoing;

/// Seconds connecting to the server may take (lettre's async transport
/// applies its timeout to the connection only; the replies are bounded by
/// the whole attempt's limit below).
pub const STEP_TIMEOUT_SECS: u64 = 15;
/// Seconds a whole attempt may take; a slower one counts as a timeout.
pub const ATTEMPT_TIMEOUT_SECS: u64 = 60;

/// Seconds after an attempt's start that attempt `n + 1` is due, for a
/// failure that may pass (no connection, a timeout, a 4xx reply); after the
/// last the mail is failed. Eight attempts over about 10 h 40 min.
pub const RETRY_SCHEDULE_SECS: [i64; 7] = [30, 120, 600, 1800, 3600, 10_800, 21_600];

/// When attempt `attempt + 1` is due, in seconds after attempt `attempt`
/// started; None when `attempt` was the last.
pub fn retry_after(attempt: i64) -> Option<i64> {
    usize::try_from(attempt - 1)
        .ok()
        .and_then(|i| RETRY_SCHEDULE_SECS.get(i).copied())
}

/// What one attempt came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The server took it (2xx after DATA).
    Sent,
    /// It may pass: no connection, a timeout, a TLS failure, a 4xx reply.
    Retry(String),
    /// It will not pass: a 5xx reply, or a message that cannot be built.
    Failed(String),
}

/// The SMTP client, built once per worker from `[smtp]`.
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    /// `--base-url`, without a trailing slash: where unsubscribe links point.
    base_url: String,
}

impl Mailer {
    pub fn new(cfg: &SmtpConfig, base_url: &str) -> anyhow::Result<Self> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let builder = match cfg.tls {
            SmtpTls::Starttls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&cfg.host)?,
            SmtpTls::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&cfg.host)?,
            SmtpTls::None => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&cfg.host),
        };
        let mut builder = builder
            .port(cfg.port)
            .timeout(Some(Duration::from_secs(STEP_TIMEOUT_SECS)));
        if let Some((user, password)) = &cfg.credentials {
            builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
        }
        Ok(Self {
            transport: builder.build(),
            from: cfg.from.clone(),
            base_url: base_url.trim_end_matches('/').to_owned(),
        })
    }

    /// The message of a stored mail.
    pub fn message(&self, m: &Outgoing) -> Result<Message, String> {
        let to = ascii_domain(&m.to);
        if to.rsplit_once('@').is_some_and(|(_, d)| !d.is_ascii()) {
            return Err(
                "not sent: the address's domain is not a valid international domain name".into(),
            );
        }
        let to: Mailbox = to
            .parse()
            .map_err(|e| format!("not sent: the address cannot be used ({e})"))?;
        let domain = self.from.email.domain().to_owned();
        let queued = time::parse(&m.created_at)
            .map(|t| {
                let secs = u64::try_from(t.unix_timestamp()).unwrap_or(0);
                SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
            })
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let mut message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .raw_header(subject_header(&m.subject))
            .message_id(Some(format!("<{}@{domain}>", m.id)))
            .date(queued)
            // RFC 3834: written by a program; auto-responders stay quiet.
            .raw_header(HeaderValue::new(
                HeaderName::new_from_ascii_str("Auto-Submitted"),
                "auto-generated".into(),
            ))
            .header(header::UserAgent::from(
                concat!("hds/", env!("CARGO_PKG_VERSION")).to_owned(),
            ));
        // RFC 2369 and RFC 8058: a mail that unsubscribing would stop (a
        // notification of a kind not mandatory, a digest) says how, and the
        // mail provider may do so in one click (a POST of
        // `List-Unsubscribe=One-Click` to the same address).
        if let Some(token) = &m.unsubscribe_token {
            let url = format!("{}/app/unsubscribe/{token}", self.base_url);
            message = message
                .raw_header(HeaderValue::new(
                    HeaderName::new_from_ascii_str("List-Unsubscribe"),
                    format!("<{url}>"),
                ))
                .raw_header(HeaderValue::new(
                    HeaderName::new_from_ascii_str("List-Unsubscribe-Post"),
                    "List-Unsubscribe=One-Click".into(),
                ));
        }
        message
            .multipart(MultiPart::alternative_plain_html(
                m.text_body.clone(),
                m.html_body.clone(),
            ))
            .map_err(|e| format!("not sent: the message could not be built ({e})"))
    }

    /// Whether the envelope's addresses are ASCII as sent (the domain of
    /// the recipient in its IDNA form): only a non-ASCII one needs SMTPUTF8.
    fn envelope_is_ascii(&self, m: &Outgoing) -> bool {
        ascii_domain(&m.to).is_ascii() && self.from.email.to_string().is_ascii()
    }

    /// One attempt; answers what it came to and how long it took (ms).
    pub async fn send(&self, m: &Outgoing) -> (Outcome, i64) {
        let started = Instant::now();
        let outcome = match self.message(m) {
            Err(why) => Outcome::Failed(why),
            Ok(msg) => {
                let sent = tokio::time::timeout(
                    Duration::from_secs(ATTEMPT_TIMEOUT_SECS),
                    self.transport.send(msg),
                )
                .await;
                match sent {
                    Ok(Ok(_)) => Outcome::Sent,
                    Ok(Err(e)) => judge(&e, !self.envelope_is_ascii(m)),
                    Err(_) => Outcome::Retry(format!(
                        "timed out: the conversation took more than {ATTEMPT_TIMEOUT_SECS} s"
                    )),
                }
            }
        };
        let ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        (outcome, ms)
    }
}

/// The Subject header. lettre writes an ASCII subject as it is, so one
/// that holds an encoded word of its own (`=?utf-8?b?SGFja2Vk?=`, from an
/// Action's title or a workspace's name) would be decoded by mail clients
/// into other words than hds shows and logs. Such a subject is sent whole
/// as encoded words (RFC 2047, at most 39 bytes of text each, so that
/// `Subject: ` and the first word fit a 76-character line; folded),
/// which read back as the very text.
fn subject_header(subject: &str) -> HeaderValue {
    use base64::Engine as _;
    let name = HeaderName::new_from_ascii_str("Subject");
    if !subject.contains("=?") {
        return HeaderValue::new(name, subject.to_owned());
    }
    let encode = |chunk: &str| {
        format!(
            "=?utf-8?b?{}?=",
            base64::engine::general_purpose::STANDARD.encode(chunk)
        )
    };
    let mut words = Vec::new();
    let mut chunk = String::new();
    for ch in subject.chars() {
        if chunk.len() + ch.len_utf8() > 39 {
            words.push(encode(&chunk));
            chunk.clear();
        }
        chunk.push(ch);
    }
    if !chunk.is_empty() {
        words.push(encode(&chunk));
    }
    // Only base64 and the markers: no line break or control character
    // can reach the header from the text.
    HeaderValue::dangerous_new_pre_encoded(name, subject.to_owned(), words.join("\r\n "))
}

/// `local@domain` with the domain in its ASCII form (IDNA: `exämple.com`
/// is `xn--exmple-cua.com`), which every relay takes; the part before the
/// `@` is left as it is (letters outside ASCII there need a relay that
/// speaks SMTPUTF8).
fn ascii_domain(address: &str) -> String {
    match address.rsplit_once('@') {
        Some((local, domain)) if !domain.is_ascii() => match url::Host::parse(domain) {
            Ok(url::Host::Domain(ascii)) => format!("{local}@{ascii}"),
            _ => address.to_owned(),
        },
        _ => address.to_owned(),
    }
}

/// A failed conversation, judged: a 5xx reply is final, all else may pass;
/// except a refused login (530, 534, 535, 538), which is this server's
/// `[smtp]` credentials, not the mail: retried, so it goes once they are fixed.
fn judge(e: &lettre::transport::smtp::Error, non_ascii_envelope: bool) -> Outcome {
    let described = describe(e);
    let login = e
        .status()
        .is_some_and(|c| matches!(c.to_string().as_str(), "530" | "534" | "535" | "538"));
    if login {
        return Outcome::Retry(format!(
            "{described} (the relay refused the login: check [smtp] username and password)"
        ));
    }
    // An address with letters outside ASCII before the @, through a relay
    // without SMTPUTF8: no later attempt would differ. Other client errors
    // (no STARTTLS, no common AUTH mechanism) are the relay's or [smtp]'s,
    // and retried like a refused login.
    if e.is_client() && non_ascii_envelope {
        return Outcome::Failed(format!(
            "not sent: {described} (an address with letters outside ASCII before the @ needs a relay that speaks SMTPUTF8)"
        ));
    }
    if e.is_permanent() {
        Outcome::Failed(described)
    } else {
        Outcome::Retry(described)
    }
}

/// The failure in words: the server's reply (`SMTP 550 …`) or the
/// connection's trouble down to its root cause, on one line.
fn describe(e: &lettre::transport::smtp::Error) -> String {
    use std::error::Error as _;
    let text = match e.status() {
        Some(code) => {
            let reply = e.source().map(|s| s.to_string()).unwrap_or_default();
            format!("SMTP {code}: {reply}")
        }
        None => {
            let mut text = e.to_string();
            let mut cause = e.source();
            while let Some(c) = cause {
                let more = c.to_string();
                if !text.contains(&more) {
                    text = format!("{text}: {more}");
                }
                cause = c.source();
            }
            text
        }
    };
    one_line(&text).chars().take(1000).collect()
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_domain_outside_ascii_is_sent_in_its_ascii_form() {
        assert_eq!(ascii_domain("eva@exämple.com"), "eva@xn--exmple-cua.com");
        assert_eq!(ascii_domain("éva@exämple.com"), "éva@xn--exmple-cua.com");
        assert_eq!(ascii_domain("ana@example.com"), "ana@example.com");
        assert_eq!(ascii_domain("ü@example.com"), "ü@example.com");
    }

    #[test]
    fn the_schedule_ends_after_eight_attempts() {
        assert_eq!(retry_after(1), Some(30));
        assert_eq!(retry_after(7), Some(21_600));
        assert_eq!(retry_after(8), None);
        assert_eq!(retry_after(0), None);
    }

    #[test]
    fn messages_carry_a_stable_id_the_queued_date_and_both_parts() {
        let cfg = SmtpConfig {
            host: "127.0.0.1".into(),
            port: 2525,
            credentials: None,
            from: "hds <hds@example.com>".parse().unwrap(),
            tls: SmtpTls::None,
        };
        let mailer = Mailer::new(&cfg, "https://hds.example.com/").unwrap();
        let m = Outgoing {
            id: "mail_01ABC".into(),
            to: "ana@example.com".into(),
            subject: "Über hds".into(),
            text_body: "hello".into(),
            html_body: "<p>hello</p>".into(),
            created_at: "2026-11-23T10:00:00.000Z".into(),
            attempts: 0,
            unsubscribe_token: None,
            list: None,
        };
        let raw = String::from_utf8(mailer.message(&m).unwrap().formatted()).unwrap();
        assert!(
            raw.contains("Message-ID: <mail_01ABC@example.com>"),
            "{raw}"
        );
        assert!(
            raw.contains("Date: Mon, 23 Nov 2026 10:00:00 +0000"),
            "{raw}"
        );
        assert!(raw.contains("Auto-Submitted: auto-generated"), "{raw}");
        assert!(
            !raw.contains("List-Unsubscribe"),
            "an invitation has no list: {raw}"
        );
        // A notification mail: its unsubscribe link whole on one line (a
        // URL has no space to fold at), and the one-click marker.
        let token = format!("usr_{0}.ws_{0}.{1}", "0".repeat(26), "A".repeat(43));
        let listed = Outgoing {
            unsubscribe_token: Some(token.clone()),
            ..m.clone()
        };
        let raw = String::from_utf8(mailer.message(&listed).unwrap().formatted()).unwrap();
        assert!(
            raw.contains(&format!(
                "\r\nList-Unsubscribe: <https://hds.example.com/app/unsubscribe/{token}>\r\n"
            )),
            "{raw}"
        );
        assert!(
            raw.contains("\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"),
            "{raw}"
        );
        assert!(raw.contains("multipart/alternative"), "{raw}");
        assert!(
            raw.contains("text/plain") && raw.contains("text/html"),
            "{raw}"
        );
        // A subject holding an encoded word of its own is sent encoded
        // whole: a client reads back the very text, not "Hacked".
        let tricky = Outgoing {
            subject: "New: déploy =?utf-8?b?SGFja2Vk?= and a löng tail to fold ovér wörds".into(),
            ..m.clone()
        };
        let raw = String::from_utf8(mailer.message(&tricky).unwrap().formatted()).unwrap();
        let subject_lines: Vec<&str> = raw
            .split("\r\n")
            .skip_while(|l| !l.starts_with("Subject: "))
            .take_while(|l| l.starts_with("Subject: ") || l.starts_with(' '))
            .collect();
        assert!(subject_lines.len() > 1, "folded: {subject_lines:?}");
        for line in &subject_lines {
            assert!(line.len() <= 76, "{line}");
        }
        let header: String = raw
            .split("\r\n")
            .skip_while(|l| !l.starts_with("Subject: "))
            .take_while(|l| l.starts_with("Subject: ") || l.starts_with(' '))
            .collect::<Vec<_>>()
            .join("");
        assert!(!header.contains("SGFja2Vk?= and"), "{header}");
        use base64::Engine as _;
        let decoded: String = header
            .trim_start_matches("Subject: ")
            .split_whitespace()
            .map(|w| {
                let b64 = w.trim_start_matches("=?utf-8?b?").trim_end_matches("?=");
                String::from_utf8(
                    base64::engine::general_purpose::STANDARD
                        .decode(b64)
                        .unwrap(),
                )
                .unwrap()
            })
            .collect();
        assert_eq!(decoded, tricky.subject);
        let bad = Outgoing {
            to: "(ana@example.com".into(),
            ..m
        };
        assert!(mailer.message(&bad).is_err());
    }
}
