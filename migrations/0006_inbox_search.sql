-- hds schema v8: the inbox at scale (guide: "GET /v1/me/actions").
--
-- 1. Title search through FTS5. An external-content index: the text stays in
--    actions.title, actions_fts holds only the tokens, keyed by the actions
--    rowid. unicode61 with remove_diacritics 2: case- and accent-insensitive
--    words. Kept in sync by the triggers below; existing titles are indexed by
--    the 'rebuild'. (A plain VACUUM may renumber the rowids of a table without
--    an INTEGER PRIMARY KEY; hds never runs one, and
--    INSERT INTO actions_fts(actions_fts) VALUES ('rebuild') repairs it.)
CREATE VIRTUAL TABLE actions_fts USING fts5(
    title,
    content = 'actions',
    content_rowid = 'rowid',
    tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO actions_fts(actions_fts) VALUES ('rebuild');

CREATE TRIGGER actions_fts_insert AFTER INSERT ON actions BEGIN
    INSERT INTO actions_fts(rowid, title) VALUES (new.rowid, new.title);
END;
CREATE TRIGGER actions_fts_delete AFTER DELETE ON actions BEGIN
    INSERT INTO actions_fts(actions_fts, rowid, title) VALUES ('delete', old.rowid, old.title);
END;
-- PATCH writes the title every time; re-index only when it changed.
CREATE TRIGGER actions_fts_update AFTER UPDATE OF title ON actions
WHEN old.title IS NOT new.title BEGIN
    INSERT INTO actions_fts(actions_fts, rowid, title) VALUES ('delete', old.rowid, old.title);
    INSERT INTO actions_fts(rowid, title) VALUES (new.rowid, new.title);
END;

-- 2. scope=mine / unassigned compared json_extract(spec, '$.assignee_email'),
--    which no index holds. A virtual generated column computes it from the
--    spec (so every writer of spec keeps it right, nothing to backfill), in
--    lower case (ASCII, as COLLATE NOCASE compared before); indexes store it.
ALTER TABLE actions ADD COLUMN assignee_email TEXT
    GENERATED ALWAYS AS (lower(json_extract(spec, '$.assignee_email'))) VIRTUAL;

-- 3. The open list filters on snoozed_until: carried at the end of the inbox
--    index, so the "not snoozed" test reads no row.
DROP INDEX actions_inbox;
CREATE INDEX actions_inbox
    ON actions(workspace_id, environment, status, priority_rank, created_at, snoozed_until);
-- environment=all: the inbox query leaves the environment out (the CHECK
-- allows only live and test); this index serves workspace + status in inbox
-- order without a sort, and counts the tabs of both environments.
CREATE INDEX actions_inbox_all
    ON actions(workspace_id, status, priority_rank, created_at, snoozed_until);

-- 4. scope=mine is two ordered seeks merged (assignee_user_id = me, then
--    assignee_email = my e-mail for the rest); only assigned Actions are in
--    these indexes. environment and snoozed_until ride along for the filters
--    and the tab counts.
CREATE INDEX actions_assignee_user
    ON actions(workspace_id, assignee_user_id, status, priority_rank, created_at, environment, snoozed_until)
    WHERE assignee_user_id IS NOT NULL;
CREATE INDEX actions_assignee_email
    ON actions(workspace_id, assignee_email, status, priority_rank, created_at, environment, snoozed_until)
    WHERE assignee_email IS NOT NULL;
-- scope=unassigned: the inbox index of the unassigned Actions only.
CREATE INDEX actions_unassigned
    ON actions(workspace_id, environment, status, priority_rank, created_at, snoozed_until)
    WHERE assignee_user_id IS NULL AND assignee_email IS NULL;

-- 5. source_id: the Actions of one Source in inbox order.
CREATE INDEX actions_source_inbox
    ON actions(source_id, environment, status, priority_rank, created_at, snoozed_until);

-- 6. status=snoozed: only the snoozed open Actions, by wake-up time.
CREATE INDEX actions_snoozed
    ON actions(workspace_id, snoozed_until, environment)
    WHERE status = 'open' AND snoozed_until IS NOT NULL;
