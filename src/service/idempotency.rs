//! Idempotency keys (guide: "Idempotency"; after Stripe): a key is 1–255 printable ASCII
//! characters, scoped to the Source and environment. An exact retry replays the
//! stored response; the same key with another request is refused; a retry that
//! arrives while the first is still running gets 409 + `Retry-After: 1`.

use std::collections::HashSet;
use std::sync::Mutex;

use rusqlite::Connection;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::domain::{jcs, time};
use crate::error::{Code, Error, Result};
use crate::service::caller::SourceCaller;
use crate::service::effects::Effects;
use crate::store::idempotency as store;

/// Keys whose first request is still being processed by this process.
#[derive(Default)]
pub struct InFlight {
    keys: Mutex<HashSet<(String, &'static str, String)>>,
}

/// Holds a key as in flight until dropped.
pub struct InFlightGuard<'a> {
    set: &'a InFlight,
    entry: (String, &'static str, String),
}

impl InFlight {
    pub fn acquire(&self, src: &SourceCaller, key: &str) -> Result<InFlightGuard<'_>> {
        let entry = (
            src.source_id.clone(),
            src.environment.as_str(),
            key.to_owned(),
        );
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        if !keys.insert(entry.clone()) {
            return Err(Error::new(
                Code::IdempotencyConflict,
                "a request with this Idempotency-Key is still in progress; retry shortly",
            )
            .retry_after(1));
        }
        Ok(InFlightGuard { set: self, entry })
    }
}

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        self.set
            .keys
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.entry);
    }
}

/// Checks the header value.
pub fn parse_key(raw: Option<&str>) -> Result<Option<String>> {
    match raw {
        None => Ok(None),
        Some(k)
            if !k.is_empty() && k.len() <= 255 && k.bytes().all(|b| (0x20..0x7f).contains(&b)) =>
        {
            Ok(Some(k.to_owned()))
        }
        Some(_) => Err(Error::new(
            Code::InvalidIdempotencyKey,
            "Idempotency-Key must be 1-255 printable ASCII characters",
        )),
    }
}

/// Hash of what makes two requests "the same": route and canonical body
/// (RFC 8785), so key order and whitespace do not make a retry a different
/// request (guide, "Idempotency and retries"; Stripe compares parameters too).
pub fn request_hash(route: &str, body: &Value) -> String {
    let mut h = Sha256::new();
    h.update(route.as_bytes());
    h.update([0]);
    jcs::hash_into(body, &mut h);
    hex::encode(h.finalize())
}

/// Marks a typed request hash: never equal to a canonical-body hash stored
/// before typed hashes (64 hex digits).
const TYPED: &str = store::TYPED_HASH;

/// Hash of a parsed create request (`jcs::hash_typed_into`): the same for
/// bodies that differ only in key order, whitespace, escapes, the spelling
/// of numbers, or in leaving out a field rather than sending its default,
/// which all parse to the same request. It costs a serialisation of the
/// parsed request instead of a second parse into a `Value` and its
/// canonical form (guide: "Idempotency and retries").
pub fn typed_request_hash<T: serde::Serialize>(route: &str, request: &T) -> Result<String> {
    typed_hash(TYPED, route, request)
}

/// The typed hash as hds stored it before documented defaults were left out
/// (`t1:`): over the request as parsed, `without_defaults` not applied.
/// Computed only to compare a retry with a row stored then.
pub fn typed_request_hash_v1<T: serde::Serialize>(route: &str, request: &T) -> Result<String> {
    typed_hash(store::TYPED_HASH_V1, route, request)
}

fn typed_hash<T: serde::Serialize>(prefix: &str, route: &str, request: &T) -> Result<String> {
    let mut h = Sha256::new();
    h.update(route.as_bytes());
    h.update([0]);
    jcs::hash_typed_into(request, &mut h)?;
    Ok(format!("{prefix}{}", hex::encode(h.finalize())))
}

/// The stored answer for a retry of a request identified by its typed hash
/// (`None` when the body does not parse): a row stored before typed hashes
/// is compared by the canonical hash of `body`, as it was stored.
pub fn replay_typed(
    stored: store::Stored,
    typed: Option<&str>,
    route: &str,
    body: &[u8],
    typed_v1: impl FnOnce() -> Option<String>,
) -> Result<Reply> {
    if typed == Some(stored.request_hash.as_str()) || stored.request_hash.starts_with(TYPED) {
        let hash = typed.unwrap_or_default().to_owned();
        return replay(stored, &hash);
    }
    if stored.request_hash.starts_with(store::TYPED_HASH_V1) {
        let hash = typed_v1().unwrap_or_default();
        return replay(stored, &hash);
    }
    let canonical = serde_json::from_slice::<Value>(body)
        .map(|v| request_hash(route, &v))
        .unwrap_or_default();
    replay(stored, &canonical)
}

