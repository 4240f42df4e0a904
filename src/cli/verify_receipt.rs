//! `hds verify-receipt FILE [--keys FILE_OR_URL]`: offline verification.
//! FILE (or `-`) holds a compact JWS, a receipt object, an Action, an API
//! response or a webhook's body; whatever surrounds the JWS must say what
//! it signs.

use std::io::Read;
use std::process::ExitCode;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::domain::jcs;
use crate::domain::receipt::{self, PublicKey};

#[derive(clap::Args)]
pub struct Args {
    /// File holding the receipt, or `-` for standard input.
    pub file: String,
    /// JWKS file, or its http(s) URL (`<base URL>/v1/receipts/keys`).
    /// Without it, the keys of --data-dir.
    #[arg(long, value_name = "FILE_OR_URL")]
    pub keys: Option<String>,
    #[command(flatten)]
    pub dir: crate::cli::DataDir,
}

pub fn run(a: Args) -> ExitCode {
    match verify(&a) {
        Ok(msg) => {
            // The exit code is the verdict, even for a reader that left.
            let _ = crate::cli::say!("valid: {msg}");
            ExitCode::SUCCESS
        }
        Err(Failure::Invalid(why)) => {
            let _ = crate::cli::say!("invalid: {why}");
            ExitCode::from(1)
        }
        // Not a verdict: a gate must not take "the key server was down"
        // for "the receipt is forged", nor the other way round.
        Err(Failure::Unchecked(why)) => {
            eprintln!("error: could not check the receipt: {why}");
            ExitCode::from(2)
        }
    }
}

/// Why no `valid:` was printed.
enum Failure {
    /// The receipt, or what surrounds it, is not what it claims (exit 1).
    Invalid(String),
    /// The file or the keys could not be read, so nothing was judged (exit 2).
    Unchecked(String),
}

impl From<String> for Failure {
    fn from(why: String) -> Self {
        Failure::Invalid(why)
    }
}

impl From<&str> for Failure {
    fn from(why: &str) -> Self {
        Failure::Invalid(why.to_owned())
    }
}

fn verify(a: &Args) -> Result<String, Failure> {
    let mut bytes = Vec::new();
    if a.file == "-" {
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| Failure::Unchecked(format!("reading stdin: {e}")))?;
    } else {
        bytes = std::fs::read(&a.file)
            .map_err(|e| Failure::Unchecked(format!("reading {}: {e}", a.file)))?;
    }
    // Read, but not text: no receipt is in it.
    let input = String::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8 text", a.file))?;
    let jws = extract_jws(input.trim())?;
    let keys = load_keys(a).map_err(Failure::Unchecked)?;
    let header = jws
        .split('.')
        .next()
        .and_then(|h| {
            use base64::Engine;
            let b = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(h)
                .ok()?;
            serde_json::from_slice::<Value>(&b).ok()
        })
        .unwrap_or(Value::Null);
    let kid = header["kid"].as_str().unwrap_or_default().to_owned();
    // A key set saved to a file before a rotation lacks the newer keys: say
    // what to do (hds never unpublishes a key, so a set fetched from the
    // server or read from the data dir is never stale).
    // (A forged receipt names a kid nobody published, so this stays a
    // verdict, exit 1, with the way to rule out a stale file.)
    if let Some(file) = a.keys.as_deref().filter(|k| !is_url(k))
        && !kid.is_empty()
        && !keys.iter().any(|k| k.kid == kid)
    {
        return Err(Failure::Invalid(format!(
            "no key with kid {kid} in {file}. If {file} was saved before that key was made, \
             fetch the keys again (curl -sS <base URL>/v1/receipts/keys > {file}) and verify again"
        )));
    }
    let claims = receipt::verify(&jws, &keys)?;
    if input.trim().starts_with('{') {
        let around: Value = serde_json::from_str(input.trim()).map_err(|e| e.to_string())?;
        let alg = header["alg"].as_str().unwrap_or_default();
        check_surroundings(&around, &claims, &kid, alg)?;
    }
    Ok(format!(
        "receipt {} for {} (action_version {}, {}) signed by {kid}",
        claims["jti"].as_str().unwrap_or("?"),
        claims["sub"].as_str().unwrap_or("?"),
        claims["action_version"],
        claims["fingerprint"].as_str().unwrap_or("?"),
    ))
}

