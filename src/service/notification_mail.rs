//! E-mail (guide: "E-mail"). The SMTP outbox lands with branch `mail`; until
//! then hds has no `[smtp]` and `enabled` is false, so no caller reaches the
//! functions below.

use rusqlite::Connection;

use crate::config::Config;
use crate::error::Result;
use crate::service::effects::Effects;
use crate::store::notifications::New;

pub fn enabled(_config: &Config) -> bool {
    false
}

pub fn notification(_c: &Connection, _fx: &mut Effects, _user_id: &str, _n: &New) -> Result<()> {
    Ok(())
}

pub fn queue_broadcast(
    _c: &Connection,
    _fx: &mut Effects,
    _ws: &str,
    _id: &str,
    _now: &str,
) -> Result<()> {
    Ok(())
}

pub fn digest(
    _c: &Connection,
    _fx: &mut Effects,
    _user_id: &str,
    _ws: &str,
    _now: &str,
) -> Result<()> {
    Ok(())
}
