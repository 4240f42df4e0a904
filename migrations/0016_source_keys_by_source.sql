-- hds schema: a Source's keys by Source (issue 13). A replaced key keeps
-- working until its overlap ends (`revoked_at` in the future), so the key
-- listing, rotation and revocation ask for `revoked_at IS NULL OR
-- revoked_at > now`, which the partial index of current keys cannot serve.
CREATE INDEX source_keys_by_source ON source_keys(source_id, environment, revoked_at);
