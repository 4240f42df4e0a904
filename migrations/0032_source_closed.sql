-- hds schema: the closed Actions of one Source, newest first
-- (GET /v1/source/actions?status=resolved|cancelled|expired, and the
-- inbox's source_id filter on a closed tab of one environment), by an
-- index on the Source
-- instead of a walk of the workspace's closed Actions (`actions_closed`),
-- which a Source with few of them in a large workspace would read whole.
-- Partial like `actions_closed`: written when an Action closes, never on
-- create.
CREATE INDEX actions_source_closed
    ON actions(source_id, environment, status, created_at)
    WHERE status <> 'open';
