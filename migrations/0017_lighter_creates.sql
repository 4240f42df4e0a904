-- hds schema: less written per created Action (docs/benchmarks.md, "Creates/s,
-- before and after issue 9"). A create wrote the Action with seven indexes,
-- an FTS row, a docsize row and an upsert of its analytics day, each in the
-- job's own savepoint (which copies every page it touches first); these
-- three changes measured 6,400 -> 7,800 creates/s at 16 clients together.

-- 1. The daily rollup counts new Actions once per write transaction, from
--    the rows added since it began (store::actions::index_new_rows, beside
--    the title index), not by a trigger per row. Every change to the rollup
--    is now an upsert of deltas (+1 created and open; -1 open and +1
--    resolved; …), so the order does not matter: an Action closed in the
--    transaction that created it is counted right when its creation is
--    added at the end.
DROP TRIGGER analytics_action_created;
DROP TRIGGER analytics_action_closed;
DROP TRIGGER analytics_action_decided;
DROP TRIGGER analytics_action_outcome;

CREATE TRIGGER analytics_action_closed AFTER UPDATE OF status ON actions
WHEN OLD.status = 'open' AND NEW.status <> 'open' BEGIN
    INSERT INTO analytics_daily(workspace_id, environment, source_id, day,
                                open, resolved, cancelled, expired, timed_out)
    VALUES (NEW.workspace_id, NEW.environment, NEW.source_id, substr(NEW.created_at, 1, 10),
            -1, NEW.status = 'resolved', NEW.status = 'cancelled', NEW.status = 'expired',
            coalesce(json_extract(NEW.resolution, '$.decided_by.type') = 'system'
                     AND json_extract(NEW.resolution, '$.reason') = 'expired', 0))
    ON CONFLICT(workspace_id, environment, day, source_id) DO UPDATE SET
        open = open - 1,
        resolved = resolved + excluded.resolved,
        cancelled = cancelled + excluded.cancelled,
        expired = expired + excluded.expired,
        timed_out = timed_out + excluded.timed_out;
END;

-- A decision (resolved by a person, a quorum or the Source; not by the
-- expiry pass): its time and whether it approved. A quorum's resolution is
-- decided by the system too (`{"type":"system","id":"approval_policy"}`),
-- which 0014 left out of `decided`; the expiry pass's has no id.
CREATE TRIGGER analytics_action_decided AFTER UPDATE OF status ON actions
WHEN OLD.status = 'open' AND NEW.status = 'resolved'
 AND (coalesce(json_extract(NEW.resolution, '$.decided_by.type'), '') <> 'system'
      OR json_extract(NEW.resolution, '$.decided_by.id') = 'approval_policy') BEGIN
    INSERT INTO analytics_daily(workspace_id, environment, source_id, day, decided, approved,
                                h0, h1, h2, h3, h4, h5, h6, h7, h8, h9, h10, h11, h12, h13, h14)
    SELECT NEW.workspace_id, NEW.environment, NEW.source_id, substr(NEW.created_at, 1, 10), 1,
           coalesce(
               json_extract(NEW.resolution, '$.option_id') = 'approve'
               OR EXISTS (SELECT 1 FROM json_each(NEW.spec, '$.options') o
                          WHERE json_extract(o.value, '$.id') = json_extract(NEW.resolution, '$.option_id')
                            AND json_extract(o.value, '$.style') = 'primary'), 0),
           b = 0, b = 1, b = 2, b = 3, b = 4, b = 5, b = 6, b = 7, b = 8, b = 9, b = 10,
           b = 11, b = 12, b = 13, b = 14
    FROM (SELECT CASE
            WHEN d <= 10 THEN 0 WHEN d <= 30 THEN 1 WHEN d <= 60 THEN 2 WHEN d <= 120 THEN 3
            WHEN d <= 300 THEN 4 WHEN d <= 600 THEN 5 WHEN d <= 1800 THEN 6 WHEN d <= 3600 THEN 7
            WHEN d <= 7200 THEN 8 WHEN d <= 21600 THEN 9 WHEN d <= 43200 THEN 10
            WHEN d <= 86400 THEN 11 WHEN d <= 172800 THEN 12 WHEN d <= 604800 THEN 13 ELSE 14 END AS b
          FROM (SELECT (julianday(NEW.closed_at) - julianday(NEW.created_at)) * 86400.0 AS d))
    WHERE true
    ON CONFLICT(workspace_id, environment, day, source_id) DO UPDATE SET
        decided = decided + 1,
        approved = approved + excluded.approved,
        h0 = h0 + excluded.h0, h1 = h1 + excluded.h1, h2 = h2 + excluded.h2,
        h3 = h3 + excluded.h3, h4 = h4 + excluded.h4, h5 = h5 + excluded.h5,
        h6 = h6 + excluded.h6, h7 = h7 + excluded.h7, h8 = h8 + excluded.h8,
        h9 = h9 + excluded.h9, h10 = h10 + excluded.h10, h11 = h11 + excluded.h11,
        h12 = h12 + excluded.h12, h13 = h13 + excluded.h13, h14 = h14 + excluded.h14;
END;

CREATE TRIGGER analytics_action_outcome AFTER UPDATE OF outcome ON actions
WHEN OLD.outcome IS NULL AND NEW.outcome IS NOT NULL BEGIN
    INSERT INTO analytics_daily(workspace_id, environment, source_id, day,
                                outcome_success, outcome_failed, outcome_rollback)
    VALUES (NEW.workspace_id, NEW.environment, NEW.source_id, substr(NEW.created_at, 1, 10),
            coalesce(json_extract(NEW.outcome, '$.status') = 'success', 0),
            coalesce(json_extract(NEW.outcome, '$.status') = 'failed', 0),
            coalesce(json_extract(NEW.outcome, '$.rollback') = 1, 0))
    ON CONFLICT(workspace_id, environment, day, source_id) DO UPDATE SET
        outcome_success = outcome_success + excluded.outcome_success,
        outcome_failed = outcome_failed + excluded.outcome_failed,
        outcome_rollback = outcome_rollback + excluded.outcome_rollback;
END;

-- 2. The title index keeps no per-row token counts (`columnsize=0`): only
--    bm25() ranking reads them, and the inbox sorts by its own order. One
--    B-tree insert less per create. Rebuilt from the titles.
DROP TABLE actions_fts;
CREATE VIRTUAL TABLE actions_fts USING fts5(
    title,
    content = 'actions',
    content_rowid = 'rowid',
    tokenize = 'unicode61 remove_diacritics 2',
    columnsize = 0
);
INSERT INTO actions_fts(actions_fts) VALUES ('rebuild');

-- 3. Two indexes fewer: environment=all is now two ordered seeks of
--    `actions_inbox` (live, then test) merged, as scope=mine merges two
--    (store::actions::inbox_filter), not `actions_inbox_all`; the open
--    Actions of a Source (its revocation) are read through
--    `actions_source_inbox`.
DROP INDEX actions_inbox_all;
DROP INDEX actions_by_source;
