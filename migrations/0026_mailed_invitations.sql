-- hds schema: an invitation e-mailed by hds carries a second secret, in the
-- e-mail only (guide: "Invitations"). Only that link signs a new person in
-- by itself: the link shown to whoever invited (`token_hash`) works for
-- someone signed in, so an inviter cannot sign in as the invited address.
-- NULL: not mailed (no mail configured), and the shown link is the only one.
ALTER TABLE invitations ADD COLUMN mail_token_hash TEXT;
CREATE UNIQUE INDEX invitations_by_mail_token ON invitations(mail_token_hash)
    WHERE mail_token_hash IS NOT NULL;
-- A person's invitations of the last day, across workspaces
-- (service::invitations: at most INVITATIONS_PER_DAY): by inviter and time.
DROP INDEX invitations_by_inviter;
CREATE INDEX invitations_by_inviter ON invitations(invited_by, created_at);
