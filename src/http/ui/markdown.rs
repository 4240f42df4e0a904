//! Markdown from Sources, rendered for reviewers without trusting it: raw HTML
//! is shown as text, links keep only http, https and mailto targets, and
//! images become plain links (no request to a remote host on page load, and the
//! CSP's `img-src 'self'` would block them anyway).

use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd, html};

/// Schemes a reviewer may follow from a description or a context block.
pub fn safe_url(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|s| lower.starts_with(s))
}

/// Renders Markdown to HTML that is safe to insert into a page.
pub fn render(src: &str) -> String {
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    // For each open link or image: whether its tag was kept (an unsafe target
    // keeps only the text, so the matching end tag must go too).
    let mut open: Vec<bool> = Vec::new();
    let events = Parser::new_ext(src, opts).filter_map(|ev| match ev {
        Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            let keep = safe_url(&dest_url);
            open.push(keep);
            keep.then_some(Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }))
        }
        // An image is shown as a link to it, its alt text as the link text;
        // inside a link it is just its text (links do not nest).
        Event::Start(Tag::Image {
            dest_url, title, ..
        }) => {
            let keep = safe_url(&dest_url) && !open.contains(&true);
            open.push(keep);
            keep.then_some(Event::Start(Tag::Link {
                link_type: LinkType::Inline,
                dest_url,
                title,
                id: CowStr::Borrowed(""),
            }))
        }
        Event::End(TagEnd::Link | TagEnd::Image) => open
            .pop()
            .unwrap_or(false)
            .then_some(Event::End(TagEnd::Link)),
        other => Some(other),
    });
    let mut out = String::with_capacity(src.len() * 3 / 2);
    html::push_html(&mut out, events);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_is_shown_as_text() {
        let out = render("hi <script>alert(1)</script>\n\n<img src=x onerror=alert(1)>");
        assert!(!out.contains("<script"), "{out}");
        assert!(!out.contains("<img"), "{out}");
        assert!(out.contains("&lt;script&gt;"), "{out}");
    }

    #[test]
    fn only_web_and_mail_links_survive() {
        let out = render(
            "[a](https://example.com) [b](javascript:alert(1)) [c](mailto:x@y.z) [d](/local) <javascript:alert(2)>",
        );
        assert!(
            out.contains(r#"<a href="https://example.com">a</a>"#),
            "{out}"
        );
        assert!(out.contains(r#"<a href="mailto:x@y.z">c</a>"#), "{out}");
        assert!(!out.contains("javascript:alert(1)\""), "{out}");
        assert!(!out.contains(r#"href="javascript"#), "{out}");
        assert!(!out.contains(r#"href="/local""#), "{out}");
        assert!(out.contains('b') && out.contains('d'), "{out}");
    }

    #[test]
    fn images_become_links_and_never_load() {
        let out = render("![chart](https://cdn.example/c.png) ![x](javascript:1)");
        assert!(!out.contains("<img"), "{out}");
        assert!(
            out.contains(r#"<a href="https://cdn.example/c.png">chart</a>"#),
            "{out}"
        );
        let nested = render("[![logo](https://x.example/l.png)](https://x.example)");
        assert_eq!(nested.matches("<a ").count(), 1, "{nested}");
    }

    #[test]
    fn ordinary_markdown_renders() {
        let out = render("# Deploy\n\n* **prod** `v2`\n\n| a | b |\n|---|---|\n| 1 | 2 |");
        assert!(out.contains("<h1>Deploy</h1>"));
        assert!(out.contains("<strong>prod</strong>"));
        assert!(out.contains("<code>v2</code>"));
        assert!(out.contains("<table>"));
    }
}
