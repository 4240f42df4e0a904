-- hds: the e-mail outbox (guide: "E-mail").

-- One e-mail to one address, rendered when it is queued (in the transaction of
-- what causes it) and sent by the job queue (`jobs.kind = 'email'`, subject =
-- this id). The row outlives the job: it is the log owners and admins read
-- (GET /v1/workspaces/emails) until housekeeping forgets it, 30 days after it
-- was sent or given up.
CREATE TABLE mail_outbox (
    id              TEXT PRIMARY KEY,           -- mail_<ULID>; also the Message-ID's left part
    -- the workspace the mail is about; NULL for mail about no workspace
    workspace_id    TEXT REFERENCES workspaces(id),
    -- the person it is for; NULL when they have no account yet (an invitee)
    user_id         TEXT REFERENCES users(id),
    to_addr         TEXT NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('notification', 'digest', 'invitation')),
    subject         TEXT NOT NULL,
    -- the text/plain and text/html parts. NULL once a secret mail is sent or
    -- failed: an invitation's body carries its accept link, whose token hds
    -- otherwise keeps only hashed, so the link lives only while it is needed
    text_body       TEXT,
    html_body       TEXT,
    secret          INTEGER NOT NULL DEFAULT 0 CHECK (secret IN (0, 1)),
    -- pending: an attempt is due (jobs holds it); sent: the server accepted it
    -- (2xx); failed: given up (a permanent 5xx, an address hds cannot send to,
    -- the retry schedule exhausted)
    status          TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    -- the server's reply or the connection's failure, never the body
    last_error      TEXT,
    last_attempt_at TEXT,
    sent_at         TEXT,
    created_at      TEXT NOT NULL
) STRICT;
-- GET /v1/workspaces/emails: a workspace's mail newest first, paged by id
-- (ULIDs sort by creation), with or without a status filter
CREATE INDEX mail_outbox_by_workspace ON mail_outbox(workspace_id, id);
CREATE INDEX mail_outbox_by_status ON mail_outbox(workspace_id, status, id);
-- housekeeping forgets settled mail after 30 days (every settled row has
-- last_attempt_at: the attempt, or the refusal, that settled it)
CREATE INDEX mail_outbox_settled ON mail_outbox(last_attempt_at, id) WHERE status <> 'pending';

-- The worker claims each kind of job within its own budget (webhooks are
-- never held up by a slow mail server, nor mail by a flood of webhooks), so
-- its queries read the due jobs of one kind.
DROP INDEX jobs_due;
CREATE INDEX jobs_due_by_kind ON jobs(kind, run_at, id) WHERE claimed_at IS NULL;