/// A response that may have been replayed.
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub replayed: bool,
}

/// The stored answer for an exact retry; IDEMPOTENCY_KEY_REUSED for another request.
pub fn replay(stored: store::Stored, request_hash: &str) -> Result<Reply> {
    if stored.request_hash != request_hash {
        return Err(Error::new(
            Code::IdempotencyKeyReused,
            "this Idempotency-Key was already used for a different request; use a new key per logical operation",
        ));
    }
    let mut body = stored.response;
    if body.is_null() {
        return Err(Error::internal(anyhow::anyhow!(
            "a matching stored response was not read"
        )));
    }
    // Answers that carry `idempotent_replay` say so in it; the others are
    // the first answer exactly (the Idempotent-Replayed header says it).
    if let Some(flag) = body.get_mut("idempotent_replay") {
        *flag = Value::Bool(true);
    }
    Ok(Reply {
        status: stored.status_code,
        body,
        replayed: true,
    })
}

/// The stored answer for `key`, read before any validation: an exact retry
/// gets the original response even when re-validating it now would fail
/// (e.g. an `expires_at` that has passed since). `request_hash` is the typed
/// hash, None when the body does not parse (an answer rebuilt from an
/// Action is then not built). Compare it with `replay_typed`.
pub async fn lookup(
    db: &crate::store::Db,
    src: &SourceCaller,
    key: Option<&str>,
    request_hash: Option<&str>,
) -> Result<Option<store::Stored>> {
    let Some(key) = key else { return Ok(None) };
    let (source_id, env, key) = (src.source_id.clone(), src.environment, key.to_owned());
    let hash = request_hash.unwrap_or_default().to_owned();
    db.read(move |c| store::get(c, &source_id, env, &key, &hash))
        .await
}

/// Inside a write transaction: replays a stored response for `key`, or runs
/// `work` and stores its response in the same transaction.
pub fn run(
    c: &Connection,
    fx: &mut Effects,
    src: &SourceCaller,
    key: Option<&str>,
    request_hash: &str,
    now: &str,
    work: impl FnOnce(&Connection, &mut Effects) -> Result<(u16, Value)>,
) -> Result<Reply> {
    let Some(key) = key else {
        let (status, body) = work(c, fx)?;
        return Ok(Reply {
            status,
            body,
            replayed: false,
        });
    };
    if let Some(stored) = store::get(c, &src.source_id, src.environment, key, request_hash)? {
        return replay(stored, request_hash);
    }
    let (status, body) = work(c, fx)?;
    let stored = store::New {
        request_hash,
        status_code: status,
        response: store::Answer::Text(&body.to_string()),
        created_at: now,
    };
    store::put(c, &src.source_id, src.environment, key, &stored)?;
    Ok(Reply {
        status,
        body,
        replayed: false,
    })
}

/// A response serialised once, before the write: the same text is stored for
/// replays and sent as the HTTP body.
pub struct Serialised {
    pub status: u16,
    pub json: String,
    /// The Action this answer shows as it was just created, when a replay
    /// can rebuild the answer from it (`ActionRecord::as_created`): then
    /// only the id is stored, not the text.
    pub rebuilt_from: Option<String>,
}

/// What `run_serialised` gives: the work's own answer, a stored one, or a
/// stored one whose request hash differs (compare it with `replay_typed`
/// outside the writer: a row stored before typed hashes needs the body's
/// canonical hash).
pub enum Outcome {
    Fresh(Serialised),
    Replayed(Reply),
    Mismatch(store::Stored),
}

/// `run` for work whose response is serialised by the caller: the writer
/// thread then only runs SQL, storing the text it is handed. `created_at` is
/// the request's own clock reading (time is read once per use case).
pub fn run_serialised(
    c: &Connection,
    fx: &mut Effects,
    src: &SourceCaller,
    key: Option<&str>,
    request_hash: &str,
    created_at: &str,
    work: impl FnOnce(&Connection, &mut Effects) -> Result<Serialised>,
) -> Result<Outcome> {
    let Some(key) = key else {
        return work(c, fx).map(Outcome::Fresh);
    };
    if let Some(stored) = store::get(c, &src.source_id, src.environment, key, request_hash)? {
        return match stored.request_hash == request_hash {
            true => replay(stored, request_hash).map(Outcome::Replayed),
            false => Ok(Outcome::Mismatch(stored)),
        };
    }
    let fresh = work(c, fx)?;
    let stored = store::New {
        request_hash,
        status_code: fresh.status,
        response: match &fresh.rebuilt_from {
            Some(id) => store::Answer::Created(id),
            None => store::Answer::Text(&fresh.json),
        },
        created_at,
    };
    store::put(c, &src.source_id, src.environment, key, &stored)?;
    Ok(Outcome::Fresh(fresh))
}

