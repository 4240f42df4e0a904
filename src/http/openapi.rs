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
    tags((name = "actions"), (name = "controls"), (name = "runs"), (name = "sources"), (name = "workspaces"), (name = "billing"), (name = "auth"), (name = "account"), (name = "analytics"), (name = "receipts"), (name = "system"))
)]
pub struct ApiDoc;

/// The error envelope of every non-2xx response (guide: "Errors").
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable code, e.g. ACTION_NOT_FOUND.
    pub code: String,
    pub message: String,
    /// For validation errors, `errors: [{field, code, message}]`.
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
}

/// A refusal as the error envelope carries it (the batch route reports one
/// per item). Never a server error: those fail the whole request.
impl From<crate::error::Error> for ErrorDetail {
    fn from(e: crate::error::Error) -> Self {
        let e = e.into_inner();
        Self {
            code: e.code.as_str().to_owned(),
            message: e.message,
            details: serde_json::Value::Object(e.details),
        }
    }
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

/// The answers every route of a kind can give, added to each operation that
/// does not list them itself, so a client generated from the document knows
/// every status it can meet (guide: "Errors"):
/// - with a credential: 401 (missing, unknown or revoked) and 429 (its rate limit);
/// - with a session cookie on a write: 403 `CSRF_FAILED`;
/// - with a path id: 404;
/// - with a body, query or header parameters: 422 `VALIDATION_ERROR` (strict
///   JSON, unknown fields, bad values); with a body also 413;
/// - anonymous sign-in routes: 429 (the per-address budget);
/// - every write: 503 `SERVICE_UNAVAILABLE` while the database writer is stopped.
pub fn complete(doc: utoipa::openapi::OpenApi) -> serde_json::Value {
    // utoipa's types cannot hold every JSON Schema keyword used here
    // (propertyNames), so the document is finished and served as JSON.
    let mut v = match serde_json::to_value(&doc) {
        Ok(v) => v,
        // Cannot happen (maps with string keys); the route tests would see it.
        Err(e) => {
            tracing::error!(error = %e, "the OpenAPI document could not be serialised");
            return serde_json::Value::Null;
        }
    };
    if let Some(paths) = v.get_mut("paths").and_then(|p| p.as_object_mut()) {
        for (path, item) in paths.iter_mut() {
            let Some(item) = item.as_object_mut() else {
                continue;
            };
            for (method, op) in item.iter_mut() {
                // A path item also holds `parameters`, `summary`…: only
                // operations are completed.
                if !HTTP_METHODS.contains(&method.as_str()) {
                    continue;
                }
                complete_operation(path, method, op);
                if let Some(schema) =
                    op.pointer_mut("/requestBody/content/application~1json/schema")
                {
                    strict(schema);
                }
            }
        }
    }
    if let Some(schemas) = v
        .pointer_mut("/components/schemas")
        .and_then(|s| s.as_object_mut())
    {
        for schema in schemas.values_mut() {
            strict(schema);
        }
        // Tagged enums that refuse unknown members (`deny_unknown_fields`):
        // utoipa leaves their variants open.
        for closed in ["Interaction", "ContextBlock"] {
            let variants = schemas
                .get_mut(closed)
                .and_then(|s| s.get_mut("oneOf"))
                .and_then(|v| v.as_array_mut());
            for variant in variants.into_iter().flatten() {
                if let Some(o) = variant.as_object_mut() {
                    o.insert(
                        "additionalProperties".to_owned(),
                        serde_json::Value::Bool(false),
                    );
                }
            }
        }
        schemas.insert("JsonValue".to_owned(), json_value());
        if let Some(patch) = action_patch(schemas.get("ActionCreate")) {
            schemas.insert("ActionPatch".to_owned(), patch);
        }
    }
    // Bodies a request may leave out entirely (the handlers take an empty
    // body as `{}`).
    for optional in [
        "/paths/~1v1~1actions~1{action_id}~1cancel/post/requestBody",
        "/paths/~1v1~1actions~1{action_id}~1withdraw/post/requestBody",
        "/paths/~1v1~1runs~1{run_id}~1cancel/post/requestBody",
        "/paths/~1v1~1sources~1{source_id}~1keys~1rotate/post/requestBody",
    ] {
        if let Some(body) = v.pointer_mut(optional).and_then(|b| b.as_object_mut()) {
            body.insert("required".to_owned(), serde_json::Value::Bool(false));
        }
    }
    let patch_body =
        "/paths/~1v1~1actions~1{action_id}/patch/requestBody/content/application~1json/schema";
    if let Some(body) = v.pointer_mut(patch_body) {
        *body = serde_json::json!({"$ref": "#/components/schemas/ActionPatch"});
    }
    v
}

/// The PATCH body: the create fields a Source may change (`PATCH_FIELDS`),
/// with their create schemas, and nothing else.
fn action_patch(spec: Option<&serde_json::Value>) -> Option<serde_json::Value> {
    let props = spec?.get("properties")?.as_object()?;
    let mut fields: serde_json::Map<String, serde_json::Value> =
        crate::domain::action::PATCH_FIELDS
            .iter()
            .filter_map(|f| props.get(*f).map(|s| ((*f).to_owned(), s.clone())))
            .collect();
    fields.insert(
        "action_version".to_owned(),
        serde_json::json!({
            "type": "integer",
            "minimum": 1,
            "maximum": crate::domain::strict_json::MAX_SAFE_INTEGER,
            "description": "Optional precondition: the version this change is based on. When the Action has moved on, the change is refused with 409 ACTION_CHANGED (details name the current version), unless the Action already holds exactly what the body asks."
        }),
    );
    Some(serde_json::json!({
        "type": "object",
        "description": "Any of the fields below (action_version is a precondition, not a change); the rules of ActionCreate apply to each. Material changes advance action_version.",
        "properties": fields,
        "additionalProperties": false
    }))
}

/// No NUL in any string (guide: "Conventions").
const NO_NUL: &str = "^[^\\u0000]*$";

/// Writes the strict-JSON rules every body is held to into a schema: strings
/// without NUL, integers within ±2^53, free-form objects made of such values.
/// Fields with their own enum, format or pattern keep it.
fn strict(schema: &mut serde_json::Value) {
    use serde_json::json;
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    if obj.contains_key("$ref") {
        return;
    }
    let types: Vec<String> = match obj.get("type") {
        Some(serde_json::Value::String(t)) => vec![t.clone()],
        Some(serde_json::Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let own_rule = ["enum", "const", "format", "pattern"]
        .iter()
        .any(|k| obj.contains_key(*k));
    if types.iter().any(|t| t == "string") && !own_rule {
        obj.insert("pattern".to_owned(), json!(NO_NUL));
    }
    if types.iter().any(|t| t == "integer" || t == "number") {
        let max = crate::domain::strict_json::MAX_SAFE_INTEGER;
        obj.entry("maximum").or_insert(json!(max));
        obj.entry("minimum").or_insert(json!(-(max as i64)));
    }
    if types.iter().any(|t| t == "object")
        && !obj.contains_key("properties")
        && obj
            .get("additionalProperties")
            .is_none_or(|a| a == &json!(true))
    {
        obj.insert("propertyNames".to_owned(), json!({"pattern": NO_NUL}));
        obj.insert(
            "additionalProperties".to_owned(),
            json!({"$ref": "#/components/schemas/JsonValue"}),
        );
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(s) = obj.get_mut(key) {
            strict(s);
        }
    }
    for key in ["properties"] {
        if let Some(props) = obj.get_mut(key).and_then(|p| p.as_object_mut()) {
            props.values_mut().for_each(strict);
        }
    }
    for key in ["oneOf", "anyOf", "allOf", "prefixItems"] {
        if let Some(list) = obj.get_mut(key).and_then(|l| l.as_array_mut()) {
            list.iter_mut().for_each(strict);
        }
    }
}

/// Any JSON value a free-form field (metadata, decision_context, response)
/// may hold under the strict-JSON rules.
fn json_value() -> serde_json::Value {
    let max = crate::domain::strict_json::MAX_SAFE_INTEGER;
    serde_json::json!({
        "description": "Any JSON value: strings without NUL, numbers within ±2^53.",
        "anyOf": [
            {"type": "null"},
            {"type": "boolean"},
            {"type": "number", "minimum": -(max as i64), "maximum": max},
            {"type": "string", "pattern": NO_NUL},
            {"type": "array", "items": {"$ref": "#/components/schemas/JsonValue"}},
            {"type": "object", "propertyNames": {"pattern": NO_NUL},
             "additionalProperties": {"$ref": "#/components/schemas/JsonValue"}}
        ]
    })
}

const HTTP_METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

fn complete_operation(path: &str, method: &str, op: &mut serde_json::Value) {
    use serde_json::json;
    let security: Vec<String> = op["security"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r.as_object())
        .flat_map(|r| r.keys().cloned())
        .collect();
    let params: Vec<String> = op["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["in"].as_str().map(str::to_owned))
        .collect();
    let has_body = op.get("requestBody").is_some();
    // GET routes that write: the browser sign-in's start and callback.
    let write = method != "get" || path.ends_with("/start") || path.ends_with("/callback");
    // The routes the per-address budget counts (guide: "Rate limiting").
    let anonymous_signin = path.starts_with("/v1/auth/{provider}/") && !path.ends_with("/callback");
    let mut add = |status: &str, description: &str| {
        let responses = &mut op["responses"];
        if responses.get(status).is_none() {
            let mut r = json!({
                "description": description,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
            });
            if status == "429" || status == "503" {
                r["headers"] = json!({"Retry-After": {
                    "description": "seconds to wait before retrying",
                    "schema": {"type": "integer", "minimum": 1}
                }});
            }
            responses[status] = r;
        }
    };
    if !security.is_empty() {
        add(
            "401",
            "AUTH_REQUIRED, INVALID_API_KEY or SOURCE_REVOKED: no credential, an unknown one, or a revoked Source",
        );
        add(
            "429",
            "RATE_LIMITED: this credential is over its rate limit, or (details.scope `address`) this client address sent too many refused credentials; wait Retry-After seconds",
        );
    }
    if write && security.iter().any(|s| s == "session_cookie") {
        add(
            "403",
            "CSRF_FAILED: a cookie request from another origin or without X-CSRF-Token",
        );
    }
    if params.iter().any(|p| p == "path") {
        add(
            "404",
            "ACTION_NOT_FOUND, SOURCE_NOT_FOUND or PROVIDER_NOT_FOUND: no such resource visible to this caller",
        );
    }
    if has_body {
        add("413", "PAYLOAD_TOO_LARGE: the body is over the size limit");
    }
    if has_body || params.iter().any(|p| p == "query" || p == "header") {
        add(
            "422",
            "VALIDATION_ERROR: details.errors names each field at fault (strict JSON: an object, no duplicate keys, no unknown fields)",
        );
    }
    if anonymous_signin {
        add(
            "429",
            "RATE_LIMITED: this client address is over its budget for anonymous sign-in requests; wait Retry-After seconds",
        );
    }
    if write {
        add(
            "503",
            "SERVICE_UNAVAILABLE: the database writer is stopped (shutting down); retry after Retry-After seconds",
        );
    }
}
