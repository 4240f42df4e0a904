//! The cursor of the lists that page by id, newest first (guide: "Lists and
//! pages"): `starting_after`, the last id of the previous page, as on the
//! inbox, runs and mails. The delivery log and the notifications first named
//! it `before`; that name keeps working, with the same meaning.

use crate::domain::ids::{self, Cursor};
use crate::error::{Error, Result};

/// The page's cursor: `None` is the first page (absent or empty). An id that
/// is not shaped like one of `prefix` is 422 naming the parameter that
/// carried it; both names at once is 422 naming `before`.
pub fn cursor(
    starting_after: Option<String>,
    before: Option<String>,
    prefix: &str,
    what: &str,
) -> Result<Option<Cursor>> {
    let starting_after = starting_after.filter(|s| !s.is_empty());
    let before = before.filter(|s| !s.is_empty());
    let (field, id) = match (starting_after, before) {
        (Some(_), Some(_)) => {
            return Err(Error::field(
                "before",
                "give starting_after or before (its older name), not both",
            ));
        }
        (Some(id), None) => ("starting_after", id),
        (None, Some(id)) => ("before", id),
        (None, None) => return Ok(None),
    };
    match ids::cursor_problem(field, &id, prefix, what) {
        None => Ok(Some(Cursor { field, id })),
        Some(e) => Err(Error::validation(vec![e])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn either_name_carries_the_cursor_and_empty_is_the_first_page() {
        let id = ids::new_id(ids::DELIVERY);
        let got = |a: Option<&str>, b: Option<&str>| {
            cursor(
                a.map(Into::into),
                b.map(Into::into),
                ids::DELIVERY,
                "a delivery",
            )
        };
        let named = |field| {
            Some(Cursor {
                field,
                id: id.clone(),
            })
        };
        assert_eq!(got(Some(&id), None).unwrap(), named("starting_after"));
        assert_eq!(got(None, Some(&id)).unwrap(), named("before"));
        assert_eq!(got(Some(""), Some("")).unwrap(), None);
        assert_eq!(got(None, None).unwrap(), None);
        assert_eq!(got(Some(""), Some(&id)).unwrap(), named("before"));
        let both = got(Some(&id), Some(&id)).unwrap_err();
        assert_eq!(both.details["errors"][0]["field"], "before");
        let bad = got(Some("ntf_01JD8X"), None).unwrap_err();
        assert_eq!(bad.details["errors"][0]["field"], "starting_after");
        assert!(
            bad.message.contains("a delivery id (msg_"),
            "{}",
            bad.message
        );
    }
}
