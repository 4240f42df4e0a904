//! The content binding of an Action (guide: "Binding: action_version and fingerprint"): `sha256:` + hex SHA-256 of the
//! RFC 8785 (JCS) canonical form of the material fields. Clients can recompute it
//! from the fields the API returns.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::domain::action::ActionSpec;
use crate::domain::jcs;

/// The names of the material fields, as the API shows them: a client
/// recomputes the fingerprint from these members of an Action.
pub const MATERIAL_FIELDS: [&str; 9] = [
    "title",
    "description",
    "options",
    "interaction",
    "context",
    "decision_class",
    "decision_context",
    "controls",
    "open_url",
];

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
    let mut h = Sha256::new();
    jcs::hash_into(&material(s), &mut h);
    format!("sha256:{}", hex::encode(h.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::action::{ActionOption, Priority};

    /// The names a client reads are the members `material` hashes.
    #[test]
    fn the_material_field_names_are_the_hashed_members() {
        let m = material(&ActionSpec::default());
        let mut names: Vec<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
        let mut want = MATERIAL_FIELDS.to_vec();
        names.sort_unstable();
        want.sort_unstable();
        assert_eq!(names, want);
    }

    fn spec() -> ActionSpec {
        ActionSpec {
            title: "Deploy".into(),
            options: Some(vec![ActionOption {
                id: Some("yes".into()),
                label: "Yes".into(),
                style: Some("primary".into()),
                sort_order: Some(0),
                reason_required: false,
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

    /// The streamed hash is the one fingerprints were computed with before
    /// (`serde_json_canonicalizer::to_vec`), so receipts already issued and
    /// bindings of open Actions still match.
    #[test]
    fn the_fingerprint_is_the_one_computed_before() {
        let rich: ActionSpec = serde_json::from_value(serde_json::json!({
            "title": "Deploy é 😀",
            "description": "line \u{2028} \" \\ end",
            "options": [{"id": "ok", "label": "OK", "style": "primary", "sort_order": 0},
                        {"id": "no", "label": "No"}],
            "context": [{"type": "markdown", "markdown": "**why**"}, {"type": "code", "code": "x", "language": "sh"}],
            "decision_class": "deploy",
            "decision_context": {"\u{e000}": 1, "😀": [1.5, -0.0, 1e21, null], "a": {"z": 1, "y": true}},
            "open_url": "https://example.com/x",
            "metadata": {"ignored": 1}
        }))
        .unwrap();
        for s in [spec(), rich] {
            let canonical = serde_json_canonicalizer::to_vec(&material(&s)).unwrap();
            let before = format!("sha256:{}", hex::encode(Sha256::digest(&canonical)));
            assert_eq!(fingerprint(&s), before);
        }
    }
}
