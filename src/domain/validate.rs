//! Validation of Action create and patch bodies: parses JSON into an
//! `ActionSpec`, checks every rule of the guide's "The Action object" and limits, and returns
//! the normalised spec or every problem found, each with its field path.

use crate::domain::access::Visibility;
use std::collections::HashSet;

use serde_json::{Map, Value};
use time::Duration;

use crate::domain::action::{ActionSpec, CREATE_FIELDS, ContextBlock, Interaction, PATCH_FIELDS};
use crate::domain::time::{self as clock, Timestamp};
use crate::domain::urls::{
    MAX_URL, credentials_refused, has_credentials, is_http_url, normalise_callback_url,
};
use crate::error::{Code, Error, FieldError};

pub const MAX_METADATA_BYTES: usize = 32 * 1024;
pub const MAX_CONTROLS: usize = 12;
pub const MAX_MUTATING_CONTROLS: usize = 3;
pub const MAX_REVIEWERS: usize = 15;
const MAX_OPTIONS: usize = 20;
const MAX_CONTEXT_BLOCKS: usize = 100;
const MAX_TITLE: usize = 200;
const MAX_DESCRIPTION: usize = 20_000;
/// Labels of options, controls, choices and form fields.
const MAX_LABEL: usize = 100;
/// A control's `confirm` question.
const MAX_CONFIRM: usize = 500;

/// Unicode's explicit direction controls (embeddings, overrides, isolates:
/// U+202A–U+202E, U+2066–U+2069). In one line of text they reverse what is
/// shown around it (a title `Refund \u{202e}0001$ tnuoma` reads "Refund
/// amount $1000" in one place and otherwise in another), so titles, names
/// and labels may not hold them. The marks U+200E and U+200F stay allowed.
pub fn has_direction_override(s: &str) -> bool {
    s.chars()
        .any(|c| matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
}

/// What a title or label of only blanks and invisible characters is told:
/// the reviewer would see an empty heading or a blank button.
const SHOWS_NOTHING: &str = "must show something: it holds only blanks or invisible characters (zero-width spaces, fillers)";

/// What a field holding a direction control is told (text a reviewer reads:
/// the marks would reorder it, so it reads otherwise than it is bound).
pub fn direction_refused(field: &str) -> String {
    format!(
        "{field} holds a Unicode direction control (U+202A–U+202E or U+2066–U+2069), which reorders what a reviewer reads (`Pay \\u{{202e}}0001` shows as “Pay 1000”): send the text without it (the marks U+200E and U+200F are allowed)"
    )
}

/// The JSON path of the first string in `v` (at `path`) that holds a
/// direction control, if any: `context[2].value`.
fn first_direction_override(v: &Value, path: &str) -> Option<String> {
    match v {
        Value::String(t) => has_direction_override(t).then(|| path.to_owned()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, x)| first_direction_override(x, &format!("{path}[{i}]"))),
        Value::Object(m) => m
            .iter()
            .find_map(|(k, x)| first_direction_override(x, &format!("{path}.{k}"))),
        _ => None,
    }
}

/// One line of text for a title, a name or a label: no control character
/// (line break, tab, NUL), no line or paragraph separator (U+2028, U+2029,
/// where browsers break lines too) and no direction override.
pub fn is_one_line(s: &str) -> bool {
    !s.chars()
        .any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}'))
        && !has_direction_override(s)
}

/// Characters that show as nothing (soft hyphen, zero-width space and
/// joiners, direction marks, word joiner and invisible operators, the
/// Mongolian vowel separator, byte-order mark): in an e-mail address they
/// make two addresses look alike (the invitation schema's pattern lists the
/// same).
pub(crate) fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{061C}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2060}'..='\u{2064}'
            | '\u{FEFF}'
    )
}

/// Text that shows nothing: only white space, control and invisible
/// characters (a "reason" of a zero-width space gives no reason).
pub fn says_nothing(s: &str) -> bool {
    s.chars().all(|c| {
        c.is_whitespace()
            || c.is_control()
            || is_invisible(c)
            // Blank letters (the Hangul fillers, the empty Braille
            // pattern), direction controls, variation selectors, tags and
            // other characters that draw nothing.
            || matches!(
                c,
                '\u{034F}'
                    | '\u{115F}'
                    | '\u{1160}'
                    | '\u{17B4}'
                    | '\u{17B5}'
                    | '\u{202A}'..='\u{202E}'
                    | '\u{2066}'..='\u{2069}'
                    | '\u{2800}'
                    | '\u{3164}'
                    | '\u{FE00}'..='\u{FE0F}'
                    | '\u{FFA0}'
                    | '\u{1D173}'..='\u{1D17A}'
                    | '\u{E0000}'..='\u{E007F}'
                    | '\u{E0100}'..='\u{E01EF}'
            )
    })
}

/// What a field that must be one line is told.
pub const ONE_LINE: &str = "must be one line, without control characters (line breaks, tabs, NUL), \
     line or paragraph separators (U+2028, U+2029) or direction overrides (U+202A-U+202E, U+2066-U+2069)";
const MAX_EXPIRY_DAYS: i64 = 366;

/// What validation needs to know beyond the body itself.
pub struct ValidationContext {
    pub now: Timestamp,
    /// `--allow-private-callbacks`: accept loopback/private callback hosts (tests, dev).
    pub allow_private_callbacks: bool,
    /// Approval policies need a team workspace (guide: "Approval policies").
    pub team_workspace: bool,
    /// On PATCH: the fields the patch sets. Checks that depend on the time or on
    /// the instance's settings (expiry in the future, callback host, team
    /// workspace) then apply only to those fields, so an untouched field that
    /// was valid when set does not block an unrelated change. None on create.
    pub patched: Option<Vec<String>>,
}

impl ValidationContext {
    fn checks(&self, field: &str) -> bool {
        self.patched
            .as_ref()
            .is_none_or(|p| p.iter().any(|f| f == field))
    }
}

/// How many unknown fields one refusal names; the rest are counted, so a
/// body of many keys cannot make an answer many times its size.
pub const MAX_UNKNOWN_LISTED: usize = 20;

