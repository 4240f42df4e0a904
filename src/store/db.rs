//! The database handle. Reads run on an r2d2 pool inside `spawn_blocking`;
//! writes are closures sent to ONE writer thread, which runs everything queued in
//! a single `BEGIN IMMEDIATE` transaction — each closure in its own savepoint, so
//! one failure spoils nothing else (or, for a closure that fails only before it
//! writes, none: `write_checks_first`) — commits once, and only then answers each
//! caller (group commit; docs/architecture.md). A reply therefore means "committed".

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use r2d2::Pool;
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};
use tracing::Span;

use crate::error::{Code, Error, Result};
use crate::metrics::WriterMetrics;

/// `synchronous` setting of the writer (README: "Durability").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// fsync on every commit: a decision survives power loss. The default.
    Full,
    /// fsync at checkpoints only: survives a process crash, may lose the last
    /// commits on power loss; about 2–3× the write throughput.
    Normal,
}

impl Durability {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "full" => Some(Self::Full),
            "normal" => Some(Self::Normal),
            _ => None,
        }
    }
}

/// Most closures one transaction carries; bounds commit latency under load.
const MAX_BATCH: usize = 512;
/// Queue depth before senders wait: back-pressure instead of unbounded memory.
const QUEUE_DEPTH: usize = 4096;
const READ_POOL_SIZE: u32 = 4;
/// Prepared statements kept per connection (`prepare_cached`). rusqlite
/// keeps 16 by default, fewer than one decision runs on the writer: the
/// least recently used were compiled again on every request (a sixth of
/// the writer's time in a profile of decisions with webhooks).
const STATEMENT_CACHE: usize = 512;
/// How long the checkpointer gathers commits before it copies them from the
/// log into the database file: one checkpoint (and its fsync) per window,
/// not per commit.
/// 50 ms: with windows of 200 ms and 1 s the creates' p99 at 64 clients
/// rose by 5–15 ms in `examples/bench.rs` (one large copy and fsync beside
/// the commits' own); see docs/benchmarks.md.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(50);
/// Log length (pages) at which a COMMIT of the writer checkpoints by itself
/// (SQLite's `wal_autocheckpoint`): about 40 MB. A passive checkpoint never
/// starts the log over; the writer does, at a BEGIN that finds every page
/// of it copied, which under steady writes seldom happens (the checkpointer
/// is up to 50 ms behind). So once the log reaches 10,000 pages the writer's
/// COMMIT copies what the checkpointer has not yet (normally the last
/// window's pages) and the log starts over (should a read still hold a part
/// of it, the next COMMITs try again); should the checkpointer stop, the
/// writer copies all.
const WRITER_CHECKPOINT_PAGES: u32 = 10_000;
/// What the log file is cut back to when it starts over (bytes): 64 MiB, more
/// than one cycle (10,000 frames of 4,120 bytes, about 41 MB) needs, so a
/// cycle reuses the file as it is; a log that a long read let grow beyond it
/// gives the rest back.
const WAL_SIZE_LIMIT: u64 = 64 * 1024 * 1024;

/// Runs after the batch's COMMIT (None) or its failure (Some).
type Completion = Box<dyn FnOnce(Option<&Failed>) + Send>;

/// Why a batch was not committed.
#[derive(Debug)]
enum Failed {
    /// Rolled back for certain (or never begun): nothing of it was kept.
    RolledBack,
    /// COMMIT itself failed. In WAL mode its frames may still have reached
    /// the log and come back after a crash: the outcome is unknown.
    Commit(String),
    /// COMMIT found the disk full (SQLITE_FULL): a write to the log was
    /// refused, and the frame that marks a commit is written last, so the
    /// log holds no commit of this batch, which is rolled back: nothing of
    /// it was kept.
    DiskFull,
}
/// A write closure; gets None when the transaction could not even begin.
type Job = Box<dyn FnOnce(Option<&Connection>) -> Ran + Send>;

/// What a job left: its completion, and whether it spoiled the transaction
/// (failed after writing, with no savepoint to roll back to).
struct Ran {
    done: Completion,
    spoiled: bool,
}

