//! `hds keys rotate|list`: receipt signing keys. Rotation works while the
//! server runs: it reads the active key from the database on every receipt.

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
}

pub fn run(cmd: KeysCommand) -> anyhow::Result<()> {
    match cmd {
        KeysCommand::Rotate(dir) => {
            let mut conn = open_cli_connection(&dir.existing_db()?)?;
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let now = crate::domain::time::format(crate::clock::Clock::system().now());
            let kid = keyring::rotate(&dir.keys_dir(), &tx, &now)?;
            tx.commit()?;
            println!("active receipt key is now {kid}");
        }
        KeysCommand::List(dir) => {
            let conn = open_cli_connection(&dir.existing_db()?)?;
            let keys = receipts::keys(&conn).map_err(|e| anyhow::anyhow!("{e}"))?;
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
