-- hds: account export and deletion, analytics (guide: "Account: export and
-- deletion", "Analytics"; DESIGN §14).

-- The account export lists what a person did; without these it would scan
-- every vote, comment and Action of the instance.
CREATE INDEX action_votes_by_user ON action_votes(user_id);
CREATE INDEX action_comments_by_author ON action_comments(author_user_id);
-- Decisions made by a person: the resolution's `decided_by` (a user).
CREATE INDEX actions_decided_by_user
    ON actions(json_extract(resolution, '$.decided_by.id'))
    WHERE json_extract(resolution, '$.decided_by.type') = 'user';
-- Invitations a person sent (the export; deletion revokes the pending ones).
CREATE INDEX invitations_by_inviter ON invitations(invited_by);

-- Daily rollup of Actions by the UTC day they were created, per workspace,
-- environment and Source: GET /v1/analytics/summary reads at most
-- 90 days × Sources rows instead of the Actions themselves. Kept by the
-- triggers below in the same statement as the change (create, close,
-- outcome), whichever code path makes it, so it cannot drift from `actions`.
CREATE TABLE analytics_daily (
    workspace_id TEXT NOT NULL,
    environment  TEXT NOT NULL,
    source_id    TEXT NOT NULL,
    day          TEXT NOT NULL,                 -- YYYY-MM-DD (UTC) of created_at
    created      INTEGER NOT NULL DEFAULT 0,
    open         INTEGER NOT NULL DEFAULT 0,
    resolved     INTEGER NOT NULL DEFAULT 0,
    cancelled    INTEGER NOT NULL DEFAULT 0,
    expired      INTEGER NOT NULL DEFAULT 0,
    -- resolved by a person, a Source or a quorum (not by the expiry pass)
    decided      INTEGER NOT NULL DEFAULT 0,
    -- decided with an approving option: id `approve`, or style `primary`
    approved     INTEGER NOT NULL DEFAULT 0,
    -- closed by the expiry pass, whatever `on_expire` did
    timed_out    INTEGER NOT NULL DEFAULT 0,
    outcome_success  INTEGER NOT NULL DEFAULT 0,
    outcome_failed   INTEGER NOT NULL DEFAULT 0,
    outcome_rollback INTEGER NOT NULL DEFAULT 0,
    -- decision seconds (created → decided) of `decided`, in fixed buckets
    -- with upper bounds 10 s, 30 s, 1 min, 2 min, 5 min, 10 min, 30 min, 1 h,
    -- 2 h, 6 h, 12 h, 1 d, 2 d, 7 d, beyond (src/domain/analytics.rs BOUNDS)
    h0 INTEGER NOT NULL DEFAULT 0, h1 INTEGER NOT NULL DEFAULT 0,
    h2 INTEGER NOT NULL DEFAULT 0, h3 INTEGER NOT NULL DEFAULT 0,
    h4 INTEGER NOT NULL DEFAULT 0, h5 INTEGER NOT NULL DEFAULT 0,
    h6 INTEGER NOT NULL DEFAULT 0, h7 INTEGER NOT NULL DEFAULT 0,
    h8 INTEGER NOT NULL DEFAULT 0, h9 INTEGER NOT NULL DEFAULT 0,
    h10 INTEGER NOT NULL DEFAULT 0, h11 INTEGER NOT NULL DEFAULT 0,
    h12 INTEGER NOT NULL DEFAULT 0, h13 INTEGER NOT NULL DEFAULT 0,
    h14 INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace_id, environment, day, source_id)
) STRICT, WITHOUT ROWID;

-- Actions that exist before this version count too.
INSERT INTO analytics_daily(workspace_id, environment, source_id, day, created, open, resolved, cancelled, expired)
    SELECT workspace_id, environment, source_id, substr(created_at, 1, 10), count(*),
           sum(status = 'open'), sum(status = 'resolved'), sum(status = 'cancelled'), sum(status = 'expired')
    FROM actions GROUP BY 1, 2, 3, 4;

CREATE TRIGGER analytics_action_created AFTER INSERT ON actions BEGIN
    INSERT INTO analytics_daily(workspace_id, environment, source_id, day, created, open)
        VALUES (NEW.workspace_id, NEW.environment, NEW.source_id, substr(NEW.created_at, 1, 10), 1, 1)
        ON CONFLICT(workspace_id, environment, day, source_id)
        DO UPDATE SET created = created + 1, open = open + 1;
END;

