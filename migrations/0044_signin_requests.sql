-- hds schema v44: each request for a mailed sign-in link, by a hash of the
-- address asked for, whether or not an account has that address. The
-- throttle counts these (it counted the mails sent, so only for accounts),
-- and the request writes one either way: the answer takes the same write
-- and the same commit for an address with an account as for one without,
-- so its timing does not tell who has an account. Kept a day (the hourly
-- housekeeping removes them, so up to 25 hours). The sign-in mails sent
-- before this version are not counted: on the day of the upgrade an
-- account may be mailed up to ten more.
CREATE TABLE signin_requests (
    -- SHA-256 of the address, trimmed and lower-cased, in hex.
    address_hash TEXT NOT NULL,
    requested_at TEXT NOT NULL
) STRICT;
CREATE INDEX signin_requests_by_address ON signin_requests(address_hash, requested_at);
CREATE INDEX signin_requests_by_age ON signin_requests(requested_at);
-- The throttle no longer reads the outbox.
DROP INDEX mail_outbox_signin;
