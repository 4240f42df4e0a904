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

/// What follows a number refused for its size.
const TOO_BIG: &str = "is outside ±9007199254740991 (2^53 - 1), where JSON numbers stop being exact: no number field takes it; in free-form data (`metadata`, `decision_context`, `properties`, a run's `result`) send such a value as a string";

/// Checks `bytes` against the rules above; the error names the JSON path.
pub fn check(bytes: &[u8]) -> Result<(), Error> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_none() {
        return Err(Error::field(
            "body",
            "the request body is empty; send a JSON object ({…}) with Content-Type: application/json",
        ));
    }
    if first.is_some_and(|b| *b != b'{') {
        // Only on this refusal: JSON of another shape, or no JSON at all.
        return Err(match serde_json::from_slice::<de::IgnoredAny>(bytes) {
            Ok(_) => Error::field(
                "body",
                "the request body must be a JSON object ({…}), not an array or a single value",
            ),
            Err(e) => Error::field(
                "body",
                format!(
                    "the request body is not JSON ({e}); send a JSON object ({{…}}) with Content-Type: application/json"
                ),
            ),
        });
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
            return Err(self.refuse(format_args!("{v} {TOO_BIG}")));
        }
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        if v.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(self.refuse(format_args!("{v} {TOO_BIG}")));
        }
        Ok(())
    }

    /// A number with a fraction or exponent: beyond ±2^53 it is refused like
    /// an integer (JSON Schema calls `1e300` an integer, and no client reads
    /// it back exactly). Quoted in exponent form (`1e300`, not 301 digits).
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        if v.abs() > MAX_SAFE_INTEGER as f64 {
            return Err(self.refuse(format_args!("{v:e} {TOO_BIG}")));
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

/// A flag whose default is false: `null` counts as left out, as it does
/// for the other optional fields.
pub fn flag<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(<Option<bool> as serde::Deserialize>::deserialize(d)?.unwrap_or(false))
}

/// An `action_version` a client sends back: a whole number of at least 1
/// (versions start at 1), so that 0 or -1 is a malformed body (422), not a
/// stale binding (409).
pub fn version<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let v: i64 = integer(d)?;
    if v < 1 {
        return Err(de::Error::custom(format!(
            "must be 1 or more (the version you were shown), got {v}"
        )));
    }
    Ok(v)
}

/// `version` for an optional field (`null` or absent is None).
pub fn optional_version<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    #[derive(serde::Deserialize)]
    struct V(#[serde(deserialize_with = "version")] i64);
    Ok(<Option<V> as serde::Deserialize>::deserialize(d)?.map(|V(v)| v))
}

/// A `fingerprint` a client sends back: `sha256:` and 64 lowercase hex
/// digits, so that a malformed one is a malformed body (422 naming it), not
/// a stale binding (409 `ACTION_CHANGED`, which a client answers by reading
/// the Action again, forever).
pub fn fingerprint<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let f = <String as serde::Deserialize>::deserialize(d)?;
    if !crate::domain::decision::is_fingerprint(&f) {
        return Err(de::Error::custom(
            "fingerprint must be `sha256:` and 64 lowercase hex digits, exactly as the Action's fingerprint field gives it",
        ));
    }
    Ok(f)
}

/// `fingerprint` for an optional field (`null` or absent is None).
pub fn optional_fingerprint<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<String>, D::Error> {
    #[derive(serde::Deserialize)]
    struct F(#[serde(deserialize_with = "fingerprint")] String);
    Ok(<Option<F> as serde::Deserialize>::deserialize(d)?.map(|F(f)| f))
}

/// Deserializes from a parsed body as `&Value` does, except that a struct
/// is read only from a JSON object, at any depth: serde would also fill a
/// struct from an array, by position (`{"events": {"action.new": [false,
/// false]}}` switching both channels off). Enums and the values inside
/// them are read by `&Value` itself, and so are internally tagged ones
/// (serde buffers them first): an Action's `interaction` and `context`
/// blocks still take a struct from an array (guide: "Conventions").
pub struct ObjectsOnly<'a>(pub &'a serde_json::Value);

