-- hds schema v9: 1. The Snoozed tab lists Actions by wake-up time, then age
-- (the next one back first), and this index holds them in that order, so a
-- page of them is an ordered seek that LIMIT stops, with the environment
-- tested on the index entry. It was (workspace_id, snoozed_until,
-- environment), and ordering by priority read and sorted every snoozed row.
DROP INDEX actions_snoozed;
CREATE INDEX actions_snoozed
    ON actions(workspace_id, snoozed_until, created_at, environment)
    WHERE status = 'open' AND snoozed_until IS NOT NULL;

-- 2. scope=mine by e-mail asks for `assignee_email = mine AND assignee_user_id
-- IS NULL` (an e-mail counts only while no user id holds the Action): an
-- index of exactly those Actions answers it, and the tab counts, from its
-- entries alone. It held every Action with an e-mail, so each count read the
-- row to test the user id.
DROP INDEX actions_assignee_email;
CREATE INDEX actions_assignee_email
    ON actions(workspace_id, assignee_email, status, priority_rank, created_at, environment, snoozed_until)
    WHERE assignee_email IS NOT NULL AND assignee_user_id IS NULL;

-- 3. The closed tabs and status=all list newest first. No index held
--    created_at after the status, so `status=resolved` sorted every resolved
--    Action of the workspace (800,000 at a million). actions_closed holds
--    only closed Actions (nothing to write when one is created), the
--    environment last so both environments use it; actions_by_age serves
--    status=all the same way.
CREATE INDEX actions_closed
    ON actions(workspace_id, status, created_at, environment)
    WHERE status <> 'open';
CREATE INDEX actions_by_age
    ON actions(workspace_id, created_at, environment);

-- 4. New titles are indexed by the writer once per write transaction
--    (store::actions::index_new_titles, run before COMMIT), not by a trigger
--    per row: FTS5 writes its pending terms to disk at every SAVEPOINT and
--    RELEASE, and the writer runs each request in its own savepoint, so the
--    trigger wrote one tiny segment per created Action and merged them again
--    (a fifth of the writer's time, creates/s down by a third). The update
--    and delete triggers stay: those are rare.
DROP TRIGGER actions_fts_insert;
