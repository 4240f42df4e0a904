//! The content binding of an Action (guide: "Binding: action_version and fingerprint"): `sha256:` + hex SHA-256 of the
//! RFC 8785 (JCS) canonical form of the material fields. Clients can recompute it
//! from the fields the API returns.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::domain::action::ActionSpec;

/// The material fields, each present (`null` when absent). Priority, expiry,
/// metadata and routing are deliberately left out: changing them does not change
/// what the reviewer decides on.
pub fn material(s: &ActionSpec) -> Value {
    json!({
        "title": s.title,
        "description": s.description,
        "options": s.options,
        "interaction": s.interaction,
        "context": s.context,
        "decision_class": s.decision_class,
        "decision_context": s.decision_context,
        "controls": s.controls,
        "open_url": s.open_url,
    })
}

pub fn fingerprint(s: &ActionSpec) -> String {
    // JCS of a serde_json::Value cannot fail: every key is a string and every
    // number is finite.
    let canonical = serde_json_canonicalizer::to_vec(&material(s)).unwrap_or_default();
    format!("sha256:{}", hex::encode(Sha256::digest(&canonical)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::action::{ActionOption, Priority};

    fn spec() -> ActionSpec {
        ActionSpec {
            title: "Deploy".into(),
            options: Some(vec![ActionOption {
                id: Some("yes".into()),
                label: "Yes".into(),
                style: Some("primary".into()),
                sort_order: Some(0),
            }]),
            ..Default::default()
        }
    }

    #[test]
    fn fingerprint_has_the_documented_shape() {
        let f = fingerprint(&spec());
        assert!(f.starts_with("sha256:") && f.len() == 71);
        assert!(
            f[7..]
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
    }

    #[test]
    fn only_material_fields_change_the_fingerprint() {
        let a = spec();
        let mut b = a.clone();
        b.priority = Priority::Urgent;
        b.metadata = Some(Default::default());
        assert_eq!(fingerprint(&a), fingerprint(&b));
        b.title = "Deploy now".into();
        assert_ne!(fingerprint(&a), fingerprint(&b));
    }
}
