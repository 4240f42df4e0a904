//! OpenAPI: the document's frame (info, security schemes, shared schemas). The
//! paths come from the handlers' `#[utoipa::path]` through the route table.

use serde::Serialize;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

#[derive(OpenApi)]
#[openapi(
    info(title = "hds — Human-Decision Service", version = "0.1.7", description = "Durable, signed human decisions for software. Guide: GET /v1/docs."),
    modifiers(&Security),
    components(schemas(ErrorBody, ErrorDetail)),
    tags((name = "actions"), (name = "sources"), (name = "auth"), (name = "receipts"), (name = "system"))
)]
pub struct ApiDoc;

/// The error envelope of every non-2xx response (guide: "Errors").
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable code, e.g. ACTION_NOT_FOUND.
    pub code: String,
    pub message: String,
    /// For validation errors, `errors: [{field, code, message}]`.
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
}

struct Security;

impl Modify for Security {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let c = doc.components.get_or_insert_with(Default::default);
        let bearer = |desc: &str| {
            let mut h = Http::new(HttpAuthScheme::Bearer);
            h.description = Some(desc.to_owned());
            SecurityScheme::Http(h)
        };
        c.add_security_scheme("source_key", bearer("Source key: svc_live_… or svc_test_…"));
        c.add_security_scheme("user_token", bearer("User token: svc_usr_…"));
        c.add_security_scheme(
            "session_cookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                crate::http::session::COOKIE_NAME,
                "Browser session; writes also need the X-CSRF-Token header and a same-origin Origin",
            ))),
        );
    }
}