/// The refusal of the `unknown` fields of a body whose fields are `known`:
/// each named (up to MAX_UNKNOWN_LISTED), the known ones said once.
pub fn unknown_field_errors(unknown: &[&str], known: &[&str]) -> Vec<FieldError> {
    let mut out: Vec<FieldError> = unknown
        .iter()
        .take(MAX_UNKNOWN_LISTED)
        .enumerate()
        .map(|(i, k)| {
            let msg = if i == 0 {
                format!("unknown field `{k}`; the fields are {}", known.join(", "))
            } else {
                format!("unknown field `{k}`")
            };
            FieldError::new(*k, msg)
        })
        .collect();
    if unknown.len() > MAX_UNKNOWN_LISTED {
        let rest = unknown.len() - MAX_UNKNOWN_LISTED;
        let mut summary = FieldError::new(
            "body",
            format!(
                "and {} more unknown {}",
                rest,
                if rest == 1 { "field" } else { "fields" }
            ),
        );
        summary.more = rest - 1;
        out.push(summary);
    }
    out
}

/// Parses a create body. Unknown fields are all reported at once; type errors
/// name the path of the first offending field.
pub fn parse_create(body: Value) -> Result<ActionSpec, Error> {
    let Value::Object(map) = body else {
        return Err(Error::field(
            "body",
            "the request body must be a JSON object",
        ));
    };
    let unknown: Vec<&str> = map
        .keys()
        .map(String::as_str)
        .filter(|k| !CREATE_FIELDS.contains(k))
        .collect();
    if !unknown.is_empty() {
        return Err(Error::validation(unknown_field_errors(
            &unknown,
            CREATE_FIELDS,
        )));
    }
    let body = Value::Object(map);
    check_numbers(&body, "")?;
    from_json(body)
}

/// Parses a create body from its bytes. The common case (a valid body) goes
/// straight into `ActionSpec`; only a failing body takes the slower route
/// through `parse_create`, which names every problem.
pub fn parse_create_bytes(bytes: &[u8]) -> Result<ActionSpec, Error> {
    crate::domain::strict_json::check(bytes)?;
    if let Ok(spec) = serde_json::from_slice::<ActionSpec>(bytes) {
        // Typed fields are bounded by validation; free-form ones are checked here.
        if let Some(v) = &spec.decision_context {
            check_numbers(v, "decision_context")?;
        }
        if let Some(m) = &spec.metadata {
            m.iter()
                .try_for_each(|(k, v)| check_numbers(v, &format!("metadata.{k}")))?;
        }
        return Ok(spec);
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        Error::validation(vec![FieldError::new(
            "body",
            format!("the request body is not valid JSON ({e}); send a JSON object ({{…}})"),
        )])
    })?;
    parse_create(value)
}

/// A create request as its idempotency hash sees it (guide: "Idempotency and
/// retries"): a field sent with its documented default counts as left out,
/// and an option's `sort_order`, always recomputed, as not sent. Borrowed,
/// with no copy, when the request sends no default (nearly always).
pub fn without_defaults(spec: &ActionSpec) -> std::borrow::Cow<'_, ActionSpec> {
    use crate::domain::action::{ActionOption, ApprovalPolicy, Control, OnExpire};
    let default_option =
        |o: &ActionOption| o.style.as_deref() == Some("secondary") || o.sort_order.is_some();
    // `false` is the default of every kind (a link control may not be
    // mutating: `true` is refused there).
    let default_control = |c: &Control| c.mutating == Some(false);
    let default_expiry = |e: &OnExpire| e.action == "expire" && e.option_id.is_none();
    let default_threshold = |p: &ApprovalPolicy| p.reject_threshold == Some(1);
    let any = spec.context_request_mode.as_deref() == Some("unsupported")
        || spec.visibility.as_deref() == Some("workspace")
        || spec.on_expire.as_ref().is_some_and(default_expiry)
        || spec
            .controls
            .as_ref()
            .is_some_and(|c| c.is_empty() || c.iter().any(default_control))
        || spec
            .options
            .as_ref()
            .is_some_and(|o| o.iter().any(default_option))
        || spec.approval_policy.as_ref().is_some_and(default_threshold);
    if !any {
        return std::borrow::Cow::Borrowed(spec);
    }
    // Its rules are those of the `t2:` hashes stored by earlier versions
    // (`empty_as_absent` came later): only `"controls": []` is a default here.
    let mut s = spec.clone();
    if s.context_request_mode.as_deref() == Some("unsupported") {
        s.context_request_mode = None;
    }
    if s.visibility.as_deref() == Some("workspace") {
        s.visibility = None;
    }
    if s.on_expire.as_ref().is_some_and(default_expiry) {
        s.on_expire = None;
    }
    if s.controls.as_ref().is_some_and(|c| c.is_empty()) {
        s.controls = None;
    }
    for c in s.controls.iter_mut().flatten() {
        if default_control(c) {
            c.mutating = None;
        }
    }
    for o in s.options.iter_mut().flatten() {
        if o.style.as_deref() == Some("secondary") {
            o.style = None;
        }
        o.sort_order = None;
    }
    if let Some(p) = s.approval_policy.as_mut().filter(|p| default_threshold(p)) {
        p.reject_threshold = None;
    }
    std::borrow::Cow::Owned(s)
}

/// Material content that shows a reviewer nothing counts as left out:
/// `"controls": []`, `"context": []`, `"decision_context": {}` and
/// `"description": ""` are stored as absent, so the Action's fingerprint is
/// the same either way (a `dedupe_key` retry matches, and a PATCH that sends
/// one to an Action without it changes nothing). Applied to what a request
/// sends (a create's body, a PATCH's fields), never to what is stored: an
/// Action stored with `[]` keeps its fingerprint.
pub fn empty_as_absent(mut s: ActionSpec) -> ActionSpec {
    if s.controls.as_ref().is_some_and(Vec::is_empty) {
        s.controls = None;
    }
    if s.context.as_ref().is_some_and(Vec::is_empty) {
        s.context = None;
    }
    if s.decision_context
        .as_ref()
        .is_some_and(|c| c.as_object().is_some_and(Map::is_empty))
    {
        s.decision_context = None;
    }
    if s.description.as_deref() == Some("") {
        s.description = None;
    }
    s
}

