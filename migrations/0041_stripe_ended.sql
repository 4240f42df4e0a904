-- hds schema v41: Stripe subscriptions known to have ended for good
-- (deleted, canceled or incomplete_expired), so an older "active" event
-- delivered after the end cannot bring one back, whether or not the
-- workspace followed it when the end arrived.
CREATE TABLE stripe_ended_subscriptions (
    subscription_id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    ended_at TEXT NOT NULL
) WITHOUT ROWID;
