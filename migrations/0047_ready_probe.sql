-- hds schema v47: GET /ready's write check commits a change to this one
-- row, so "the writer commits" is proven by a commit that writes a page
-- (a transaction that only reads commits even on a full disk or a
-- read-only file system).
CREATE TABLE ready_probe (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    checked_at TEXT NOT NULL
) STRICT;
