//! RFC 8785 (JSON Canonicalization Scheme) hashed as it is written: the
//! request hash of an idempotent retry and the fingerprint of an Action's
//! material fields (guide: "Binding: action_version and fingerprint",
//! "Idempotency") both hash the canonical form, and neither needs it built.

use std::cmp::Ordering;
use std::io;

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Feeds the canonical form of `v` into `h`.
pub fn hash_into(v: &Value, h: &mut Sha256) {
    write_canonical(v, &mut HashWriter(h));
}

/// Whether `a` and `b` are the same JSON value by RFC 8785: `1`, `1.0` and
/// `1e0` are one number, and members compare whatever their order.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i128(), y.as_i128()) {
            // Two integers: exactly (no double rounds 2^53 + 1 onto 2^53).
            (Some(i), Some(j)) => i == j,
            // A fraction or exponent on either side: as RFC 8785 reads
            // numbers, doubles (`5` and `5.0` are one).
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(i, j)| same(i, j))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// Feeds a typed value into `h` as compact JSON whose numbers are written as
/// RFC 8785 writes them: fields in declaration order, maps in key order
/// (serde_json's map is ordered), strings as parsed (so escapes in the
/// source do not count). Two values that serialise the same, with `1`,
/// `1.0` and `1e0` the same number, feed the same bytes. Cheaper than
/// `hash_into` for a parsed request: no `Value` tree, no member sorting, no
/// per-string canonical formatter (numbers only, which are few).
/// Fails only for a type JSON cannot hold (a map with non-string keys):
/// writing into the hasher cannot fail.
pub fn hash_typed_into<T: serde::Serialize>(v: &T, h: &mut Sha256) -> serde_json::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(HashWriter(h), CanonicalNumbers);
    v.serialize(&mut ser)
}

/// serde_json's compact formatter with RFC 8785 numbers.
struct CanonicalNumbers;

impl CanonicalNumbers {
    fn number<W: ?Sized + io::Write, N: serde::Serialize>(w: &mut W, n: N) -> io::Result<()> {
        serde_json_canonicalizer::to_writer(&n, &mut &mut *w).map_err(io::Error::other)
    }
}

impl serde_json::ser::Formatter for CanonicalNumbers {
    fn write_i64<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i64) -> io::Result<()> {
        Self::number(w, v)
    }
    fn write_u64<W: ?Sized + io::Write>(&mut self, w: &mut W, v: u64) -> io::Result<()> {
        Self::number(w, v)
    }
    fn write_f64<W: ?Sized + io::Write>(&mut self, w: &mut W, v: f64) -> io::Result<()> {
        Self::number(w, v)
    }
    fn write_f32<W: ?Sized + io::Write>(&mut self, w: &mut W, v: f32) -> io::Result<()> {
        Self::number(w, f64::from(v))
    }
}

/// Feeds what is written into SHA-256: the canonical form is never built.
struct HashWriter<'a>(&'a mut Sha256);

impl io::Write for HashWriter<'_> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.update(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writes `v` in RFC 8785 form: members sorted by the UTF-16 code units of
/// their names, no whitespace, names and leaves formatted by
/// `serde_json_canonicalizer`. The same bytes as `serde_json_canonicalizer::to_vec`
/// (a test holds them equal, so hashes and fingerprints stored by earlier
/// versions still match) without its buffer, sort key and re-parse per
/// member: for the bench's 1 KB create body, 6.5 µs instead of 15 µs
/// (release build, one core).
fn write_canonical(v: &Value, out: &mut HashWriter) {
    match v {
        Value::Object(m) => {
            let mut members: Vec<(&String, &Value)> = m.iter().collect();
            // serde_json's map is usually already in this order (byte order
            // differs only beyond the BMP vs U+E000..U+FFFF).
            if !members.is_sorted_by(|a, b| utf16_cmp(a.0, b.0).is_le()) {
                members.sort_unstable_by(|a, b| utf16_cmp(a.0, b.0));
            }
            out.0.update(b"{");
            for (i, (name, value)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.0.update(b",");
                }
                write_leaf(name, out);
                out.0.update(b":");
                write_canonical(value, out);
            }
            out.0.update(b"}");
        }
        Value::Array(items) => {
            out.0.update(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.0.update(b",");
                }
                write_canonical(item, out);
            }
            out.0.update(b"]");
        }
        leaf => write_leaf(leaf, out),
    }
}

