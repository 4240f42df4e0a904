-- hds schema v18: `assignee_email` becomes a plain column, written with the
-- spec. It was a VIRTUAL generated column, lower(json_extract(spec,
-- '$.assignee_email')): the partial indexes actions_unassigned and
-- actions_assignee_email test it, so every create and every change of
-- status parsed the Action's whole spec (about 1 KB of JSON) once more on
-- the single writer thread. The writers now set it beside the spec
-- (store::actions::insert and update_spec, store::work::set_assignee), as
-- SQLite's lower() would: ASCII letters only.
DROP INDEX actions_assignee_email;
DROP INDEX actions_unassigned;
ALTER TABLE actions DROP COLUMN assignee_email;
ALTER TABLE actions ADD COLUMN assignee_email TEXT;
UPDATE actions SET assignee_email = lower(spec ->> '$.assignee_email')
 WHERE spec ->> '$.assignee_email' IS NOT NULL;
CREATE INDEX actions_assignee_email
    ON actions(workspace_id, assignee_email, status, priority_rank, created_at, environment, snoozed_until)
    WHERE assignee_email IS NOT NULL AND assignee_user_id IS NULL;
CREATE INDEX actions_unassigned
    ON actions(workspace_id, environment, status, priority_rank, created_at, snoozed_until)
    WHERE assignee_user_id IS NULL AND assignee_email IS NULL;