/// The places of a JSON file where a receipt may be: the file itself (a
/// receipt object, `jws`), or the `receipt` of an Action that is the file,
/// its `data` (an API response) or its `data.action` (a webhook's body).
const ACTION_PLACES: [&[&str]; 3] = [&[], &["data"], &["data", "action"]];

fn at<'a>(v: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(v, |node, key| &node[*key])
}

/// Finds the compact JWS in whatever was given.
fn extract_jws(input: &str) -> Result<String, String> {
    if !input.starts_with('{') {
        return Ok(input.to_owned());
    }
    let v: Value = serde_json::from_str(input)
        .map_err(|e| format!("input is neither a compact JWS nor JSON: {e}"))?;
    holder(&v)?
        .1
        .ok_or_else(|| {
            "no receipt found in the JSON (looked for jws, receipt.jws, data.receipt.jws, data.action.receipt.jws)".into()
        })
}

/// The members each kind of file may hold besides what is checked: a
/// receipt object (`jws` at the top), an API response (`data`), a webhook
/// body (`data.action`). An Action file (the receipt at `receipt`) is an
/// Action, whose every member is checked or fingerprinted, and holds no
/// `data`.
const RECEIPT_OBJECT: &[&str] = &["id", "kid", "alg", "jws", "payload"];
const API_RESPONSE: &[&str] = &["data", "idempotent_replay", "tally"];
const WEBHOOK_BODY: &[&str] = &["type", "timestamp", "data"];
const WEBHOOK_DATA: &[&str] = &["action"];

/// The member of `v` that `allowed` does not list, if any.
fn stranger<'a>(v: &'a Value, allowed: &[&str]) -> Option<&'a str> {
    v.as_object()?
        .keys()
        .map(String::as_str)
        .find(|k| !allowed.contains(k))
}

/// The one node of the file that holds a receipt: None for a receipt
/// object (the file itself), Some(the Action) otherwise; and its JWS, when
/// it has one. A file with more than one (a receipt beside an Action, two
/// Actions) is refused: whatever it shows must be what the one JWS signs,
/// so no second, unchecked decision may sit beside it. So is a file that
/// holds anything its kind does not (another Action beside a receipt, in
/// any shape: the body of `action.cancelled` with another Action's `jws`
/// at the top).
fn holder(v: &Value) -> Result<(Option<&Value>, Option<String>), String> {
    let mut found: Vec<(Option<&Value>, Option<String>, &[&str])> = Vec::new();
    if !v["jws"].is_null() {
        found.push((None, v["jws"].as_str().map(str::to_owned), &[]));
    }
    for path in ACTION_PLACES {
        let a = at(v, path);
        if !a["receipt"].is_null() {
            found.push((
                Some(a),
                a["receipt"]["jws"].as_str().map(str::to_owned),
                path,
            ));
        }
    }
    if found.len() > 1 {
        return Err(
            "the file holds more than one receipt or Action with a receipt (at jws, receipt, data.receipt, data.action.receipt); verify each on its own"
                .into(),
        );
    }
    let Some((action, jws, path)) = found.pop() else {
        return Ok((None, None));
    };
    let extra = match (action, path) {
        (None, _) => stranger(v, RECEIPT_OBJECT).map(|k| (k, "a receipt object")),
        (Some(_), []) => v.get("data").map(|_| ("data", "an Action")),
        (Some(_), [_]) => stranger(v, API_RESPONSE).map(|k| (k, "an API response")),
        (Some(_), _) => stranger(v, WEBHOOK_BODY)
            .or_else(|| stranger(&v["data"], WEBHOOK_DATA))
            .map(|k| (k, "a webhook body")),
    };
    if let Some((member, kind)) = extra {
        return Err(format!(
            "the file is {kind} with a member `{member}` such a file does not hold: what it shows beside the receipt would not be checked; verify the receipt on its own (receipt.jws), or the file as hds sent it"
        ));
    }
    Ok((action, jws))
}

