//! Decision receipts (guide: "Receipts"): compact JWS (RFC 7515) signed with Ed25519,
//! `alg` `EdDSA` (RFC 8037), `kid` = RFC 7638 JWK thumbprint, published as a
//! JWKS (RFC 7517). Any JOSE library verifies them offline.
//!
//! Building the compact form is three base64url segments and one signature, so
//! it is done here directly over ed25519-dalek rather than through a JWT crate.

use crate::domain::action::Receipt;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::domain::action::{ActionRecord, Resolution};

pub const ALG: &str = "EdDSA";
pub const TYP: &str = "hds-receipt+jwt";
pub const RECEIPT_VERSION: u64 = 1;

/// base64url of the raw 32-byte public key: the JWK `x` member.
pub fn public_x(key: &VerifyingKey) -> String {
    B64.encode(key.as_bytes())
}

/// RFC 7638 thumbprint: members in lexicographic order, no whitespace.
pub fn thumbprint(x: &str) -> String {
    let canonical = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#);
    B64.encode(Sha256::digest(canonical.as_bytes()))
}

/// A public key as published in the JWKS.
#[derive(Clone, Debug)]
pub struct PublicKey {
    pub kid: String,
    pub x: String,
    pub status: String,
    pub created_at: String,
    pub retired_at: Option<String>,
}

impl PublicKey {
    pub fn to_jwk(&self) -> Value {
        json!({
            "kty": "OKP", "crv": "Ed25519", "x": self.x, "kid": self.kid,
            "alg": ALG, "use": "sig",
            "status": self.status, "created_at": self.created_at, "retired_at": self.retired_at,
        })
    }
}

pub fn jwks(keys: &[PublicKey]) -> Value {
    json!({ "keys": keys.iter().map(PublicKey::to_jwk).collect::<Vec<_>>() })
}

/// Where a receipt sits in the instance's chain.
pub struct ChainLink {
    pub seq: i64,
    /// hex SHA-256 of the previous receipt's compact JWS; None for the first.
    pub prev: Option<String>,
}

/// The claims of a receipt for a freshly resolved Action.
pub fn claims(
    issuer: &str,
    receipt_id: &str,
    a: &ActionRecord,
    r: &Resolution,
    iat: i64,
    link: &ChainLink,
) -> Value {
    let mut decision = serde_json::Map::new();
    if let Some(o) = &r.option_id {
        decision.insert("option_id".into(), json!(o));
    }
    if let Some(resp) = &r.response {
        decision.insert("response".into(), resp.clone());
    }
    if let Some(votes) = &r.votes {
        decision.insert("votes".into(), votes.clone());
    }
    if let Some(reason) = &r.reason {
        decision.insert(
            "reason_sha256".into(),
            json!(hex::encode(Sha256::digest(reason.as_bytes()))),
        );
    }
    let mut claims = json!({
        "iss": issuer,
        "sub": a.id,
        "jti": receipt_id,
        "iat": iat,
        "receipt_version": RECEIPT_VERSION,
        "workspace_id": a.workspace_id,
        "source_id": a.source_id,
        "environment": a.environment.as_str(),
        "action_version": a.action_version,
        "fingerprint": a.fingerprint,
        "decision": decision,
        "decided_by": r.decided_by,
        "decided_at": r.decided_at,
        "seq": link.seq,
        "prev": link.prev,
    });
    // Separation of duties (guide: "Separation of duties"): who the Source
    // asked on behalf of, only when it named someone, so receipts of Actions
    // without a requester are unchanged. No raw e-mail: its SHA-256.
    if let Some(p) = &a.work.requested_by {
        claims["requested_by"] = json!({
            "user_id": p.user_id,
            "email_sha256": p.email.as_ref().map(|e| hex::encode(Sha256::digest(e.to_lowercase().as_bytes()))),
        });
    }
    claims
}

/// Signs claims as a compact JWS.
pub fn sign(key: &SigningKey, kid: &str, claims: &Value) -> String {
    let header = json!({ "alg": ALG, "kid": kid, "typ": TYP });
    let signing_input = format!(
        "{}.{}",
        B64.encode(header.to_string()),
        B64.encode(claims.to_string())
    );
    let sig = key.sign(signing_input.as_bytes());
    format!("{signing_input}.{}", B64.encode(sig.to_bytes()))
}

/// hex SHA-256 of a compact JWS: the next receipt's `prev`.
pub fn chain_hash(jws: &str) -> String {
    hex::encode(Sha256::digest(jws.as_bytes()))
}

/// The Action's `receipt` object.
pub fn receipt_object(id: &str, kid: &str, jws: &str, payload: &Value) -> Receipt {
    Receipt {
        id: id.to_owned(),
        kid: kid.to_owned(),
        alg: ALG.to_owned(),
        jws: jws.to_owned(),
        payload: payload.clone(),
    }
}