#[derive(Clone)]
pub struct Db {
    readers: Pool<SqliteConnectionManager>,
    writer: mpsc::Sender<Job>,
    path: PathBuf,
    /// Batch sizes and commits, recorded by the writer thread, and the
    /// checkpointer's work.
    writer_metrics: Arc<WriterMetrics>,
    /// When a write last found the disk full (GET /ready).
    disk_full_at: Arc<std::sync::Mutex<Option<Instant>>>,
    /// The last readiness probe's commit: when, and whether it committed.
    probed: Arc<std::sync::Mutex<Option<(Instant, bool)>>>,
}

/// How long one readiness probe's commit answers for: a load balancer's
/// polls, or a flood of anonymous `GET /ready`, make at most one write a
/// second.
const PROBE_REUSED_FOR: std::time::Duration = std::time::Duration::from_secs(1);

impl Db {
    /// Opens (creating if needed) the database, applies migrations and starts
    /// the writer and checkpointer threads.
    pub fn open(path: &Path, durability: Durability) -> anyhow::Result<Self> {
        let mut conn = Connection::open(path)?;
        crate::store::migrate::refuse_newer(&conn)?;
        crate::files::restrict_file(path)?;
        configure_writer(&conn, durability)?;
        crate::store::migrate::apply(&mut conn)?;

        let manager = SqliteConnectionManager::file(path).with_init(configure_reader);
        // No health check per checkout: a connection to a local file does
        // not go stale, and r2d2's check ran a statement before every read.
        let readers = Pool::builder()
            .max_size(READ_POOL_SIZE)
            .test_on_check_out(false)
            .build(manager)?;

        let checkpoints = Connection::open(path)?;
        configure_checkpointer(&checkpoints, durability)?;
        let (committed, wake) = std::sync::mpsc::sync_channel::<()>(1);
        let writer_metrics = Arc::new(WriterMetrics::default());
        let recorded = writer_metrics.clone();
        std::thread::Builder::new()
            .name("hds-checkpoint".into())
            .spawn(move || checkpointer(checkpoints, wake, &recorded))?;

        let (tx, rx) = mpsc::channel::<Job>(QUEUE_DEPTH);
        let recorded = writer_metrics.clone();
        std::thread::Builder::new()
            .name("hds-writer".into())
            .spawn(move || writer_loop(conn, rx, &recorded, committed))?;
        Ok(Self {
            readers,
            writer: tx,
            path: path.to_owned(),
            writer_metrics,
            disk_full_at: Arc::default(),
            probed: Arc::default(),
        })
    }

    /// Whether the writer commits a change (GET /ready): a probe row is
    /// rewritten, at most once a second; calls in between share the answer.
    /// A transaction that only reads would commit even on a full disk or a
    /// read-only file system.
    pub async fn probe_commit(&self, now: String) -> bool {
        let recent = *self
            .probed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((at, ok)) = recent
            && at.elapsed() < PROBE_REUSED_FOR
        {
            return ok;
        }
        let ok = self
            .write(move |c| {
                c.prepare_cached(
                    "INSERT INTO ready_probe(id, checked_at) VALUES (1, ?1)
                     ON CONFLICT(id) DO UPDATE SET checked_at = excluded.checked_at",
                )?
                .execute([now])?;
                Ok(())
            })
            .await
            .is_ok();
        *self
            .probed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((Instant::now(), ok));
        ok
    }

    /// Whether a write found the disk full within `window`: GET /ready
    /// says the writer does not commit, even when its own small probe
    /// still fits.
    pub fn disk_full_within(&self, window: std::time::Duration) -> bool {
        self.disk_full_at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some_and(|at| at.elapsed() < window)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the writer thread records (guide: "Metrics").
    pub fn writer_metrics(&self) -> &WriterMetrics {
        &self.writer_metrics
    }

    /// Write jobs sent to the writer and not yet taken into a transaction.
    pub fn queue_depth(&self) -> usize {
        self.writer.max_capacity() - self.writer.capacity()
    }

    /// Runs `f` on a pooled read connection, off the async runtime.
    pub async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let pool = self.readers.clone();
        let span = Span::current();
        tokio::task::spawn_blocking(move || {
            let _g = span.enter();
            let conn = pool.get()?;
            f(&conn)
        })
        .await
        .map_err(Error::internal)?
    }