/// A PATCH field whose value `empty_as_absent` counts as left out: it
/// clears the field, as `null` does.
fn shows_nothing(field: &str, v: &Value) -> bool {
    match field {
        "controls" | "context" => v.as_array().is_some_and(Vec::is_empty),
        "decision_context" => v.as_object().is_some_and(Map::is_empty),
        "description" => v.as_str() == Some(""),
        _ => false,
    }
}

/// Applies a PATCH body to the stored spec and re-parses the result, so a patch
/// is held to exactly the rules of create.
pub fn apply_patch(current: &ActionSpec, patch: Value) -> Result<ActionSpec, Error> {
    let Value::Object(patch) = patch else {
        return Err(Error::field(
            "body",
            "the request body must be a JSON object",
        ));
    };
    let mut problems = Vec::new();
    for k in patch.keys() {
        if CREATE_FIELDS.contains(&k.as_str()) && !PATCH_FIELDS.contains(&k.as_str()) {
            problems.push(FieldError::new(
                k.clone(),
                format!("`{k}` is set on create and cannot change"),
            ));
        } else if !PATCH_FIELDS.contains(&k.as_str()) {
            problems.push(FieldError::new(k.clone(), format!("unknown field `{k}`")));
        } else if k == "title" && patch[k].is_null() {
            // `null` clears a field; an Action always has a title.
            problems.push(FieldError::new(
                "title",
                "title cannot be cleared: send the new title instead of null",
            ));
        }
    }
    if patch.is_empty() {
        problems.push(FieldError::new(
            "body",
            "a PATCH needs at least one field to change",
        ));
    }
    if !problems.is_empty() {
        return Err(Error::validation(problems));
    }
    check_numbers(&Value::Object(patch.clone()), "")?;
    let mut merged = match serde_json::to_value(current)? {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    for (k, v) in patch {
        // An empty value clears the field, unless the Action holds exactly
        // that (one stored before `empty_as_absent`): then nothing changes.
        if v.is_null() || shows_nothing(&k, &v) && merged.get(&k) != Some(&v) {
            merged.remove(&k);
        } else {
            merged.insert(k, v);
        }
    }
    from_json(Value::Object(merged))
}

/// Integers beyond ±2^53 lose precision in RFC 8785 canonical form, so two
/// different values could share a fingerprint. I-JSON (RFC 7493) rules them out.
fn check_numbers(v: &Value, path: &str) -> Result<(), Error> {
    const LIMIT: u64 = 1 << 53;
    match v {
        Value::Number(n) => {
            let too_big = n.as_u64().is_some_and(|u| u > LIMIT)
                || n.as_i64().is_some_and(|i| i.unsigned_abs() > LIMIT);
            if too_big {
                let field = if path.is_empty() { "body" } else { path };
                return Err(Error::field(
                    field,
                    format!(
                        "{field}: integers must be within ±2^53 (I-JSON, RFC 7493); send larger values as strings"
                    ),
                ));
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, x)| check_numbers(x, &format!("{path}[{i}]"))),
        Value::Object(m) => m.iter().try_for_each(|(k, x)| {
            check_numbers(
                x,
                &if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                },
            )
        }),
        _ => Ok(()),
    }
}

fn from_json(v: Value) -> Result<ActionSpec, Error> {
    serde_path_to_error::deserialize::<_, ActionSpec>(crate::domain::strict_json::ObjectsOnly(&v))
        .map_err(|e| {
            let (path, msg) = crate::domain::strict_json::refusal::<ActionSpec>(&v)
                .unwrap_or_else(|| (e.path().to_string(), e.into_inner().to_string()));
            let field = if path == "." { "body".to_owned() } else { path };
            Error::validation(vec![FieldError::new(
                field.clone(),
                format!("{field}: {msg}"),
            )])
        })
}