/// An idempotent Source write: holds the key in flight, then runs `work` in
/// the writer's transaction through `run`. The request hash (route + canonical
/// body) is computed only when a key was sent.
pub async fn write(
    s: &crate::service::Services,
    src: &SourceCaller,
    key: Option<String>,
    route: &str,
    request: Value,
    now: time::Timestamp,
    work: impl FnOnce(&Connection, &mut Effects) -> Result<(u16, Value)> + Send + 'static,
) -> Result<Reply> {
    let hash = match key {
        Some(_) => request_hash(route, &request),
        None => String::new(),
    };
    let _guard = key
        .as_deref()
        .map(|k| s.inflight.acquire(src, k))
        .transpose()?;
    let src = src.clone();
    let now = time::format(now);
    s.write(move |c, fx| run(c, fx, &src, key.as_deref(), &hash, &now, work))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash as it was computed before the streaming writer.
    fn reference_hash(route: &str, body: &Value) -> String {
        let canonical = serde_json_canonicalizer::to_vec(body).unwrap();
        let mut h = Sha256::new();
        h.update(route.as_bytes());
        h.update([0]);
        h.update(&canonical);
        hex::encode(h.finalize())
    }

    #[test]
    fn request_hash_is_the_rfc_8785_hash_stored_before() {
        let bodies = crate::domain::jcs::tricky_values();
        for body in &bodies {
            assert_eq!(
                request_hash("POST /v1/actions", body),
                reference_hash("POST /v1/actions", body),
                "{body}"
            );
        }
    }

    /// Pinned: if how a parsed create serialises changes (a field added
    /// without `skip_serializing_if`, renamed or reordered), this hash
    /// changes, and an exact retry of a key stored before the upgrade would
    /// answer IDEMPOTENCY_KEY_REUSED. Such a change needs a new `TYPED`
    /// prefix and a way to compare the rows stored under the old one.
    #[test]
    fn the_typed_hash_of_a_create_is_pinned() {
        let spec = crate::domain::validate::parse_create_bytes(
            br#"{"title":"Deploy","description":"d","priority":"high","options":[{"id":"go","label":"Go","style":"primary"}],
                "context":[{"type":"text","text":"t"},{"type":"kv","items":[{"key":"k","value":"v"}]}],
                "controls":[{"key":"logs","label":"Logs","kind":"link","url":"https://ci.example.com/l"}],
                "decision_class":"deploy","decision_context":{"s":"api"},"open_url":"https://ci.example.com/7",
                "expires_at":"2030-01-01T00:00:00Z","on_expire":{"action":"cancel"},"dedupe_key":"d-1",
                "visibility":"restricted","reviewer_emails":["a@example.com"],"requested_by_email":"r@example.com",
                "metadata":{"n":1.5,"a":[1,"x"]}}"#,
        )
        .unwrap();
        // Without a default, `t2:` is the `t1:` hash under its new prefix.
        let hex = "cca8564fa0aaeb2fc176ad92b9d51c89280eba1d35d1925d68b44c51523e40f1";
        assert_eq!(
            typed_request_hash("POST /v1/actions", &spec).unwrap(),
            format!("t2:{hex}")
        );
        assert_eq!(
            typed_request_hash_v1("POST /v1/actions", &spec).unwrap(),
            format!("t1:{hex}")
        );
    }

    /// Pinned with defaults sent: `t2:` covers the request without them
    /// (the same as leaving them out); `t1:`, as stored before, with them.
    #[test]
    fn the_typed_hash_leaves_documented_defaults_out() {
        let parse = |b: &[u8]| crate::domain::validate::parse_create_bytes(b).unwrap();
        let bare = parse(br#"{"title":"Deploy","options":[{"label":"Go"}]}"#);
        let sent = parse(
            br#"{"title":"Deploy","options":[{"label":"Go","style":"secondary","reason_required":false}],"visibility":"workspace"}"#,
        );
        let hash = |s: &crate::domain::action::ActionSpec| {
            typed_request_hash(
                "POST /v1/actions",
                &*crate::domain::validate::without_defaults(s),
            )
            .unwrap()
        };
        assert_eq!(hash(&sent), hash(&bare));
        assert_ne!(
            typed_request_hash_v1("POST /v1/actions", &sent).unwrap(),
            typed_request_hash_v1("POST /v1/actions", &bare).unwrap()
        );
    }

    #[test]
    fn key_order_and_whitespace_do_not_change_the_hash() {
        let a: Value = serde_json::from_str(r#"{"title": "a", "options": [1, 2]}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"options":[1,2],"title":"a"}"#).unwrap();
        let c: Value = serde_json::from_str(r#"{"options":[2,1],"title":"a"}"#).unwrap();
        assert_eq!(request_hash("r", &a), request_hash("r", &b));
        assert_ne!(request_hash("r", &a), request_hash("r", &c));
        assert_ne!(request_hash("r", &a), request_hash("s", &a));
    }
}