    /// Runs `f` inside the writer's transaction; resolves once it is committed.
    /// An `Err` from `f` rolls back only `f`'s own savepoint.
    pub async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        self.write_with(Undo::Savepoint, f).await
    }

    /// `write` for a closure that returns `Err` only before its first
    /// change (it checks, then writes): it runs without a savepoint. A
    /// savepoint copies every page the closure touches into a sub-journal
    /// first, 14–17 µs of the writer's time per create (docs/benchmarks.md).
    /// If such a closure fails after a change after all (a broken promise, a
    /// full disk), the whole batch is rolled back and fails: a half-done
    /// write is never committed.
    pub async fn write_checks_first<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        self.write_with(Undo::NothingWritten, f).await
    }

    async fn write_with<T, F>(&self, undo: Undo, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel::<Result<T>>();
        let span = Span::current();
        let disk_full_at = self.disk_full_at.clone();
        let job: Job = Box::new(move |conn| {
            let Some(conn) = conn else {
                return Ran {
                    done: Box::new(move |_| {
                        let _ = reply.send(Err(Error::new(
                            Code::Unavailable,
                            "the write was not run: its transaction failed; retry shortly",
                        )
                        .retry_after(1)));
                    }),
                    spoiled: false,
                };
            };
            let _g = span.enter();
            let (result, spoiled) = match undo {
                Undo::Savepoint => in_savepoint(conn, f),
                Undo::NothingWritten => checks_first(conn, f),
            };
            Ran {
                done: Box::new(move |failed: Option<&Failed>| {
                    let out = match (result, failed) {
                        (Ok(v), None) => Ok(v),
                        // Nothing of it was kept (a full disk, or a job beside
                        // it that spoiled the batch): worth a retry.
                        (Ok(_), Some(Failed::RolledBack)) => Err(Error::new(
                            Code::Unavailable,
                            "the write was not committed, and nothing of it was kept; retry shortly",
                        )
                        .retry_after(1)),
                        (Ok(_), Some(Failed::DiskFull)) => Err(Error::disk_full(
                            anyhow::anyhow!("COMMIT found the disk full"),
                        )),
                        (Ok(_), Some(Failed::Commit(e))) => Err(Error::internal_saying(
                            "internal error: the write's commit failed, so whether it was kept is unknown; \
                             read before you retry, or retry with the same Idempotency-Key",
                            anyhow::anyhow!("commit failed: {e}"),
                        )),
                        (Err(e), _) => Err(e),
                    };
                    if out.as_ref().is_err_and(Error::is_disk_full) {
                        *disk_full_at
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner) =
                            Some(Instant::now());
                    }
                    let _ = reply.send(out);
                }),
                spoiled,
            }
        });
        self.writer.send(job).await.map_err(|_| {
            Error::new(
                Code::Unavailable,
                "the database writer has stopped; retry shortly",
            )
            .retry_after(1)
        })?;
        answer
            .await
            .map_err(|_| Error::internal(anyhow::anyhow!("the writer thread dropped a request")))?
    }
}

/// How a write closure that returns `Err` is undone.
#[derive(Clone, Copy)]
enum Undo {
    /// Rolled back to its own savepoint.
    Savepoint,
    /// Nothing to undo: it fails only before its first change
    /// (`write_checks_first`).
    NothingWritten,
}

/// `f`, with a panic turned into an error: a panic must not take the only
/// writer down with it.
fn guarded<T>(conn: &Connection, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(|| f(conn))) {
        Ok(r) => r,
        Err(_) => Err(Error::internal(anyhow::anyhow!("write closure panicked"))),
    }
}