/// Checks every rule and normalises: trims, fills option ids/styles/sort
/// orders, canonicalises `expires_at` and `callback_url` (its WHATWG serialisation).
pub fn validate_spec(mut s: ActionSpec, ctx: &ValidationContext) -> Result<ActionSpec, Error> {
    let mut errs = Vec::new();

    s.title = s.title.trim().to_owned();
    if s.title.is_empty() {
        errs.push(FieldError::new(
            "title",
            "title is required and must not be blank",
        ));
    } else if ctx.checks("title") && says_nothing(&s.title) {
        errs.push(FieldError::new("title", format!("title {SHOWS_NOTHING}")));
    } else if s.title.chars().count() > MAX_TITLE {
        errs.push(FieldError::new(
            "title",
            format!("title is longer than {MAX_TITLE} characters"),
        ));
    } else if s.title.chars().any(char::is_control)
        || (ctx.checks("title") && !is_one_line(&s.title))
    {
        errs.push(FieldError::new(
            "title",
            format!("title {ONE_LINE}; put detail in description"),
        ));
    }
    if s.description
        .as_ref()
        .is_some_and(|d| d.chars().count() > MAX_DESCRIPTION)
    {
        errs.push(FieldError::new(
            "description",
            format!("description is longer than {MAX_DESCRIPTION} characters"),
        ));
    } else if ctx.checks("description")
        && s.description.as_deref().is_some_and(has_direction_override)
    {
        errs.push(FieldError::new(
            "description",
            direction_refused("description"),
        ));
    }
    // Every string of the context blocks a reviewer reads (text, code,
    // labels, keys and values, URLs).
    if ctx.checks("context")
        && let Some(path) = s
            .context
            .as_ref()
            .and_then(|b| serde_json::to_value(b).ok())
            .and_then(|v| first_direction_override(&v, "context"))
    {
        errs.push(FieldError::new(path.clone(), direction_refused(&path)));
    }

    match (&mut s.options, &s.interaction) {
        (Some(_), Some(_)) => errs.push(FieldError::new(
            "interaction",
            "options and interaction are mutually exclusive; send one of them",
        )),
        (None, None) => errs.push(FieldError::new(
            "options",
            "an Action needs either `options` (single choice) or a typed `interaction`",
        )),
        (Some(options), None) => check_options(options, ctx.checks("options"), &mut errs),
        (None, Some(i)) => check_interaction(i, ctx.checks("interaction"), &mut errs),
    }

    // URLs are limited in length when they are set: one stored before the
    // limit does not block an unrelated change.
    if let Some(u) = &s.open_url
        && (!is_http_url(u) || ctx.checks("open_url") && u.len() > MAX_URL)
    {
        errs.push(FieldError::with_code(
            "open_url",
            Code::InvalidOpenUrl,
            format!("open_url must be an absolute http or https URL of at most {MAX_URL} bytes"),
        ));
    } else if let Some(u) = &s.open_url
        && ctx.checks("open_url")
        && has_credentials(u)
    {
        errs.push(FieldError::with_code(
            "open_url",
            Code::InvalidOpenUrl,
            credentials_refused("open_url"),
        ));
    }

    if let Some(raw) = s.expires_at.clone().filter(|_| ctx.checks("expires_at")) {
        match clock::parse(&raw) {
            None => errs.push(FieldError::with_code(
                "expires_at",
                Code::InvalidExpiration,
                "expires_at must be an RFC 3339 timestamp with an offset, e.g. 2026-12-01T09:00:00Z",
            )),
            Some(t) if t <= ctx.now => errs.push(FieldError::with_code(
                "expires_at",
                Code::InvalidExpiration,
                "expires_at must be in the future",
            )),
            Some(t) if t > ctx.now + Duration::days(MAX_EXPIRY_DAYS) => errs.push(FieldError::with_code(
                "expires_at",
                Code::InvalidExpiration,
                format!("expires_at must be within {MAX_EXPIRY_DAYS} days"),
            )),
            Some(t) => s.expires_at = Some(clock::format(t)),
        }
    }

    if let Some(oe) = &s.on_expire {
        match oe.action.as_str() {
            "expire" | "cancel" if oe.option_id.is_none() => {}
            "expire" | "cancel" => errs.push(FieldError::new(
                "on_expire.option_id",
                "option_id is only used with action `resolve`",
            )),
            "resolve" if s.options.is_none() => errs.push(FieldError::new(
                "on_expire.action",
                "action `resolve` needs an Action answered by options (it resolves with one of them); a typed Action can expire or be cancelled",
            )),
            "resolve" => match &oe.option_id {
                Some(id) if s.option(id).is_some() => {}
                Some(id) => errs.push(FieldError::new(
                    "on_expire.option_id",
                    format!("`{id}` is not one of this Action's options"),
                )),
                None => errs.push(FieldError::new(
                    "on_expire.option_id",
                    "action `resolve` needs the option_id to resolve with",
                )),
            },
            other => errs.push(FieldError::new(
                "on_expire.action",
                format!("unknown on_expire action `{other}`; use expire, cancel or resolve"),
            )),
        }
    }

    // Stored, returned and sent in its normalised form, never as sent: another
    // URL parser could read another host out of the raw text (guide: "Callback
    // URLs and private networks").
    if let Some(u) = s
        .callback_url
        .as_mut()
        .filter(|_| ctx.checks("callback_url"))
    {
        match normalise_callback_url(u, ctx.allow_private_callbacks) {
            Ok(normal) => *u = normal,
            Err(why) => errs.push(FieldError::with_code(
                "callback_url",
                Code::InvalidCallbackUrl,
                why,
            )),
        }
    }
    match s.context_request_mode.as_deref() {
        None | Some("unsupported") | Some("poll") => {}
        Some("callback") if s.callback_url.is_some() => {}
        Some("callback") => errs.push(FieldError::new(
            "context_request_mode",
            "context_request_mode `callback` requires callback_url",
        )),
        Some(other) => errs.push(FieldError::new(
            "context_request_mode",
            format!("unknown mode `{other}`; use unsupported, poll or callback"),
        )),
    }

    if let Some(controls) = &s.controls {
        if controls.len() > MAX_CONTROLS {
            errs.push(FieldError::new(
                "controls",
                format!("at most {MAX_CONTROLS} controls per Action"),
            ));
        }
        if controls.iter().filter(|c| c.mutating == Some(true)).count() > MAX_MUTATING_CONTROLS {
            errs.push(FieldError::new(
                "controls",
                format!("at most {MAX_MUTATING_CONTROLS} mutating controls per Action"),
            ));
        }
        let mut keys = HashSet::new();
        for (i, c) in controls.iter().enumerate() {
            let at = |f: &str| format!("controls[{i}].{f}");
            if !is_slug(&c.key) {
                errs.push(FieldError::new(
                    at("key"),
                    "key must be 1-64 characters of a-z, 0-9, _ or -",
                ));
            } else if !keys.insert(c.key.as_str()) {
                errs.push(FieldError::new(
                    at("key"),
                    format!("duplicate control key `{}`", c.key),
                ));
            }
            if c.label.trim().is_empty() {
                errs.push(FieldError::new(at("label"), "label must not be blank"));
            } else if ctx.checks("controls") {
                label_rules(&c.label, at("label"), &mut errs);
            }
            if let Some(text) = c.confirm.as_deref().filter(|_| ctx.checks("controls")) {
                if says_nothing(text) {
                    errs.push(FieldError::new(
                        at("confirm"),
                        "confirm must not be blank: leave it out to ask nothing (or, for a mutating control, the default question)",
                    ));
                } else if text.chars().count() > MAX_CONFIRM {
                    errs.push(FieldError::new(
                        at("confirm"),
                        format!("confirm must be at most {MAX_CONFIRM} characters"),
                    ));
                } else if !is_one_line(text) {
                    errs.push(FieldError::new(
                        at("confirm"),
                        format!("confirm {ONE_LINE}"),
                    ));
                }
            }
            match c.kind.as_str() {
                "callback" => {
                    if s.callback_url.is_none() {
                        errs.push(FieldError::new(
                            at("kind"),
                            "a callback control needs the Action's callback_url",
                        ));
                    }
                    if c.url.is_some() {
                        errs.push(FieldError::new(at("url"), "only link controls have a url"));
                    }
                }
                "link" => {
                    if !c.url.as_deref().is_some_and(|u| {
                        is_http_url(u) && !(ctx.checks("controls") && u.len() > MAX_URL)
                    }) {
                        errs.push(FieldError::new(
                            at("url"),
                            format!("a link control needs an absolute http or https url of at most {MAX_URL} bytes"),
                        ));
                    } else if ctx.checks("controls")
                        && c.url.as_deref().is_some_and(has_credentials)
                    {
                        errs.push(FieldError::new(at("url"), credentials_refused("url")));
                    }
                    if c.mutating == Some(true) {
                        errs.push(FieldError::new(
                            at("mutating"),
                            "a link control only opens its url, so it cannot be mutating: leave mutating out (or false), or make it a callback control",
                        ));
                    }
                }
                other => errs.push(FieldError::new(
                    at("kind"),
                    format!("unknown control kind `{other}`; use callback or link"),
                )),
            }
        }
    }

    if let Some(blocks) = &s.context {
        if blocks.len() > MAX_CONTEXT_BLOCKS {
            errs.push(FieldError::new(
                "context",
                format!("at most {MAX_CONTEXT_BLOCKS} context blocks"),
            ));
        }
        for (i, b) in blocks.iter().enumerate() {
            match b {
                ContextBlock::Link { url, .. } | ContextBlock::Image { url, .. }
                    if !is_http_url(url) || ctx.checks("context") && url.len() > MAX_URL =>
                {
                    errs.push(FieldError::new(
                        format!("context[{i}].url"),
                        format!(
                            "url must be an absolute http or https URL of at most {MAX_URL} bytes"
                        ),
                    ));
                }
                ContextBlock::Link { url, .. } | ContextBlock::Image { url, .. }
                    if ctx.checks("context") && has_credentials(url) =>
                {
                    errs.push(FieldError::new(
                        format!("context[{i}].url"),
                        credentials_refused("url"),
                    ));
                }
                ContextBlock::Text { text: t } | ContextBlock::Markdown { markdown: t }
                    if ctx.checks("context") && t.chars().count() > MAX_DESCRIPTION =>
                {
                    errs.push(FieldError::new(
                        format!("context[{i}]"),
                        format!(
                            "a text or markdown block holds at most {MAX_DESCRIPTION} characters; \
                             split it, or link to the full text"
                        ),
                    ));
                }
                _ => {}
            }
        }
    }

    if s.decision_class
        .as_ref()
        .is_some_and(|c| c.is_empty() || c.chars().count() > 100)
    {
        errs.push(FieldError::new(
            "decision_class",
            "decision_class must be 1-100 characters",
        ));
    }
    if s.decision_context.as_ref().is_some_and(|c| !c.is_object()) {
        errs.push(FieldError::new(
            "decision_context",
            "decision_context must be a JSON object",
        ));
    }
    if let Some(m) = &s.metadata {
        let size = serde_json::to_vec(m).map(|v| v.len()).unwrap_or(usize::MAX);
        if size > MAX_METADATA_BYTES {
            errs.push(FieldError::new(
                "metadata",
                format!("metadata is {size} bytes; the limit is {MAX_METADATA_BYTES} (32 KB)"),
            ));
        }
    }

    // Create-only fields: checked on create. A PATCH never sends them, and
    // an Action stored under an older, looser rule must stay patchable.
    if let Some(e) = &s.assignee_email
        && ctx.checks("assignee_email")
        && !looks_like_email(e)
    {
        errs.push(FieldError::new(
            "assignee_email",
            not_an_email("assignee_email", e),
        ));
    }
    if let Some(e) = &s.requested_by_email
        && ctx.checks("requested_by_email")
        && !looks_like_email(e)
    {
        errs.push(FieldError::new(
            "requested_by_email",
            not_an_email("requested_by_email", e),
        ));
    }
    check_visibility(&s, ctx, &mut errs);

    if let Some(k) = &s.dedupe_key
        && (k.is_empty() || k.chars().count() > 255)
    {
        errs.push(FieldError::new(
            "dedupe_key",
            "dedupe_key must be 1-255 characters",
        ));
    }

    if errs.is_empty() {
        Ok(s)
    } else {
        Err(Error::validation(errs))
    }
}

