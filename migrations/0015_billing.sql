-- hds schema: plans and usage (guide: "Plans and billing"; DESIGN §14).
--
-- A workspace's plan is an id from hds.toml's `[billing.plans.<id>]`, or the
-- built-in `self_hosted` (unlimited), the default. The limits themselves stay
-- in the configuration file: changing them needs no migration.
ALTER TABLE workspaces ADD COLUMN plan_id TEXT NOT NULL DEFAULT 'self_hosted';
-- Set once the billing portal first opens with `[billing.stripe]`; Stripe's
-- subscription webhooks find the workspace by it.
ALTER TABLE workspaces ADD COLUMN stripe_customer_id TEXT;
ALTER TABLE workspaces ADD COLUMN stripe_subscription_id TEXT;
CREATE UNIQUE INDEX workspaces_stripe_customer
    ON workspaces(stripe_customer_id) WHERE stripe_customer_id IS NOT NULL;

-- What a workspace used in one calendar month (UTC), bumped in the same
-- transaction as each create it counts: reading this month's usage is one
-- row, whatever the number of Actions (counting them would read them all).
CREATE TABLE usage_counters (
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    period       TEXT NOT NULL,            -- 'YYYY-MM', UTC
    actions      INTEGER NOT NULL DEFAULT 0 CHECK (actions >= 0),
    runs         INTEGER NOT NULL DEFAULT 0 CHECK (runs >= 0),
    PRIMARY KEY (workspace_id, period)
) STRICT, WITHOUT ROWID;
