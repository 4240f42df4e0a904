-- hds schema: a context request may carry its asker's Idempotency-Key
-- (guide: "Context requests"), scoped to that person as a control
-- request's is: the same key and question answer the first request again,
-- so a retried or double-submitted question reaches the Source once.
ALTER TABLE context_requests ADD COLUMN idempotency_key TEXT;
ALTER TABLE context_requests ADD COLUMN request_hash TEXT;
CREATE UNIQUE INDEX context_requests_by_key ON context_requests(requested_by, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
