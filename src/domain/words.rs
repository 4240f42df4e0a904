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

/// The words of a Markdown text without its markup, for a one-line
/// excerpt (a notification quoting a comment): `**CI** is [red](https://…)`
/// reads `CI is red`. Raw HTML stays as text, as the dashboard shows it.
pub fn markdown_text(md: &str) -> String {
    use pulldown_cmark::{Event, Parser};
    let mut out = String::new();
    for ev in Parser::new(md) {
        match ev {
            Event::Text(t) | Event::Code(t) | Event::Html(t) | Event::InlineHtml(t) => {
                out.push_str(&t)
            }
            Event::SoftBreak | Event::HardBreak | Event::End(_) => out.push(' '),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{count, markdown_text};

    #[test]
    fn markdown_text_keeps_the_words_and_drops_the_markup() {
        let got = markdown_text(
            "**CI** is [red](https://ci.example.com)\n\n- `make test` fails\n- <b>x</b>",
        );
        assert_eq!(
            got.split_whitespace().collect::<Vec<_>>().join(" "),
            "CI is red make test fails <b>x</b>"
        );
        assert_eq!(
            markdown_text("@ana@example.com please look"),
            "@ana@example.com please look "
        );
    }

    #[test]
    fn one_is_singular_and_everything_else_plural() {
        assert_eq!(count(1, "option", "options"), "1 option");
        assert_eq!(count(0, "option", "options"), "0 options");
        assert_eq!(count(3u32, "approval", "approvals"), "3 approvals");
    }
}
