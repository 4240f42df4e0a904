-- hds schema: an approval is withdrawn when its voter may no longer vote
-- (removed from the workspace, made a viewer, account deleted): it then
-- counts toward no quorum, for good on that version, even if the voter gets
-- a voting role back (guide: "POST /v1/actions/{action_id}/votes"). A
-- rejection is never withdrawn.
ALTER TABLE action_votes ADD COLUMN withdrawn_at TEXT;
-- Approvals already cast on open Actions by someone who may not vote there
-- now (no longer a member, or a viewer) were not counted by the build before
-- this one, which asked the voter's role at each count: withdrawn here, so
-- that none of them counts again.
UPDATE action_votes SET withdrawn_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
 WHERE vote = 'approve' AND withdrawn_at IS NULL
   AND EXISTS (SELECT 1 FROM actions a
                WHERE a.id = action_votes.action_id AND a.status = 'open'
                  AND NOT EXISTS (SELECT 1 FROM memberships m
                                   WHERE m.workspace_id = a.workspace_id
                                     AND m.user_id = action_votes.user_id
                                     AND m.role <> 'viewer'));
