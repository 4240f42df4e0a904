//! Markdown from Sources, rendered for reviewers without trusting it: raw HTML
//! is shown as text, links keep only http, https and mailto targets, and
//! images become plain links (no request to a remote host on page load, and the
//! CSP's `img-src 'self'` would block them anyway).

use pulldown_cmark::{CowStr, Event, HeadingLevel, LinkType, Options, Parser, Tag, TagEnd, html};

/// Schemes a reviewer may follow from a description or a context block.
pub fn safe_url(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|s| lower.starts_with(s))
        // `https://bank.example.com@evil.example/` shows one host and opens
        // another (refused on input since; an Action stored before keeps it).
        && !crate::domain::urls::has_credentials(url.trim_start())
}

const OPTIONS: Options = crate::domain::words::MARKDOWN;

/// Renders Markdown to HTML that is safe to insert into a page. Its
/// headings go two levels down (`#` is an `<h3>`, `######` stays `<h6>`):
/// a Source's text sits under the page's own `<h1>` and `<h2>` sections,
/// and must not break the outline a screen reader moves through.
pub fn render(src: &str) -> String {
    let events = Parser::new_ext(src, OPTIONS).map(|ev| match ev {
        Event::Start(Tag::Heading {
            level,
            id,
            classes,
            attrs,
        }) => Event::Start(Tag::Heading {
            level: nested(level),
            id,
            classes,
            attrs,
        }),
        Event::End(TagEnd::Heading(level)) => Event::End(TagEnd::Heading(nested(level))),
        other => other,
    });
    safe_html(events, src.len())
}

/// Two levels down, at most `<h6>`.
fn nested(level: HeadingLevel) -> HeadingLevel {
    match level {
        HeadingLevel::H1 => HeadingLevel::H3,
        HeadingLevel::H2 => HeadingLevel::H4,
        HeadingLevel::H3 => HeadingLevel::H5,
        _ => HeadingLevel::H6,
    }
}

/// A `##` or `###` heading of a document rendered by [`render_with_toc`].
pub struct Heading {
    /// 2 or 3.
    pub level: u8,
    /// The heading's `id`: its slug as in `GET /v1/docs` section ids, made
    /// unique with `-2`, `-3`… when a title repeats.
    pub id: String,
    pub text: String,
}

/// As [`render`], with an `id` on every `##` and `###` heading (so a table of
/// contents can link to them) and those headings in order.
pub fn render_with_toc(src: &str) -> (String, Vec<Heading>) {
    let mut events: Vec<Event> = Parser::new_ext(src, OPTIONS).collect();
    let mut toc = Vec::new();
    let mut taken = std::collections::HashSet::new();
    for i in 0..events.len() {
        let Event::Start(Tag::Heading { level, .. }) = &events[i] else {
            continue;
        };
        let level = match level {
            HeadingLevel::H2 => 2,
            HeadingLevel::H3 => 3,
            _ => continue,
        };
        let mut text = String::new();
        for ev in events[i + 1..].iter() {
            match ev {
                Event::End(TagEnd::Heading(_)) => break,
                Event::Text(t) | Event::Code(t) => text.push_str(t),
                _ => {}
            }
        }
        let base = crate::http::docs::slug(&text);
        let mut id = base.clone();
        let mut n = 1;
        while !taken.insert(id.clone()) {
            n += 1;
            id = format!("{base}-{n}");
        }
        if let Event::Start(Tag::Heading { id: slot, .. }) = &mut events[i] {
            *slot = Some(CowStr::from(id.clone()));
        }
        // A path heading (`POST /v1/sources/{source_id}/keys/rotate`) may
        // wrap after each slash on a phone instead of inside a word: a zero
        // width space there, in the page only (not in the id or contents).
        for ev in events[i + 1..].iter_mut() {
            match ev {
                Event::End(TagEnd::Heading(_)) => break,
                Event::Text(t) | Event::Code(t) if t.contains('/') => {
                    *t = CowStr::from(t.replace('/', "/\u{200B}"));
                }
                _ => {}
            }
        }
        toc.push(Heading { level, id, text });
    }
    (safe_html(events.into_iter(), src.len()), toc)
}

/// Writes `events` as HTML with raw HTML as text and only safe link targets.
fn safe_html<'a>(events: impl Iterator<Item = Event<'a>>, len: usize) -> String {
    // For each open link or image: whether its tag was kept (an unsafe target
    // keeps only the text, so the matching end tag must go too).
    let mut open: Vec<bool> = Vec::new();
    let events = events.filter_map(|ev| match ev {
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
    let mut out = String::with_capacity(len * 3 / 2);
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
    fn a_link_that_shows_one_host_and_opens_another_is_no_link() {
        assert!(safe_url("https://bank.example.com/pay"));
        assert!(!safe_url("https://bank.example.com@evil.example/"));
        assert!(!safe_url("https://a:b@shop.example.com/"));
        let out = render("[pay](https://bank.example.com@evil.example/)");
        assert!(!out.contains("<a "), "{out}");
        assert!(out.contains("pay"), "{out}");
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
    fn headings_get_unique_ids_and_a_table_of_contents() {
        let (out, toc) = render_with_toc(
            "# T\n\n## Sign-in and sessions\n\n### `hds` keys\n\n## Sign-in and sessions\n\n<h2 id=x>raw</h2>",
        );
        assert!(out.contains(r#"<h2 id="sign-in-and-sessions">"#), "{out}");
        assert!(out.contains(r#"<h3 id="hds-keys">"#), "{out}");
        assert!(out.contains(r#"<h2 id="sign-in-and-sessions-2">"#), "{out}");
        assert!(out.contains("<h1>T</h1>"), "{out}");
        assert!(out.contains("&lt;h2 id=x&gt;"), "{out}");
        let ids: Vec<_> = toc.iter().map(|h| (h.level, h.id.as_str())).collect();
        assert_eq!(
            ids,
            [
                (2, "sign-in-and-sessions"),
                (3, "hds-keys"),
                (2, "sign-in-and-sessions-2")
            ]
        );
        assert_eq!(toc[1].text, "hds keys");
    }

    #[test]
    fn a_sources_headings_sit_below_the_pages_own() {
        let out = render("# A\n\n## B\n\n### C\n\n#### D\n\n###### F");
        for h in [
            "<h3>A</h3>",
            "<h4>B</h4>",
            "<h5>C</h5>",
            "<h6>D</h6>",
            "<h6>F</h6>",
        ] {
            assert!(out.contains(h), "{h}: {out}");
        }
        assert!(!out.contains("<h1") && !out.contains("<h2"), "{out}");
    }

    #[test]
    fn ordinary_markdown_renders() {
        let out = render("# Deploy\n\n* **prod** `v2`\n\n| a | b |\n|---|---|\n| 1 | 2 |");
        assert!(out.contains("<h3>Deploy</h3>"), "{out}");
        assert!(out.contains("<strong>prod</strong>"));
        assert!(out.contains("<code>v2</code>"));
        assert!(out.contains("<table>"));
    }
}
