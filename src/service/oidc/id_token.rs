//! ID-token checks (OpenID Connect Core §3.1.3.7, RFC 7519): the signature
//! against the issuer's JWKS, then `iss`, `aud`, `exp`, `iat` and the nonce.
//! No I/O: the caller brings the keys and the current time, and refetches the
//! JWKS when this says the signing key is unknown.
//!
//! openidconnect's `IdToken` is not used to parse the token because it reads
//! `iss` as a URL, and Google still issues `"iss": "accounts.google.com"`, which
//! is not one; the signature itself is checked by openidconnect's JWK code.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use openidconnect::core::{CoreJsonWebKeySet, CoreJwsSigningAlgorithm};
use openidconnect::{JsonWebKey, JwsSigningAlgorithm};
use serde::Deserialize;

use crate::domain::credentials::{hash_secret, hashes_match};

/// Leeway for `exp` and `iat` between the issuer's clock and ours (RFC 7519
/// §4.1.4 allows "some small leeway").
const CLOCK_SKEW_SECS: f64 = 300.0;

/// What the token must say.
pub struct Expect<'a> {
    /// Accepted `iss` values (Google has two spellings).
    pub issuers: &'a [String],
    /// Accepted `aud` values; every audience in the token must be one of them.
    pub audiences: &'a [String],
    pub nonce: NonceRule<'a>,
    /// Unix seconds.
    pub now: f64,
}

pub enum NonceRule<'a> {
    /// The claim equals the nonce hds sent (browser flow, Google native).
    Equals(&'a str),
    /// Apple: the claim equals the nonce or the hex SHA-256 of it, whichever
    /// the app passed to Apple.
    EqualsOrSha256Hex(&'a str),
    /// No nonce was involved (Apple code exchange without one).
    Unchecked,
}

/// Why a token was refused; the message names the failed check.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The JWKS has no key with the token's `kid`: refetch it once, then refuse.
    UnknownKey(String),
    Invalid(String),
}

fn invalid(message: impl Into<String>) -> Refusal {
    Refusal::Invalid(message.into())
}

/// The claims hds reads. Unknown claims are ignored.
#[derive(Debug, Deserialize)]
pub struct Claims {
    pub iss: String,
    pub sub: String,
    #[serde(deserialize_with = "one_or_many")]
    pub aud: Vec<String>,
    pub exp: f64,
    #[serde(default)]
    pub iat: Option<f64>,
    #[serde(default)]
    pub nonce: Option<String>,
    #[serde(default)]
    pub email: Option<String>,
    /// Apple sends `"true"` / `"false"` as strings.
    #[serde(default, deserialize_with = "bool_or_string")]
    pub email_verified: bool,
    #[serde(default)]
    pub name: Option<String>,
}

#[derive(Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
    #[serde(default)]
    crit: Option<serde_json::Value>,
}

/// A token split and decoded, signature not yet checked.
pub struct Unverified {
    alg: CoreJwsSigningAlgorithm,
    kid: Option<String>,
    signing_input: String,
    signature: Vec<u8>,
    payload: Vec<u8>,
}

/// Splits a compact JWS and reads its header; refuses what can never verify.
pub fn parse(raw: &str) -> Result<Unverified, Refusal> {
    let parts: Vec<&str> = raw.trim().split('.').collect();
    let [header, payload, signature] = parts.as_slice() else {
        return Err(invalid(
            "the ID token is not a signed JWT (three base64url parts)",
        ));
    };
    let decode = |part: &str, what: &str| {
        URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|_| invalid(format!("the ID token's {what} is not base64url")))
    };
    let head: Header = serde_json::from_slice(&decode(header, "header")?)
        .map_err(|e| invalid(format!("the ID token's header is not valid JSON: {e}")))?;
    if head.crit.is_some() {
        return Err(invalid(
            "the ID token has critical header extensions hds does not understand",
        ));
    }
    let alg: CoreJwsSigningAlgorithm =
        serde_json::from_value(serde_json::Value::String(head.alg.clone())).map_err(|_| {
            invalid(format!(
                "the ID token's algorithm {} is not supported",
                head.alg
            ))
        })?;
    if alg == CoreJwsSigningAlgorithm::None {
        return Err(invalid("the ID token is unsigned (alg none)"));
    }
    if alg.uses_shared_secret() {
        return Err(invalid(format!(
            "the ID token is signed with a shared secret ({}); only the issuer's public keys are accepted",
            head.alg
        )));
    }
    Ok(Unverified {
        alg,
        kid: head.kid,
        signing_input: format!("{header}.{payload}"),
        signature: decode(signature, "signature")?,
        payload: decode(payload, "payload")?,
    })
}

