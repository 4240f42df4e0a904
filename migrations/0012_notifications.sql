-- hds schema v12: notifications (guide: "Notifications"; DESIGN §12).
--
-- Two kinds of rows. A notification meant for a few people (assigned,
-- mentioned, commented, expiring, …) is one row per person in
-- `notifications`. "A new Action you may decide", which reaches every
-- reviewer of a workspace, is one row per Action in `notification_broadcasts`
-- whatever the team's size, read against each member's own watermark
-- (`memberships.ntf_*`): creating an Action in a workspace of 200 reviewers
-- writes one row, not 200, and a person's unread count is arithmetic on
-- ordinals, not a count over rows.

-- One person's notification. Clustered by person, newest id last, so a page
-- of someone's notifications is one range of the table itself.
CREATE TABLE notifications (
    user_id      TEXT NOT NULL REFERENCES users(id),
    id           TEXT NOT NULL,                 -- ntf_<ULID>, sorts by creation
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    kind         TEXT NOT NULL,
    title        TEXT NOT NULL,
    body         TEXT NOT NULL,
    action_id    TEXT,
    -- the dashboard path it is about (`/app/actions/act_…`); shown absolute
    path         TEXT NOT NULL,
    read_at      TEXT,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (user_id, id)
) STRICT, WITHOUT ROWID;
-- unread_only pages
CREATE INDEX notifications_unread ON notifications(user_id, id) WHERE read_at IS NULL;
-- housekeeping prunes read notifications by age
CREATE INDEX notifications_by_age ON notifications(created_at) WHERE read_at IS NOT NULL;

-- Unread personal notifications per person and kind, kept by the triggers
-- below in the same statement as the change: the bell and the summary read
-- at most one row per kind.
CREATE TABLE notification_unread (
    user_id TEXT NOT NULL,
    kind    TEXT NOT NULL,
    n       INTEGER NOT NULL CHECK (n >= 0),
    PRIMARY KEY (user_id, kind)
) STRICT, WITHOUT ROWID;
CREATE TRIGGER notifications_unread_insert AFTER INSERT ON notifications
WHEN NEW.read_at IS NULL BEGIN
    INSERT INTO notification_unread(user_id, kind, n) VALUES (NEW.user_id, NEW.kind, 1)
        ON CONFLICT(user_id, kind) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER notifications_unread_read AFTER UPDATE OF read_at ON notifications
WHEN OLD.read_at IS NULL AND NEW.read_at IS NOT NULL BEGIN
    UPDATE notification_unread SET n = n - 1 WHERE user_id = OLD.user_id AND kind = OLD.kind;
END;
CREATE TRIGGER notifications_unread_delete AFTER DELETE ON notifications
WHEN OLD.read_at IS NULL BEGIN
    UPDATE notification_unread SET n = n - 1 WHERE user_id = OLD.user_id AND kind = OLD.kind;
END;

-- A notification for every member of a workspace who may decide (kind
-- `action.new`). `n` numbers a workspace's broadcasts 1, 2, 3… from the
-- workspace's counter (`workspaces.ntf_last_n`, never reused, so pruning old
-- broadcasts renumbers nothing): a member's are those above their
-- `ntf_from`, unread above their `ntf_read_through`.
ALTER TABLE workspaces ADD COLUMN ntf_last_n INTEGER NOT NULL DEFAULT 0;
CREATE TABLE notification_broadcasts (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,          -- ntf_<ULID>
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    n            INTEGER NOT NULL,
    kind         TEXT NOT NULL,
    title        TEXT NOT NULL,
    body         TEXT NOT NULL,
    action_id    TEXT,
    path         TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    UNIQUE (workspace_id, n)
) STRICT;
-- a member's page, newest first, by id within one workspace
CREATE INDEX notification_broadcasts_by_id ON notification_broadcasts(workspace_id, id);

-- One person's read mark on one broadcast, when read one by one (below
-- their watermark everything is read). `hidden`: never theirs to see (the
-- person the Action was requested by, or its assignee, who hears of it as
-- `action.assigned`).
CREATE TABLE notification_broadcast_reads (
    user_id      TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    n            INTEGER NOT NULL,
    read_at      TEXT NOT NULL,
    hidden       INTEGER NOT NULL DEFAULT 0 CHECK (hidden IN (0, 1)),
    PRIMARY KEY (user_id, workspace_id, n)
) STRICT, WITHOUT ROWID;
-- pruning removes the marks of pruned broadcasts
CREATE INDEX notification_broadcast_reads_by_n ON notification_broadcast_reads(workspace_id, n);