/// Runs `f` without a savepoint (`Undo::NothingWritten`); true alongside
/// its `Err` when it may have changed rows first: the writer loop then rolls
/// the batch back and fails it.
///
/// `total_changes` counts the rows of INSERT, UPDATE and DELETE, triggers
/// and FTS5 included, so no change goes unseen. It may also count what was
/// undone (a trigger's rows under a statement that failed, FTS5 flushing
/// pending terms), which fails a batch that had nothing to undo: so a
/// closure given to `write_checks_first` refuses before any statement that
/// fires triggers, writes many rows or opens a savepoint, not only before
/// its first change.
fn checks_first<T>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<T>,
) -> (Result<T>, bool) {
    let before = conn.total_changes();
    let result = guarded(conn, f);
    let spoiled = result.is_err() && conn.total_changes() != before;
    if let (Err(e), true) = (&result, spoiled) {
        tracing::error!(error = %e, "a write failed after changing rows; rolling the batch back");
    }
    (result, spoiled)
}

/// Runs `f` in its own savepoint; true alongside the result when the
/// savepoint could not be rolled back to or released, which leaves the
/// transaction holding what `f` did: the writer loop then fails the batch.
fn in_savepoint<T>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<T>,
) -> (Result<T>, bool) {
    // Cached statements: parsing these three on every job showed in profiles.
    let run = |sql: &str| -> Result<()> {
        conn.prepare_cached(sql)?.execute([])?;
        Ok(())
    };
    if let Err(e) = run("SAVEPOINT job") {
        return (Err(e), false);
    }
    let result = guarded(conn, f);
    if result.is_err()
        && let Err(e) = run("ROLLBACK TO job")
    {
        tracing::error!(error = %e, "ROLLBACK TO a job's savepoint failed; failing the batch");
        return (result, true);
    }
    if let Err(e) = run("RELEASE job") {
        tracing::error!(error = %e, "RELEASE of a job's savepoint failed; failing the batch");
        return (result.and(Err(e)), true);
    }
    (result, false)
}

/// Rolls the open transaction back, if there is one. A ROLLBACK that fails
/// is logged; the next batch tries again before it begins.
fn rollback(conn: &Connection) {
    if !conn.is_autocommit()
        && let Err(e) = conn.execute_batch("ROLLBACK")
    {
        tracing::error!(error = %e, "ROLLBACK failed");
    }
}

fn writer_loop(
    conn: Connection,
    mut rx: mpsc::Receiver<Job>,
    metrics: &WriterMetrics,
    committed: std::sync::mpsc::SyncSender<()>,
) {
    while let Some(first) = rx.blocking_recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let (size, began) = (batch.len(), Instant::now());
        // A transaction left open by a ROLLBACK that failed.
        rollback(&conn);
        if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
            tracing::error!(error = %e, "BEGIN IMMEDIATE failed; failing the batch");
            metrics.batch_done(size, began.elapsed(), false);
            for job in batch {
                (job(None).done)(Some(&Failed::RolledBack));
            }
            continue;
        }
        // Titles and analytics of the Actions this batch creates are
        // written once, before COMMIT (store::actions::index_new_rows).
        let indexed = match crate::store::actions::last_rowid(&conn) {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(error = %e, "reading the last Action failed; failing the batch");
                rollback(&conn);
                metrics.batch_done(size, began.elapsed(), false);
                for job in batch {
                    (job(None).done)(Some(&Failed::RolledBack));
                }
                continue;
            }
        };
        let mut completions: Vec<Completion> = Vec::with_capacity(batch.len());
        let mut aborted = false;
        for job in batch {
            if aborted {
                completions.push(job(None).done);
                continue;
            }
            let ran = job(Some(&conn));
            completions.push(ran.done);
            // After SQLITE_FULL, IOERR or NOMEM SQLite may roll the whole
            // transaction back by itself; running later jobs would then
            // commit each on its own. A job that left its writes in the
            // transaction after failing (`checks_first`, `in_savepoint`) is
            // rolled back here. Either way, stop and fail the batch.
            if ran.spoiled || conn.is_autocommit() {
                rollback(&conn);
                tracing::error!("the write transaction was rolled back; failing the batch");
                aborted = true;
            }
        }
        if !aborted && let Err(e) = crate::store::actions::index_new_rows(&conn, indexed) {
            tracing::error!(error = %e, "indexing new Actions failed; rolling the batch back");
            rollback(&conn);
            aborted = true;
        }
        let failed = match aborted {
            true => Some(Failed::RolledBack),
            false => conn.execute_batch("COMMIT").err().map(|e| {
                tracing::error!(error = %e, "COMMIT failed; rolling the batch back");
                rollback(&conn);
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull) {
                    Failed::DiskFull
                } else {
                    Failed::Commit(e.to_string())
                }
            }),
        };
        metrics.batch_done(size, began.elapsed(), failed.is_none());
        for done in completions {
            done(failed.as_ref());
        }
        if failed.is_none() {
            // Full: a wake is already waiting, which covers this commit too.
            let _ = committed.try_send(());
        }
    }
}

