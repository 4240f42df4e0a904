-- hds schema v39: comments can be edited and deleted (guide: "Claim,
-- assignment, snooze and comments"). `edited_at` is when the author last
-- changed the body (NULL: never). A deleted comment's row is removed, body
-- and all; the Action's history keeps `commented` and `comment_deleted`
-- with the comment's id and who deleted it, so the thread shows that a
-- comment was there.
ALTER TABLE action_comments ADD COLUMN edited_at TEXT;