CREATE TRIGGER analytics_action_closed AFTER UPDATE OF status ON actions
WHEN OLD.status = 'open' AND NEW.status <> 'open' BEGIN
    UPDATE analytics_daily SET
        open = open - 1,
        resolved = resolved + (NEW.status = 'resolved'),
        cancelled = cancelled + (NEW.status = 'cancelled'),
        expired = expired + (NEW.status = 'expired'),
        timed_out = timed_out + coalesce(json_extract(NEW.resolution, '$.decided_by.type') = 'system'
                                 AND json_extract(NEW.resolution, '$.reason') = 'expired', 0)
    WHERE workspace_id = NEW.workspace_id AND environment = NEW.environment
      AND day = substr(NEW.created_at, 1, 10) AND source_id = NEW.source_id;
END;

-- A decision (resolved, not by the expiry pass): its time and whether it approved.
CREATE TRIGGER analytics_action_decided AFTER UPDATE OF status ON actions
WHEN OLD.status = 'open' AND NEW.status = 'resolved'
 AND coalesce(json_extract(NEW.resolution, '$.decided_by.type'), '') <> 'system' BEGIN
    UPDATE analytics_daily SET
        decided = decided + 1,
        approved = approved + coalesce(
            json_extract(NEW.resolution, '$.option_id') = 'approve'
            OR EXISTS (SELECT 1 FROM json_each(NEW.spec, '$.options') o
                       WHERE json_extract(o.value, '$.id') = json_extract(NEW.resolution, '$.option_id')
                         AND json_extract(o.value, '$.style') = 'primary'), 0),
        h0 = h0 + (s.b = 0), h1 = h1 + (s.b = 1), h2 = h2 + (s.b = 2), h3 = h3 + (s.b = 3),
        h4 = h4 + (s.b = 4), h5 = h5 + (s.b = 5), h6 = h6 + (s.b = 6), h7 = h7 + (s.b = 7),
        h8 = h8 + (s.b = 8), h9 = h9 + (s.b = 9), h10 = h10 + (s.b = 10), h11 = h11 + (s.b = 11),
        h12 = h12 + (s.b = 12), h13 = h13 + (s.b = 13), h14 = h14 + (s.b = 14)
    FROM (SELECT CASE
            WHEN d <= 10 THEN 0 WHEN d <= 30 THEN 1 WHEN d <= 60 THEN 2 WHEN d <= 120 THEN 3
            WHEN d <= 300 THEN 4 WHEN d <= 600 THEN 5 WHEN d <= 1800 THEN 6 WHEN d <= 3600 THEN 7
            WHEN d <= 7200 THEN 8 WHEN d <= 21600 THEN 9 WHEN d <= 43200 THEN 10
            WHEN d <= 86400 THEN 11 WHEN d <= 172800 THEN 12 WHEN d <= 604800 THEN 13 ELSE 14 END AS b
          FROM (SELECT (julianday(NEW.closed_at) - julianday(NEW.created_at)) * 86400.0 AS d)) AS s
    WHERE workspace_id = NEW.workspace_id AND environment = NEW.environment
      AND day = substr(NEW.created_at, 1, 10) AND source_id = NEW.source_id;
END;

CREATE TRIGGER analytics_action_outcome AFTER UPDATE OF outcome ON actions
WHEN OLD.outcome IS NULL AND NEW.outcome IS NOT NULL BEGIN
    UPDATE analytics_daily SET
        outcome_success = outcome_success + coalesce(json_extract(NEW.outcome, '$.status') = 'success', 0),
        outcome_failed = outcome_failed + coalesce(json_extract(NEW.outcome, '$.status') = 'failed', 0),
        outcome_rollback = outcome_rollback + coalesce(json_extract(NEW.outcome, '$.rollback') = 1, 0)
    WHERE workspace_id = NEW.workspace_id AND environment = NEW.environment
      AND day = substr(NEW.created_at, 1, 10) AND source_id = NEW.source_id;
END;

-- Dashboard usage events (POST /v1/analytics/events), stored here only;
-- housekeeping deletes them 90 days after they occurred.
CREATE TABLE analytics_events (
    id           INTEGER PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users(id),
    workspace_id TEXT REFERENCES workspaces(id),
    name         TEXT NOT NULL,
    properties   TEXT NOT NULL DEFAULT '{}',   -- a JSON object, at most 4 KB
    occurred_at  TEXT NOT NULL,
    created_at   TEXT NOT NULL
) STRICT;
CREATE INDEX analytics_events_by_age ON analytics_events(occurred_at);
CREATE INDEX analytics_events_by_user ON analytics_events(user_id);
