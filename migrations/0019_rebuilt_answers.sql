-- hds schema v19: a keyed create no longer stores its answer's text.
--
-- The answer of a create is the new Action (about 2 KB of JSON): two do not
-- fit in a 4 KiB page, so every keyed create wrote a page of its own beside
-- the Action's, more than doubling the pages a create commits. A create
-- that names no people now keeps only the Action's id (`action_id`), and a
-- replay rebuilds the answer from the Action; the text is written into the
-- row (and `action_id` cleared) before the first write that could make the
-- rebuilt answer differ (store::idempotency::keep_answer). Every other
-- stored response keeps its text, as before.
CREATE TABLE idempotency_keys_v19 (
    source_id    TEXT NOT NULL,
    environment  TEXT NOT NULL,
    key          TEXT NOT NULL,
    -- SHA-256 of the route and the request (service::idempotency): same key +
    -- different request = reuse
    request_hash TEXT NOT NULL,
    status_code  INTEGER NOT NULL,
    -- the JSON text answered, or NULL when rebuilt from `action_id`
    response     TEXT,
    action_id    TEXT REFERENCES actions(id),
    created_at   TEXT NOT NULL,
    PRIMARY KEY (source_id, environment, key),
    CHECK ((response IS NULL) <> (action_id IS NULL))
) STRICT;
INSERT INTO idempotency_keys_v19(source_id, environment, key, request_hash, status_code, response, created_at)
    SELECT source_id, environment, key, request_hash, status_code, response, created_at FROM idempotency_keys;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_v19 RENAME TO idempotency_keys;
CREATE INDEX idempotency_keys_by_age ON idempotency_keys(created_at);
-- Action ids are ULIDs, so new entries go to the index's right edge.
CREATE INDEX idempotency_keys_by_action ON idempotency_keys(action_id) WHERE action_id IS NOT NULL;
