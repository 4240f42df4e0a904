-- hds schema v37: sign-in links mailed on request (guide: "Sign-in and
-- sessions", "With a link by e-mail").
--
-- The outbox learns a fourth kind, `signin`: the mail that carries a
-- one-time sign-in link a person asked for on the sign-in page. It is about
-- no workspace (workspace_id NULL, so no workspace's mail log lists it) and
-- secret (its bodies are erased once it is sent or given up). SQLite cannot
-- change a CHECK in place, so the table is copied with the wider one; rows,
-- ids and indexes stay as they were.
CREATE TABLE mail_outbox_v37 (
    id              TEXT PRIMARY KEY,
    workspace_id    TEXT REFERENCES workspaces(id),
    user_id         TEXT REFERENCES users(id),
    to_addr         TEXT NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('notification', 'digest', 'invitation', 'signin')),
    subject         TEXT NOT NULL,
    text_body       TEXT,
    html_body       TEXT,
    secret          INTEGER NOT NULL DEFAULT 0 CHECK (secret IN (0, 1)),
    status          TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT,
    last_attempt_at TEXT,
    sent_at         TEXT,
    created_at      TEXT NOT NULL,
    unsubscribable  INTEGER NOT NULL DEFAULT 0 CHECK (unsubscribable IN (0, 1))
) STRICT;
INSERT INTO mail_outbox_v37(id, workspace_id, user_id, to_addr, kind, subject, text_body,
        html_body, secret, status, attempts, last_error, last_attempt_at, sent_at, created_at,
        unsubscribable)
    SELECT id, workspace_id, user_id, to_addr, kind, subject, text_body, html_body, secret,
           status, attempts, last_error, last_attempt_at, sent_at, created_at, unsubscribable
      FROM mail_outbox;
DROP TABLE mail_outbox;
ALTER TABLE mail_outbox_v37 RENAME TO mail_outbox;
CREATE INDEX mail_outbox_by_workspace ON mail_outbox(workspace_id, id);
CREATE INDEX mail_outbox_by_status ON mail_outbox(workspace_id, status, id);
CREATE INDEX mail_outbox_settled ON mail_outbox(last_attempt_at, id) WHERE status <> 'pending';

-- How many links were mailed to a person lately: a request for a mailed link
-- is refused quietly when one was mailed in the last minute, or five in the
-- last fifteen minutes (a mailbox is not to be flooded from the sign-in page).
CREATE INDEX mail_outbox_signin ON mail_outbox(user_id, created_at) WHERE kind = 'signin';
