//! Counts in words for pages, e-mails and stored reasons: "1 option",
//! "3 options", never "1 options" or "option(s)".

/// `n` followed by `one` when `n` is 1, `many` otherwise.
pub fn count(n: impl Into<i64>, one: &str, many: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn one_is_singular_and_everything_else_plural() {
        assert_eq!(count(1, "option", "options"), "1 option");
        assert_eq!(count(0, "option", "options"), "0 options");
        assert_eq!(count(3u32, "approval", "approvals"), "3 approvals");
    }
}
