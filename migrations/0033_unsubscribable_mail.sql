-- hds schema: whether a mail carries a one-click unsubscribe link (guide:
-- "E-mail"). Only a mail that unsubscribing would stop does: a notification
-- of a kind its workspace does not make mandatory, or a digest (which holds
-- no mandatory kind: those are mailed at once). An invitation never does.
ALTER TABLE mail_outbox ADD COLUMN unsubscribable INTEGER NOT NULL DEFAULT 0
    CHECK (unsubscribable IN (0, 1));
-- Mails still waiting to go out: a digest gets the link (its items were
-- held because the person chose a digest); a notification mail, whose kind
-- is not stored, goes out without one, as before.
UPDATE mail_outbox SET unsubscribable = 1 WHERE status = 'pending' AND kind = 'digest';
