//! Comment bodies (guide: "Claim, assignment, snooze and comments").

use serde::Serialize;
use utoipa::ToSchema;

use crate::store::work::Comment;

/// Who wrote a comment: the address with the name, since anyone may
/// choose any name.
#[derive(Debug, Serialize, ToSchema)]
pub struct CommentAuthor {
    pub user_id: String,
    pub email: String,
    pub name: Option<String>,
}

/// One comment on an Action.
#[derive(Debug, Serialize, ToSchema)]
pub struct CommentOut {
    /// `cmt_…`
    pub id: String,
    /// Always `comment`.
    pub object: &'static str,
    pub action_id: String,
    pub author: CommentAuthor,
    /// Markdown, as written (as last edited).
    pub body: String,
    pub created_at: String,
    /// When its author last changed the body; null: never.
    pub edited_at: Option<String>,
}

impl From<Comment> for CommentOut {
    fn from(c: Comment) -> Self {
        Self {
            id: c.id,
            object: "comment",
            action_id: c.action_id,
            author: CommentAuthor {
                user_id: c.author_user_id,
                email: c.author_email,
                name: c.author_name,
            },
            body: c.body,
            created_at: c.created_at,
            edited_at: c.edited_at,
        }
    }
}