/// A label of a control, a choice or a form field: at most [`MAX_LABEL`]
/// characters, one line (checked when the field is set: one stored before
/// these rules stays patchable).
fn label_rules(label: &str, field: String, errs: &mut Vec<FieldError>) {
    if says_nothing(label) {
        errs.push(FieldError::new(field, format!("label {SHOWS_NOTHING}")));
    } else if label.chars().count() > MAX_LABEL {
        errs.push(FieldError::new(
            field,
            format!("label must be at most {MAX_LABEL} characters"),
        ));
    } else if !is_one_line(label) {
        errs.push(FieldError::new(field, format!("label {ONE_LINE}")));
    }
}

/// `checks_options`: the options are being set (create, or a PATCH of
/// them), so the rules added since an Action was stored apply too.
fn check_options(
    options: &mut [crate::domain::action::ActionOption],
    checks_options: bool,
    errs: &mut Vec<FieldError>,
) {
    if options.is_empty() || options.len() > MAX_OPTIONS {
        errs.push(FieldError::new(
            "options",
            format!("options must hold 1 to {MAX_OPTIONS} entries"),
        ));
    }
    let mut ids = HashSet::new();
    for (i, o) in options.iter_mut().enumerate() {
        o.label = o.label.trim().to_owned();
        if o.label.is_empty() || o.label.chars().count() > 100 {
            errs.push(FieldError::new(
                format!("options[{i}].label"),
                "label must be 1-100 characters",
            ));
        } else if checks_options && says_nothing(&o.label) {
            errs.push(FieldError::new(
                format!("options[{i}].label"),
                format!("label {SHOWS_NOTHING}"),
            ));
        } else if o.label.chars().any(char::is_control)
            || (checks_options && !is_one_line(&o.label))
        {
            errs.push(FieldError::new(
                format!("options[{i}].label"),
                format!("label {ONE_LINE}"),
            ));
        }
        let id = o.id.clone().unwrap_or_else(|| slugify(&o.label, i));
        if !is_option_id(&id) {
            errs.push(FieldError::new(
                format!("options[{i}].id"),
                "id must be 1-64 characters of letters, digits, _ . : or -",
            ));
        } else if !ids.insert(id.clone()) {
            errs.push(FieldError::new(
                format!("options[{i}].id"),
                format!("duplicate option id `{id}`"),
            ));
        }
        o.id = Some(id);
        let style = o.style.clone().unwrap_or_else(|| "secondary".into());
        if !matches!(style.as_str(), "primary" | "secondary" | "destructive") {
            errs.push(FieldError::new(
                format!("options[{i}].style"),
                "style must be primary, secondary or destructive",
            ));
        }
        o.style = Some(style);
        o.sort_order = Some(i as i64);
    }
}