/// Copies committed pages from the write-ahead log into the database file,
/// on a thread of its own, so that the writer never does it inside a COMMIT
/// (SQLite's automatic checkpoint would, holding up every answer of the
/// batch). PASSIVE: it takes no lock the writer or a reader waits for. A
/// checkpoint that could not copy every page (a read still needed older
/// ones, or the writer's own checkpoint held the lock) is taken again a
/// window later without waiting for a commit. Ends when the writer thread is gone (the
/// last connection to close checkpoints what is left).
fn checkpointer(conn: Connection, wake: std::sync::mpsc::Receiver<()>, metrics: &WriterMetrics) {
    use std::sync::mpsc::RecvTimeoutError;
    let mut open = true;
    let mut behind = false;
    while open {
        if !behind && wake.recv().is_err() {
            break;
        }
        // The window: the commits that wake it meanwhile ride along.
        let until = Instant::now() + CHECKPOINT_EVERY;
        // Bounded by the window even while commits keep waking it.
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            match wake.recv_timeout(left) {
                Ok(()) => continue,
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        let began = Instant::now();
        // (busy, pages in the log, pages of it now in the database file);
        // busy = 1 (log and copied -1) when another checkpoint held the lock.
        let done = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, i64>(2)?,
            ))
        });
        behind = match done {
            Ok((0, log, copied)) if log >= 0 => {
                metrics.checkpoint_done(began.elapsed(), log, copied);
                copied < log
            }
            // Not in WAL mode: nothing to copy.
            Ok((0, _, _)) => false,
            Ok(_) => {
                metrics.checkpoint_busy();
                true
            }
            // Not taken again at once: an error that lasts (a full disk)
            // would log every window. The next commit wakes another.
            Err(e) => {
                metrics.checkpoint_failed();
                tracing::warn!(error = %e, "checkpoint failed; the next commit wakes another");
                false
            }
        };
    }
}

/// The writer connection: WAL so readers never block it; `synchronous` per the
/// chosen durability; foreign keys enforced; a busy timeout for the rare outside
/// writer (the `hds keys rotate` CLI).
fn configure_writer(conn: &Connection, durability: Durability) -> rusqlite::Result<()> {
    configure_connection(conn, durability)?;
    conn.execute_batch(&format!(
        "PRAGMA wal_autocheckpoint = {WRITER_CHECKPOINT_PAGES}; PRAGMA journal_size_limit = {WAL_SIZE_LIMIT};"
    ))
}

/// What the writer and the CLI's connection share. The CLI has no
/// checkpointer: it keeps SQLite's automatic checkpoint at 1,000 pages.
fn configure_connection(conn: &Connection, durability: Durability) -> rusqlite::Result<()> {
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON; PRAGMA cache_size = -16384; PRAGMA temp_store = MEMORY; PRAGMA mmap_size = 1073741824;")?;
    let sync = match durability {
        Durability::Full => "FULL",
        Durability::Normal => "NORMAL",
    };
    conn.execute_batch(&format!("PRAGMA synchronous = {sync};"))
}

