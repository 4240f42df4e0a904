//! Idempotency keys (guide: "Idempotency"; after Stripe): a key is 1–255 printable ASCII
//! characters, scoped to the Source and environment. An exact retry replays the
//! stored response; the same key with another request is refused; a retry that
//! arrives while the first is still running gets 409 + `Retry-After: 1`.

use std::collections::HashSet;
use std::sync::Mutex;

use rusqlite::Connection;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::domain::time;
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

/// Hash of what makes two requests "the same": route and canonical body.
pub fn request_hash(route: &str, body: &Value) -> String {
    let canonical = serde_json_canonicalizer::to_vec(body).unwrap_or_default();
    let mut h = Sha256::new();
    h.update(route.as_bytes());
    h.update([0]);
    h.update(&canonical);
    hex::encode(h.finalize())
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
    if let Some(o) = body.as_object_mut() {
        o.insert("idempotent_replay".into(), Value::Bool(true));
    }
    Ok(Reply {
        status: stored.status_code,
        body,
        replayed: true,
    })
}

/// A stored answer for `key`, read before any validation: an exact retry gets
/// the original response even when re-validating it now would fail (e.g. an
/// `expires_at` that has passed since).
pub async fn lookup(
    db: &crate::store::Db,
    src: &SourceCaller,
    key: Option<&str>,
    request_hash: &str,
) -> Result<Option<Reply>> {
    let Some(key) = key else { return Ok(None) };
    let (source_id, env, key, hash) = (
        src.source_id.clone(),
        src.environment,
        key.to_owned(),
        request_hash.to_owned(),
    );
    db.read(move |c| {
        store::get(c, &source_id, env, &key)?
            .map(|s| replay(s, &hash))
            .transpose()
    })
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
    if let Some(stored) = store::get(c, &src.source_id, src.environment, key)? {
        return replay(stored, request_hash);
    }
    let (status, body) = work(c, fx)?;
    let stored = store::Stored {
        request_hash: request_hash.to_owned(),
        status_code: status,
        response: body.clone(),
    };
    store::put(c, &src.source_id, src.environment, key, &stored, now)?;
    Ok(Reply {
        status,
        body,
        replayed: false,
    })
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
    let now = time::format(s.clock.now());
    s.write(move |c, fx| run(c, fx, &src, key.as_deref(), &hash, &now, work))
        .await
}
