-- hds schema v22: a keyed create writes one index entry, its key's.
--
-- A keyed create wrote three index entries beside its row: the key's own
-- (the primary key, which keeps keys unique), `idempotency_keys_by_age`
-- for the daily prune, and `idempotency_keys_by_action` for finding the
-- row whose answer is rebuilt from an Action. The prune now goes by rowid,
-- which grows with time (store::idempotency::prune); the Action keeps the
-- key whose answer is rebuilt from it (`actions.answer_key`), so that row
-- is found by its primary key. `idempotency_keys.action_id` still
-- REFERENCES actions(id) with no index now: hds never deletes an Action or
-- changes its id; a future DELETE FROM actions would search this table.
ALTER TABLE actions ADD COLUMN answer_key TEXT;
-- Filled while the index that finds them still exists.
UPDATE actions SET answer_key = (SELECT k.key FROM idempotency_keys k WHERE k.action_id = actions.id)
    WHERE id IN (SELECT action_id FROM idempotency_keys WHERE action_id IS NOT NULL);
DROP INDEX idempotency_keys_by_action;
DROP INDEX idempotency_keys_by_age;
