-- hds schema: a Source's failed webhook deliveries, newest first
-- (GET /v1/source/deliveries?status=failed, and POST
-- /v1/source/deliveries/recover, which resends them after an outage).
-- Partial: a delivery enters it only when it is given up, so sending
-- costs no write to it.
CREATE INDEX webhook_deliveries_failed
    ON webhook_deliveries(source_id, environment, id)
    WHERE status = 'failed';
