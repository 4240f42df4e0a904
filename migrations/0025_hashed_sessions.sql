-- Browser sessions: `web_sessions.id` holds the SHA-256 (hex) of the cookie
-- value, not the value itself, so a copy of the database or a backup opens
-- no dashboard session. The rows already there are hashed by the migration's
-- hook (src/store/migrate.rs), which SQL alone cannot do.
SELECT 1;
