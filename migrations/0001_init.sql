-- hds schema v1. Timestamps are RFC 3339 UTC strings with millisecond precision
-- ("2026-11-22T11:36:41.123Z"), so text order is time order.

-- The tenant boundary: every Source, Action and membership belongs to one workspace.
CREATE TABLE workspaces (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    -- approval policies (SPEC §2.1) need a team workspace.
    kind        TEXT NOT NULL CHECK (kind IN ('personal', 'team')),
    created_at  TEXT NOT NULL
) STRICT;

CREATE TABLE users (
    id          TEXT PRIMARY KEY,
    email       TEXT NOT NULL COLLATE NOCASE UNIQUE,
    name        TEXT,
    created_at  TEXT NOT NULL
) STRICT;

CREATE TABLE memberships (
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    user_id      TEXT NOT NULL REFERENCES users(id),
    role         TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'reviewer', 'viewer')),
    created_at   TEXT NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
) STRICT;
CREATE INDEX memberships_by_user ON memberships(user_id);

-- User bearer tokens (svc_usr_…). Only the SHA-256 of the token is kept: a stolen
-- database does not yield a usable credential.
CREATE TABLE user_tokens (
    id          TEXT PRIMARY KEY,
    token_hash  TEXT NOT NULL UNIQUE,
    user_id     TEXT NOT NULL REFERENCES users(id),
    name        TEXT NOT NULL,
    client      TEXT,
    created_at  TEXT NOT NULL,
    expires_at  TEXT,
    revoked_at  TEXT
) STRICT;

-- Machine callers. Revoking keeps the row (and every Action it made) for audit.
CREATE TABLE sources (
    id             TEXT PRIMARY KEY,
    workspace_id   TEXT NOT NULL REFERENCES workspaces(id),
    name           TEXT NOT NULL,
    description    TEXT,
    -- HMAC needs the secret itself (Standard Webhooks), so it cannot be hashed.
    webhook_secret TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    revoked_at     TEXT
) STRICT;
CREATE INDEX sources_by_workspace ON sources(workspace_id, created_at);

-- Source keys, hashed. One unrevoked key per Source and environment.
CREATE TABLE source_keys (
    key_hash    TEXT PRIMARY KEY,
    source_id   TEXT NOT NULL REFERENCES sources(id),
    environment TEXT NOT NULL CHECK (environment IN ('live', 'test')),
    -- first characters of the key, shown in listings so people can tell keys apart
    hint        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
) STRICT;
CREATE UNIQUE INDEX source_keys_one_current
    ON source_keys(source_id, environment) WHERE revoked_at IS NULL;

CREATE TABLE actions (
    id             TEXT PRIMARY KEY,
    workspace_id   TEXT NOT NULL REFERENCES workspaces(id),
    source_id      TEXT NOT NULL REFERENCES sources(id),
    environment    TEXT NOT NULL CHECK (environment IN ('live', 'test')),
    status         TEXT NOT NULL CHECK (status IN ('open', 'resolved', 'cancelled', 'expired')),
    priority       TEXT NOT NULL CHECK (priority IN ('low', 'normal', 'high', 'urgent')),
    -- urgent=0 … low=3, so the inbox index sorts the most pressing first
    priority_rank  INTEGER NOT NULL,
    title          TEXT NOT NULL,
    action_version INTEGER NOT NULL CHECK (action_version >= 1),
    fingerprint    TEXT NOT NULL,
    -- every validated create/patch field as JSON; the columns above and below are
    -- copies of the parts queries filter on
    spec           TEXT NOT NULL,
    dedupe_key     TEXT,
    assignee_user_id TEXT,
    visibility     TEXT NOT NULL CHECK (visibility IN ('workspace', 'restricted')),
    expires_at     TEXT,
    snoozed_until  TEXT,
    -- {option_id, response, reason, decided_by, decided_at} once terminal
    resolution     TEXT,
    receipt_id     TEXT,
    outcome        TEXT,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    closed_at      TEXT
) STRICT;
-- inbox: GET /v1/me/actions filters workspace, environment, status; sorts by urgency, age
CREATE INDEX actions_inbox
    ON actions(workspace_id, environment, status, priority_rank, created_at);
CREATE INDEX actions_by_source ON actions(source_id, created_at);
-- the expiry worker scans only open Actions with a deadline
CREATE INDEX actions_expiring ON actions(expires_at) WHERE status = 'open' AND expires_at IS NOT NULL;
-- DESIGN §3: one open Action per (Source, environment, dedupe_key)
CREATE UNIQUE INDEX actions_open_dedupe
    ON actions(source_id, environment, dedupe_key)
    WHERE status = 'open' AND dedupe_key IS NOT NULL;

-- Append-only history of each Action (created, updated, decided, cancelled, …).
CREATE TABLE action_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    action_id   TEXT NOT NULL REFERENCES actions(id),
    kind        TEXT NOT NULL,
    actor_type  TEXT NOT NULL CHECK (actor_type IN ('user', 'source', 'system')),
    actor_id    TEXT,
    action_version INTEGER NOT NULL,
    data        TEXT NOT NULL DEFAULT '{}',
    created_at  TEXT NOT NULL
) STRICT;
CREATE INDEX action_events_by_action ON action_events(action_id, id);

-- Approval votes (SPEC §3.1 rule 6); one vote per user per Action.
CREATE TABLE action_votes (
    action_id   TEXT NOT NULL REFERENCES actions(id),
    user_id     TEXT NOT NULL REFERENCES users(id),
    vote        TEXT NOT NULL CHECK (vote IN ('approve', 'reject')),
    reason      TEXT,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (action_id, user_id)
) STRICT;

-- Receipt signing keys. Public halves are never deleted (DESIGN §5); private
-- halves live in <data-dir>/keys/<kid>.pem.
CREATE TABLE signing_keys (
    kid         TEXT PRIMARY KEY,
    x           TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('active', 'retired', 'revoked')),
    created_at  TEXT NOT NULL,
    retired_at  TEXT
) STRICT;
CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys(status) WHERE status = 'active';

-- Signed receipts, chained: seq is gap-free per instance and prev hashes the
-- previous compact JWS, so a deleted or reordered receipt shows.
CREATE TABLE receipts (
    id          TEXT PRIMARY KEY,
    seq         INTEGER NOT NULL UNIQUE,
    action_id   TEXT NOT NULL UNIQUE REFERENCES actions(id),
    kid         TEXT NOT NULL REFERENCES signing_keys(kid),
    jws         TEXT NOT NULL,
    created_at  TEXT NOT NULL
) STRICT;

-- Stored responses of idempotent requests (DESIGN §7), scoped to Source and
-- environment, kept at least 24 h.
CREATE TABLE idempotency_keys (
    source_id    TEXT NOT NULL,
    environment  TEXT NOT NULL,
    key          TEXT NOT NULL,
    -- SHA-256 of method, path and body: same key + different request = reuse
    request_hash TEXT NOT NULL,
    status_code  INTEGER NOT NULL,
    response     TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (source_id, environment, key)
) STRICT;
CREATE INDEX idempotency_keys_by_age ON idempotency_keys(created_at);
