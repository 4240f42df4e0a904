//! How the reviewer answers an Action, as its page prints it: the option
//! buttons (with their keys and the question a destructive one asks), the
//! typed inputs and their limits, and a given answer in words.

use serde_json::Value;

use crate::domain::action::{ActionRecord, Interaction};

pub struct OptionVm {
    pub id: String,
    pub label: String,
    /// CSS class of the button.
    pub class: &'static str,
    pub destructive: bool,
    /// What the confirm dialog asks before a destructive option.
    pub confirm: String,
    /// The key that presses it (`1`-`9`, or `a`/`r` for an approve/reject
    /// pair); empty past the ninth option.
    pub key: String,
}

/// The question before a destructive option, naming the Action and the
/// option: `Choose “Delete the branch” for “Clean up”? This is destructive.`
pub fn confirm_question(title: &str, label: &str) -> String {
    format!("Choose “{label}” for “{title}”? This is destructive.")
}

pub struct ChoiceVm {
    pub id: String,
    pub label: String,
}

pub struct FieldVm {
    pub key: String,
    pub label: String,
    pub kind: String,
    pub required: bool,
}

/// How the reviewer answers: `options`, `vote`, `boolean`, `text`, `number`,
/// `choice`, `form`, or `none` (an Action with nothing to choose).
pub struct AnswerVm {
    pub kind: &'static str,
    pub options: Vec<OptionVm>,
    pub max_length: Option<u64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// The allowed range of a number in words: "2 – 60", "at least 2".
    pub range: Option<String>,
    pub choices: Vec<ChoiceVm>,
    pub multiple: bool,
    pub fields: Vec<FieldVm>,
    /// The hint beside the reason box: which options need one.
    pub reason_hint: String,
    /// The interaction's `default`: the proposed answer the input starts
    /// with, for the reviewer to edit.
    pub proposed: Option<String>,
}

/// The range a number answer must fall in, as the page shows it.
fn number_range(min: Option<f64>, max: Option<f64>) -> Option<String> {
    match (min, max) {
        (Some(lo), Some(hi)) => Some(format!("{lo} – {hi}")),
        (Some(lo), None) => Some(format!("at least {lo}")),
        (None, Some(hi)) => Some(format!("at most {hi}")),
        (None, None) => None,
    }
}

pub(super) fn answer(a: &ActionRecord) -> AnswerVm {
    let mut vm = AnswerVm {
        kind: "none",
        options: Vec::new(),
        max_length: None,
        min: None,
        max: None,
        range: None,
        choices: Vec::new(),
        multiple: false,
        fields: Vec::new(),
        reason_hint: "optional, kept with the decision".into(),
        proposed: None,
    };
    if a.spec.approval_policy.is_some() {
        vm.kind = "vote";
        // A vote stands for the first option (approve) or the second
        // (reject): one that needs a reason needs it on the vote.
        let needs = |i: usize| {
            a.spec
                .options
                .as_ref()
                .and_then(|o| o.get(i))
                .is_some_and(|o| o.reason_required)
        };
        let hint = match (needs(0), needs(1)) {
            (true, true) => Some("needed to approve or reject"),
            (true, false) => Some("needed to approve"),
            (false, true) => Some("needed to reject"),
            (false, false) => None,
        };
        if let Some(h) = hint {
            vm.reason_hint = format!("{h}; kept with your vote");
        }
        return vm;
    }
    if let Some(options) = &a.spec.options {
        vm.kind = "options";
        vm.options = options
            .iter()
            .map(|o| {
                let style = o.style.as_deref().unwrap_or("secondary");
                OptionVm {
                    id: o.id.clone().unwrap_or_default(),
                    label: o.label.clone(),
                    class: match style {
                        "primary" => "btn btn-primary",
                        "destructive" => "btn btn-danger",
                        _ => "btn",
                    },
                    destructive: style == "destructive",
                    confirm: confirm_question(&a.spec.title, &o.label),
                    key: String::new(),
                }
            })
            .collect();
        assign_keys(&mut vm.options);
        let needing: Vec<String> = options
            .iter()
            .filter(|o| o.reason_required)
            .map(|o| format!("“{}”", o.label))
            .collect();
        if !needing.is_empty() {
            vm.reason_hint = format!(
                "needed to choose {}; kept with the decision",
                needing.join(" or ")
            );
        }
        return vm;
    }
    match &a.spec.interaction {
        Some(Interaction::Boolean {}) => vm.kind = "boolean",
        Some(Interaction::Text {
            max_length,
            default,
        }) => {
            vm.kind = "text";
            vm.max_length = *max_length;
            vm.proposed = default.clone();
        }
        Some(Interaction::Number { min, max, default }) => {
            vm.kind = "number";
            (vm.min, vm.max) = (*min, *max);
            vm.range = number_range(*min, *max);
            vm.proposed = default.map(|d| d.to_string());
        }
        Some(Interaction::Choice { choices, multiple }) => {
            vm.kind = "choice";
            vm.multiple = *multiple;
            vm.choices = choices
                .iter()
                .map(|c| ChoiceVm {
                    id: c.id.clone(),
                    label: c.label.clone(),
                })
                .collect();
        }
        Some(Interaction::Form { fields }) => {
            vm.kind = "form";
            vm.fields = fields
                .iter()
                .map(|f| FieldVm {
                    key: f.key.clone(),
                    label: f.label.clone(),
                    kind: f.kind.clone(),
                    required: f.required,
                })
                .collect();
        }
        None => {}
    }
    vm
}