impl Unverified {
    /// Checks the signature with the issuer's key named by `kid` (or, without
    /// a `kid`, any key of the right type), then every claim.
    pub fn verify(&self, keys: &CoreJsonWebKeySet, expect: &Expect) -> Result<Claims, Refusal> {
        self.check_signature(keys)?;
        let claims: Claims = serde_path_to_error::deserialize(
            &mut serde_json::Deserializer::from_slice(&self.payload),
        )
        .map_err(|e| invalid(unusable_claims(&e)))?;
        check_claims(&claims, expect)?;
        Ok(claims)
    }

    fn check_signature(&self, keys: &CoreJsonWebKeySet) -> Result<(), Refusal> {
        let candidates: Vec<_> = keys
            .keys()
            .iter()
            .filter(|k| match &self.kid {
                Some(kid) => k.key_id().is_some_and(|id| id.as_str() == kid),
                None => true,
            })
            .collect();
        if candidates.is_empty() {
            let kid = self.kid.clone().unwrap_or_else(|| "(none)".into());
            return Err(Refusal::UnknownKey(kid));
        }
        let message = self.signing_input.as_bytes();
        if candidates.iter().any(|k| {
            k.verify_signature(&self.alg, message, &self.signature)
                .is_ok()
        }) {
            return Ok(());
        }
        Err(invalid(format!(
            "the ID token's signature does not verify with the issuer's key {}",
            self.kid.as_deref().unwrap_or("(no kid)")
        )))
    }
}

fn check_claims(c: &Claims, expect: &Expect) -> Result<(), Refusal> {
    if !expect.issuers.iter().any(|i| i == &c.iss) {
        return Err(invalid(format!(
            "the ID token's issuer is {:?}; this provider's issuer is {:?}",
            c.iss,
            expect
                .issuers
                .first()
                .map(String::as_str)
                .unwrap_or_default()
        )));
    }
    let ours = |a: &String| expect.audiences.iter().any(|x| x == a);
    // OIDC Core §3.1.3.7 step 3: our client must be an audience, and no
    // audience may be one we do not trust.
    if c.aud.is_empty() || !c.aud.iter().all(ours) {
        return Err(invalid(format!(
            "the ID token's audience {:?} is not this provider's client id ({})",
            c.aud,
            expect.audiences.join(", ")
        )));
    }
    if expect.now >= c.exp + CLOCK_SKEW_SECS {
        return Err(invalid(format!(
            "the ID token expired {} s ago",
            (expect.now - c.exp).round()
        )));
    }
    if c.iat.is_some_and(|iat| iat > expect.now + CLOCK_SKEW_SECS) {
        return Err(invalid(
            "the ID token was issued in the future (iat); check the clocks",
        ));
    }
    if c.sub.is_empty() {
        return Err(invalid("the ID token has an empty subject"));
    }
    check_nonce(c.nonce.as_deref(), &expect.nonce)
}

fn check_nonce(claim: Option<&str>, rule: &NonceRule) -> Result<(), Refusal> {
    // Compared as SHA-256 digests in constant time, so timing reveals nothing.
    let same = |a: &str, b: &str| hashes_match(&hash_secret(a), &hash_secret(b));
    let matches = match (rule, claim) {
        (NonceRule::Unchecked, _) => return Ok(()),
        (_, None) => return Err(invalid("the ID token carries no nonce")),
        (NonceRule::Equals(n), Some(claim)) => same(claim, n),
        (NonceRule::EqualsOrSha256Hex(n), Some(claim)) => {
            same(claim, n) || same(&claim.to_ascii_lowercase(), &hash_secret(n))
        }
    };
    if matches {
        Ok(())
    } else {
        Err(invalid(
            "the ID token's nonce is not the one hds issued for this sign-in",
        ))
    }
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

fn bool_or_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum BoolOrString {
        Bool(bool),
        Text(String),
    }
    Ok(match Option::<BoolOrString>::deserialize(d)? {
        Some(BoolOrString::Bool(b)) => b,
        Some(BoolOrString::Text(s)) => s.eq_ignore_ascii_case("true"),
        None => false,
    })
}

