-- hds schema v24: the workspace follows one Stripe subscription, and its
-- events are applied in the order Stripe created them.
--
-- Stripe does not deliver events in order, retries old ones, and a
-- customer may hold or move between several subscriptions. The workspace
-- keeps the subscription its plan follows (`stripe_subscription_id`, kept
-- after it ends), when that subscription was created (Stripe's
-- `created`), whether it is live (paid, on trial or being retried), and
-- the `created` time of the last event of it that was applied. An event
-- older than that changes nothing; another subscription takes over only
-- when it is paid and newer, or when the followed one has ended.
ALTER TABLE workspaces ADD COLUMN stripe_subscription_created INTEGER;
ALTER TABLE workspaces ADD COLUMN stripe_subscription_live INTEGER NOT NULL DEFAULT 0
    CHECK (stripe_subscription_live IN (0, 1));
ALTER TABLE workspaces ADD COLUMN stripe_event_at INTEGER;
-- A subscription set before this version gave the workspace its plan.
UPDATE workspaces SET stripe_subscription_live = 1 WHERE stripe_subscription_id IS NOT NULL;
