-- hds schema v9: the Snoozed tab lists Actions by wake-up time, then age
-- (the next one back first), and this index holds them in that order, so a
-- page of them is an ordered seek that LIMIT stops, with the environment
-- tested on the index entry. It was (workspace_id, snoozed_until,
-- environment), and ordering by priority read and sorted every snoozed row.
DROP INDEX actions_snoozed;
CREATE INDEX actions_snoozed
    ON actions(workspace_id, snoozed_until, created_at, environment)
    WHERE status = 'open' AND snoozed_until IS NOT NULL;
