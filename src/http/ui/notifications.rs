//! The notifications page (guide: "Notifications in the dashboard"):
//! `GET /app/notifications` (newest first, an Unread tab, "Load more" by the
//! `before` keyset as in /v1/notifications), `POST /app/notifications/{id}/read`
//! (marks one read, then opens the page it is about) and
//! `POST /app/notifications/read-all`. The header's bell links here; both
//! call the same `service::notifications` functions as the API.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Deserialize;

use crate::app::AppState;
use crate::domain::ids;
use crate::http::api::paging;
use crate::http::session::PageUser;
use crate::http::ui::view::{
    FormData, Layout, PagePath, PageQuery, UiError, When, check_csrf, see_other,
};
use crate::service::notifications;
use crate::store::notifications::Notification;

/// How many the page shows at a time.
const PAGE_SIZE: i64 = 50;

/// The page's query: `unread=1` for the Unread tab, `starting_after` (or its
/// older name `before`) for the next page.
#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    pub unread: Option<String>,
    #[serde(default)]
    pub starting_after: Option<String>,
    #[serde(default)]
    pub before: Option<String>,
    #[serde(default)]
    pub done: Option<String>,
}

impl ListQuery {
    fn unread_only(&self) -> bool {
        matches!(self.unread.as_deref(), Some("1" | "true" | "yes"))
    }
}

/// One notification as the page shows it.
pub struct Item {
    pub id: String,
    pub kind: &'static str,
    pub title: String,
    pub body: String,
    pub unread: bool,
    pub created: When,
    /// How its Action ended, when it has since: its status and the words
    /// for it ("Decided", "Cancelled", "Expired").
    pub closed: Option<(&'static str, &'static str)>,
}

#[derive(Template, WebTemplate)]
#[template(path = "notifications.html")]
pub struct NotificationsPage {
    layout: Layout,
    items: Vec<Item>,
    unread_only: bool,
    /// The "Load more" link's query, when more follow.
    more: Option<String>,
    /// Whether this is a later page (a link back to the first).
    later: bool,
    flash: Option<&'static str>,
}

/// A few words for a kind, as the list labels it.
pub fn kind_label(kind: &str) -> &'static str {
    match kind {
        "action.assigned" => "Assigned",
        "action.new" => "New Action",
        "action.mentioned" => "Mention",
        "action.commented" => "Comment",
        "action.expiring" => "Expiring",
        "action.returned" => "Back from snooze",
        "action.closed" => "Closed",
        "action.changed" => "Changed",
        "control_request.finished" => "Control finished",
        "outcome.failed" => "Outcome failed",
        "run.failed" => "Run failed",
        "invitation.received" => "Invitation",
        _ => "Notification",
    }
}

fn item(n: Notification, now: crate::domain::time::Timestamp) -> Item {
    Item {
        kind: kind_label(&n.kind),
        unread: n.read_at.is_none(),
        created: When::new(&n.created_at, now),
        closed: match n.action_status.as_deref() {
            Some("resolved") => Some(("resolved", "Decided")),
            Some("cancelled") => Some(("cancelled", "Cancelled")),
            Some("expired") => Some(("expired", "Expired")),
            _ => None,
        },
        id: n.id,
        title: n.title,
        body: n.body,
    }
}

/// GET /app/notifications
pub async fn notifications_page(
    State(st): State<AppState>,
    p: PageUser,
    PageQuery(q): PageQuery<ListQuery>,
) -> Result<NotificationsPage, UiError> {
    let unread_only = q.unread_only();
    let after = paging::cursor(
        q.starting_after.clone(),
        q.before.clone(),
        ids::NOTIFICATION,
        "a notification",
    )?;
    let later = after.is_some();
    let (rows, has_more) =
        notifications::list(&st.services, p.user.clone(), unread_only, after, PAGE_SIZE).await?;
    let more = match rows.last() {
        Some(last) if has_more => {
            let mut qs = form_urlencoded::Serializer::new(String::new());
            if unread_only {
                qs.append_pair("unread", "1");
            }
            qs.append_pair("starting_after", &last.id);
            Some(qs.finish())
        }
        _ => None,
    };
    let now = st.services.clock.now();
    Ok(NotificationsPage {
        layout: Layout::signed_in(&st, &p, "Notifications", "notifications").await?,
        items: rows.into_iter().map(|n| item(n, now)).collect(),
        unread_only,
        more,
        later,
        flash: match q.done.as_deref() {
            Some("read-all") => Some("All notifications marked read."),
            _ => None,
        },
    })
}

/// Where a notification's page is, when it is one of ours: a path under
/// `/app` (never `//host` or a backslash trick); anything else opens the list.
fn local_page(path: &str) -> &str {
    let ok = (path == "/app" || path.starts_with("/app/") || path.starts_with("/app?"))
        && !path.contains('\\')
        && !path.chars().any(char::is_control);
    if ok { path } else { "/app/notifications" }
}

/// POST /app/notifications/{id}/read: marks it read and opens its page.
pub async fn read_notification(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    let n = notifications::read_one(&st.services, p.user.clone(), id).await?;
    Ok(see_other(local_page(&n.path)))
}

/// POST /app/notifications/read-all
pub async fn read_all_notifications(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    notifications::read_all(&st.services, p.user.clone()).await?;
    Ok(see_other("/app/notifications?done=read-all"))
}

#[cfg(test)]
mod tests {
    use super::local_page;

    #[test]
    fn only_local_dashboard_paths_are_followed() {
        assert_eq!(local_page("/app/actions/act_1"), "/app/actions/act_1");
        assert_eq!(local_page("/app/workspaces"), "/app/workspaces");
        for bad in [
            "//evil.example/app",
            "https://evil.example/app",
            "/app\\..\\x",
            "/v1/actions",
            "/application",
            "",
        ] {
            assert_eq!(local_page(bad), "/app/notifications", "{bad}");
        }
    }
}
