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

/// A file SQLite keeps beside a database (`PATH-journal`, `PATH-wal`,
/// `PATH-shm`); with an empty suffix, the database itself.
fn beside(path: &std::path::Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
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
    // The file is made here, and only here (never one that appeared since
    // the check above), so a failed copy can take it away again: a retry
    // must not find a half-written or empty backup in its way.
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&a.path)
        .with_context(|| format!("creating {}", a.path.display()))?;
    let written = (|| -> anyhow::Result<i64> {
        crate::files::restrict_file(&a.path)?;
        let mut dst = Connection::open(&a.path)?;
        copy(&src, &mut dst)?;
        let n = dst.query_row("SELECT count(*) FROM actions", [], |r| r.get(0))?;
        // A copy takes the live database's WAL mode; a backup in WAL mode
        // cannot be read from read-only media (a snapshot, a mounted
        // volume) and grows -wal and -shm files beside it whenever opened.
        // In rollback mode it is one self-contained file.
        let mode: String = dst.query_row("PRAGMA journal_mode = DELETE", [], |r| r.get(0))?;
        anyhow::ensure!(
            mode.eq_ignore_ascii_case("delete"),
            "could not take the copy out of WAL mode (journal_mode {mode})"
        );
        dst.close().map_err(|(_, e)| e)?;
        std::fs::File::open(&a.path)?.sync_all()?;
        // Its name too: the directory entry is synced with the directory.
        if let Some(dir) = a.path.parent().filter(|d| !d.as_os_str().is_empty())
            && let Ok(d) = std::fs::File::open(dir)
        {
            let _ = d.sync_all();
        }
        Ok(n)
    })();
    let n = match written {
        Ok(n) => n,
        Err(e) => {
            for leftover in ["", "-journal", "-wal", "-shm"].map(|suffix| beside(&a.path, suffix)) {
                let _ = std::fs::remove_file(leftover);
            }
            return Err(e.context(format!(
                "backing up {} to {} (nothing was left at {}; if the disk is full, check both the \
                 data dir's and the backup's file system)",
                a.dir.db_path().display(),
                a.path.display(),
                a.path.display()
            )));
        }
    };
    crate::cli::say!(
        "backed up {} ({n} Actions) to {}",
        a.dir.db_path().display(),
        a.path.display()
    )?;
    crate::cli::say!(
        "note: receipt signing keys live in {}; back that directory up too",
        a.dir.keys_dir().display()
    )?;
    Ok(())
}

pub fn restore(a: RestoreArgs) -> anyhow::Result<()> {
    // The backup is checked before anything in the data dir is touched.
    match std::fs::metadata(&a.path) {
        Ok(m) if m.is_dir() => bail!(
            "{} is a directory; give the file `hds backup` wrote",
            a.path.display()
        ),
        Ok(_) => {}
        Err(e) => bail!("{}: {e}", a.path.display()),
    }
    let src = open_backup(&a.path)?;
    let ok: bool = src
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'actions')",
            [],
            |r| r.get(0),
        )
        .with_context(|| format!("reading {}", a.path.display()))?;
    if !ok {
        bail!("{} is not an hds backup", a.path.display());
    }
    let theirs: i64 = src.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let ours = crate::store::migrate::latest_version()?;
    if theirs > ours {
        bail!(
            "{} was written by a newer hds (schema {theirs}; this hds knows up to {ours}); restore it with that version or newer",
            a.path.display()
        );
    }
    let _lock = a.dir.lock()?;
    let db = a.dir.db_path();
    // Receipts the replaced database issued after the backup was taken:
    // their `seq` numbers will be issued again, to other decisions. Said
    // before anything is replaced, with or without --force.
    let reissued = if db.exists() {
        let last = |c: &rusqlite::Connection| -> i64 {
            c.query_row("SELECT coalesce(max(seq), 0) FROM receipts", [], |r| {
                r.get(0)
            })
            .unwrap_or(0)
        };
        let backed_up = last(&src);
        let replaced =
            rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .map(|c| last(&c))
                .unwrap_or(0);
        (replaced > backed_up).then(|| {
            format!(
                "the database being replaced issued receipts up to seq {replaced}, the backup only up to seq {backed_up}. \
                 Receipts {} to {replaced} stay valid signatures, but new decisions will be issued those seq numbers again: \
                 keep the receipts issued since the backup as the record of those decisions, and take a `hds backup` of this data dir first if you may want it back",
                backed_up + 1
            )
        })
    } else {
        None
    };
    if db.exists() && !a.force {
        bail!(
            "{} already holds a database; pass --force to replace it{}",
            a.dir.data_dir.display(),
            reissued.map(|w| format!(" ({w})")).unwrap_or_default()
        );
    }
    if let Some(w) = reissued {
        eprintln!("warning: {w}");
    }
    // The modes `init` gives: the database holds webhook secrets. A data
    // dir this user may write but does not own keeps its mode, with a
    // warning (the server sets it again at start).
    match crate::files::restrict_data_dir(&a.dir.data_dir) {
        Ok(None) => {}
        Ok(Some(other)) => eprintln!(
            "warning: {}",
            crate::files::shared_data_dir_warning(&a.dir.data_dir, &other)
        ),
        Err(e) => eprintln!(
            "warning: could not make {} private (0700): {e}",
            a.dir.data_dir.display()
        ),
    }
    // Copied, migrated and given its keys beside the live file, then moved
    // over it in one rename: a failure on the way leaves the database that
    // was there as it was.
    let staged = PathBuf::from(format!("{}.restoring", db.display()));
    let keys = match stage(&src, &staged, &a.dir.keys_dir()).and_then(|k| {
        swap_in(&staged, &db)?;
        Ok(k)
    }) {
        Ok(k) => k,
        Err(e) => {
            remove_with_journals(&staged);
            return Err(e);
        }
    };
    crate::cli::say!("restored {} into {}", a.path.display(), db.display())?;
    if keys.published > 0 {
        crate::cli::say!(
            "{} receipt key file(s) in {} that the backup did not list are published again, as retired, so the receipts they signed still verify",
            keys.published,
            a.dir.keys_dir().display()
        )?;
    }
    if !keys.revoked.is_empty() {
        crate::cli::say!(
            "revoked again (revoked after this backup was taken): {}{}",
            keys.revoked.join(", "),
            if keys.active_revoked {
                "; the backup's active key is among them, so the next `hds serve` makes a new one"
            } else {
                ""
            }
        )?;
    }
    Ok(())
}