fn check_interaction(i: &Interaction, checks_interaction: bool, errs: &mut Vec<FieldError>) {
    match i {
        Interaction::Boolean {} => {}
        Interaction::Text { max_length, .. } => {
            if max_length.is_some_and(|m| m == 0 || m > 100_000) {
                errs.push(FieldError::new(
                    "interaction.max_length",
                    "max_length must be 1-100000",
                ));
            } else if let Some(why) = crate::domain::decision::default_refused(i) {
                errs.push(FieldError::new("interaction.default", why));
            }
        }
        Interaction::Number { min, max, .. } => {
            if let (Some(a), Some(b)) = (min, max)
                && a > b
            {
                errs.push(FieldError::new(
                    "interaction.min",
                    "min must not exceed max",
                ));
            } else if let Some(why) = crate::domain::decision::default_refused(i) {
                errs.push(FieldError::new("interaction.default", why));
            }
        }
        Interaction::Choice { choices, .. } => {
            if choices.is_empty() || choices.len() > 50 {
                errs.push(FieldError::new(
                    "interaction.choices",
                    "choices must hold 1 to 50 entries",
                ));
            }
            let mut ids = HashSet::new();
            for (n, c) in choices.iter().enumerate() {
                if !is_option_id(&c.id) || !ids.insert(c.id.as_str()) {
                    errs.push(FieldError::new(
                        format!("interaction.choices[{n}].id"),
                        "choice ids must be unique, 1-64 characters of letters, digits, _ . : or -",
                    ));
                }
                if c.label.trim().is_empty() {
                    errs.push(FieldError::new(
                        format!("interaction.choices[{n}].label"),
                        "label must not be blank",
                    ));
                } else if checks_interaction {
                    label_rules(&c.label, format!("interaction.choices[{n}].label"), errs);
                }
            }
        }
        Interaction::Form { fields } => {
            if fields.is_empty() || fields.len() > 50 {
                errs.push(FieldError::new(
                    "interaction.fields",
                    "fields must hold 1 to 50 entries",
                ));
            }
            let mut keys = HashSet::new();
            for (n, f) in fields.iter().enumerate() {
                if !is_slug(&f.key) || !keys.insert(f.key.as_str()) {
                    errs.push(FieldError::new(
                        format!("interaction.fields[{n}].key"),
                        "field keys must be unique, 1-64 characters of a-z, 0-9, _ or -",
                    ));
                }
                // New rules: an Action stored before them stays patchable.
                if checks_interaction {
                    if f.label.trim().is_empty() {
                        errs.push(FieldError::new(
                            format!("interaction.fields[{n}].label"),
                            "label must not be blank",
                        ));
                    } else {
                        label_rules(&f.label, format!("interaction.fields[{n}].label"), errs);
                    }
                }
                if !matches!(f.kind.as_str(), "text" | "number" | "boolean") {
                    errs.push(FieldError::new(
                        format!("interaction.fields[{n}].type"),
                        "type must be text, number or boolean",
                    ));
                }
            }
        }
    }
}

fn check_visibility(s: &ActionSpec, ctx: &ValidationContext, errs: &mut Vec<FieldError>) {
    let lists = [
        ("reviewer_emails", &s.reviewer_emails),
        ("reviewer_user_ids", &s.reviewer_user_ids),
    ];
    let visibility = s.visibility.as_deref().unwrap_or("workspace");
    match Visibility::parse(visibility) {
        Some(Visibility::Workspace) => {
            for (name, list) in lists {
                if list.is_some() {
                    errs.push(FieldError::new(
                        name,
                        format!("{name} is only used with visibility `restricted`"),
                    ));
                }
            }
        }
        Some(Visibility::Restricted) => {
            let given: Vec<_> = lists
                .iter()
                .filter(|(_, l)| l.as_ref().is_some_and(|l| !l.is_empty()))
                .collect();
            if given.len() != 1 {
                errs.push(FieldError::new("visibility", "visibility `restricted` needs exactly one non-empty list: reviewer_emails or reviewer_user_ids"));
            }
            for (name, list) in lists {
                if let Some(l) = list {
                    if l.len() > MAX_REVIEWERS {
                        errs.push(FieldError::new(
                            name,
                            format!("at most {MAX_REVIEWERS} reviewers"),
                        ));
                    }
                    if name == "reviewer_emails"
                        && ctx.checks(name)
                        && let Some((i, e)) =
                            l.iter().enumerate().find(|(_, e)| !looks_like_email(e))
                    {
                        errs.push(FieldError::new(
                            name,
                            not_an_email(&format!("{name}[{i}]"), e),
                        ));
                    }
                }
            }
        }
        None => errs.push(FieldError::new(
            "visibility",
            format!("unknown visibility `{visibility}`; use workspace or restricted"),
        )),
    }
    if let Some(p) = &s.approval_policy {
        if !ctx.team_workspace && ctx.checks("approval_policy") {
            errs.push(FieldError::new(
                "approval_policy",
                "approval_policy is available to Sources of team workspaces only",
            ));
        }
        let two_way = matches!(s.interaction, Some(Interaction::Boolean {}))
            || s.options.as_ref().is_some_and(|o| o.len() == 2);
        if s.visibility() != Visibility::Restricted || !two_way {
            errs.push(FieldError::new(
                "approval_policy",
                "approval_policy needs visibility `restricted` and a boolean or two-option Action",
            ));
        }
        let reviewers = [&s.reviewer_emails, &s.reviewer_user_ids]
            .iter()
            .filter_map(|l| l.as_ref())
            .map(Vec::len)
            .max()
            .unwrap_or(0);
        // Above the listed count is refused here; how many of them may
        // vote is known only with the members (service::actions).
        let bound = |name: &str, n: u32| match n {
            0 => Some(format!("{name} must be at least 1")),
            n if n as usize > reviewers.max(1) => Some(format!(
                "{name} must be at most the number of listed reviewers ({}), not {n}",
                reviewers.max(1)
            )),
            _ => None,
        };
        if let Some(m) = bound("required_approvals", p.required_approvals) {
            errs.push(FieldError::new("approval_policy.required_approvals", m));
        }
        if let Some(m) = p
            .reject_threshold
            .and_then(|r| bound("reject_threshold", r))
        {
            errs.push(FieldError::new("approval_policy.reject_threshold", m));
        }
    }
}

