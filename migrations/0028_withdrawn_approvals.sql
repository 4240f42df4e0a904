-- hds schema: an approval is withdrawn when its voter may no longer vote
-- (removed from the workspace, made a viewer, account deleted): it then
-- counts toward no quorum, for good on that version, even if the voter gets
-- a voting role back (guide: "POST /v1/actions/{action_id}/votes"). A
-- rejection is never withdrawn.
ALTER TABLE action_votes ADD COLUMN withdrawn_at TEXT;