/// Names the claim that could not be read and what it must be, never the
/// parser's own words (type names, positions).
fn unusable_claims(e: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let claim = e.path().to_string();
    let expected = match claim.as_str() {
        "iss" | "sub" | "nonce" | "email" | "name" => "a string",
        "aud" => "a string or a list of strings",
        "exp" | "iat" => "a number of seconds since 1970",
        "email_verified" => "true or false (or the strings \"true\" and \"false\")",
        _ => {
            // The payload itself: not a JSON object, or a required claim missing.
            let what = e.inner().to_string();
            let what = what.split(" at line ").next().unwrap_or_default();
            return format!("the ID token's claims are not usable: {what}");
        }
    };
    format!("the ID token's `{claim}` claim must be {expected}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unusable_claim_is_named_with_what_it_must_be() {
        let read = |json: &str| {
            let r: Result<Claims, _> =
                serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(json));
            unusable_claims(&r.err().unwrap())
        };
        let base = r#""iss":"i","sub":"s","aud":"a""#;
        assert_eq!(
            read(&format!(r#"{{{base},"exp":1,"email_verified":1}}"#)),
            "the ID token's `email_verified` claim must be true or false (or the strings \"true\" and \"false\")"
        );
        assert_eq!(
            read(&format!(r#"{{{base},"exp":null}}"#)),
            "the ID token's `exp` claim must be a number of seconds since 1970"
        );
        assert_eq!(
            read(&format!("{{{base}}}")),
            "the ID token's claims are not usable: missing field `exp`"
        );
    }

    fn claims(json: serde_json::Value) -> Claims {
        serde_json::from_value(json).unwrap()
    }

    fn expect<'a>(
        issuers: &'a [String],
        audiences: &'a [String],
        nonce: NonceRule<'a>,
    ) -> Expect<'a> {
        Expect {
            issuers,
            audiences,
            nonce,
            now: 1_000_000.0,
        }
    }

    #[test]
    fn string_booleans_and_single_audiences_are_read() {
        let c = claims(serde_json::json!({
            "iss": "i", "sub": "s", "aud": "a", "exp": 1, "email_verified": "true"
        }));
        assert!(c.email_verified);
        assert_eq!(c.aud, vec!["a"]);
        let c = claims(serde_json::json!({
            "iss": "i", "sub": "s", "aud": ["a"], "exp": 1, "email_verified": "false"
        }));
        assert!(!c.email_verified);
    }

    #[test]
    fn each_claim_check_names_what_failed() {
        let (iss, aud) = (vec!["https://op".to_owned()], vec!["client".to_owned()]);
        let ok = serde_json::json!({
            "iss": "https://op", "sub": "s", "aud": "client", "exp": 1_000_100, "iat": 999_990, "nonce": "n"
        });
        assert!(
            check_claims(
                &claims(ok.clone()),
                &expect(&iss, &aud, NonceRule::Equals("n"))
            )
            .is_ok()
        );
        let refused = |patch: serde_json::Value, rule: NonceRule| {
            let mut v = ok.clone();
            v.as_object_mut()
                .unwrap()
                .extend(patch.as_object().unwrap().clone());
            match check_claims(&claims(v), &expect(&iss, &aud, rule)) {
                Err(Refusal::Invalid(m)) => m,
                other => panic!("{other:?}"),
            }
        };
        assert!(
            refused(
                serde_json::json!({"iss": "https://evil"}),
                NonceRule::Equals("n")
            )
            .contains("issuer")
        );
        assert!(
            refused(
                serde_json::json!({"aud": ["client", "other"]}),
                NonceRule::Equals("n")
            )
            .contains("audience")
        );
        assert!(
            refused(serde_json::json!({"exp": 999_000}), NonceRule::Equals("n"))
                .contains("expired")
        );
        assert!(
            refused(
                serde_json::json!({"iat": 1_000_900}),
                NonceRule::Equals("n")
            )
            .contains("future")
        );
        assert!(
            refused(serde_json::json!({"nonce": "m"}), NonceRule::Equals("n")).contains("nonce")
        );
    }

    #[test]
    fn apple_nonce_may_be_the_hex_sha256_of_the_issued_one() {
        let hashed = hash_secret("raw");
        assert!(check_nonce(Some(&hashed), &NonceRule::EqualsOrSha256Hex("raw")).is_ok());
        assert!(check_nonce(Some("raw"), &NonceRule::EqualsOrSha256Hex("raw")).is_ok());
        assert!(check_nonce(Some(&hashed), &NonceRule::Equals("raw")).is_err());
        assert!(check_nonce(None, &NonceRule::EqualsOrSha256Hex("raw")).is_err());
        assert!(check_nonce(None, &NonceRule::Unchecked).is_ok());
    }

    #[test]
    fn unsigned_and_shared_secret_tokens_are_refused_before_any_key_lookup() {
        let b64 = |v: serde_json::Value| URL_SAFE_NO_PAD.encode(v.to_string());
        let body = b64(serde_json::json!({"sub": "s"}));
        for alg in ["none", "HS256"] {
            let raw = format!("{}.{body}.", b64(serde_json::json!({ "alg": alg })));
            assert!(matches!(parse(&raw), Err(Refusal::Invalid(_))), "{alg}");
        }
        assert!(parse("not-a-jwt").is_err());
    }
}
