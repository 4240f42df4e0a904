-- hds schema v13: runs (guide: "Runs"; DESIGN §13, SPEC §4.7 and §3.2).
--
-- A run is a Source's piece of machine work with a visible progress and
-- timeline; the Actions it raises point at it (`actions.run_id`).

CREATE TABLE runs (
    id           TEXT PRIMARY KEY,                -- run_<ULID>, sorts by creation
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    source_id    TEXT NOT NULL REFERENCES sources(id),
    environment  TEXT NOT NULL CHECK (environment IN ('live', 'test')),
    name         TEXT NOT NULL,
    -- queued and running/waiting are active; the other three are final and
    -- refuse every change (409 RUN_NOT_ACTIVE)
    status       TEXT NOT NULL CHECK (status IN
                    ('queued', 'running', 'waiting', 'succeeded', 'failed', 'cancelled')),
    completed    INTEGER CHECK (completed >= 0),
    total        INTEGER CHECK (total >= 0),
    message      TEXT,
    metadata     TEXT,                            -- JSON object, at most 32 KB
    result       TEXT,                            -- JSON, set on complete
    error        TEXT,
    created_at   TEXT NOT NULL,
    started_at   TEXT,                            -- the first move to running
    updated_at   TEXT NOT NULL,
    completed_at TEXT,
    -- a known total bounds the count (the API refuses it with 422 first)
    CHECK (completed IS NULL OR total IS NULL OR completed <= total)
) STRICT;
-- GET /v1/runs: a workspace's runs in one environment, newest first, by
-- status or not; the id is the keyset cursor (`starting_after`).
CREATE INDEX runs_by_workspace ON runs(workspace_id, environment, id);
CREATE INDEX runs_by_status ON runs(workspace_id, environment, status, id);

-- The run page's timeline: created, started, waiting, a new progress
-- message, completed. Progress that only moves the numbers adds no row, so
-- a run reporting every second keeps a short history.
CREATE TABLE run_events (
    run_id     TEXT NOT NULL REFERENCES runs(id),
    seq        INTEGER NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('created', 'started', 'waiting', 'progress', 'completed')),
    status     TEXT NOT NULL,
    message    TEXT,
    at         TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) STRICT, WITHOUT ROWID;

-- The run an Action was raised in (`run_id` on create), if any.
ALTER TABLE actions ADD COLUMN run_id TEXT REFERENCES runs(id);
CREATE INDEX actions_by_run ON actions(run_id, id) WHERE run_id IS NOT NULL;
