-- hds schema v45: a Checkout session being asked of Stripe, written (and
-- committed) before the call and deleted with the answer's session stored
-- (or with Stripe's refusal of the request as asked). A crash, a timeout or
-- a 5xx in between leaves it here: Stripe may have made the session. The
-- next checkout of the workspace then lists the customer's open sessions
-- at Stripe and expires those of this workspace that hds does not know,
-- so no session hds asked for stays open unknown. (Asking again under the
-- same Idempotency-Key would not do: Stripe answers a key that got a 5xx
-- with that 5xx again for a day.)
CREATE TABLE stripe_checkout_intents (
    workspace_id TEXT PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
    plan_id TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    -- The form sent, as a JSON array of [name, value] pairs.
    form TEXT NOT NULL,
    created_at TEXT NOT NULL
) WITHOUT ROWID, STRICT;