/// A receipt object or an Action around the JWS must show what the JWS
/// signs: a receipt's `payload`, `id` and `kid`; an Action's id, version,
/// fingerprint (recomputed from its material fields as shown, guide:
/// "Binding"), answer, reason, who decided and when. Otherwise a file could
/// show one decision while carrying the valid receipt of another.
fn check_surroundings(v: &Value, claims: &Value, kid: &str, alg: &str) -> Result<(), String> {
    let (action, _) = holder(v)?;
    let receipt = match action {
        Some(a) => &a["receipt"],
        None => v,
    };
    let differs = |what: &str, shown: &Value, signed: &Value| {
        format!("the file's {what} ({shown}) is not what the receipt signs ({signed})")
    };
    // JSON values, compared as RFC 8785 does: `5` and `5.0` are one number
    // (a file re-serialised by JavaScript writes the one for the other).
    let same = crate::domain::jcs::same;
    // A member shown, `null` included, must be what is signed.
    let (kid, alg) = (Value::from(kid), Value::from(alg));
    for (field, signed) in [
        ("payload", claims),
        ("id", &claims["jti"]),
        ("kid", &kid),
        ("alg", &alg),
    ] {
        if let Some(shown) = receipt.get(field)
            && !same(shown, signed)
        {
            return Err(differs(&format!("receipt {field}"), shown, signed));
        }
    }
    let Some(a) = action else {
        return Ok(());
    };
    let decision = &claims["decision"];
    // An Action shows its identity, or it binds nothing.
    for key in ["id", "action_version", "fingerprint"] {
        if a.get(key).is_none_or(Value::is_null) {
            return Err(format!(
                "the file holds an Action without its {key}: verify the receipt itself (receipt.jws) or the Action as the API returns it"
            ));
        }
    }
    // A receipt exists for a resolved Action only.
    if let Some(status) = a.get("status")
        && status != "resolved"
    {
        return Err(format!(
            "the file's Action has status {status}, but the receipt is of a resolution (status \"resolved\")"
        ));
    }
    let reason_hash = match a.get("resolution_reason") {
        None => None,
        Some(Value::Null) => Some(Value::Null),
        Some(Value::String(r)) => Some(Value::from(hex::encode(Sha256::digest(r.as_bytes())))),
        Some(other) => {
            return Err(format!(
                "the file's resolution_reason ({other}) must be a string or null"
            ));
        }
    };
    // A field the file shows, null included, must be what the receipt
    // signs (a claim the receipt lacks counts as null); a field it leaves
    // out shows nothing.
    for (shown, signed, what) in [
        (a.get("id"), &claims["sub"], "Action id"),
        (
            a.get("action_version"),
            &claims["action_version"],
            "action_version",
        ),
        (a.get("fingerprint"), &claims["fingerprint"], "fingerprint"),
        (
            a.get("resolution_option_id"),
            &decision["option_id"],
            "resolution_option_id",
        ),
        (a.get("response"), &decision["response"], "response"),
        (a.get("resolved_by"), &claims["decided_by"], "resolved_by"),
        (a.get("resolved_at"), &claims["decided_at"], "resolved_at"),
        (
            reason_hash.as_ref(),
            &decision["reason_sha256"],
            "resolution_reason (its SHA-256)",
        ),
        (
            a.get("workspace_id"),
            &claims["workspace_id"],
            "workspace_id",
        ),
        (a.get("source_id"), &claims["source_id"], "source_id"),
        (a.get("environment"), &claims["environment"], "environment"),
    ] {
        if let Some(shown) = shown
            && !same(shown, signed)
        {
            return Err(differs(what, shown, signed));
        }
    }
    check_requester(a, claims)?;
    // Always: material fields left out of the file count as null, so a
    // file cannot drop the content it shows from the check.
    let shown = shown_fingerprint(a);
    if claims["fingerprint"] != shown.as_str() {
        return Err(format!(
            "the file's Action content has fingerprint {shown}, not the {} the receipt signs: its material fields were changed",
            claims["fingerprint"]
        ));
    }
    Ok(())
}

