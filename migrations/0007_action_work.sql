-- hds: working on an Action (guide: "Claim, assignment, snooze and comments").
-- Claim and assignment reuse actions.assignee_user_id (and the spec's
-- assignee fields, which the inbox's scope filter reads); snoozing reuses
-- actions.snoozed_until. Only comments need a table.

-- Comments on an Action, oldest first. Never part of the binding: adding one
-- changes neither action_version nor fingerprint.
CREATE TABLE action_comments (
    id             TEXT PRIMARY KEY,            -- cmt_<ULID>, sorts by creation
    action_id      TEXT NOT NULL REFERENCES actions(id),
    author_user_id TEXT NOT NULL REFERENCES users(id),
    -- Markdown, 1-10,000 characters; rendered with raw HTML escaped.
    body           TEXT NOT NULL,
    -- JSON array of the user ids of workspace members the body @mentions by
    -- e-mail, for notifications; addresses of non-members are not kept.
    mentions       TEXT NOT NULL DEFAULT '[]',
    created_at     TEXT NOT NULL
) STRICT;
-- the thread of one Action (in rowid, i.e. insertion, order) and its comment_count
CREATE INDEX action_comments_by_action ON action_comments(action_id);
