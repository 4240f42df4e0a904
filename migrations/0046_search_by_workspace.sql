-- hds schema v46: the title index also indexes each Action's workspace, so
-- a search can count its matches in one workspace.
--
-- An inbox search chooses how to list (and whether its tabs are counted)
-- by how many Actions match. It counted them in every workspace, so a
-- person could tell, from whether their own tabs were counted, whether
-- titles in another workspace held a word (by making Actions of their own
-- to bring the count to the line). A search matching more than 2,000
-- Actions in all workspaces now counts its matches in the person's
-- workspace (store::actions::matches).
--
-- `fts_ws` is the workspace id after its `ws_` (one token: the ULID),
-- behind U+E000, a private-use character the tokenizer keeps in the token:
-- a prefix a person searches for (`0`, `01`, as in "v1.0") then never
-- takes in every workspace's term (ULIDs begin with `01`), which would
-- cost what a search for `r` does. A virtual column, so nothing more is
-- stored per Action; the index holds one more term per Action. Rebuilt
-- from the titles.
ALTER TABLE actions ADD COLUMN fts_ws TEXT
    GENERATED ALWAYS AS (char(57344) || substr(workspace_id, instr(workspace_id, '_') + 1)) VIRTUAL;

DROP TRIGGER actions_fts_delete;
DROP TRIGGER actions_fts_update;
DROP TABLE actions_fts;
CREATE VIRTUAL TABLE actions_fts USING fts5(
    title,
    fts_ws,
    content = 'actions',
    content_rowid = 'rowid',
    tokenize = 'unicode61 remove_diacritics 2',
    columnsize = 0
);
INSERT INTO actions_fts(actions_fts) VALUES ('rebuild');

CREATE TRIGGER actions_fts_delete AFTER DELETE ON actions BEGIN
    INSERT INTO actions_fts(actions_fts, rowid, title, fts_ws)
        VALUES ('delete', old.rowid, old.title, old.fts_ws);
END;
-- PATCH writes the title every time; re-index only when it changed.
CREATE TRIGGER actions_fts_update AFTER UPDATE OF title ON actions
WHEN old.title IS NOT new.title BEGIN
    INSERT INTO actions_fts(actions_fts, rowid, title, fts_ws)
        VALUES ('delete', old.rowid, old.title, old.fts_ws);
    INSERT INTO actions_fts(rowid, title, fts_ws) VALUES (new.rowid, new.title, new.fts_ws);
END;
