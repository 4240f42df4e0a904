-- hds schema: invitations that can be accepted (guide: "Invitations").
-- The table of v2 had no token and refused `owner`, which an owner may offer
-- (src/domain/access.rs `can_invite`). SQLite cannot change a CHECK, so the
-- table is rebuilt. Nothing before this version created invitations; any row
-- there gets a token hash nobody holds the secret of, so it can be revoked or
-- left to expire but never accepted by a link.
CREATE TABLE invitations_v6 (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    -- Matched case-insensitively against the accepting person's verified e-mail.
    email        TEXT NOT NULL COLLATE NOCASE,
    role         TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'reviewer', 'viewer')),
    invited_by   TEXT REFERENCES users(id),
    -- SHA-256 (hex) of the secret in accept_url; the secret itself is shown once.
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   TEXT NOT NULL,
    -- created_at + 7 days; past it the invitation reads `expired`.
    expires_at   TEXT NOT NULL,
    -- Set once, by the compare-and-set that accepts (pending → accepted).
    accepted_at  TEXT,
    accepted_by  TEXT REFERENCES users(id),
    revoked_at   TEXT,
    -- An invitation ends one way only.
    CHECK (accepted_at IS NULL OR revoked_at IS NULL)
) STRICT;
INSERT INTO invitations_v6(id, workspace_id, email, role, invited_by, token_hash,
                           created_at, expires_at, accepted_at, revoked_at)
    SELECT id, workspace_id, email, role, invited_by, lower(hex(randomblob(32))),
           created_at, expires_at, accepted_at, revoked_at
    FROM invitations;
DROP TABLE invitations;
ALTER TABLE invitations_v6 RENAME TO invitations;
-- Sign-in asks whether an e-mail has a pending invitation (src/store/signin.rs).
CREATE INDEX invitations_by_email ON invitations(email);
-- GET /v1/workspaces/invitations lists one workspace's, newest first.
CREATE INDEX invitations_by_workspace ON invitations(workspace_id, created_at);
