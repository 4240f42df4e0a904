-- hds schema: secrets of this instance that are not signing keys. The
-- first, `mail_unsubscribe`, keys the HMAC of the one-click unsubscribe
-- links in notification mails (guide: "E-mail", RFC 8058): a link names a
-- person and a workspace and carries the MAC, so nothing is written per
-- mail. Made here, at random, once per database.
CREATE TABLE instance_secrets (
    name  TEXT PRIMARY KEY,
    value BLOB NOT NULL CHECK (length(value) = 32)
);
INSERT INTO instance_secrets(name, value) VALUES ('mail_unsubscribe', randomblob(32));
