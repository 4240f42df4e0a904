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

fn too_large(rej: BytesRejection, action: bool) -> Error {
    if rej.status() == StatusCode::PAYLOAD_TOO_LARGE {
        let code = if action {
            Code::ActionPayloadTooLarge
        } else {
            Code::PayloadTooLarge
        };
        return Error::new(
            code,
            format!("request body is larger than {} KB", MAX_BODY / 1024),
        )
        .with_detail("limit_bytes", MAX_BODY);
    }
    Error::new(
        Code::ValidationError,
        format!("could not read the request body: {rej}"),
    )
}

fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    strict_json::check(bytes)?;
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        Error::validation(vec![FieldError::new(
            "body",
            format!("the body is not valid JSON: {e}"),
        )])
    })?;
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        // A missing member is named as the field at fault, not the object
        // that lacks it (`until`, not `body`).
        let inner = e.inner().to_string();
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
            format!("{field}: {}", e.into_inner()),
        )])
    })
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
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|r| too_large(r, ACTION))?;
        Ok(Self(parse(&bytes)?))
    }
}

/// The raw body of Action create, parsed later by the domain (fast path);
/// over 256 KB gives 413 ACTION_PAYLOAD_TOO_LARGE.
pub struct ActionBytes(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for ActionBytes {
    type Rejection = Error;
    async fn from_request(req: Request, state: &S) -> Result<Self, Error> {
        Ok(Self(
            Bytes::from_request(req, state)
                .await
                .map_err(|r| too_large(r, true))?,
        ))
    }
}

/// A JSON body that may be left out entirely (resolve, cancel, key rotation).
pub struct OptionalJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for OptionalJson<T> {
    type Rejection = Error;
    async fn from_request(req: Request, state: &S) -> Result<Self, Error> {
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|r| too_large(r, false))?;
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
            let field = e.path().to_string();
            Error::validation(vec![FieldError::new(
                field.clone(),
                format!("query parameter {field}: {}", e.into_inner()),
            )])
        })
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
