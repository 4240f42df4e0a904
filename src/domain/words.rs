//! Words for pages, e-mails and stored reasons: counts ("1 option", "3
//! options", never "1 options" or "option(s)") and the text of Markdown.

/// `n` followed by `one` when `n` is 1, `many` otherwise.
pub fn count(n: impl Into<i64>, one: &str, many: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The Markdown extensions the dashboard renders (tables, strikethrough,
/// task lists): pages and excerpts read a text alike.
pub const MARKDOWN: pulldown_cmark::Options = pulldown_cmark::Options::ENABLE_TABLES
    .union(pulldown_cmark::Options::ENABLE_STRIKETHROUGH)
    .union(pulldown_cmark::Options::ENABLE_TASKLISTS);

/// The words of a Markdown text without its markup, for a one-line
/// excerpt (a notification quoting a comment): `**CI** is [red](https://…)`
/// reads `CI is red`. Blocks are separated by a space, inline markup by
/// nothing. Raw HTML stays as text, as the dashboard shows it. A text whose
/// markup holds no words (only a link definition) is given as it is.
pub fn markdown_text(md: &str) -> String {
    use pulldown_cmark::{Event, Parser, TagEnd};
    let mut out = String::new();
    for ev in Parser::new_ext(md, MARKDOWN) {
        match ev {
            Event::Text(t) | Event::Code(t) | Event::Html(t) | Event::InlineHtml(t) => {
                out.push_str(&t)
            }
            Event::SoftBreak | Event::HardBreak => out.push(' '),
            Event::End(
                TagEnd::Emphasis
                | TagEnd::Strong
                | TagEnd::Strikethrough
                | TagEnd::Link
                | TagEnd::Image
                | TagEnd::Superscript
                | TagEnd::Subscript,
            ) => {}
            Event::End(_) => out.push(' '),
            _ => {}
        }
    }
    if out.trim().is_empty() {
        return md.to_owned();
    }
    out
}

/// The prose of a Markdown text: its words without markup, and without
/// code (inline code and code blocks become a space), for reading
/// @mentions as the page shows them: `@ada@example.com` written inside
/// backticks is an example, not a mention.
pub fn markdown_prose(md: &str) -> String {
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    // Inline markup joins its words as written (`**cc**@x` is one word);
    // blocks start and end words (a tight list item has no paragraph).
    let inline = |t: &Tag| {
        matches!(
            t,
            Tag::Emphasis
                | Tag::Strong
                | Tag::Strikethrough
                | Tag::Link { .. }
                | Tag::Image { .. }
                | Tag::Superscript
                | Tag::Subscript
        )
    };
    let inline_end = |t: &TagEnd| {
        matches!(
            t,
            TagEnd::Emphasis
                | TagEnd::Strong
                | TagEnd::Strikethrough
                | TagEnd::Link
                | TagEnd::Image
                | TagEnd::Superscript
                | TagEnd::Subscript
        )
    };
    let mut out = String::new();
    let mut in_code_block = false;
    for ev in Parser::new_ext(md, MARKDOWN) {
        match ev {
            Event::Start(Tag::CodeBlock(_)) => {
                in_code_block = true;
                out.push(' ');
            }
            Event::End(TagEnd::CodeBlock) => {
                in_code_block = false;
                out.push(' ');
            }
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) if !in_code_block => {
                out.push_str(&t)
            }
            // Code is not prose, and what follows it straight does not
            // start a word.
            Event::Code(_) => out.push('`'),
            Event::SoftBreak | Event::HardBreak => out.push(' '),
            Event::Start(t) if !inline(&t) => out.push(' '),
            Event::End(t) if !inline_end(&t) => out.push(' '),
            _ => {}
        }
    }
    out
}

/// A value a request named (a path segment, a key), as an error message
/// repeats it: at most 64 characters, then "…", so a crafted 20 KB id is
/// not echoed back whole.
pub fn as_named(value: &str) -> std::borrow::Cow<'_, str> {
    match value.char_indices().nth(64) {
        Some((i, _)) => format!("{}…", &value[..i]).into(),
        None => value.into(),
    }
}
#[cfg(test)]
mod tests {
    use super::{count, markdown_prose, markdown_text};

    #[test]
    fn prose_leaves_code_out() {
        let md = "cc @ada@example.com\n\n```\n@bob@example.com in code\n```\n\nsee `@carl@example.com` and **@dee@example.com**";
        let prose = markdown_prose(md);
        assert!(prose.contains("@ada@example.com"), "{prose}");
        assert!(prose.contains("@dee@example.com"), "{prose}");
        assert!(
            !prose.contains("bob@") && !prose.contains("carl@"),
            "{prose}"
        );
        // A nested tight list still separates its items' words.
        assert!(markdown_prose("- a\n  - @b@x.com").contains(" @b@x.com"));
        // Inline markup or code right before an address: not a word start.
        for glued in [
            "`x`@ada@x.com",
            "**cc**@ada@x.com",
            "[l](https://e.org)@ada@x.com",
        ] {
            let p = markdown_prose(glued);
            assert!(!p.contains(" @ada"), "{glued}: {p:?}");
        }
    }

    #[test]
    fn markdown_text_keeps_the_words_and_drops_the_markup() {
        let got = markdown_text(
            "**CI** is [red](https://ci.example.com)\n\n- `make test` fails\n- <b>x</b>",
        );
        assert_eq!(
            got.split_whitespace().collect::<Vec<_>>().join(" "),
            "CI is red make test fails <b>x</b>"
        );
        let words = |md: &str| {
            markdown_text(md)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(
            words("@ana@example.com please look"),
            "@ana@example.com please look"
        );
        // Inline markup adds no space; blocks and cells are kept apart.
        assert_eq!(
            words("**Note**: see [PR 12](https://x.example), thanks"),
            "Note: see PR 12, thanks"
        );
        assert_eq!(words("foo**bar**baz ~~old~~"), "foobarbaz old");
        assert_eq!(words("| a | b |\n|---|---|\n| 1 | 2 |"), "a b 1 2");
        // Nothing but a link definition: the text as it was written.
        assert_eq!(
            markdown_text("[x]: https://x.example"),
            "[x]: https://x.example"
        );
    }

    #[test]
    fn one_is_singular_and_everything_else_plural() {
        assert_eq!(count(1, "option", "options"), "1 option");
        assert_eq!(count(0, "option", "options"), "0 options");
        assert_eq!(count(3u32, "approval", "approvals"), "3 approvals");
    }
}
