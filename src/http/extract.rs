//! Request extractors whose failures use the error envelope: JSON bodies (with
//! the 256 KB Action limit), optional bodies, query strings.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::domain::strict_json;
use crate::error::{Code, Error, FieldError};

/// Largest request body of any route (guide: "Limits": Action create/patch).
pub const MAX_BODY: usize = 256 * 1024;

pub(crate) fn too_large(action: bool) -> Error {
    let code = if action {
        Code::ActionPayloadTooLarge
    } else {
        Code::PayloadTooLarge
    };
    Error::new(
        code,
        format!("request body is larger than {} KB", MAX_BODY / 1024),
    )
    .with_detail("limit_bytes", MAX_BODY)
}

/// The whole body, at most `MAX_BODY`: a `Content-Length` over it is
/// refused before anything is read (the client need not send it all to be
/// told), a body that grows past it as soon as it does.
pub(crate) async fn body<S: Send + Sync>(
    req: Request,
    state: &S,
    action: bool,
) -> Result<Bytes, Error> {
    let declared = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return Err(too_large(action));
    }
    Bytes::from_request(req, state)
        .await
        .map_err(|rej: BytesRejection| {
            if rej.status() == StatusCode::PAYLOAD_TOO_LARGE {
                too_large(action)
            } else {
                Error::validation(vec![FieldError::new(
                    "body",
                    format!("could not read the request body: {rej}"),
                )])
            }
        })
}

fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    strict_json::check(bytes)?;
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        Error::validation(vec![FieldError::new(
            "body",
            format!("the request body is not valid JSON ({e}); send a JSON object ({{…}})"),
        )])
    })?;
    // Unknown fields are all reported together first (guide: "Errors");
    // serde stops at the first problem in key order. Looked for only when
    // the body failed, so a valid one costs nothing more.
    serde_path_to_error::deserialize(strict_json::ObjectsOnly(&value)).map_err(|e| {
        if let Some(unknown) = unknown_fields::<T>(&value) {
            return Error::validation(unknown);
        }
        // A member of a tagged object is named by itself (strict_json::refusal).
        let (path, inner) = strict_json::refusal::<T>(&value).unwrap_or_else(|| {
            let inner = strict_json::plain(&e.inner().to_string());
            (e.path().to_string(), inner)
        });
        // A missing member is named as the field at fault, not the object
        // that lacks it (`until`, not `body`).
        let missing = inner
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next())
            .map(str::to_owned);
        let field = match (path == ".", missing) {
            (true, Some(name)) => name,
            (true, None) => "body".to_owned(),
            (false, Some(name)) => format!("{path}.{name}"),
            (false, None) => path,
        };
        Error::validation(vec![FieldError::new(
            field.clone(),
            format!("{field}: {inner}"),
        )])
    })
}

/// Every top-level member of `body` that `T` does not know, when `T` is a
/// struct that refuses unknown fields (`deny_unknown_fields`); None when
/// there is none, or `T` takes any (a map, a `Value`, flattened fields).
fn unknown_fields<T: DeserializeOwned>(body: &Value) -> Option<Vec<FieldError>> {
    let Value::Object(map) = body else {
        return None;
    };
    let known = struct_fields::<T>();
    // A key no struct has: refused only where unknown fields are.
    let probe = serde_json::json!({ "\u{1}": null });
    let refuses = T::deserialize(&probe).is_err_and(|e| e.to_string().starts_with("unknown field"));
    if known.is_empty() || !refuses {
        return None;
    }
    let unknown: Vec<&str> = map
        .keys()
        .map(String::as_str)
        .filter(|k| !known.contains(k))
        .collect();
    (!unknown.is_empty()).then(|| crate::domain::validate::unknown_field_errors(&unknown, known))
}

/// The field names of struct `T` as its `Deserialize` names them (renames
/// and aliases applied): a deserializer that records what
/// `deserialize_struct` is asked for and stops. Empty for anything else.
fn struct_fields<T: DeserializeOwned>() -> &'static [&'static str] {
    use serde::de::{self, Visitor};
    struct Probe<'a>(&'a mut &'static [&'static str]);
    impl<'de> serde::Deserializer<'de> for Probe<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("fields read"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe(&mut fields));
    fields
}

