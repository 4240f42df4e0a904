//! The JSON every request body must be (guide: "Conventions"): an object at
//! the top (never a positional array), no key twice in one object (no "last
//! one wins"), no NUL character in any string, and numbers within ±2^53
//! (I-JSON, RFC 7493), so what hds stores and fingerprints is what was meant.
//! One pass over the bytes, without building a value.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use crate::error::{Error, FieldError};

/// Largest integer magnitude a JSON number keeps exactly in every client.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Checks `bytes` against the rules above; the error names the JSON path.
pub fn check(bytes: &[u8]) -> Result<(), Error> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| *b != b'{') {
        return Err(Error::field(
            "body",
            "the request body must be a JSON object ({…}), not an array or a single value",
        ));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let found = Node {
        parent: None,
        step: Step::Root,
    }
    .deserialize(&mut de)
    .and_then(|()| de.end());
    // Syntax errors are left to the parser that follows, which words them.
    match found {
        Err(e) if e.is_data() => {
            let text = e.to_string();
            let (field, message) = text
                .split_once('\u{1f}')
                .map(|(f, m)| (f.to_owned(), m.split(" at line ").next().unwrap_or(m)))
                .unwrap_or(("body".to_owned(), text.as_str()));
            Err(Error::validation(vec![FieldError::new(
                field,
                message.to_owned(),
            )]))
        }
        _ => Ok(()),
    }
}

/// One JSON value, with the way to it; the path is only spelled out when
/// something is refused, so a valid body costs no allocation per key.
struct Node<'a> {
    parent: Option<&'a Node<'a>>,
    step: Step<'a>,
}

enum Step<'a> {
    Root,
    Key(&'a str),
    Index(usize),
}

impl Node<'_> {
    /// The field name errors use elsewhere (`metadata.k`, `options[0]`);
    /// `body` for the whole body.
    fn field(&self) -> String {
        let path = self.path();
        if path.is_empty() { "body".into() } else { path }
    }

    fn path(&self) -> String {
        let mut out = self.parent.map(Node::path).unwrap_or_default();
        match self.step {
            Step::Root => {}
            Step::Key(k) if out.is_empty() => out.push_str(k),
            Step::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
        out
    }

    fn refuse<E: de::Error>(&self, why: impl fmt::Display) -> E {
        // The path travels in front of a unit separator; `check` splits it off.
        let field = self.field();
        E::custom(format_args!("{field}\u{1f}{field}: {why}"))
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Objects are small: a list finds a repeated key as fast as a set.
        let mut seen: Vec<Cow<'de, str>> = Vec::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let child = Node {
                parent: Some(&self),
                step: Step::Key(&key),
            };
            if key.contains('\0') {
                return Err(child.refuse("a key contains a NUL character"));
            }
            if seen.contains(&key) {
                return Err(child.refuse("this key appears twice in one object"));
            }
            map.next_value_seed(child)?;
            seen.push(key);
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        while seq
            .next_element_seed(Node {
                parent: Some(&self),
                step: Step::Index(i),
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        if v.contains('\0') {
            return Err(self.refuse("NUL characters are not allowed in strings"));
        }
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        if v > MAX_SAFE_INTEGER {
            return Err(self.refuse(format_args!(
                "{v} is beyond ±2^53, where JSON numbers stop being exact; send it as a string"
            )));
        }
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        if v.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(self.refuse(format_args!(
                "{v} is beyond ±2^53, where JSON numbers stop being exact; send it as a string"
            )));
        }
        Ok(())
    }

    /// A number with a fraction or exponent: beyond ±2^53 it is refused like
    /// an integer (JSON Schema calls `1e300` an integer, and no client reads
    /// it back exactly).
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        if v.abs() > MAX_SAFE_INTEGER as f64 {
            return Err(self.refuse(format_args!(
                "{v} is beyond ±2^53, where JSON numbers stop being exact; send it as a string"
            )));
        }
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// `deserialize_with` for an integer field. JSON Schema counts `3.0` as the
/// integer 3, so a client may send it and it is read as 3; a fraction, or a
/// value beyond the target type (or ±2^53), is refused with the value named.
pub fn integer<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<i64>,
{
    let n = <serde_json::Number as serde::Deserialize>::deserialize(d)?;
    let whole = match (n.as_i64(), n.as_f64()) {
        (Some(i), _) => Some(i),
        (None, Some(f)) if f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64 => Some(f as i64),
        _ => None,
    };
    let Some(whole) = whole else {
        return Err(de::Error::custom(format!(
            "expected a whole number, got {n}"
        )));
    };
    T::try_from(whole).map_err(|_| de::Error::custom(format!("{n} is out of range")))
}

/// `integer` for an optional field (`null` or absent is None).
pub fn optional_integer<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<i64>,
{
    #[derive(serde::Deserialize)]
    struct Whole<T: TryFrom<i64>>(#[serde(deserialize_with = "integer")] T);
    Ok(<Option<Whole<T>> as serde::Deserialize>::deserialize(d)?.map(|Whole(v)| v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(body: &str) -> (String, String) {
        let e = check(body.as_bytes()).expect_err(body);
        let f = &e.details["errors"][0];
        (
            f["field"].as_str().unwrap().to_owned(),
            f["message"].as_str().unwrap().to_owned(),
        )
    }

    #[test]
    fn plain_objects_pass() {
        check(br#"{"title": "a", "n": 9007199254740991, "m": -9007199254740991, "x": [1.5, null, true, {"k": "v"}]}"#).unwrap();
        check(b"  ").unwrap();
        // Syntax errors are the parser's to word.
        check(b"{\"a\": ").unwrap();
    }

    #[test]
    fn duplicates_arrays_nul_and_huge_integers_are_refused_with_their_path() {
        assert_eq!(refused(r#"{"title": "a", "title": "b"}"#).0, "title");
        assert_eq!(refused(r#"{"m": {"k": 1, "k": 2}}"#).0, "m.k");
        assert!(refused(r#"[1, 2]"#).1.contains("must be a JSON object"));
        assert!(refused(r#""text""#).1.contains("must be a JSON object"));
        let (field, message) = refused(r#"{"title": "a\u0000b"}"#);
        assert_eq!(field, "title");
        assert!(message.contains("NUL"), "{message}");
        let (field, message) = refused(r#"{"duration_ms": 18446744073709551615}"#);
        assert_eq!(field, "duration_ms");
        assert!(message.contains("2^53"), "{message}");
        assert_eq!(refused(r#"{"l": [0, -9007199254740993]}"#).0, "l[1]");
    }
}
