//! Webhooks as rules (guide: "Webhooks"): the event types, the Standard
//! Webhooks signature (`v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed
//! with the base64-decoded part of `whsec_…`), and the retry schedule of
//! guide's "Answering, retries and the delivery log". No I/O: the worker (`workers::webhooks`) sends.

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use serde::Serialize;
use sha2::Sha256;

use crate::domain::credentials::WEBHOOK_SECRET_PREFIX;

/// What a webhook tells the Source (guide: "Webhooks").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum EventType {
    #[serde(rename = "action.control_requested")]
    ControlRequested,
    #[serde(rename = "action.context_requested")]
    ContextRequested,
    #[serde(rename = "action.resolved")]
    Resolved,
    #[serde(rename = "action.cancelled")]
    Cancelled,
    #[serde(rename = "action.expired")]
    Expired,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ControlRequested => "action.control_requested",
            Self::ContextRequested => "action.context_requested",
            Self::Resolved => "action.resolved",
            Self::Cancelled => "action.cancelled",
            Self::Expired => "action.expired",
        }
    }
}

/// Waits after each failed attempt of a round (guide: "Webhooks"; about 5 s, 5 min,
/// 30 min, 2 h, 5 h, 10 h, 10 h); after the last one the delivery fails.
pub const RETRY_SCHEDULE_SECS: [i64; 7] = [5, 300, 1800, 7200, 18000, 36000, 36000];

/// Attempts in one round: the first plus one per scheduled retry.
pub const ATTEMPTS_PER_ROUND: i64 = RETRY_SCHEDULE_SECS.len() as i64 + 1;

/// The wait before the next attempt, after `attempt_in_round` failed ones
/// (1 after the first failure); None when the round is over.
pub fn retry_after(attempts_in_round: i64) -> Option<i64> {
    usize::try_from(attempts_in_round - 1)
        .ok()
        .and_then(|i| RETRY_SCHEDULE_SECS.get(i).copied())
}

/// The key bytes of a `whsec_…` secret; None when it is not one.
fn key_of(secret: &str) -> Option<Vec<u8>> {
    let b64 = secret.strip_prefix(WEBHOOK_SECRET_PREFIX)?;
    base64::engine::general_purpose::STANDARD.decode(b64).ok()
}

/// One `v1,<base64>` signature of `id.timestamp.body`.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &str) -> Option<String> {
    let key = key_of(secret)?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    let sig = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    Some(format!("v1,{sig}"))
}

/// The `webhook-signature` header: one signature per secret, space-separated,
/// the current secret first (during a rotation's overlap, the old one too).
pub fn signature_header(secrets: &[&str], id: &str, timestamp: i64, body: &str) -> String {
    secrets
        .iter()
        .filter_map(|s| sign(s, id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification
    /// (github.com/standard-webhooks/standard-webhooks, spec/standard-webhooks.md).
    #[test]
    fn signs_as_the_standard_webhooks_reference() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
        let body = r#"{"test": 2432232314}"#;
        assert_eq!(
            sign(secret, id, 1614265330, body).unwrap(),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn two_secrets_give_two_signatures() {
        let a = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let b = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
        let h = signature_header(&[a, b], "msg_1", 1, "{}");
        let parts: Vec<_> = h.split(' ').collect();
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|p| p.starts_with("v1,")));
        assert_ne!(parts[0], parts[1]);
    }

    #[test]
    fn the_schedule_ends_after_eight_attempts() {
        assert_eq!(retry_after(1), Some(5));
        assert_eq!(retry_after(7), Some(36000));
        assert_eq!(retry_after(8), None);
        assert_eq!(retry_after(0), None);
        assert_eq!(ATTEMPTS_PER_ROUND, 8);
    }
}
