//! One-click unsubscribe links of notification mails (guide: "E-mail";
//! RFC 2369 `List-Unsubscribe`, RFC 8058 `List-Unsubscribe-Post`).
//!
//! A link's token names the person and the workspace whose notification
//! mail it stops, with an HMAC-SHA256 over both under the instance's
//! `mail_unsubscribe` secret (a random 32 bytes made with the database), so
//! nothing is stored per mail and a token cannot be made for anyone else.
//! It does not expire: a mail read a year later still unsubscribes, as
//! mail providers expect of these links. What it can do is narrow: turn
//! off that person's e-mail from that workspace.

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// What the MAC covers before the two ids: this use of the key and no other.
const CONTEXT: &[u8] = b"hds mail-unsubscribe v1\0";

fn mac(key: &[u8; 32], user_id: &str, workspace_id: &str) -> Hmac<Sha256> {
    // HMAC pads a key shorter than its block (64 bytes for SHA-256) with
    // zeros: the padded key is the same key, and takes no fallible call.
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    let mut m = <Hmac<Sha256> as KeyInit>::new(&block.into());
    m.update(CONTEXT);
    m.update(user_id.as_bytes());
    m.update(b"\0");
    m.update(workspace_id.as_bytes());
    m
}

/// The token of a link: `<user id>.<workspace id>.<MAC, base64url>`.
pub fn token(key: &[u8; 32], user_id: &str, workspace_id: &str) -> String {
    let tag = mac(key, user_id, workspace_id).finalize().into_bytes();
    let tag = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(tag);
    format!("{user_id}.{workspace_id}.{tag}")
}

/// The person and workspace a token names, when its MAC is right (compared
/// in constant time); None for anything else.
pub fn verify(key: &[u8; 32], token: &str) -> Option<(String, String)> {
    let mut parts = token.splitn(3, '.');
    let (user_id, workspace_id, tag) = (parts.next()?, parts.next()?, parts.next()?);
    if user_id.is_empty() || workspace_id.is_empty() || user_id.len() + workspace_id.len() > 128 {
        return None;
    }
    let tag = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(tag)
        .ok()?;
    mac(key, user_id, workspace_id)
        .verify_slice(&tag)
        .ok()
        .map(|()| (user_id.to_owned(), workspace_id.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_its_person_and_workspace_and_nothing_else_passes() {
        let key = [7u8; 32];
        let t = token(&key, "usr_1", "ws_1");
        assert_eq!(verify(&key, &t), Some(("usr_1".into(), "ws_1".into())));
        // Another key, another person or workspace, a cut or altered MAC.
        assert_eq!(verify(&[8u8; 32], &t), None);
        let tag = t.rsplit('.').next().unwrap();
        assert_eq!(verify(&key, &format!("usr_2.ws_1.{tag}")), None);
        assert_eq!(verify(&key, &format!("usr_1.ws_2.{tag}")), None);
        assert_eq!(verify(&key, &t[..t.len() - 4]), None);
        let mut flipped = t.clone().into_bytes();
        let last = flipped.len() - 2;
        flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
        assert_eq!(verify(&key, &String::from_utf8(flipped).unwrap()), None);
        // The zero-padded block key is HMAC's own padding of the 32 bytes.
        let mut plain = Hmac::<Sha256>::new_from_slice(&key).unwrap();
        plain.update(CONTEXT);
        plain.update(b"usr_1\0ws_1");
        assert_eq!(
            plain.finalize().into_bytes(),
            mac(&key, "usr_1", "ws_1").finalize().into_bytes()
        );
        for junk in ["", "..", "usr_1.ws_1", "usr_1.ws_1.", "a.b.!!!", ".ws_1.x"] {
            assert_eq!(verify(&key, junk), None, "{junk}");
        }
    }
}