/// Verifies a compact JWS against a set of public keys; returns its claims.
/// Errors say precisely what failed.
pub fn verify(jws: &str, keys: &[PublicKey]) -> Result<Value, String> {
    let parts: Vec<&str> = jws.trim().split('.').collect();
    let [h, p, s] = parts[..] else {
        return Err(format!(
            "not a compact JWS: expected 3 dot-separated parts, found {}",
            parts.len()
        ));
    };
    let header: Value = decode_json(h).map_err(|e| format!("header: {e}"))?;
    // RFC 7515 §4.1.11: a critical extension the verifier does not know
    // must be refused; receipts use none.
    if header.get("crit").is_some() {
        return Err("the header lists critical extensions (crit); receipts have none".into());
    }
    if header["alg"] != ALG {
        return Err(format!(
            "unexpected alg {}; receipts use EdDSA",
            header["alg"]
        ));
    }
    if header["typ"] != TYP {
        return Err(format!(
            "unexpected typ {}; receipts use {TYP}",
            header["typ"]
        ));
    }
    let kid = header["kid"].as_str().ok_or("header has no kid")?;
    let key = keys
        .iter()
        .find(|k| k.kid == kid)
        .ok_or_else(|| format!("no published key with kid {kid}"))?;
    if key.status == "revoked" {
        return Err(format!("key {kid} is revoked"));
    }
    let x = B64
        .decode(&key.x)
        .map_err(|_| "key x is not base64url".to_string())?;
    let x: [u8; 32] = x
        .try_into()
        .map_err(|_| "key x is not 32 bytes".to_string())?;
    let vk = VerifyingKey::from_bytes(&x)
        .map_err(|_| "key x is not a valid Ed25519 point".to_string())?;
    if thumbprint(&key.x) != kid {
        return Err(format!("key {kid} does not match its thumbprint"));
    }
    let sig = B64
        .decode(s)
        .map_err(|_| "signature is not base64url".to_string())?;
    let sig = Signature::from_slice(&sig).map_err(|_| "signature is not 64 bytes".to_string())?;
    vk.verify(format!("{h}.{p}").as_bytes(), &sig)
        .map_err(|_| {
            "signature does not match: the receipt was altered or signed by another key".to_string()
        })?;
    let claims = decode_json(p).map_err(|e| format!("payload: {e}"))?;
    // Signed by a receipt key, but a receipt only if it says so.
    if claims["receipt_version"] != RECEIPT_VERSION {
        return Err(format!(
            "the payload is not a receipt of version {RECEIPT_VERSION} (receipt_version {})",
            claims["receipt_version"]
        ));
    }
    Ok(claims)
}

fn decode_json(seg: &str) -> Result<Value, String> {
    let bytes = B64.decode(seg).map_err(|_| "not base64url".to_string())?;
    serde_json::from_slice(&bytes).map_err(|e| format!("not JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> (SigningKey, PublicKey) {
        let sk = SigningKey::from_bytes(&[7u8; 32]);
        let x = public_x(&sk.verifying_key());
        let pk = PublicKey {
            kid: thumbprint(&x),
            x,
            status: "active".into(),
            created_at: "t".into(),
            retired_at: None,
        };
        (sk, pk)
    }

    #[test]
    fn signed_receipts_verify_and_tampering_is_caught() {
        let (sk, pk) = key();
        let jws = sign(
            &sk,
            &pk.kid,
            &json!({"sub": "act_1", "seq": 1, "receipt_version": RECEIPT_VERSION}),
        );
        assert_eq!(
            verify(&jws, std::slice::from_ref(&pk)).unwrap()["sub"],
            "act_1"
        );
        // Signed by the key, but not a receipt: refused.
        let other = sign(&sk, &pk.kid, &json!({"sub": "act_1"}));
        let err = verify(&other, std::slice::from_ref(&pk)).unwrap_err();
        assert!(err.contains("not a receipt"), "{err}");
        // A critical extension nobody here knows: refused (RFC 7515).
        let header =
            json!({"alg": ALG, "kid": pk.kid, "typ": TYP, "crit": ["x-later"], "x-later": 1});
        let input = format!(
            "{}.{}",
            B64.encode(header.to_string()),
            B64.encode(json!({"sub": "act_1", "receipt_version": RECEIPT_VERSION}).to_string())
        );
        let sig = sk.sign(input.as_bytes());
        let crit = format!("{input}.{}", B64.encode(sig.to_bytes()));
        let err = verify(&crit, std::slice::from_ref(&pk)).unwrap_err();
        assert!(err.contains("crit"), "{err}");
        let mut bad = jws.clone().into_bytes();
        let i = jws.find('.').unwrap() + 3;
        bad[i] = if bad[i] == b'A' { b'B' } else { b'A' };
        assert!(verify(&String::from_utf8(bad).unwrap(), &[pk]).is_err());
    }

    #[test]
    fn thumbprint_matches_rfc8037_appendix_a3() {
        // RFC 8037 A.3: the thumbprint of the example Ed25519 key.
        assert_eq!(
            thumbprint("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"),
            "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
        );
    }
}