/// Opens a backup to read, never to write: `immutable` (RFC 8089 file URI,
/// SQLite's URI parameter) so that nothing, not even a `-shm` file, is made
/// beside it, and a backup on read-only media (older ones, in WAL mode,
/// included) can be restored. A database with a write-ahead log beside it
/// (a copy of a live data dir) is opened as before, so that the commits
/// still in its log are read too: `immutable` would leave them out.
fn open_backup(path: &std::path::Path) -> anyhow::Result<Connection> {
    let wal = beside(path, "-wal");
    if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
        return Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("opening {} with its {}", path.display(), wal.display()));
    }
    let abs = std::path::absolute(path).with_context(|| format!("reading {}", path.display()))?;
    let text = abs
        .to_str()
        .with_context(|| format!("{} is not a UTF-8 path", path.display()))?;
    // `file://` and an absolute path: an empty authority, so a path that
    // starts with `//` is still a path.
    let mut uri = String::from("file://");
    for ch in text.chars() {
        match ch {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push_str("?immutable=1");
    Connection::open_with_flags(
        &uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
    )
    .with_context(|| format!("opening {}", path.display()))
}

/// What a restore did to the receipt keys.
struct KeysFixed {
    /// Key files the backup did not list, published as retired.
    published: usize,
    /// Keys revoked since the backup, revoked again.
    revoked: Vec<String>,
    /// The backup's active key was one of them.
    active_revoked: bool,
}

/// Moves the staged database over `db`. The live one's WAL is folded into
/// it first, so removing the WAL loses nothing while the old file still
/// stands; the rename is then synced with the directory.
fn swap_in(staged: &std::path::Path, db: &std::path::Path) -> anyhow::Result<()> {
    if db.exists()
        && let Ok(live) = Connection::open(db)
    {
        // A database too damaged to open is being replaced anyway.
        let _ = live.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        drop(live);
    }
    for suffix in ["-wal", "-shm"] {
        let p = PathBuf::from(format!("{}{suffix}", db.display()));
        if p.exists() {
            std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
        }
    }
    std::fs::rename(staged, db)
        .with_context(|| format!("moving {} to {}", staged.display(), db.display()))?;
    if let Some(dir) = db.parent()
        && let Ok(d) = std::fs::File::open(dir)
    {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Writes the backup's copy to `path` (0600), migrated to this version, with
/// the key files of `keys` it does not list published as retired; closed
/// (its journal folded in) when this returns.
fn stage(
    src: &Connection,
    path: &std::path::Path,
    keys: &std::path::Path,
) -> anyhow::Result<KeysFixed> {
    remove_with_journals(path);
    let mut dst = Connection::open(path).with_context(|| format!("creating {}", path.display()))?;
    crate::files::restrict_file(path).with_context(|| format!("restricting {}", path.display()))?;
    copy(src, &mut dst)?;
    crate::store::migrate::apply(&mut dst)?;
    let now = crate::domain::time::format(crate::clock::Clock::system().now());
    let tx = dst.transaction()?;
    let active = crate::store::receipts::active_kid(&tx)?;
    let published = crate::service::keyring::publish_key_files(keys, &tx, &now)?;
    let revoked = crate::service::keyring::apply_revocations(keys, &tx, &now)?;
    tx.commit()?;
    // Out of WAL mode, which folds every page into the file (an error here,
    // unlike a checkpoint at close, is reported); the server turns WAL on
    // again when it opens it.
    let mode: String = dst.query_row("PRAGMA journal_mode = DELETE", [], |r| r.get(0))?;
    anyhow::ensure!(
        mode.eq_ignore_ascii_case("delete"),
        "could not fold the restored copy's journal (journal_mode {mode})"
    );
    dst.close().map_err(|(_, e)| e)?;
    let wal = PathBuf::from(format!("{}-wal", path.display()));
    anyhow::ensure!(!wal.exists(), "{} was left behind", wal.display());
    std::fs::File::open(path)?.sync_all()?;
    Ok(KeysFixed {
        published,
        active_revoked: active.is_some_and(|k| revoked.contains(&k)),
        revoked,
    })
}

/// Removes a database file and its journals, if there.
fn remove_with_journals(path: &std::path::Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}
