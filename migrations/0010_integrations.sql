-- hds: the job queue, webhook deliveries, controls and context requests
-- (guide: "Webhooks", "Controls", "Context requests").

-- Work to do after a commit. A job row is written in the same transaction as
-- the change that causes it, so a rollback queues nothing and a crash loses
-- nothing: the worker (src/workers/jobs.rs) is woken after the commit, runs
-- what is due and deletes the row when the job is done for good.
CREATE TABLE jobs (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    -- what to do: `webhook` (deliver webhook_deliveries.id = subject)
    kind       TEXT NOT NULL,
    subject    TEXT NOT NULL,
    -- when it is next due (RFC 3339, text order is time order)
    run_at     TEXT NOT NULL,
    -- set while this process works on it; cleared when the worker starts,
    -- because one process owns the data dir and a job claimed before a crash
    -- must run again
    claimed_at TEXT,
    created_at TEXT NOT NULL
) STRICT;
-- the worker's one query: unclaimed jobs by due time
CREATE INDEX jobs_due ON jobs(run_at, id) WHERE claimed_at IS NULL;
CREATE INDEX jobs_by_subject ON jobs(subject);

-- One webhook message (Standard Webhooks): its id is the `webhook-id` header,
-- the same on every attempt, so a receiver can drop duplicates. The body is
-- fixed when the event happens; each attempt signs it with the time it is sent.
CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,           -- msg_<ULID>
    workspace_id    TEXT NOT NULL REFERENCES workspaces(id),
    source_id       TEXT NOT NULL REFERENCES sources(id),
    action_id       TEXT NOT NULL REFERENCES actions(id),
    environment     TEXT NOT NULL CHECK (environment IN ('live', 'test')),
    event_type      TEXT NOT NULL,
    -- the Action's callback_url as stored (normalised)
    url             TEXT NOT NULL,
    body            TEXT NOT NULL,
    -- pending: an attempt is due (jobs holds it); delivered: a 2xx answered;
    -- failed: given up (schedule exhausted, 410 Gone, or refused address)
    status          TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    -- attempts made before the last resend: the retry schedule restarts there
    round_start     INTEGER NOT NULL DEFAULT 0,
    last_status_code INTEGER,
    last_error      TEXT,
    last_attempt_at TEXT,
    next_attempt_at TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
) STRICT;
-- the Source page and GET /v1/sources/{id}/deliveries: newest first, paged
-- by id (ULIDs sort by creation)
CREATE INDEX webhook_deliveries_by_source ON webhook_deliveries(source_id, id);
-- housekeeping forgets settled deliveries after 30 days
CREATE INDEX webhook_deliveries_settled ON webhook_deliveries(updated_at) WHERE status <> 'pending';

-- Every attempt of a delivery, for the delivery log.
CREATE TABLE webhook_attempts (
    delivery_id TEXT NOT NULL REFERENCES webhook_deliveries(id),
    attempt     INTEGER NOT NULL,
    started_at  TEXT NOT NULL,
    -- the HTTP status, null when no response came (refused, timeout, refused connection)
    status_code INTEGER,
    duration_ms INTEGER NOT NULL,
    error       TEXT,
    PRIMARY KEY (delivery_id, attempt)
) STRICT, WITHOUT ROWID;

-- Secret rotation with an overlap: until previous_webhook_secret_expires_at
-- both secrets sign every delivery (two signatures in webhook-signature), so
-- a Source can roll its verifier without missing one.
ALTER TABLE sources ADD COLUMN previous_webhook_secret TEXT;
ALTER TABLE sources ADD COLUMN previous_webhook_secret_expires_at TEXT;

-- A reviewer pressed a callback control (guide: "Controls"); the Source reports back.
CREATE TABLE control_requests (
    id           TEXT PRIMARY KEY,              -- ctr_<ULID>
    action_id    TEXT NOT NULL REFERENCES actions(id),
    control_key  TEXT NOT NULL,
    -- pending → running → succeeded | failed; the last two are final
    status       TEXT NOT NULL CHECK (status IN ('pending', 'running', 'succeeded', 'failed')),
    message      TEXT,
    requested_by TEXT NOT NULL REFERENCES users(id),
    -- the binding the reviewer saw when pressing it
    action_version INTEGER NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    -- the invoker's Idempotency-Key, scoped to that user (the idempotency_keys
    -- table is scoped to Sources), and SHA-256 of route + canonical body: the
    -- same key with another request is IDEMPOTENCY_KEY_REUSED
    idempotency_key TEXT,
    request_hash TEXT
) STRICT;
CREATE INDEX control_requests_by_action ON control_requests(action_id, created_at);
CREATE UNIQUE INDEX control_requests_by_key ON control_requests(requested_by, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- A reviewer asked the Source for more context (guide: "Context requests").
CREATE TABLE context_requests (
    id           TEXT PRIMARY KEY,              -- cxr_<ULID>
    action_id    TEXT NOT NULL REFERENCES actions(id),
    question     TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('open', 'answered')),
    requested_by TEXT NOT NULL REFERENCES users(id),
    created_at   TEXT NOT NULL,
    answered_at  TEXT,
    -- the action_version whose content answered it
    answered_in_version INTEGER
) STRICT;
CREATE INDEX context_requests_by_action ON context_requests(action_id, created_at);
-- a material PATCH answers the open ones
CREATE INDEX context_requests_open ON context_requests(action_id) WHERE status = 'open';
