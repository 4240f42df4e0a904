-- hds schema v18: three things every create wrote that it need not.

-- 1. `assignee_email` becomes a plain column, written with the spec. It
--    was a VIRTUAL generated column, lower(json_extract(spec,
--    '$.assignee_email')): the partial indexes actions_unassigned and
--    actions_assignee_email test it, so every create and every change of
--    status parsed the Action's whole spec (about 1 KB of JSON) once more
--    on the single writer thread. The writers now set it beside the spec
--    (store::actions::insert and update_spec, store::work::set_assignee),
--    as SQLite's lower() would: ASCII letters only.
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

-- 2. The history's ids are plain rowids. AUTOINCREMENT kept its high-water
--    mark in sqlite_sequence, one more row updated by every event written
--    (each create writes one), and only guards against reusing the id of a
--    deleted newest row: history rows are never deleted, and ids only order
--    the events of one Action.
CREATE TABLE action_events_v18 (
    id          INTEGER PRIMARY KEY,
    action_id   TEXT NOT NULL REFERENCES actions(id),
    kind        TEXT NOT NULL,
    actor_type  TEXT NOT NULL CHECK (actor_type IN ('user', 'source', 'system')),
    actor_id    TEXT,
    action_version INTEGER NOT NULL,
    data        TEXT NOT NULL DEFAULT '{}',
    created_at  TEXT NOT NULL
) STRICT;
INSERT INTO action_events_v18(id, action_id, kind, actor_type, actor_id, action_version, data, created_at)
    SELECT id, action_id, kind, actor_type, actor_id, action_version, data, created_at
      FROM action_events ORDER BY id;
DROP TABLE action_events;
ALTER TABLE action_events_v18 RENAME TO action_events;
CREATE INDEX action_events_by_action ON action_events(action_id, id);

-- 3. A broadcast's ordinal is the workspace's newest plus one, read from
--    notification_broadcasts (workspace_id, n) instead of a counter on the
--    workspace's row: a create no longer updates that row (one more page
--    each job copied to its savepoint journal). `ntf_last_n` is now raised
--    only by housekeeping, to at least the newest ordinal it removed, so
--    pruning every broadcast of a workspace still never reuses one; the last
--    ordinal is the greater of the two (store::notifications::LAST_BROADCAST),
--    here too.
DROP TRIGGER memberships_ntf_start;
DROP TRIGGER memberships_ntf_promoted;
CREATE TRIGGER memberships_ntf_start AFTER INSERT ON memberships BEGIN
    UPDATE memberships
       SET ntf_from = (SELECT max(w.ntf_last_n, coalesce(
               (SELECT max(b.n) FROM notification_broadcasts b WHERE b.workspace_id = w.id), 0))
               FROM workspaces w WHERE w.id = NEW.workspace_id),
           ntf_read_through = (SELECT max(w.ntf_last_n, coalesce(
               (SELECT max(b.n) FROM notification_broadcasts b WHERE b.workspace_id = w.id), 0))
               FROM workspaces w WHERE w.id = NEW.workspace_id)
     WHERE workspace_id = NEW.workspace_id AND user_id = NEW.user_id;
END;
CREATE TRIGGER memberships_ntf_promoted AFTER UPDATE OF role ON memberships
WHEN OLD.role = 'viewer' AND NEW.role <> 'viewer' BEGIN
    UPDATE memberships
       SET ntf_from = max(ntf_from, (SELECT max(w.ntf_last_n, coalesce(
               (SELECT max(b.n) FROM notification_broadcasts b WHERE b.workspace_id = w.id), 0))
               FROM workspaces w WHERE w.id = NEW.workspace_id))
     WHERE workspace_id = NEW.workspace_id AND user_id = NEW.user_id;
END;