/// The requester an Action file shows (`requested_by`, `{user_id, email,
/// name}` or null) must be the person the receipt signs (`{user_id,
/// email_sha256}`, absent when the Action named none), or a file could show
/// that someone other than the requester decided. The Action shows its
/// requester as the members are now (a member who left shows by the address
/// the Source gave; one who joined since, with a user id), so the same
/// person is the same user id when both sides have one, else the same
/// address; a requester with neither to compare is refused. A file
/// without the field shows nothing to check; `name` is not signed. (An
/// Action whose requester, named by address, erased their account, the
/// address then going to a new member, shows that member's id: its receipt
/// then verifies alone, not inside the Action; guide: "hds verify-receipt".)
fn check_requester(a: &Value, claims: &Value) -> Result<(), String> {
    let Some(shown) = a.get("requested_by") else {
        return Ok(());
    };
    let signed = claims.get("requested_by").unwrap_or(&Value::Null);
    let differs = |why: &str| {
        Err(format!(
            "the file's requested_by ({shown}) is not the requester the receipt signs ({}): {why}",
            if signed.is_null() {
                "none".to_owned()
            } else {
                signed.to_string()
            }
        ))
    };
    match (shown, signed) {
        (Value::Null, Value::Null) => return Ok(()),
        (Value::Null, _) => return differs("the file shows no requester"),
        (Value::Object(_), Value::Null) => return differs("the receipt names no requester"),
        (Value::Object(_), _) => {}
        _ => return differs("requested_by must be an object or null"),
    }
    // Each shown field is a string or null; anything else is no person.
    let text = |v: &Value, k: &str| -> Result<Option<String>, ()> {
        match v.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(t)) => Ok(Some(t.clone())),
            Some(_) => Err(()),
        }
    };
    let (Ok(shown_id), Ok(shown_email)) = (text(shown, "user_id"), text(shown, "email")) else {
        return differs("its user_id and email must be strings or null");
    };
    let (signed_id, signed_hash) = (
        text(signed, "user_id").unwrap_or(None),
        text(signed, "email_sha256").unwrap_or(None),
    );
    if let (Some(s), Some(g)) = (&shown_id, &signed_id) {
        return if s == g {
            Ok(())
        } else {
            differs("another user id")
        };
    }
    let shown_hash = shown_email.map(|e| hex::encode(Sha256::digest(e.to_lowercase().as_bytes())));
    match (shown_hash, signed_hash) {
        (Some(s), Some(g)) if s == g => Ok(()),
        (Some(_), Some(_)) => differs("another e-mail address"),
        // A genuine file always shows the user id or the address the
        // receipt signs: one showing neither names nobody checkable.
        _ => differs("it shows neither the user id nor the address the receipt signs"),
    }
}

/// The fingerprint of an Action's material fields as the API shows them.
fn shown_fingerprint(a: &Value) -> String {
    let material: serde_json::Map<String, Value> = crate::domain::fingerprint::MATERIAL_FIELDS
        .iter()
        .map(|f| ((*f).to_owned(), a[*f].clone()))
        .collect();
    let mut h = Sha256::new();
    jcs::hash_into(&Value::Object(material), &mut h);
    format!("sha256:{}", hex::encode(h.finalize()))
}