/// A string, number, boolean or null: it cannot fail (no map keys, no I/O).
fn write_leaf<T: serde::Serialize>(leaf: &T, out: &mut HashWriter) {
    let _ = serde_json_canonicalizer::to_writer(leaf, out);
}

fn utf16_cmp(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        a.cmp(b)
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

/// JSON values whose canonical form is easy to get wrong: numbers, escapes,
/// and member names whose UTF-16 order differs from their byte order.
#[cfg(test)]
pub(crate) fn tricky_values() -> Vec<Value> {
    use serde_json::json;
    vec![
        json!({}),
        json!([]),
        json!(null),
        json!({"b": 1, "a": [true, false, null, {}, []], "c": {"z": "x", "y": -0.0}}),
        json!({"n": [0, -1, 1.5, 1e21, 1e-7, 123456789012345678u64, -9007199254740993i64, 12e1, 0.1]}),
        json!({"s": "quote \" backslash \\ slash / tab \t nl \n ctl \u{1} \u{7f} é \u{2028} 😀"}),
        json!({"\u{e000}": 1, "😀": 2, "a": 3, "\u{ffff}": 4, "é": 5, "": 6}),
        serde_json::from_str(r#"{"title":"a","options":[{"id":"x","label":"X"}],"metadata":{"k":{"deep":[1,{"b":2,"a":1}]}}}"#).unwrap(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_reads_numbers_as_values_and_integers_exactly() {
        use serde_json::json;
        assert!(same(
            &json!({"a": 5, "b": [1, 2]}),
            &json!({"b": [1.0, 2], "a": 5.0})
        ));
        assert!(same(&json!(0), &json!(-0.0)));
        assert!(!same(
            &json!(9007199254740993_u64),
            &json!(9007199254740992_u64)
        ));
        assert!(!same(&json!({"a": 1}), &json!({"a": 1, "b": null})));
        assert!(!same(&json!([1, 2]), &json!([2, 1])));
        assert!(!same(&json!("5"), &json!(5)));
    }

    /// The typed hash ignores how numbers and strings were spelt, and
    /// tells values apart as the canonical form does.
    #[test]
    fn the_typed_hash_ignores_spelling_only() {
        let typed = |text: &str| {
            let v: Value = serde_json::from_str(text).unwrap();
            let mut h = Sha256::new();
            hash_typed_into(&v, &mut h).unwrap();
            h.finalize()
        };
        assert_eq!(
            typed(r#"{"a":1,"b":"\u00e9"}"#),
            typed(r#"{ "b": "é", "a": 1.0 }"#)
        );
        assert_eq!(typed(r#"[1e2, -0.0, 0.10]"#), typed(r#"[100, 0, 0.1]"#));
        let values = tricky_values();
        for (i, a) in values.iter().enumerate() {
            for b in &values[i + 1..] {
                let (mut x, mut y) = (Sha256::new(), Sha256::new());
                hash_typed_into(a, &mut x).unwrap();
                hash_typed_into(b, &mut y).unwrap();
                assert_ne!(x.finalize(), y.finalize(), "{a} vs {b}");
            }
        }
        assert_ne!(typed(r#"{"a":1}"#), typed(r#"{"a":"1"}"#));
        assert_ne!(typed(r#"{"a":[1,2]}"#), typed(r#"{"a":[2,1]}"#));
    }

    /// Byte for byte what `serde_json_canonicalizer` hashes.
    #[test]
    fn the_streamed_hash_is_the_hash_of_serde_json_canonicalizer() {
        for v in &tricky_values() {
            let mut h = Sha256::new();
            hash_into(v, &mut h);
            let reference = Sha256::digest(serde_json_canonicalizer::to_vec(v).unwrap());
            assert_eq!(h.finalize(), reference, "{v}");
        }
    }
}