/// Keys for the option buttons: `a` and `r` when the two options read as
/// approve and reject (by id or label), else `1`-`9` in order.
fn assign_keys(options: &mut [OptionVm]) {
    const YES: [&str; 7] = ["approve", "accept", "allow", "yes", "confirm", "ok", "go"];
    const NO: [&str; 7] = [
        "reject", "deny", "decline", "no", "refuse", "block", "cancel",
    ];
    let is = |o: &OptionVm, words: &[&str]| {
        let (id, label) = (o.id.to_lowercase(), o.label.to_lowercase());
        words.iter().any(|w| {
            id == *w
                || id.starts_with(&format!("{w}_"))
                || label == *w
                || label.starts_with(&format!("{w} "))
        })
    };
    if let [first, second] = options {
        let (one, two) = (&*first, &*second);
        let pair = if is(one, &YES[..]) && is(two, &NO[..]) {
            Some(("a", "r"))
        } else if is(one, &NO[..]) && is(two, &YES[..]) {
            Some(("r", "a"))
        } else {
            None
        };
        if let Some((k1, k2)) = pair {
            (first.key, second.key) = (k1.into(), k2.into());
            return;
        }
    }
    for (i, o) in options.iter_mut().take(9).enumerate() {
        o.key = (i + 1).to_string();
    }
}

/// A decision in words: the option's label, "Yes"/"No", the choices' labels…
pub fn answer_text(a: &ActionRecord, option_id: Option<&str>, response: Option<&Value>) -> String {
    if let Some(id) = option_id {
        return a
            .spec
            .option(id)
            .map(|o| o.label.clone())
            .unwrap_or_else(|| id.to_owned());
    }
    let Some(value) = response.map(|r| &r["value"]) else {
        return "no answer".into();
    };
    let label = |id: &str| match &a.spec.interaction {
        Some(Interaction::Choice { choices, .. }) => choices
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.label.clone())
            .unwrap_or_else(|| id.to_owned()),
        _ => id.to_owned(),
    };
    match value {
        Value::Bool(true) => "Yes".into(),
        Value::Bool(false) => "No".into(),
        Value::String(s) => label(s),
        Value::Array(ids) => ids
            .iter()
            .map(|i| label(i.as_str().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(", "),
        Value::Object(fields) => fields
            .iter()
            .map(|(k, v)| format!("{k}: {}", plain(v)))
            .collect::<Vec<_>>()
            .join("; "),
        other => other.to_string(),
    }
}

/// A JSON value as a person reads it: strings bare, nothing as "(none)".
pub fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "(none)".into(),
        Value::Bool(true) => "yes".into(),
        Value::Bool(false) => "no".into(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::{OptionVm, assign_keys};

    fn opts(items: &[(&str, &str)]) -> Vec<OptionVm> {
        items
            .iter()
            .map(|(id, label)| OptionVm {
                id: (*id).into(),
                label: (*label).into(),
                class: "btn",
                destructive: false,
                confirm: String::new(),
                key: String::new(),
            })
            .collect()
    }

    fn keys(items: &[(&str, &str)]) -> Vec<String> {
        let mut o = opts(items);
        assign_keys(&mut o);
        o.into_iter().map(|o| o.key).collect()
    }

    #[test]
    fn an_approve_reject_pair_gets_a_and_r_and_anything_else_numbers() {
        assert_eq!(
            keys(&[("approve", "Approve deploy"), ("reject", "Reject")]),
            ["a", "r"]
        );
        assert_eq!(
            keys(&[("no", "Hold it"), ("ship", "Yes, ship")]),
            ["1", "2"]
        );
        assert_eq!(keys(&[("deny", "Deny"), ("allow", "Allow")]), ["r", "a"]);
        assert_eq!(keys(&[("x", "Rollback"), ("y", "Retry")]), ["1", "2"]);
        let ten: Vec<(String, String)> = (0..10)
            .map(|i| (format!("o{i}"), format!("O{i}")))
            .collect();
        let ten: Vec<(&str, &str)> = ten.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let k = keys(&ten);
        assert_eq!(k[0], "1");
        assert_eq!(k[8], "9");
        assert_eq!(k[9], "");
    }
}