fn is_slug(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

fn is_option_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b))
}

/// What a field that must hold one e-mail address is told when `value` is
/// not one: the value quoted (at most 100 characters; control and invisible
/// characters become escapes where the message is built), then the rule.
pub fn not_an_email(field: &str, value: &str) -> String {
    let mut shown: String = value.chars().take(100).collect();
    if value.chars().count() > 100 {
        shown.push('…');
    }
    format!(
        "{field} `{shown}` is not one e-mail address: use one such as ana@example.com, with no spaces or invisible characters and a dotted domain name after the @, at most 254 characters"
    )
}

/// One e-mail address: a local part, `@`, a domain of two or more labels;
/// no whitespace, control, invisible (zero-width, BOM) or direction-override
/// character anywhere (a stray space would make the address match no member,
/// so a requester named with one could decide their own request; an
/// invisible one makes two addresses look alike), at most 254 characters.
/// The domain is a name (ASCII letters, digits, `-` inside a label, or
/// letters of other scripts; a top-level label not all digits), not an
/// address such as `[127.0.0.1]` or `127.0.0.1`, and the local part holds
/// none of the characters that need quoting (`()<>[]\,;:"`): no mail relay
/// takes those from hds, so an invitation to one could never arrive. Shared by every field that names a
/// person by address (Actions, invitations, sign-in by a provider).
pub fn looks_like_email(s: &str) -> bool {
    if s.chars().count() > 254
        || s.chars()
            .any(|c| c.is_whitespace() || c.is_control() || is_invisible(c))
        || has_direction_override(s)
    {
        return false;
    }
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    // ASCII letters, digits and `-`, or any other script's characters
    // (an internationalised domain); the OpenAPI pattern says the same.
    let label_ok = |l: &str| {
        !l.is_empty()
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || !c.is_ascii())
    };
    // Doubled or outer dots are kept: some carriers' addresses have them
    // (`taro..yamada@docomo.ne.jp`); a relay that refuses one marks the
    // e-mail failed, and the invitation still stands.
    let local_ok = !local.is_empty() && !local.chars().any(|c| "()<>[]\\,;:\"@".contains(c));
    let labels: Vec<&str> = domain.split('.').collect();
    local_ok
        && labels.len() >= 2
        && labels.iter().all(|l| label_ok(l))
        // A name, not an IPv4 address: no top-level domain is all digits.
        && labels
            .last()
            .is_some_and(|t| !t.chars().all(|c| c.is_ascii_digit()))
        // `.invalid` can never receive mail (RFC 2606), and deleted accounts
        // keep such an address: no one may be named by one.
        && labels
            .last()
            .is_some_and(|t| !t.eq_ignore_ascii_case("invalid"))
}

