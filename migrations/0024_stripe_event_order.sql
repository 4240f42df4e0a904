-- hds schema v24: Stripe subscription events are applied in the order
-- Stripe created them, and only to the subscription they are about.
--
-- `stripe_event_at` is the `created` time (Unix seconds) of the last
-- subscription event that set the workspace's plan; an event created
-- before it is acknowledged and changes nothing (Stripe does not deliver
-- events in order, and retries old ones).
ALTER TABLE workspaces ADD COLUMN stripe_event_at INTEGER;