/// The JWKS text: fetched when `--keys` is an http(s) URL.
fn is_url(src: &str) -> bool {
    src.starts_with("https://") || src.starts_with("http://")
}

fn read_jwks(src: &str) -> Result<String, String> {
    if !is_url(src) {
        return std::fs::read_to_string(src).map_err(|e| format!("reading {src}: {e}"));
    }
    if src.starts_with("http://")
        && !url::Url::parse(src)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .is_some_and(|h| h == "localhost" || h == "127.0.0.1" || h == "[::1]")
    {
        eprintln!(
            "warning: fetching the keys over plain http: they could be altered on the way; use https or a saved file"
        );
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("fetching {src}: {e}"))?;
    rt.block_on(async {
        let client = crate::outbound::build(
            reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(10))
                .redirect(reqwest::redirect::Policy::limited(3)),
        )
        .map_err(|e| format!("fetching {src}: {e}"))?;
        let r = client
            .get(src)
            .send()
            .await
            .map_err(|e| format!("fetching {src}: {e}"))?;
        if !r.status().is_success() {
            return Err(format!("fetching {src}: HTTP {}", r.status()));
        }
        r.text().await.map_err(|e| format!("fetching {src}: {e}"))
    })
}

fn load_keys(a: &Args) -> Result<Vec<PublicKey>, String> {
    if let Some(path) = &a.keys {
        let text = read_jwks(path)?;
        let jwks: Value =
            serde_json::from_str(&text).map_err(|e| format!("{path} is not JSON: {e}"))?;
        let keys = jwks["keys"]
            .as_array()
            .ok_or("the JWKS has no keys array")?;
        // A key set that cannot be read whole is no basis for a verdict.
        let read: Vec<PublicKey> = keys
            .iter()
            .filter_map(|k| {
                Some(PublicKey {
                    kid: k["kid"].as_str()?.to_owned(),
                    x: k["x"].as_str()?.to_owned(),
                    status: k["status"].as_str().unwrap_or("active").to_owned(),
                    created_at: String::new(),
                    retired_at: None,
                })
            })
            .collect();
        if read.len() != keys.len() {
            return Err(format!(
                "{} of the {} keys in {path} have no kid or x",
                keys.len() - read.len(),
                keys.len()
            ));
        }
        // Each key must say it is what receipts are signed with (RFC 7517:
        // `alg` and `use`, when present, bind a key to one algorithm and
        // one purpose): an Ed25519 key published for another algorithm is
        // not one to judge an EdDSA signature by.
        for k in keys {
            let kid = crate::error::printable(k["kid"].as_str().unwrap_or_default().to_owned());
            for (member, wants, required) in [
                ("kty", "OKP", true),
                ("crv", "Ed25519", true),
                ("alg", crate::domain::receipt::ALG, false),
                ("use", "sig", false),
            ] {
                let has = &k[member];
                if (required || !has.is_null()) && has.as_str() != Some(wants) {
                    return Err(format!(
                        "key {kid} in {path} has {member} {has}, not \"{wants}\": it is not a receipt signing key (an Ed25519 key for EdDSA signatures)"
                    ));
                }
            }
        }
        if read.is_empty() {
            return Err(format!("{path} holds no key"));
        }
        return Ok(read);
    }
    let conn = rusqlite::Connection::open_with_flags(
        a.dir.db_path(),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .map_err(|e| {
        format!(
            "no --keys given and {} cannot be opened: {e}",
            a.dir.db_path().display()
        )
    })?;
    let keys = crate::store::receipts::keys(&conn).map_err(|e| e.to_string())?;
    // A key revoked after this database's backup is revoked here too.
    let keys = crate::service::keyring::as_marked(&a.dir.keys_dir(), keys);
    if keys.is_empty() {
        return Err(format!(
            "{} lists no receipt key",
            a.dir.db_path().display()
        ));
    }
    Ok(keys)
}
