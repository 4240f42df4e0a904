//! GET /app/guide: the guide (`docs/guide.md`, the same text `GET /v1/docs`
//! serves) as a page, through the safe Markdown renderer, with a table of
//! contents of its sections. Open to everyone, like `/v1/docs`; signed in,
//! it has the dashboard's header.

use std::sync::LazyLock;

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;

use crate::app::AppState;
use crate::http::docs::GUIDE;
use crate::http::session::PageUser;
use crate::http::ui::markdown::{self, Heading};
use crate::http::ui::view::{Layout, UiError};

/// One section in the table of contents, with its subsections.
pub struct TocEntry {
    pub id: String,
    pub text: String,
    pub children: Vec<Heading>,
}

#[derive(Template, WebTemplate)]
#[template(path = "guide.html")]
pub struct GuidePage {
    layout: Layout,
    toc: &'static [TocEntry],
    html: &'static str,
}

/// The guide is part of the binary, so it is rendered once.
static RENDERED: LazyLock<(String, Vec<TocEntry>)> = LazyLock::new(|| {
    let (html, headings) = markdown::render_with_toc(GUIDE);
    (html, contents(headings))
});

/// GET /app/guide
pub async fn guide_page(
    State(st): State<AppState>,
    page: Option<PageUser>,
) -> Result<GuidePage, UiError> {
    let layout = match &page {
        Some(p) => Layout::signed_in(&st, p, "Guide", "guide").await?,
        None => Layout {
            public_nav: true,
            ..Layout::public("Guide")
        },
    };
    let (html, toc) = &*RENDERED;
    Ok(GuidePage { layout, toc, html })
}

/// `##` headings as entries, each with the `###` headings under it.
fn contents(headings: Vec<Heading>) -> Vec<TocEntry> {
    let mut toc: Vec<TocEntry> = Vec::new();
    for h in headings {
        match toc.last_mut() {
            Some(last) if h.level > 2 => last.children.push(h),
            _ => toc.push(TocEntry {
                id: h.id,
                text: h.text,
                children: Vec::new(),
            }),
        }
    }
    toc
}
