//! Rules of deciding: the version binding (guide: "Binding: action_version and fingerprint") and checking a
//! chosen option or typed response against the Action (guide: "The Action object").

use serde_json::Value;

use crate::domain::action::{ActionRecord, ActionSpec, Interaction, Status};
use crate::error::{Code, Error};

pub const MAX_REASON: usize = 2_000;

/// The Action must still be open at `now` (the stored format, which
/// sorts in time order): its status, and its `expires_at` not passed. An
/// Action past its deadline is closed by the expiry pass within about a
/// second; until then it accepts nothing either, so no decision, vote or
/// change lands after the deadline and overrides `on_expire`.
pub fn ensure_open(a: &ActionRecord, now: &str) -> Result<(), Error> {
    let deadline = a.spec.expires_at.as_deref().filter(|e| *e <= now);
    match (a.status, deadline) {
        (Status::Open, None) => return Ok(()),
        (Status::Open, Some(expires_at)) => {
            let becomes = match a.spec.on_expire.as_ref().map(|o| o.action.as_str()) {
                Some("resolve") => Status::Resolved,
                Some("cancel") => Status::Cancelled,
                _ => Status::Expired,
            };
            return Err(Error::new(
                Code::ActionNotOpen,
                format!(
                    "Action {} expired at {expires_at}; it is being closed as its on_expire says ({})",
                    a.id,
                    becomes.as_str()
                ),
            )
            .with_detail("status", becomes.as_str())
            .with_detail("expires_at", expires_at));
        }
        _ => {}
    }
    Err(Error::new(
        Code::ActionNotOpen,
        format!(
            "Action {} is {}; only open Actions accept this",
            a.id,
            a.status.as_str()
        ),
    )
    .with_detail("status", a.status.as_str()))
}

/// The caller's binding must match the current version and fingerprint.
/// (A version below 1 or a fingerprint of the wrong shape never gets here:
/// the bodies refuse them, 422 naming the field, `strict_json::version` and
/// `strict_json::fingerprint`.)
pub fn check_binding(
    a: &ActionRecord,
    version: Option<i64>,
    fingerprint: Option<&str>,
) -> Result<(), Error> {
    binding(
        a,
        version,
        fingerprint,
        "the Action changed since it was read; re-read it, show the new content, and decide again",
    )
}

/// [`check_binding`] for pressing a control or voting: the same check,
/// with the same answer in the words of what was being done (`doing`:
/// "press the control", "vote").
pub fn check_binding_to(
    a: &ActionRecord,
    version: i64,
    fingerprint: &str,
    doing: &str,
) -> Result<(), Error> {
    // The words are made only for a refusal.
    if version == a.action_version && fingerprint == a.fingerprint {
        return Ok(());
    }
    binding(
        a,
        Some(version),
        Some(fingerprint),
        &format!(
            "the Action changed since it was read; re-read it, show the new content, and {doing} again"
        ),
    )
}

/// [`check_binding`] for an outcome: the binding names the version that
/// was decided, which never changes once it is.
pub fn check_decided_binding(
    a: &ActionRecord,
    version: Option<i64>,
    fingerprint: Option<&str>,
) -> Result<(), Error> {
    binding(
        a,
        version,
        fingerprint,
        "the binding is not the decided version's: send the action_version and fingerprint of the resolved Action (details), as its receipt states them",
    )
}

/// Takes `action_version` out of a PATCH body: the version the change is
/// based on (optional). Not an integer ≥ 1: 422 naming it.
pub fn patch_base(body: &mut Value) -> Result<Option<i64>, Error> {
    let Some(v) = body
        .as_object_mut()
        .and_then(|o| o.remove("action_version"))
    else {
        return Ok(None);
    };
    // `1.0` is the integer 1 here too (guide: "Conventions").
    match crate::domain::strict_json::integer::<_, i64>(v).ok() {
        Some(n) if n >= 1 => Ok(Some(n)),
        _ => Err(Error::field(
            "action_version",
            "action_version is the version your change is based on: an integer, 1 or more, as the Action you read states it (or leave it out to change whatever version is current)",
        )),
    }
}

