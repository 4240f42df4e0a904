//! The public guide served at GET /v1/docs: `docs/guide.md`, embedded at build
//! time and split into sections at each `## ` heading.

use crate::http::api::wire::system::{Guide, GuideSection};

/// The guide's Markdown, as served here and at `/app/guide`.
pub const GUIDE: &str = include_str!("../../docs/guide.md");

pub fn guide() -> Guide {
    let mut title = "hds guide";
    let mut sections = Vec::new();
    let mut current: Option<(String, String)> = None;
    let mut in_code = false;
    for line in GUIDE.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        if in_code || line.trim_start().starts_with("```") {
            if let Some((_, body)) = current.as_mut() {
                body.push_str(line);
                body.push('\n');
            }
        } else if let Some(t) = line.strip_prefix("# ") {
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
    Guide {
        title: title.to_owned(),
        api_version: crate::API_VERSION,
        format: "markdown",
        sections: sections
            .into_iter()
            .map(|(t, body)| GuideSection {
                id: slug(&t),
                markdown: body.trim().to_owned(),
                title: t,
            })
            .collect(),
    }
}

/// A section id: lower-case ASCII words joined by `-` ("Sign-in and
/// sessions" → `sign-in-and-sessions`).
pub fn slug(t: &str) -> String {
    t.to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// `## ` and `# ` inside fenced code (shell or Python comments) are code, not headings.
#[cfg(test)]
mod tests {
    #[test]
    fn headings_inside_code_fences_are_not_sections() {
        let g = super::guide();
        assert_eq!(g.title, "hds guide");
        assert!(g.sections.iter().all(|s| !s.title.starts_with('#')));
    }
}
