//! `hds backup PATH` (online, consistent, SQLite backup API) and
//! `hds restore PATH` (into an idle data dir).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use rusqlite::{Connection, OpenFlags, backup::Backup};

use crate::cli::DataDir;

#[derive(clap::Args)]
pub struct BackupArgs {
    #[command(flatten)]
    pub dir: DataDir,
    /// Where to write the copy; must not exist.
    pub path: PathBuf,
}

#[derive(clap::Args)]
pub struct RestoreArgs {
    #[command(flatten)]
    pub dir: DataDir,
    /// A file written by `hds backup`.
    pub path: PathBuf,
    /// Replace an existing database in the data dir.
    #[arg(long)]
    pub force: bool,
}

fn copy(src: &Connection, dst: &mut Connection) -> anyhow::Result<()> {
    // All pages in one step: a stepwise copy restarts whenever the server
    // writes, and might never finish under load.
    Backup::new(src, dst)?.run_to_completion(i32::MAX, Duration::from_millis(5), None)?;
    Ok(())
}

pub fn backup(a: BackupArgs) -> anyhow::Result<()> {
    if a.path.exists() {
        bail!("{} exists; choose a new path", a.path.display());
    }
    let src = Connection::open_with_flags(a.dir.existing_db()?, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("opening {}", a.dir.db_path().display()))?;
    let mut dst =
        Connection::open(&a.path).with_context(|| format!("creating {}", a.path.display()))?;
    crate::files::restrict_file(&a.path)?;
    copy(&src, &mut dst)?;
    let n: i64 = dst.query_row("SELECT count(*) FROM actions", [], |r| r.get(0))?;
    println!(
        "backed up {} ({n} Actions) to {}",
        a.dir.db_path().display(),
        a.path.display()
    );
    println!(
        "note: receipt signing keys live in {}; back that directory up too",
        a.dir.keys_dir().display()
    );
    Ok(())
}

pub fn restore(a: RestoreArgs) -> anyhow::Result<()> {
    let _lock = a.dir.lock()?;
    let db = a.dir.db_path();
    if db.exists() && !a.force {
        bail!(
            "{} already holds a database; pass --force to replace it",
            a.dir.data_dir.display()
        );
    }
    let src = Connection::open_with_flags(&a.path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("opening {}", a.path.display()))?;
    let ok: bool = src.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'actions')",
        [],
        |r| r.get(0),
    )?;
    if !ok {
        bail!("{} is not an hds backup", a.path.display());
    }
    for suffix in ["-wal", "-shm"] {
        let p = PathBuf::from(format!("{}{suffix}", db.display()));
        if p.exists() {
            std::fs::remove_file(&p)?;
        }
    }
    // The modes `init` gives: the database holds webhook secrets. A data
    // dir this user may write but does not own keeps its mode, with a
    // warning (the server sets it again at start).
    if let Err(e) = crate::files::restrict_dir(&a.dir.data_dir) {
        eprintln!(
            "warning: could not make {} private (0700): {e}",
            a.dir.data_dir.display()
        );
    }
    let mut dst = Connection::open(&db).with_context(|| format!("opening {}", db.display()))?;
    crate::files::restrict_file(&db).with_context(|| format!("restricting {}", db.display()))?;
    copy(&src, &mut dst)?;
    crate::store::migrate::apply(&mut dst)?;
    // Keys rotated after the backup was taken stay published (retired), so
    // the receipts they signed still verify.
    let now = crate::domain::time::format(crate::clock::Clock::system().now());
    let tx = dst.transaction()?;
    let again = crate::service::keyring::publish_key_files(&a.dir.keys_dir(), &tx, &now)?;
    tx.commit()?;
    println!("restored {} into {}", a.path.display(), db.display());
    if again > 0 {
        println!(
            "{again} receipt key(s) rotated after this backup are published again, as retired; the backup's active key signs"
        );
    }
    Ok(())
}