/// The checkpointer's connection: a checkpoint fsyncs the log before it
/// copies and the database file after, under `full` and `normal` alike
/// (only `synchronous = OFF` would skip that); it is set as the writer's.
fn configure_checkpointer(conn: &Connection, durability: Durability) -> rusqlite::Result<()> {
    let sync = match durability {
        Durability::Full => "FULL",
        Durability::Normal => "NORMAL",
    };
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {sync}; PRAGMA cache_size = -1024; PRAGMA wal_autocheckpoint = 0;"
    ))
}

/// Read connections: `query_only` so a bug cannot write outside the writer.
/// The database file is memory-mapped (up to 1 GiB) so every reader shares
/// the operating system's page cache instead of copying pages into its own
/// 16 MiB cache: a search that reads its matches row by row at a million
/// Actions (docs/benchmarks.md) touches pages no reader has cached.
fn configure_reader(conn: &mut Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA query_only = ON; PRAGMA cache_size = -16384; PRAGMA temp_store = MEMORY; PRAGMA mmap_size = 1073741824;")?;
    crate::store::actions::register_functions(conn)
}

/// A standalone connection for CLI commands that run beside or without the server.
pub fn open_cli_connection(path: &Path) -> anyhow::Result<Connection> {
    use anyhow::Context;
    let at = || format!("opening the database {}", path.display());
    let mut conn = Connection::open(path).with_context(at)?;
    crate::store::migrate::refuse_newer(&conn).with_context(at)?;
    crate::files::restrict_file(path).with_context(at)?;
    configure_connection(&conn, Durability::Full).with_context(at)?;
    crate::store::migrate::apply(&mut conn).with_context(at)?;
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Awaits every write; how many answered Ok.
    async fn oks(tasks: Vec<tokio::task::JoinHandle<Result<()>>>) -> usize {
        let mut ok = 0;
        for t in tasks {
            if t.await.unwrap().is_ok() {
                ok += 1;
            }
        }
        ok
    }

    /// Waits (bounded) until `done` holds.
    async fn until(done: impl Fn() -> bool) {
        for _ in 0..500 {
            if done() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The checkpointer copies what was committed. Pages a read still needs
    /// stay behind, and are copied once the read ends with no commit to wake
    /// the checkpointer (nothing else writes here).
    #[tokio::test(flavor = "multi_thread")]
    async fn pages_a_read_held_back_are_copied_once_it_ends_without_another_commit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let db = Db::open(&path, Durability::Full).unwrap();
        let m = db.writer_metrics().clone();
        db.write(|c| Ok(c.execute_batch("CREATE TABLE t(x INTEGER)")?))
            .await
            .unwrap();
        until(|| m.wal_pages.get() > 0 && m.wal_pages_behind.get() == 0).await;
        assert!(m.wal_pages.get() > 0);
        assert_eq!(m.wal_pages_behind.get(), 0);

        let reader = Connection::open(&path).unwrap();
        reader.execute_batch("BEGIN").unwrap();
        let n: i64 = reader
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 0);
        db.write(|c| Ok(c.execute("INSERT INTO t VALUES (1)", []).map(|_| ())?))
            .await
            .unwrap();
        until(|| m.wal_pages_behind.get() > 0).await;
        assert!(
            m.wal_pages_behind.get() > 0,
            "the read holds the insert back"
        );

        let commits = m.commits.get();
        reader.execute_batch("COMMIT").unwrap();
        drop(reader);
        until(|| m.wal_pages_behind.get() == 0).await;
        assert_eq!(m.wal_pages_behind.get(), 0, "copied once the read ended");
        assert_eq!(m.commits.get(), commits, "with no commit to wake it");
        assert_eq!(m.failed_checkpoints.get(), 0);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_failing_write_does_not_spoil_its_batch() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("t.db"), Durability::Normal).unwrap();
        db.write(|c| Ok(c.execute_batch("CREATE TABLE t(x INTEGER PRIMARY KEY)")?))
            .await
            .unwrap();
        let mut tasks = Vec::new();
        for i in 0..50i64 {
            let db = db.clone();
            tasks.push(tokio::spawn(async move {
                db.write(move |c| {
                    c.execute("INSERT INTO t(x) VALUES (?1)", [i])?;
                    if i % 5 == 0 {
                        Err(Error::field("x", "rejected"))
                    } else {
                        Ok(())
                    }
                })
                .await
            }));
        }
        let ok = oks(tasks).await;
        let n: i64 = db
            .read(|c| Ok(c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?))
            .await
            .unwrap();
        assert_eq!((ok, n), (40, 40));
    }

    /// Without savepoints: a closure that fails before writing (here on a
    /// statement SQLite refused whole) spoils nothing; one that fails after
    /// writing rolls its batch back, and the writer goes on.
    #[tokio::test(flavor = "multi_thread")]
    async fn writes_that_check_first() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("t.db"), Durability::Normal).unwrap();
        db.write(|c| {
            Ok(c.execute_batch(
                "CREATE TABLE t(x INTEGER PRIMARY KEY, y INTEGER UNIQUE); INSERT INTO t VALUES (-1, -1)",
            )?)
        })
        .await
        .unwrap();
        let count = |db: Db| async move {
            db.read(|c| Ok(c.query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0))?))
                .await
                .unwrap()
        };
        let mut tasks = Vec::new();
        for i in 0..50i64 {
            let db = db.clone();
            tasks.push(tokio::spawn(async move {
                db.write_checks_first(move |c| {
                    // Every fifth collides on y: the statement fails whole.
                    let y = if i % 5 == 0 { -1 } else { i };
                    c.execute("INSERT INTO t(x, y) VALUES (?1, ?2)", [i, y])?;
                    Ok(())
                })
                .await
            }));
        }
        assert_eq!((oks(tasks).await, count(db.clone()).await), (40, 41));

        let broken = db
            .write_checks_first(|c| {
                c.execute("INSERT INTO t(x, y) VALUES (100, 100)", [])?;
                Err::<(), _>(Error::field("x", "rejected after writing"))
            })
            .await;
        assert!(broken.is_err());
        assert_eq!(
            count(db.clone()).await,
            41,
            "the half-done write was not committed"
        );
        db.write_checks_first(|c| Ok(c.execute("INSERT INTO t(x, y) VALUES (101, 101)", [])?))
            .await
            .unwrap();
        assert_eq!(count(db.clone()).await, 42, "the writer goes on");

        // In one batch of three, the one that fails after writing fails the
        // other two as well, and none of the three is committed. A first
        // write holds the writer until the three are queued behind it.
        let (started, running) = tokio::sync::oneshot::channel::<()>();
        let (release, held) = std::sync::mpsc::channel::<()>();
        let hold = tokio::spawn({
            let db = db.clone();
            async move {
                db.write(move |_| {
                    let _ = started.send(());
                    let _ = held.recv();
                    Ok(())
                })
                .await
            }
        });
        running.await.unwrap();
        let three: Vec<_> = (200..203i64)
            .map(|x| {
                let db = db.clone();
                tokio::spawn(async move {
                    db.write_checks_first(move |c| {
                        c.execute("INSERT INTO t(x, y) VALUES (?1, ?1)", [x])?;
                        if x == 201 {
                            return Err(Error::field("x", "rejected after writing"));
                        }
                        Ok(())
                    })
                    .await
                })
            })
            .collect();
        for _ in 0..5000 {
            if db.queue_depth() == 3 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(db.queue_depth(), 3, "the three are queued in one batch");
        release.send(()).unwrap();
        hold.await.unwrap().unwrap();
        let mut codes = Vec::new();
        for t in three {
            codes.push(t.await.unwrap().unwrap_err().code);
        }
        codes.sort_by_key(|c| c.as_str());
        assert_eq!(
            codes,
            [Code::Unavailable, Code::Unavailable, Code::ValidationError],
            "the other two may retry"
        );
        assert_eq!(
            count(db.clone()).await,
            42,
            "nothing of the batch was committed"
        );
        db.write_checks_first(|c| Ok(c.execute("INSERT INTO t(x, y) VALUES (300, 300)", [])?))
            .await
            .unwrap();
        assert_eq!(count(db.clone()).await, 43);
    }
}
