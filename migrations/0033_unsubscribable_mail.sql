-- hds schema: whether a mail carries a one-click unsubscribe link (guide:
-- "E-mail"). Only a mail that unsubscribing would stop does: a notification
-- of a kind its workspace does not make mandatory, or a digest (which holds
-- no mandatory kind: those are mailed at once). An invitation never does.
ALTER TABLE mail_outbox ADD COLUMN unsubscribable INTEGER NOT NULL DEFAULT 0
    CHECK (unsubscribable IN (0, 1));
