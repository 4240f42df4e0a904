//! `hds keys rotate|list|revoke`: receipt signing keys. Each works while the
//! server runs: it reads the keys from the database on every receipt and
//! every JWKS request.

use clap::Subcommand;

use crate::cli::DataDir;
use crate::service::keyring;
use crate::store::{db::open_cli_connection, receipts};

#[derive(Subcommand)]
pub enum KeysCommand {
    /// Create a new signing key; the old one stays published as retired.
    Rotate(DataDir),
    /// List every signing key with its status.
    List(DataDir),
    /// Revoke a retired key (after a leak): it stays published with status
    /// `revoked`, and every receipt it signed fails verification from then
    /// on. Rotate first to revoke the active key.
    Revoke(RevokeArgs),
}

#[derive(clap::Args)]
pub struct RevokeArgs {
    #[command(flatten)]
    pub dir: DataDir,
    /// The key's `kid`, as `hds keys list` shows it (one that starts with
    /// `-` is taken as it is).
    #[arg(allow_hyphen_values = true)]
    pub kid: String,
}

pub fn run(cmd: KeysCommand) -> anyhow::Result<()> {
    match cmd {
        KeysCommand::Rotate(dir) => {
            let mut conn = open_cli_connection(&dir.existing_db()?)?;
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let now = crate::domain::time::format(crate::clock::Clock::system().now());
            let kid = keyring::rotate(&dir.keys_dir(), &tx, &now)?;
            tx.commit()?;
            crate::cli::say!("active receipt key is now {kid}")?;
        }
        KeysCommand::Revoke(a) => {
            let mut conn = open_cli_connection(&a.dir.existing_db()?)?;
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let now = crate::domain::time::format(crate::clock::Clock::system().now());
            let was = keyring::revoke(&a.dir.keys_dir(), &tx, &a.kid, &now)?;
            tx.commit()?;
            match was.as_deref() {
                None => anyhow::bail!(
                    "no receipt key has the kid {}; `hds keys list` shows them",
                    a.kid
                ),
                Some("active") => anyhow::bail!(
                    "{} is the active key, which signs new receipts: run `hds keys rotate` first, then revoke it",
                    a.kid
                ),
                Some("revoked") => crate::cli::say!("{} was already revoked", a.kid)?,
                Some(_) => crate::cli::say!(
                    "revoked {}: it stays published as revoked, and receipts it signed no longer verify",
                    a.kid
                )?,
            }
        }
        KeysCommand::List(dir) => {
            let conn = open_cli_connection(&dir.existing_db()?)?;
            let keys = receipts::keys(&conn).map_err(crate::error::Error::for_operator)?;
            let keys = crate::service::keyring::as_marked(&dir.keys_dir(), keys);
            let head = format!("{:<45} {:<8} {:<26} RETIRED", "KID", "STATUS", "CREATED");
            let rows = keys.into_iter().map(|k| {
                format!(
                    "{:<45} {:<8} {:<26} {}",
                    k.kid,
                    k.status,
                    k.created_at,
                    k.retired_at.unwrap_or_default()
                )
            });
            crate::cli::print_lines(std::iter::once(head).chain(rows))?;
        }
    }
    Ok(())
}