impl<'de> de::Deserializer<'de> for ObjectsOnly<'de> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
        use serde_json::Value;
        match self.0 {
            Value::Array(items) => {
                let mut seq = Items(items.iter());
                let out = v.visit_seq(&mut seq)?;
                match seq.0.len() {
                    0 => Ok(out),
                    _ => Err(de::Error::invalid_length(items.len(), &"fewer elements")),
                }
            }
            Value::Object(map) => {
                let mut access = Members(map.iter(), None);
                let out = v.visit_map(&mut access)?;
                match access.0.len() {
                    0 => Ok(out),
                    _ => Err(de::Error::invalid_length(map.len(), &"fewer members")),
                }
            }
            other => de::Deserializer::deserialize_any(other, v),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            serde_json::Value::Null => v.visit_none(),
            _ => v.visit_some(self),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Self::Error> {
        if self.0.is_array() {
            return Err(de::Error::invalid_type(de::Unexpected::Seq, &"an object"));
        }
        self.deserialize_any(v)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Self::Error> {
        de::Deserializer::deserialize_enum(self.0, name, variants, v)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, Self::Error> {
        v.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier
        ignored_any
    }
}

struct Items<'a>(std::slice::Iter<'a, serde_json::Value>);

impl<'de> SeqAccess<'de> for Items<'de> {
    type Error = serde_json::Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        self.0
            .next()
            .map(|item| seed.deserialize(ObjectsOnly(item)))
            .transpose()
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct Members<'a>(serde_json::map::Iter<'a>, Option<&'a serde_json::Value>);

impl<'de> MapAccess<'de> for Members<'de> {
    type Error = serde_json::Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        let Some((key, value)) = self.0.next() else {
            return Ok(None);
        };
        self.1 = Some(value);
        seed.deserialize(de::value::BorrowedStrDeserializer::new(key))
            .map(Some)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        let value = self
            .1
            .take()
            .ok_or_else(|| de::Error::custom("a value was asked for before its key"))?;
        seed.deserialize(ObjectsOnly(value))
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

/// A body refused by `T`'s `Deserialize`: the field to name and the message,
/// as a person reads them. Serde reports a member of an internally tagged
/// object (`interaction`, a context block: `{"type": …, …}`) as the whole
/// object, because it buffers the object before choosing its variant; the
/// member at fault is then found by leaving out one member at a time: the
/// one without which that error goes (a required member left out would
/// only be missing, so it is never blamed that way). Runs only on a
/// refused body, at most `MOST_MEMBERS_SEARCHED` more parses of it.
pub fn refusal<T: de::DeserializeOwned>(body: &serde_json::Value) -> Option<(String, String)> {
    let attempt = |v: &serde_json::Value| {
        serde_path_to_error::deserialize::<_, T>(ObjectsOnly(v))
            .err()
            .map(|e| (e.path().to_string(), e.into_inner().to_string()))
    };
    let (path, msg) = attempt(body)?;
    // The tag itself at fault (missing, unknown): no member to blame.
    let tag_at_fault = msg.starts_with("unknown variant") || msg.contains("`type`");
    let keys: Vec<String> = match at_path(body, &path).and_then(serde_json::Value::as_object) {
        Some(o) if o.contains_key("type") && !tag_at_fault && o.len() <= MOST_MEMBERS_SEARCHED => {
            o.keys().filter(|k| *k != "type").cloned().collect()
        }
        _ => Vec::new(),
    };
    let mut culprit = None;
    if !keys.is_empty() {
        // One copy: each member is taken out, tried without, put back.
        let mut work = body.clone();
        for k in keys {
            let Some(serde_json::Value::Object(o)) = at_path_mut(&mut work, &path) else {
                break;
            };
            let Some(v) = o.remove(&k) else {
                continue;
            };
            let without = attempt(&work);
            if let Some(serde_json::Value::Object(o)) = at_path_mut(&mut work, &path) {
                o.insert(k.clone(), v);
            }
            let gone = match without {
                None => true,
                Some((p, m)) => (p != path || m != msg) && !m.starts_with("missing field"),
            };
            if gone {
                culprit = Some(k);
                break;
            }
        }
    }
    let path = match culprit {
        Some(k) => format!("{path}.{k}"),
        None => path,
    };
    Some((path, plain(&msg)))
}

/// The most members of a tagged object searched for the one at fault: ours
/// have `type` and at most three more, so a larger one holds members it
/// does not take, which serde names itself. Bounds the work a refused body
/// can ask for.
const MOST_MEMBERS_SEARCHED: usize = 8;

/// Serde's names of number types, in words, and of our own types (which
/// the caller never saw) as what they take.
pub(crate) fn plain(msg: &str) -> String {
    // `expected struct BatchItem`, `expected struct variant Interaction::Text`:
    // an object, whatever we call it. One pass (the message may repeat a
    // client's string of up to the body's size).
    const STRUCT: &str = "expected struct ";
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(i) = rest.find(STRUCT) {
        out.push_str(&rest[..i]);
        out.push_str("expected an object");
        let after = &rest[i + STRUCT.len()..];
        let after = after.strip_prefix("variant ").unwrap_or(after);
        let end = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(after.len());
        rest = &after[end..];
    }
    out.push_str(rest);
    // An enum of names (a notification kind): a string is what it takes.
    out = out.replace("expected string or map", "expected a string");
    // `unknown variant `bogus`, expected one of `low`, `normal``: the value
    // the client sent, then what to send instead.
    if let Some(i) = out.find("unknown variant `") {
        let after = &out[i + "unknown variant ".len()..];
        if let Some(end) = after[1..].find('`').map(|e| e + 2)
            && let Some(expected) = after[end..].strip_prefix(", expected ")
        {
            out = format!(
                "{}{} is not a value this field takes: use {expected}",
                &out[..i],
                &after[..end]
            );
        }
    }
    // The only object without members of its own (a boolean interaction)
    // still has its tag.
    out = out.replace(
        ", there are no fields",
        ": this object takes only its `type`",
    );
    for (t, words) in [
        ("f64", "a number"),
        ("f32", "a number"),
        ("u64", "a whole number of at least 0"),
        ("u32", "a whole number of at least 0"),
        ("u16", "a whole number of at least 0"),
        ("u8", "a whole number of at least 0"),
        ("usize", "a whole number of at least 0"),
        ("i64", "a whole number"),
        ("i32", "a whole number"),
    ] {
        out = out.replace(&format!("expected {t}"), &format!("expected {words}"));
    }
    out
}

/// The value at a path as serde_path_to_error writes it (`a.b[0].c`).
fn at_path<'a>(v: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
    if path == "." {
        return Some(v);
    }
    steps(path)?.into_iter().try_fold(v, |v, s| match s {
        PathStep::Key(k) => v.get(k),
        PathStep::Index(i) => v.get(i),
    })
}

