-- hds schema v2: sign-in, sessions and the dashboard (issue 3).

-- One row per credential a person holds: `api` tokens they created on purpose,
-- and `session` rows, one per sign-in (a bearer session for apps, or the row a
-- browser's cookie session points at). Revoking the row ends either.
ALTER TABLE user_tokens ADD COLUMN kind TEXT NOT NULL DEFAULT 'api' CHECK (kind IN ('api', 'session'));
-- How the session began: 'link' or a provider name (NULL for API tokens).
ALTER TABLE user_tokens ADD COLUMN method TEXT;
ALTER TABLE user_tokens ADD COLUMN user_agent TEXT;
ALTER TABLE user_tokens ADD COLUMN last_used_at TEXT;
CREATE INDEX user_tokens_by_user ON user_tokens(user_id, created_at);

-- A person is who the identity provider says: (issuer, subject), never the e-mail
-- alone. E-mail only links the first sign-in to an existing user (the init admin,
-- an invited person).
CREATE TABLE identities (
    issuer       TEXT NOT NULL,
    subject      TEXT NOT NULL,
    user_id      TEXT NOT NULL REFERENCES users(id),
    email        TEXT,
    created_at   TEXT NOT NULL,
    last_seen_at TEXT NOT NULL,
    PRIMARY KEY (issuer, subject)
) STRICT;
CREATE INDEX identities_by_user ON identities(user_id);

-- Invitations by e-mail. A pending one admits its holder at sign-in.
CREATE TABLE invitations (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    email        TEXT NOT NULL COLLATE NOCASE,
    role         TEXT NOT NULL CHECK (role IN ('admin', 'reviewer', 'viewer')),
    invited_by   TEXT REFERENCES users(id),
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    accepted_at  TEXT,
    revoked_at   TEXT
) STRICT;
CREATE INDEX invitations_by_email ON invitations(email);

-- One-time sign-in links (`hds users link`); only the hash of the secret is kept.
CREATE TABLE signin_links (
    token_hash TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id),
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at    TEXT
) STRICT;

-- Native sign-in challenges: single attempt, a few minutes.
CREATE TABLE auth_nonces (
    nonce_hash TEXT PRIMARY KEY,
    provider   TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at    TEXT
) STRICT;

-- Browser sign-in transactions, keyed by the SHA-256 of `state`, bound to the
-- browser that started them by a second short-lived cookie (binding_hash). Kept
-- here rather than in the session because Apple's form_post callback is a
-- cross-site POST that carries no SameSite=Lax cookie.
CREATE TABLE oidc_logins (
    state_hash    TEXT PRIMARY KEY,
    provider      TEXT NOT NULL,
    nonce         TEXT NOT NULL,
    pkce_verifier TEXT NOT NULL,
    next          TEXT NOT NULL,
    binding_hash  TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    expires_at    TEXT NOT NULL
) STRICT;

-- tower-sessions records (the `service_session` cookie holds the id).
CREATE TABLE web_sessions (
    id         TEXT PRIMARY KEY,
    data       BLOB NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;
CREATE INDEX web_sessions_by_expiry ON web_sessions(expires_at);
