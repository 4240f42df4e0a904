-- hds schema: the workspaces a person has left (or was removed from), so
-- that deleting their account later also takes their address out of what
-- those workspaces keep about them (notices, run timelines, assignments;
-- guide: "Deleting your account"). Written when a membership ends.
CREATE TABLE former_members (
    user_id      TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    left_at      TEXT NOT NULL,
    PRIMARY KEY (user_id, workspace_id)
) STRICT, WITHOUT ROWID;

-- Before this table, a departure left no row: the workspaces where a
-- person who is no longer a member left a trace stand in for it.
INSERT OR IGNORE INTO former_members(user_id, workspace_id, left_at)
SELECT accepted_by, workspace_id, accepted_at FROM invitations
 WHERE accepted_by IS NOT NULL AND accepted_at IS NOT NULL;
INSERT OR IGNORE INTO former_members(user_id, workspace_id, left_at)
SELECT DISTINCT user_id, workspace_id, '' FROM notifications;
INSERT OR IGNORE INTO former_members(user_id, workspace_id, left_at)
SELECT DISTINCT c.author_user_id, a.workspace_id, '' FROM action_comments c
  JOIN actions a ON a.id = c.action_id;
INSERT OR IGNORE INTO former_members(user_id, workspace_id, left_at)
SELECT DISTINCT e.actor_id, a.workspace_id, '' FROM action_events e
  JOIN actions a ON a.id = e.action_id
 WHERE e.actor_type = 'user' AND e.actor_id IS NOT NULL;
DELETE FROM former_members
 WHERE EXISTS (SELECT 1 FROM memberships m
                WHERE m.user_id = former_members.user_id
                  AND m.workspace_id = former_members.workspace_id);
-- Accounts already deleted were scrubbed when they went.
DELETE FROM former_members
 WHERE user_id IN (SELECT id FROM users WHERE email = 'deleted-' || id || '@invalid');
