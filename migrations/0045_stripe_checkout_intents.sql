-- hds schema v45: a Checkout session being asked of Stripe, written (and
-- committed) before the call and deleted with the answer's session stored.
-- A crash in between leaves it here: the next checkout of the workspace
-- asks again with the same Idempotency-Key and parameters, which Stripe
-- answers with the session it made (or makes it, if the first call never
-- arrived), so hds knows of every session it started and can expire it
-- before making another.
CREATE TABLE stripe_checkout_intents (
    workspace_id TEXT PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
    plan_id TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    -- The form sent, as a JSON array of [name, value] pairs.
    form TEXT NOT NULL,
    created_at TEXT NOT NULL
) WITHOUT ROWID, STRICT;
