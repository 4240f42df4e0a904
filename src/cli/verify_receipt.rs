//! `hds verify-receipt FILE [--keys FILE]`: offline verification. FILE (or `-`)
//! holds a compact JWS, a receipt object, an Action or an API response.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;

use crate::domain::receipt::{self, PublicKey};

#[derive(clap::Args)]
pub struct Args {
    /// File holding the receipt, or `-` for standard input.
    pub file: String,
    /// JWKS file (as served at /v1/receipts/keys). Without it, the keys of --data-dir.
    #[arg(long)]
    pub keys: Option<PathBuf>,
    #[command(flatten)]
    pub dir: crate::cli::DataDir,
}

pub fn run(a: Args) -> ExitCode {
    match verify(&a) {
        Ok(msg) => {
            println!("valid: {msg}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            println!("invalid: {why}");
            ExitCode::from(1)
        }
    }
}

fn verify(a: &Args) -> Result<String, String> {
    let mut input = String::new();
    if a.file == "-" {
        std::io::stdin()
            .read_to_string(&mut input)
            .map_err(|e| format!("reading stdin: {e}"))?;
    } else {
        input = std::fs::read_to_string(&a.file).map_err(|e| format!("reading {}: {e}", a.file))?;
    }
    let jws = extract_jws(input.trim())?;
    let keys = load_keys(a)?;
    let claims = receipt::verify(&jws, &keys)?;
    Ok(format!(
        "receipt {} for {} (action_version {}, {}) signed by {}",
        claims["jti"].as_str().unwrap_or("?"),
        claims["sub"].as_str().unwrap_or("?"),
        claims["action_version"],
        claims["fingerprint"].as_str().unwrap_or("?"),
        jws.split('.')
            .next()
            .and_then(|h| {
                use base64::Engine;
                let b = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(h)
                    .ok()?;
                serde_json::from_slice::<Value>(&b)
                    .ok()?
                    .get("kid")?
                    .as_str()
                    .map(str::to_owned)
            })
            .unwrap_or_default()
    ))
}

/// Finds the compact JWS in whatever was given.
fn extract_jws(input: &str) -> Result<String, String> {
    if !input.starts_with('{') {
        return Ok(input.to_owned());
    }
    let v: Value = serde_json::from_str(input)
        .map_err(|e| format!("input is neither a compact JWS nor JSON: {e}"))?;
    let candidates = [
        &v["jws"],
        &v["receipt"]["jws"],
        &v["data"]["receipt"]["jws"],
    ];
    candidates
        .iter()
        .find_map(|c| c.as_str().map(str::to_owned))
        .ok_or_else(|| {
            "no receipt found in the JSON (looked for jws, receipt.jws, data.receipt.jws)".into()
        })
}

fn load_keys(a: &Args) -> Result<Vec<PublicKey>, String> {
    if let Some(path) = &a.keys {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        let jwks: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
        let keys = jwks["keys"]
            .as_array()
            .ok_or("the JWKS has no keys array")?;
        return Ok(keys
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
            .collect());
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
    crate::store::receipts::keys(&conn).map_err(|e| e.to_string())
}
