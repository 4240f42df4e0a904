-- hds schema v43: the Stripe Checkout session an owner started for a
-- workspace, until a paid subscription arrives: a second click (or a second
-- owner) is sent to the same session, and a session for another plan is
-- expired at Stripe before a new one is made, so two can never both be paid.
CREATE TABLE stripe_checkouts (
    workspace_id TEXT PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    plan_id TEXT NOT NULL,
    url TEXT NOT NULL,
    -- Unix seconds: Stripe's `expires_at` of the session.
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