/// A PATCH based on a version that is no longer current changes nothing:
/// another change came first (guide: "PATCH /v1/actions/{action_id}").
pub fn check_patch_base(a: &ActionRecord, base: Option<i64>) -> Result<(), Error> {
    binding(
        a,
        base,
        None,
        "the Action changed since the version your change is based on: re-read it, apply your change to what it holds now, and send it with the current action_version (details)",
    )
}

fn binding(
    a: &ActionRecord,
    version: Option<i64>,
    fingerprint: Option<&str>,
    changed: &str,
) -> Result<(), Error> {
    let stale_version = version.is_some_and(|v| v != a.action_version);
    let stale_fp = fingerprint.is_some_and(|f| f != a.fingerprint);
    if !stale_version && !stale_fp {
        return Ok(());
    }
    Err(Error::new(Code::ActionChanged, changed)
        .with_detail("action_version", a.action_version)
        .with_detail("fingerprint", a.fingerprint.clone()))
}

/// `sha256:` and 64 lowercase hex digits: the shape of every fingerprint.
pub fn is_fingerprint(f: &str) -> bool {
    f.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// A decision choosing an option marked `reason_required` must carry a
/// reason that is more than white space. The expiry timer's `on_expire`
/// choice is exempt: no one chose it.
pub fn check_reason_given(
    spec: &ActionSpec,
    option_id: Option<&str>,
    reason: Option<&str>,
) -> Result<(), Error> {
    let Some(o) = option_id.and_then(|id| spec.option(id)) else {
        return Ok(());
    };
    if !o.reason_required || reason.is_some_and(|r| !crate::domain::validate::says_nothing(r)) {
        return Ok(());
    }
    Err(Error::field(
        "reason",
        format!(
            "choosing \"{}\" needs a reason: say why you chose it",
            o.label
        ),
    )
    .with_detail("option_id", o.id.clone()))
}

/// `check_reason_given` for a vote (`approve` or `reject`), which stands for
/// an option (`approval::voted_option`): said of the vote cast.
pub fn check_vote_reason(spec: &ActionSpec, vote: &str, reason: Option<&str>) -> Result<(), Error> {
    let approve = match vote {
        "approve" => true,
        "reject" => false,
        // Not a vote: refused as such where it is cast.
        _ => return Ok(()),
    };
    let Some(o) = crate::domain::approval::voted_option(spec, approve) else {
        return Ok(());
    };
    check_reason_given(spec, o.id.as_deref(), reason).map_err(|_| {
        Error::field(
            "reason",
            format!(
                "a vote to {vote} stands for \"{}\", which needs a reason: say why you vote so",
                o.label
            ),
        )
        .with_detail("option_id", o.id.clone())
    })
}

/// Checks the chosen option or typed response; returns what is recorded.
pub fn check_choice(
    spec: &ActionSpec,
    option_id: Option<&str>,
    response: Option<&Value>,
) -> Result<(Option<String>, Option<Value>), Error> {
    if let Some(options) = &spec.options {
        if response.is_some() {
            return Err(Error::new(
                Code::ResponseTypeMismatch,
                "this Action has options: send option_id, not response",
            ));
        }
        let Some(id) = option_id else {
            return Err(Error::new(
                Code::ResponseRequired,
                "choose one of the Action's options with option_id",
            )
            .with_detail(
                "option_ids",
                options
                    .iter()
                    .filter_map(|o| o.id.clone())
                    .collect::<Vec<_>>(),
            ));
        };
        if spec.option(id).is_none() {
            return Err(Error::new(
                Code::OptionNotFound,
                format!("`{id}` is not one of this Action's options"),
            )
            .with_detail(
                "option_ids",
                options
                    .iter()
                    .filter_map(|o| o.id.clone())
                    .collect::<Vec<_>>(),
            ));
        }
        return Ok((Some(id.to_owned()), None));
    }
    let Some(interaction) = &spec.interaction else {
        return Err(Error::internal(anyhow::anyhow!(
            "Action has neither options nor interaction"
        )));
    };
    if option_id.is_some() {
        return Err(Error::new(
            Code::ResponseTypeMismatch,
            "this Action takes a typed response ({\"value\": …}), not option_id",
        ));
    }
    let Some(response) = response else {
        return Err(Error::new(
            Code::ResponseRequired,
            "this Action needs a response: {\"response\": {\"value\": …}}",
        ));
    };
    let only_value = response
        .as_object()
        .filter(|o| o.len() == 1)
        .and_then(|o| o.get("value"));
    let Some(value) = only_value else {
        return Err(Error::new(
            Code::ResponseTypeMismatch,
            "response must be an object with exactly one member, `value` (nothing else is kept)",
        ));
    };
    check_value(interaction, value)?;
    Ok((None, Some(serde_json::json!({ "value": value }))))
}

fn mismatch(expected: &str) -> Error {
    Error::new(
        Code::ResponseTypeMismatch,
        format!("response.value must be {expected}"),
    )
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(Code::InvalidResponse, msg)
}

/// Why an interaction's `default` could not be given as its answer, if it
/// could not: a proposed answer is held to the rules of a response.
pub fn default_refused(i: &Interaction) -> Option<String> {
    let v = match i {
        Interaction::Text {
            default: Some(d), ..
        } => Value::from(d.as_str()),
        Interaction::Number {
            default: Some(d), ..
        } => Value::from(*d),
        _ => return None,
    };
    check_value(i, &v)
        .err()
        .map(|e| e.message.replace("response.value", "default"))
}

fn check_value(i: &Interaction, v: &Value) -> Result<(), Error> {
    match i {
        Interaction::Boolean {} => v.as_bool().map(|_| ()).ok_or_else(|| mismatch("a boolean")),
        Interaction::Text { max_length, .. } => {
            let s = v.as_str().ok_or_else(|| mismatch("a string"))?;
            if s.trim().is_empty() {
                return Err(invalid("response.value must not be blank"));
            }
            match max_length {
                Some(m) if s.chars().count() as u64 > *m => Err(invalid(format!(
                    "response.value is longer than {m} characters"
                ))),
                _ => Ok(()),
            }
        }
        Interaction::Number { min, max, .. } => {
            let n = v.as_f64().ok_or_else(|| mismatch("a number"))?;
            if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                let range = match (min, max) {
                    (Some(lo), Some(hi)) => format!("from {lo} to {hi}"),
                    (Some(lo), None) => format!("{lo} or more"),
                    (None, Some(hi)) => format!("{hi} or less"),
                    (None, None) => String::new(),
                };
                return Err(invalid(format!(
                    "response.value {n} is outside the allowed range: give a number {range}"
                )));
            }
            Ok(())
        }
        Interaction::Choice { choices, multiple } => {
            let known = |id: &str| choices.iter().any(|c| c.id == id);
            if *multiple {
                let arr = v
                    .as_array()
                    .ok_or_else(|| mismatch("an array of choice ids"))?;
                let ids: Vec<&str> = arr
                    .iter()
                    .map(|x| x.as_str().ok_or_else(|| mismatch("an array of choice ids")))
                    .collect::<Result<_, _>>()?;
                if ids.is_empty() {
                    return Err(invalid("choose at least one choice"));
                }
                let mut seen = std::collections::HashSet::new();
                for id in ids {
                    if !known(id) || !seen.insert(id) {
                        return Err(invalid(format!(
                            "`{id}` is not a choice of this Action, or is repeated"
                        )));
                    }
                }
                Ok(())
            } else {
                let id = v.as_str().ok_or_else(|| mismatch("a choice id (string)"))?;
                if known(id) {
                    Ok(())
                } else {
                    Err(invalid(format!("`{id}` is not a choice of this Action")))
                }
            }
        }
        Interaction::Form { fields } => {
            let obj = v
                .as_object()
                .ok_or_else(|| mismatch("an object of field values"))?;
            if let Some(k) = obj.keys().find(|k| !fields.iter().any(|f| &f.key == *k)) {
                return Err(invalid(format!("`{k}` is not a field of this form")));
            }
            for f in fields {
                match obj.get(&f.key) {
                    None | Some(Value::Null) if f.required => {
                        return Err(invalid(format!("field `{}` is required", f.key)));
                    }
                    None | Some(Value::Null) => {}
                    Some(x) => {
                        let ok = match f.kind.as_str() {
                            "number" => x.is_number(),
                            "boolean" => x.is_boolean(),
                            _ => x.is_string(),
                        };
                        if !ok {
                            return Err(Error::new(
                                Code::ResponseTypeMismatch,
                                format!("field `{}` must be a {}", f.key, f.kind),
                            ));
                        }
                    }
                }
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::action::{Choice, FormField};
    use serde_json::json;

    /// Past `expires_at` an open Action is not open: refused with the
    /// status `on_expire` gives it and the deadline, before the expiry pass
    /// closes it; at the deadline exactly too; before it, open.
    #[test]
    fn an_open_action_past_its_deadline_is_not_open() {
        use crate::domain::action::{ActionRecord, Environment, OnExpire, Work};
        let record = |on_expire: Option<&str>| ActionRecord {
            id: "act_1".into(),
            workspace_id: "ws_1".into(),
            source_id: "src_1".into(),
            environment: Environment::Live,
            status: Status::Open,
            action_version: 1,
            fingerprint: "sha256:x".into(),
            spec: ActionSpec {
                title: "t".into(),
                expires_at: Some("2026-11-26T10:00:00.000Z".into()),
                on_expire: on_expire.map(|a| OnExpire {
                    action: a.into(),
                    option_id: None,
                }),
                ..Default::default()
            },
            resolution: None,
            receipt: None,
            outcome: None,
            snoozed_until: None,
            created_at: "2026-11-26T09:00:00.000Z".into(),
            updated_at: "2026-11-26T09:00:00.000Z".into(),
            closed_at: None,
            work: Work::default(),
        };
        let a = record(None);
        assert!(ensure_open(&a, "2026-11-26T09:59:59.999Z").is_ok());
        for (on_expire, becomes) in [
            (None, "expired"),
            (Some("cancel"), "cancelled"),
            (Some("resolve"), "resolved"),
        ] {
            let e = ensure_open(&record(on_expire), "2026-11-26T10:00:00.000Z").unwrap_err();
            assert_eq!(e.code, Code::ActionNotOpen);
            assert_eq!(e.details["status"], becomes);
            assert_eq!(e.details["expires_at"], "2026-11-26T10:00:00.000Z");
        }
        let mut closed = record(None);
        closed.status = Status::Resolved;
        let e = ensure_open(&closed, "2026-11-26T09:00:00.000Z").unwrap_err();
        assert_eq!(e.details["status"], "resolved");
        assert!(e.details.get("expires_at").is_none());
    }

    fn with(i: Interaction) -> ActionSpec {
        ActionSpec {
            title: "t".into(),
            interaction: Some(i),
            ..Default::default()
        }
    }

    #[test]
    fn typed_responses_map_to_the_three_codes() {
        let b = with(Interaction::Boolean {});
        assert_eq!(
            check_choice(&b, None, None).unwrap_err().code,
            Code::ResponseRequired
        );
        assert_eq!(
            check_choice(&b, None, Some(&json!({"value": "yes"})))
                .unwrap_err()
                .code,
            Code::ResponseTypeMismatch
        );
        assert!(check_choice(&b, None, Some(&json!({"value": true}))).is_ok());
        let n = with(Interaction::Number {
            min: Some(1.0),
            max: Some(5.0),
            default: None,
        });
        assert_eq!(
            check_choice(&n, None, Some(&json!({"value": 9})))
                .unwrap_err()
                .code,
            Code::InvalidResponse
        );
        let c = with(Interaction::Choice {
            choices: vec![Choice {
                id: "a".into(),
                label: "A".into(),
            }],
            multiple: true,
        });
        assert_eq!(
            check_choice(&c, None, Some(&json!({"value": ["b"]})))
                .unwrap_err()
                .code,
            Code::InvalidResponse
        );
        let f = with(Interaction::Form {
            fields: vec![FormField {
                key: "n".into(),
                label: "N".into(),
                kind: "number".into(),
                required: true,
            }],
        });
        assert_eq!(
            check_choice(&f, None, Some(&json!({"value": {}})))
                .unwrap_err()
                .code,
            Code::InvalidResponse
        );
        assert_eq!(
            check_choice(&f, None, Some(&json!({"value": {"n": "1"}})))
                .unwrap_err()
                .code,
            Code::ResponseTypeMismatch
        );
    }
}
