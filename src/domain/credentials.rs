//! Secrets handed to callers: Source keys, user tokens, webhook secrets. Only
//! their SHA-256 is stored (webhook secrets excepted: HMAC needs the secret), and
//! lookups compare hashes in constant time.

use base64::Engine;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::domain::action::Environment;

pub const LIVE_KEY_PREFIX: &str = "svc_live_";
pub const TEST_KEY_PREFIX: &str = "svc_test_";
pub const USER_TOKEN_PREFIX: &str = "svc_usr_";
pub const WEBHOOK_SECRET_PREFIX: &str = "whsec_";

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// 32 random bytes (256 bits) from the OS, for keys, tokens and secrets.
pub fn random_bytes() -> [u8; 32] {
    let mut b = [0u8; 32];
    // getrandom only fails when the OS has no entropy source at all; nothing can
    // run safely then, so stopping is the right outcome.
    #[allow(clippy::expect_used)]
    getrandom::fill(&mut b).expect("the OS random number generator is unavailable");
    b
}

/// 43 base62 characters from 256 random bits (rejection-free: 62^43 > 2^256 is
/// not needed; each byte is reduced independently, a bias below 2^-2 per
/// character that leaves well over 250 bits of entropy in 43 characters).
fn base62_secret() -> String {
    let a = random_bytes();
    let b = random_bytes();
    a.iter()
        .chain(b.iter())
        .take(43)
        .map(|x| BASE62[(*x as usize) % 62] as char)
        .collect()
}

pub fn new_source_key(env: Environment) -> String {
    let prefix = match env {
        Environment::Live => LIVE_KEY_PREFIX,
        Environment::Test => TEST_KEY_PREFIX,
    };
    format!("{prefix}{}", base62_secret())
}

/// A random URL-safe secret for one-time links, nonces and CSRF tokens.
pub fn new_secret() -> String {
    base62_secret()
}

pub fn new_user_token() -> String {
    format!("{USER_TOKEN_PREFIX}{}", base62_secret())
}

/// Standard Webhooks secret: `whsec_` + base64 of 32 random bytes.
pub fn new_webhook_secret() -> String {
    format!(
        "{WEBHOOK_SECRET_PREFIX}{}",
        base64::engine::general_purpose::STANDARD.encode(random_bytes())
    )
}

/// Hex SHA-256 of a secret, the only form that is stored.
pub fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Constant-time comparison of two stored hashes.
pub fn hashes_match(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

/// The environment a Source key belongs to, from its prefix.
pub fn source_key_environment(key: &str) -> Option<Environment> {
    if key.starts_with(LIVE_KEY_PREFIX) {
        Some(Environment::Live)
    } else if key.starts_with(TEST_KEY_PREFIX) {
        Some(Environment::Test)
    } else {
        None
    }
}

/// What listings show of a key: its prefix and four characters.
pub fn key_hint(key: &str) -> String {
    let cut = key
        .char_indices()
        .nth(13)
        .map(|(i, _)| i)
        .unwrap_or(key.len());
    format!("{}…", &key[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_their_environment_and_enough_entropy() {
        let live = new_source_key(Environment::Live);
        assert!(live.starts_with("svc_live_") && live.len() == 9 + 43);
        assert_eq!(source_key_environment(&live), Some(Environment::Live));
        assert_eq!(
            source_key_environment(&new_source_key(Environment::Test)),
            Some(Environment::Test)
        );
        assert_eq!(source_key_environment(&new_user_token()), None);
        assert_ne!(new_user_token(), new_user_token());
    }

    #[test]
    fn hashes_compare_equal_only_for_the_same_secret() {
        let h = hash_secret("svc_live_abc");
        assert!(hashes_match(&h, &hash_secret("svc_live_abc")));
        assert!(!hashes_match(&h, &hash_secret("svc_live_abd")));
    }
}
