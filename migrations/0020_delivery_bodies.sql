-- hds schema v20: a webhook's body in a table of its own.
--
-- A delivery's row is updated by every attempt (status, attempts, the last
-- answer), and the body (the Action as JSON, about 2 KB) made that row the
-- size of half a page: each attempt rewrote the whole body and wrote its
-- page to the WAL again. The body is fixed when the event happens, so it
-- now lives in `webhook_bodies`, written once and read by each attempt,
-- and the row that attempts update is a few hundred bytes.
CREATE TABLE webhook_bodies (
    id   INTEGER PRIMARY KEY,
    -- the message as sent: {type, timestamp, data}
    body TEXT NOT NULL
) STRICT;
-- No REFERENCES: a body is only ever deleted with its delivery
-- (store::deliveries::prune), and a foreign key would make each such delete
-- search the deliveries for it.
ALTER TABLE webhook_deliveries ADD COLUMN body_id INTEGER;
INSERT INTO webhook_bodies(id, body) SELECT rowid, body FROM webhook_deliveries;
UPDATE webhook_deliveries SET body_id = rowid;
ALTER TABLE webhook_deliveries DROP COLUMN body;
