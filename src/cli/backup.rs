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
    let replaced = db.exists().then(|| std::path::absolute(&db)).transpose()?;
    let keys = match stage(&src, &staged, &a.dir.keys_dir(), replaced.as_deref()).and_then(|k| {
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
    // The active key's private file, which the next start signs with.
    if let Some(kid) = keys.active.as_deref().filter(|_| !keys.active_revoked)
        && !crate::service::keyring::key_path(&a.dir.keys_dir(), kid).exists()
    {
        eprintln!(
            "warning: {} has no file of the backup's signing key {kid}: copy back the keys directory you backed up before the next start, or that start makes a new signing key (receipts signed earlier still verify)",
            a.dir.keys_dir().display()
        );
    }
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
    let c = &keys.credentials;
    if c.tokens + c.source_keys > 0 {
        crate::cli::say!(
            "kept revoked (revoked after this backup was taken): {} user token(s) and sign-in session(s), {} Source key(s)",
            c.tokens,
            c.source_keys
        )?;
    }
    if !c.sources.is_empty() {
        crate::cli::say!(
            "kept revoked (revoked after this backup was taken): Sources {}; their Actions the backup holds open stay open (cancel them, or let them expire)",
            c.sources.join(", ")
        )?;
    }
    if !c.newer_keys.is_empty() {
        eprintln!(
            "warning: these Sources use keys made after this backup was taken, which it does not hold, so those keys stop working: {}. Rotate each Source's keys (its page in the dashboard, or POST /v1/sources/ID/keys/rotate) and give it the new ones",
            c.newer_keys.join(", ")
        );
    }
    if !c.other_secrets.is_empty() {
        eprintln!(
            "warning: these Sources' webhook secrets changed after this backup was taken, so their deliveries are signed with the backup's secret again: {}. Rotate each webhook secret if the old one may have leaked, and give the receivers the new one",
            c.other_secrets.join(", ")
        );
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
    /// The backup's active signing key.
    active: Option<String>,
    /// Credentials of the replaced database, compared with the backup's.
    credentials: Credentials,
}

/// What the database a restore replaces says of the backup's credentials
/// (README: "Backups"): revocations made after the backup are kept, and what
/// cannot be kept is named.
#[derive(Default)]
struct Credentials {
    /// User tokens and sign-in sessions revoked (or signed out) since the
    /// backup, revoked again.
    tokens: usize,
    /// Source keys revoked or rotated away since the backup, revoked again
    /// (at the end the replaced database gave them).
    source_keys: usize,
    /// Sources revoked since the backup, revoked again.
    sources: Vec<String>,
    /// Sources whose key in use was made after the backup (it stops working).
    newer_keys: Vec<String>,
    /// Sources whose webhook secret changed after the backup.
    other_secrets: Vec<String>,
}

/// Applies the replaced database's revocations (attached as `cur`) to the
/// restored copy, and names what the backup lacks.
fn keep_revocations(tx: &Connection) -> anyhow::Result<Credentials> {
    let tokens = tx.execute(
        "UPDATE main.user_tokens
            SET revoked_at = (SELECT c.revoked_at FROM cur.user_tokens c
                               WHERE c.token_hash = main.user_tokens.token_hash)
          WHERE revoked_at IS NULL
            AND token_hash IN (SELECT token_hash FROM cur.user_tokens WHERE revoked_at IS NOT NULL)",
        [],
    )?;
    let source_keys = tx.execute(
        "UPDATE main.source_keys
            SET revoked_at = (SELECT c.revoked_at FROM cur.source_keys c
                               WHERE c.key_hash = main.source_keys.key_hash)
          WHERE key_hash IN (SELECT c.key_hash FROM cur.source_keys c
                              WHERE c.revoked_at IS NOT NULL
                                AND (main.source_keys.revoked_at IS NULL
                                     OR main.source_keys.revoked_at > c.revoked_at))",
        [],
    )?;
    let ids = |sql: &str| -> anyhow::Result<Vec<String>> {
        let mut st = tx.prepare(sql)?;
        let rows = st.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    };
    // A Source revoked since (a leaked key, say): its keys answer
    // SOURCE_REVOKED by the Source's row, not their own.
    let sources = ids(
        "SELECT s.id FROM main.sources s JOIN cur.sources c ON c.id = s.id
          WHERE s.revoked_at IS NULL AND c.revoked_at IS NOT NULL ORDER BY 1",
    )?;
    tx.execute(
        "UPDATE main.sources
            SET revoked_at = (SELECT c.revoked_at FROM cur.sources c WHERE c.id = main.sources.id),
                updated_at = (SELECT c.updated_at FROM cur.sources c WHERE c.id = main.sources.id)
          WHERE revoked_at IS NULL
            AND id IN (SELECT id FROM cur.sources WHERE revoked_at IS NOT NULL)",
        [],
    )?;
    let newer_keys = ids("SELECT DISTINCT c.source_id FROM cur.source_keys c
          JOIN main.sources s ON s.id = c.source_id AND s.revoked_at IS NULL
          WHERE c.revoked_at IS NULL
            AND c.key_hash NOT IN (SELECT key_hash FROM main.source_keys)
          ORDER BY 1")?;
    let other_secrets = ids(
        "SELECT s.id FROM main.sources s JOIN cur.sources c ON c.id = s.id
          WHERE s.revoked_at IS NULL AND c.webhook_secret <> s.webhook_secret
          ORDER BY 1",
    )?;
    Ok(Credentials {
        tokens,
        source_keys,
        sources,
        newer_keys,
        other_secrets,
    })
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
    replaced: Option<&std::path::Path>,
) -> anyhow::Result<KeysFixed> {
    remove_with_journals(path);
    let mut dst = Connection::open(path).with_context(|| format!("creating {}", path.display()))?;
    crate::files::restrict_file(path).with_context(|| format!("restricting {}", path.display()))?;
    copy(src, &mut dst)?;
    crate::store::migrate::apply(&mut dst)?;
    let now = crate::domain::time::format(crate::clock::Clock::system().now());
    // A database that cannot be read (the reason for the restore, maybe)
    // holds up nothing: the restore goes on, and says what it could not keep.
    let unreadable = |db: &std::path::Path, e: &dyn std::fmt::Display| {
        eprintln!(
            "warning: could not read the revocations of the database being replaced ({}: {e}): user tokens, sessions and Source keys revoked after this backup was taken work again; revoke them again",
            db.display()
        );
    };
    // The database being replaced, read only, for the revocations made
    // since the backup (never attached within a transaction).
    let attached = replaced.filter(|db| {
        let uri = url::Url::from_file_path(db).map(|u| format!("{u}?mode=ro"));
        let done = match uri {
            Ok(uri) => dst
                .execute("ATTACH DATABASE ?1 AS cur", [uri])
                .map_err(|e| e.to_string()),
            Err(()) => Err("not an absolute path".to_owned()),
        };
        done.map_err(|e| unreadable(db, &e)).is_ok()
    });
    let mut tx = dst.transaction()?;
    let active = crate::store::receipts::active_kid(&tx)?;
    let published = crate::service::keyring::publish_key_files(keys, &tx, &now)?;
    let revoked = crate::service::keyring::apply_revocations(keys, &tx, &now)?;
    let mut credentials = Credentials::default();
    if let Some(db) = attached {
        let sp = tx.savepoint()?;
        match keep_revocations(&sp) {
            Ok(c) => {
                sp.commit()?;
                credentials = c;
            }
            Err(e) => unreadable(db, &e),
        }
    }
    tx.commit()?;
    if attached.is_some() {
        dst.execute("DETACH DATABASE cur", [])?;
    }
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
        active_revoked: active.as_ref().is_some_and(|k| revoked.contains(k)),
        active,
        revoked,
        credentials,
    })
}

/// Removes a database file and its journals, if there.
fn remove_with_journals(path: &std::path::Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}
