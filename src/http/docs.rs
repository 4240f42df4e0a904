//! The public guide served at GET /v1/docs: `docs/guide.md`, embedded at build
//! time and split into sections at each `## ` heading.

use serde_json::{Value, json};

const GUIDE: &str = include_str!("../../docs/guide.md");

pub fn guide() -> Value {
    let mut title = "hds guide";
    let mut sections = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in GUIDE.lines() {
        if let Some(t) = line.strip_prefix("# ") {
            title = t.trim();
        } else if let Some(h) = line.strip_prefix("## ") {
            if let Some(s) = current.take() {
                sections.push(s);
            }
            current = Some((h.trim().to_owned(), String::new()));
        } else if let Some((_, body)) = current.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    sections.extend(current);
    json!({
        "title": title,
        "api_version": crate::API_VERSION,
        "format": "markdown",
        "sections": sections.into_iter().map(|(t, body)| json!({ "id": slug(&t), "title": t, "markdown": body.trim() })).collect::<Vec<_>>(),
    })
}

fn slug(t: &str) -> String {
    t.to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}