/// A JSON body deserialised into `T`; malformed or mistyped bodies give
/// VALIDATION_ERROR naming the field. Over 256 KB gives 413
/// PAYLOAD_TOO_LARGE, or ACTION_PAYLOAD_TOO_LARGE with `ACTION = true`
/// (Action create and patch; guide: "Limits").
pub struct ApiJson<T, const ACTION: bool = false>(pub T);

/// The raw JSON body of Action patch.
pub type ActionJson = ApiJson<Value, true>;

impl<S: Send + Sync, T: DeserializeOwned, const ACTION: bool> FromRequest<S>
    for ApiJson<T, ACTION>
{
    type Rejection = Error;
    async fn from_request(req: Request, state: &S) -> Result<Self, Error> {
        let bytes = body(req, state, ACTION).await?;
        Ok(Self(parse(&bytes)?))
    }
}

/// The raw body of Action create, parsed later by the domain (fast path);
/// over 256 KB gives 413 ACTION_PAYLOAD_TOO_LARGE.
pub struct ActionBytes(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for ActionBytes {
    type Rejection = Error;
    async fn from_request(req: Request, state: &S) -> Result<Self, Error> {
        Ok(Self(body(req, state, true).await?))
    }
}

/// A body read as bytes (a provider's form post), with the limits of every
/// body: 413 `PAYLOAD_TOO_LARGE` in the envelope, at once for a declared
/// length over it.
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = Error;
    async fn from_request(req: Request, state: &S) -> Result<Self, Error> {
        Ok(Self(body(req, state, false).await?))
    }
}

/// A JSON body that may be left out entirely (resolve, cancel, key rotation).
pub struct OptionalJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for OptionalJson<T> {
    type Rejection = Error;
    async fn from_request(req: Request, state: &S) -> Result<Self, Error> {
        let bytes = body(req, state, false).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(T::default()));
        }
        Ok(Self(parse(&bytes)?))
    }
}

/// A query string deserialised into `T`; bad values give VALIDATION_ERROR.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = Error;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Error> {
        let q = parts.uri.query().unwrap_or("");
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(q.as_bytes()));
        serde_path_to_error::deserialize(de).map(Self).map_err(|e| {
            // Unknown parameters are all named together, as a body's
            // unknown fields are (serde stops at the first).
            let keys: serde_json::Map<String, Value> = form_urlencoded::parse(q.as_bytes())
                .map(|(k, _)| (k.into_owned(), Value::Null))
                .collect();
            if let Some(unknown) = unknown_fields::<T>(&Value::Object(keys)) {
                return Error::validation(unknown);
            }
            let mut field = e.path().to_string();
            let inner = e.into_inner().to_string();
            // A parameter given twice, unknown or missing is named by itself,
            // not by the query string around it (".").
            if field == "." {
                field = ["duplicate field `", "unknown field `", "missing field `"]
                    .iter()
                    .find_map(|p| inner.strip_prefix(p))
                    .and_then(|rest| rest.split('`').next())
                    .unwrap_or("query")
                    .to_owned();
            }
            let said = match plain_parse_error(&inner) {
                // The one numeric parameter whose range is the same on
                // every route that takes it.
                Some(Parsed::Number) if field == "wait_seconds" => format!(
                    "must be a whole number of seconds from 0 to {}",
                    crate::service::actions::MAX_WAIT.as_secs()
                ),
                Some(Parsed::Number) => {
                    "must be a whole number (such as 10) within the range this route's section of the guide gives".to_owned()
                }
                Some(Parsed::Bool) => "must be true or false".to_owned(),
                None => inner.clone(),
            };
            Error::validation(vec![FieldError::new(
                field.clone(),
                format!("query parameter {field}: {said}"),
            )])
        })
    }
}

/// A value of the wrong type, told in a person's words instead of the
/// parser's ("invalid digit found in string").
enum Parsed {
    Number,
    Bool,
}

/// Which kind of value the parser wanted, from its message.
fn plain_parse_error(inner: &str) -> Option<Parsed> {
    if inner.contains("invalid digit")
        || inner.contains("empty string")
        || inner.contains("too large to fit")
        || inner.contains("too small to fit")
    {
        Some(Parsed::Number)
    } else if inner.contains("`true` or `false`") {
        Some(Parsed::Bool)
    } else {
        None
    }
}

/// A path parameter; an undecodable one gives VALIDATION_ERROR, not plain text.
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = Error;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Error> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| Self(p.0))
            .map_err(|e| {
                Error::validation(vec![FieldError::new(
                    "path",
                    format!("invalid path parameter: {e}"),
                )])
            })
    }
}