-- A member's broadcast watermarks: `ntf_from` (the last broadcast before
-- they joined), `ntf_read_through` (the last one "read all" covered) and when.
ALTER TABLE memberships ADD COLUMN ntf_from INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memberships ADD COLUMN ntf_read_through INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memberships ADD COLUMN ntf_read_at TEXT;
UPDATE memberships SET ntf_from = 0, ntf_read_through = 0;
-- A new member hears of what comes after they joined, not the workspace's past;
-- a viewer who becomes a reviewer, of what comes after that.
CREATE TRIGGER memberships_ntf_start AFTER INSERT ON memberships BEGIN
    UPDATE memberships
       SET ntf_from = (SELECT ntf_last_n FROM workspaces WHERE id = NEW.workspace_id),
           ntf_read_through = (SELECT ntf_last_n FROM workspaces WHERE id = NEW.workspace_id)
     WHERE workspace_id = NEW.workspace_id AND user_id = NEW.user_id;
END;
CREATE TRIGGER memberships_ntf_promoted AFTER UPDATE OF role ON memberships
WHEN OLD.role = 'viewer' AND NEW.role <> 'viewer' BEGIN
    UPDATE memberships
       SET ntf_from = max(ntf_from, (SELECT ntf_last_n FROM workspaces WHERE id = NEW.workspace_id))
     WHERE workspace_id = NEW.workspace_id AND user_id = NEW.user_id;
END;
-- Personal preferences per workspace; no row = the defaults (guide).
CREATE TABLE notification_preferences (
    user_id      TEXT NOT NULL REFERENCES users(id),
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    -- JSON {"email": bool, "email_digest": "off"|"hourly"|"daily",
    --       "events": {kind: {"in_app": bool, "email": bool}}}, as validated
    prefs        TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    PRIMARY KEY (user_id, workspace_id)
) STRICT, WITHOUT ROWID;
-- who in a workspace wants new Actions by e-mail (a new Action's mails)
CREATE INDEX notification_preferences_by_workspace ON notification_preferences(workspace_id);

-- A workspace's policy; no row = the defaults (guide).
CREATE TABLE notification_policies (
    workspace_id TEXT PRIMARY KEY REFERENCES workspaces(id),
    -- JSON {"new_action", "email_enabled", "expiry_warning_minutes", "mandatory"}
    policy       TEXT NOT NULL,
    updated_by   TEXT REFERENCES users(id),
    updated_at   TEXT NOT NULL
) STRICT;

-- Notifications waiting for a person's hourly or daily digest e-mail; the
-- digest job takes them all in one mail and deletes them.
CREATE TABLE notification_digest_items (
    id           INTEGER PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users(id),
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    kind         TEXT NOT NULL,
    title        TEXT NOT NULL,
    body         TEXT NOT NULL,
    path         TEXT NOT NULL,
    created_at   TEXT NOT NULL
) STRICT;
CREATE INDEX notification_digest_items_by_user ON notification_digest_items(user_id, workspace_id, id);

-- Notifications that fall due later: `expiring` (subject: an Action id; due
-- `expires_at` minus the policy's warning), `returned` (an Action id; due
-- when its snooze ends; `user_id` snoozed it), `digest` (subject
-- `user_id workspace_id`; due at the end of the hour or day), `broadcast`
-- (a broadcast's id; due at once: its e-mails are written by the next pass,
-- not by the create that caused it). The expiry worker runs the due ones
-- each second and whenever the clock moves.
CREATE TABLE notification_timers (
    kind    TEXT NOT NULL CHECK (kind IN ('expiring', 'returned', 'digest', 'broadcast')),
    subject TEXT NOT NULL,
    due_at  TEXT NOT NULL,
    user_id TEXT,
    PRIMARY KEY (kind, subject)
) STRICT, WITHOUT ROWID;
CREATE INDEX notification_timers_due ON notification_timers(due_at);