fn at_path_mut<'a>(v: &'a mut serde_json::Value, path: &str) -> Option<&'a mut serde_json::Value> {
    if path == "." {
        return Some(v);
    }
    steps(path)?.into_iter().try_fold(v, |v, s| match s {
        PathStep::Key(k) => v.get_mut(k),
        PathStep::Index(i) => v.get_mut(i),
    })
}

enum PathStep<'a> {
    Key(&'a str),
    Index(usize),
}

fn steps(path: &str) -> Option<Vec<PathStep<'_>>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (key, rest) = part.split_once('[').map_or((part, ""), |(k, r)| (k, r));
        if !key.is_empty() {
            out.push(PathStep::Key(key));
        }
        if !rest.is_empty() {
            for idx in rest.split('[') {
                out.push(PathStep::Index(idx.trim_end_matches(']').parse().ok()?));
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Pair {
        a: bool,
        b: Option<bool>,
    }

    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Outer {
        pairs: Vec<Pair>,
        one: Option<Pair>,
        any: serde_json::Value,
        tuple: (i64, String),
    }

    #[test]
    fn objects_only_reads_objects_and_refuses_positional_structs_at_any_depth() {
        let read = |v: serde_json::Value| {
            serde_path_to_error::deserialize::<_, Outer>(ObjectsOnly(&v)).map_err(|e| {
                let at = e.path().to_string();
                format!("{at}: {}", e.into_inner())
            })
        };
        let ok = serde_json::json!({"pairs": [{"a": true}], "one": null, "any": [1, {"x": [2]}], "tuple": [3, "t"]});
        assert_eq!(
            read(ok.clone()).unwrap(),
            Outer {
                pairs: vec![Pair { a: true, b: None }],
                one: None,
                any: ok["any"].clone(),
                tuple: (3, "t".into()),
            }
        );
        for (bad, at) in [
            (
                serde_json::json!({"pairs": [[true]], "one": null, "any": 1, "tuple": [1, "x"]}),
                "pairs[0]",
            ),
            (
                serde_json::json!({"pairs": [], "one": [true, false], "any": 1, "tuple": [1, "x"]}),
                "one",
            ),
        ] {
            let e = read(bad).unwrap_err();
            assert_eq!(
                e,
                format!("{at}: invalid type: sequence, expected an object")
            );
        }
        let e = read(serde_json::json!({"pairs": [{"a": true, "c": 1}], "one": null, "any": 1, "tuple": [1, "x"]})).unwrap_err();
        assert!(e.starts_with("pairs[0].c: unknown field `c`"), "{e}");
    }

    fn refused(body: &str) -> (String, String) {
        let e = check(body.as_bytes()).expect_err(body);
        let f = &e.details["errors"][0];
        (
            f["field"].as_str().unwrap().to_owned(),
            f["message"].as_str().unwrap().to_owned(),
        )
    }

    #[test]
    fn our_type_names_are_said_as_what_they_take() {
        assert_eq!(
            plain("invalid type: null, expected struct BatchItem at line 1"),
            "invalid type: null, expected an object at line 1"
        );
        assert_eq!(
            plain("invalid type: null, expected string or map"),
            "invalid type: null, expected a string"
        );
        assert_eq!(
            plain("expected u64"),
            "expected a whole number of at least 0"
        );
        assert_eq!(
            plain("invalid type: sequence, expected struct variant Interaction::Text"),
            "invalid type: sequence, expected an object"
        );
        // A client's string that repeats the words many times: each is
        // rewritten once, in one pass.
        let many = "expected struct X,".repeat(15_000);
        assert_eq!(plain(&many), "expected an object,".repeat(15_000));
    }

    #[test]
    fn plain_objects_pass() {
        check(br#"{"title": "a", "n": 9007199254740991, "m": -9007199254740991, "x": [1.5, null, true, {"k": "v"}]}"#).unwrap();
        // No body at all is told so, not as a parser's end of input.
        let (field, message) = refused("  ");
        assert_eq!(field, "body");
        assert!(
            message.starts_with("the request body is empty"),
            "{message}"
        );
        // Syntax errors are the parser's to word.
        check(b"{\"a\": ").unwrap();
    }

    #[test]
    fn duplicates_arrays_nul_and_huge_integers_are_refused_with_their_path() {
        assert_eq!(refused(r#"{"title": "a", "title": "b"}"#).0, "title");
        assert_eq!(refused(r#"{"m": {"k": 1, "k": 2}}"#).0, "m.k");
        assert!(refused(r#"[1, 2]"#).1.contains("must be a JSON object"));
        assert!(refused(r#""text""#).1.contains("must be a JSON object"));
        // Not JSON at all is told so, with where the parser stopped.
        let (field, message) = refused("notjson");
        assert_eq!(field, "body");
        assert!(
            message.starts_with("the request body is not JSON (expected"),
            "{message}"
        );
        assert!(message.contains("line 1 column 2"), "{message}");
        let (field, message) = refused(r#"{"title": "a\u0000b"}"#);
        assert_eq!(field, "title");
        assert!(message.contains("NUL"), "{message}");
        let (field, message) = refused(r#"{"duration_ms": 18446744073709551615}"#);
        assert_eq!(field, "duration_ms");
        assert!(message.contains("2^53"), "{message}");
        assert_eq!(refused(r#"{"l": [0, -9007199254740993]}"#).0, "l[1]");
        // A huge number with an exponent is quoted as one, not in 301 digits.
        let (field, message) = refused(r#"{"total": 1e300}"#);
        assert_eq!(field, "total");
        assert!(message.starts_with("total: 1e300 is outside"), "{message}");
    }
}