/// `Ship it!` → `ship_it`; falls back to `option_N` when nothing is left.
fn slugify(label: &str, index: usize) -> String {
    let mut out = String::new();
    for c in label.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out
        .trim_end_matches('_')
        .chars()
        .take(64)
        .collect::<String>();
    if out.is_empty() {
        format!("option_{}", index + 1)
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Defaults sent count as left out for the idempotency hash; anything
    /// else is kept, and a request without defaults is not copied.
    #[test]
    fn a_boolean_interaction_takes_no_other_key_and_keeps_its_form() {
        let ok = parse_create_bytes(br#"{"title":"x","interaction":{"type":"boolean"}}"#).unwrap();
        assert_eq!(
            serde_json::to_string(&ok.interaction).unwrap(),
            r#"{"type":"boolean"}"#
        );
        for extra in [r#""default":true"#, r#""foo":1"#] {
            let body = format!(r#"{{"title":"x","interaction":{{"type":"boolean",{extra}}}}}"#);
            assert!(parse_create_bytes(body.as_bytes()).is_err(), "{body}");
        }
    }

    #[test]
    fn without_defaults_leaves_out_what_was_sent_as_its_default() {
        let parse = |v: Value| serde_json::from_value::<ActionSpec>(v).unwrap();
        let bare = parse(
            json!({"title": "t", "options": [{"label": "A"}, {"label": "B"}],
            "approval_policy": {"required_approvals": 2}}),
        );
        assert!(matches!(
            without_defaults(&bare),
            std::borrow::Cow::Borrowed(_)
        ));
        let sent = parse(json!({"title": "t",
            "options": [{"label": "A", "style": "secondary", "sort_order": 0}, {"label": "B", "sort_order": 7}],
            "approval_policy": {"required_approvals": 2, "reject_threshold": 1},
            "visibility": "workspace", "context_request_mode": "unsupported",
            "on_expire": {"action": "expire"}, "controls": []}));
        assert_eq!(*without_defaults(&sent), bare);
        let other = parse(json!({"title": "t",
            "options": [{"label": "A", "style": "primary"}, {"label": "B"}],
            "approval_policy": {"required_approvals": 2, "reject_threshold": 2},
            "visibility": "restricted", "context_request_mode": "poll",
            "on_expire": {"action": "cancel"}}));
        let kept = without_defaults(&other);
        assert_eq!(*kept, other);
        // `mutating: false` is the default on a link control too; `true`
        // (refused there) is kept, so that such a retry is not taken for
        // the valid request.
        let link = parse(json!({"title": "t", "options": [{"label": "A"}],
            "controls": [{"key": "l", "label": "L", "kind": "link", "url": "https://x.example.com", "mutating": false}]}));
        let plain = parse(json!({"title": "t", "options": [{"label": "A"}],
            "controls": [{"key": "l", "label": "L", "kind": "link", "url": "https://x.example.com"}]}));
        assert_eq!(*without_defaults(&link), plain);
        let mutating = parse(json!({"title": "t", "options": [{"label": "A"}],
            "controls": [{"key": "l", "label": "L", "kind": "link", "url": "https://x.example.com", "mutating": true}]}));
        assert!(matches!(
            without_defaults(&mutating),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    fn ctx() -> ValidationContext {
        ValidationContext {
            now: ::time::macros::datetime!(2026-11-23 00:00 UTC),
            allow_private_callbacks: false,
            team_workspace: true,
            patched: None,
        }
    }

    #[test]
    fn an_email_address_is_a_name_at_a_dotted_domain() {
        for ok in [
            "ann@example.com",
            "o'brien+tag@mail.example.co.uk",
            "josé@exämple.de",
            "a-b@xn--bcher-kva.example",
            "a@пример.рф",
            "taro..yamada@docomo.ne.jp",
            "taro.@ezweb.ne.jp",
        ] {
            assert!(looks_like_email(ok), "{ok}");
        }
        for bad in [
            "x\n@allowed.test",
            "@allowed.test",
            "a@b@allowed.test",
            "dave@[127.0.0.1]",
            "a,b@example.com",
            "\"quoted\"@example.com",
            "ann@localhost",
            "ann@-example.com",
            "ann@example.com.",
            " ann@example.com",
            "ann@exa mple.com",
            "a@b_c.com",
            "a\u{202e}@example.com",
            "a\u{200b}@example.com",
            "a@127.0.0.1",
            "a\u{200e}@example.com",
            "a\u{00ad}@example.com",
            "deleted-usr_01JD8X@invalid.",
            "ann@mail.INVALID",
        ] {
            assert!(!looks_like_email(bad), "{bad:?}");
        }
    }

    #[test]
    fn options_get_ids_styles_and_positions() {
        let s = parse_create(json!({"title": " Deploy ", "options": [{"label": "Ship it!"}, {"id": "no", "label": "No", "style": "destructive"}]})).unwrap();
        let s = validate_spec(s, &ctx()).unwrap();
        let o = s.options.unwrap();
        assert_eq!(o[0].id.as_deref(), Some("ship_it"));
        assert_eq!(o[0].style.as_deref(), Some("secondary"));
        assert_eq!(o[1].sort_order, Some(1));
    }

    /// Refusals an integrator can act on: a quorum names how many may vote;
    /// resolve-on-expiry on a typed Action says it needs options.
    #[test]
    fn refusals_say_what_would_be_accepted() {
        let err = |v: Value| {
            let s = parse_create(v).unwrap();
            let e = validate_spec(s, &ctx()).unwrap_err();
            (
                e.details["errors"][0]["field"].as_str().unwrap().to_owned(),
                e.details["errors"][0]["message"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        };
        let (field, message) = err(json!({"title": "x", "visibility": "restricted",
            "options": [{"label": "A"}, {"label": "B"}],
            "reviewer_emails": ["a@example.com", "b@example.com"],
            "approval_policy": {"required_approvals": 3}}));
        assert_eq!(field, "approval_policy.required_approvals");
        assert!(message.contains("listed reviewers (2), not 3"), "{message}");
        let (field, message) = err(json!({"title": "x", "interaction": {"type": "boolean"},
            "on_expire": {"action": "resolve", "option_id": "x"}}));
        assert_eq!(field, "on_expire.action");
        assert!(
            message.contains("needs an Action answered by options"),
            "{message}"
        );
    }

    #[test]
    fn every_unknown_field_is_listed() {
        let e = parse_create(json!({"title": "x", "colour": 1, "size": 2})).unwrap_err();
        assert_eq!(e.code, Code::ValidationError);
        assert_eq!(e.details["errors"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn type_errors_name_the_field_path() {
        let e = parse_create(json!({"title": "x", "options": [{"label": 5}]})).unwrap_err();
        assert_eq!(e.details["errors"][0]["field"], "options[0].label");
    }

    #[test]
    fn specific_codes_win_over_generic_validation() {
        let s =
            parse_create(json!({"title": "", "options": [{"label": "a"}], "open_url": "ftp://x"}))
                .unwrap();
        let e = validate_spec(s, &ctx()).unwrap_err();
        assert_eq!(e.code, Code::InvalidOpenUrl);
        assert_eq!(e.details["errors"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn patch_checks_only_the_time_dependent_fields_it_sets() {
        let s = parse_create(json!({"title": "x", "options": [{"label": "a"}], "expires_at": "2001-01-01T00:00:00Z"})).unwrap();
        let mut c = ctx();
        c.patched = Some(vec!["title".into()]);
        assert!(validate_spec(s.clone(), &c).is_ok());
        c.patched = Some(vec!["expires_at".into()]);
        assert_eq!(
            validate_spec(s, &c).unwrap_err().code,
            Code::InvalidExpiration
        );
    }

    /// An empty value in a PATCH clears the field; an Action stored with
    /// that very value (before `empty_as_absent`) keeps it, so nothing
    /// changes and its fingerprint stays.
    #[test]
    fn an_empty_value_clears_a_field_unless_the_action_holds_it_already() {
        let base = json!({"title": "x", "options": [{"label": "a"}]});
        let without = parse_create(base.clone()).unwrap();
        let cleared = apply_patch(&without, json!({"context": [], "description": ""})).unwrap();
        assert_eq!((cleared.context, cleared.description), (None, None));
        let mut legacy_body = base;
        legacy_body["context"] = json!([]);
        legacy_body["decision_context"] = json!({});
        let legacy = parse_create(legacy_body).unwrap();
        assert_eq!(legacy.context, Some(vec![]), "parsed as sent");
        let same = apply_patch(&legacy, json!({"context": [], "decision_context": {}})).unwrap();
        assert_eq!(same, legacy);
        assert_eq!(
            crate::domain::fingerprint::fingerprint(&same),
            crate::domain::fingerprint::fingerprint(&legacy)
        );
    }
}
