//! Background loops beside the HTTP layer, using the same services: the
//! expiry pass, the job queue's worker and housekeeping.
//!
//! They run on a runtime of their own, whose threads give way to the
//! requests' threads (guide: "Webhooks"): on Linux their nice value is
//! `BACKGROUND_NICE` above the server's; elsewhere they run as the rest.
//! Nice is a weight, not a strict order: on an idle machine it changes
//! nothing, and when both want the CPU the requests' threads get most of
//! it while the background still makes progress. The writer thread, which
//! commits both kinds of work, keeps the normal priority. The background
//! shares the pool of read connections with the requests: a background
//! read holds its connection somewhat longer on a saturated machine.

pub mod expiry;
pub mod housekeeping;
pub mod jobs;
pub mod mail;
pub mod webhooks;

use crate::service::Services;

/// How much nicer the background threads are than the server's. In Linux's
/// scheduler each step of nice weighs about 1.25 times less: at +10 a
/// thread weighs about a tenth of one at the server's value (110 against
/// 1,024 for a server at nice 0), so when the two want one core the
/// background one gets about a tenth of it, and never nothing. Nice stops
/// at 19: a server started at 15 keeps a gap of 4.
pub const BACKGROUND_NICE: i32 = 10;

/// The background threads' name, as `/proc/<pid>/task/*/comm` and `top -H`
/// show it.
pub const THREAD_NAME: &str = "hds-background";

/// Blocking threads of the background runtime: reads on the pool of 4
/// connections (a few at once: the queue's, the expiry pass's,
/// housekeeping's) and the name lookups of webhook and mail hosts, up to
/// one per attempt in flight, which no timeout stops once started. Idle
/// ones end after 10 s.
const BLOCKING_THREADS: usize = 32;

/// Most worker threads of the background runtime (one per core up to
/// this): its work is bounded by the writer, not by threads.
const WORKERS: usize = 4;

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// Starts the background loops on a thread and runtime of their own and
/// returns that thread. They stop when the calling runtime does (when `hds
/// serve` ends, or a test's runtime is dropped): a task left on it holds
/// the signal.
pub fn spawn(services: Services) -> anyhow::Result<std::thread::JoinHandle<()>> {
    let (keep, stopped) = tokio::sync::oneshot::channel::<()>();
    let (built, ready) = std::sync::mpsc::sync_channel::<std::io::Result<()>>(1);
    let thread = std::thread::Builder::new()
        .name(THREAD_NAME.into())
        .spawn(move || {
            yield_to_requests();
            // Built, and so dropped, on this thread: a runtime must never
            // be dropped inside another one.
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(WORKERS.min(cores()))
                .enable_all()
                .thread_name(THREAD_NAME)
                .on_thread_start(yield_to_requests)
                .max_blocking_threads(BLOCKING_THREADS)
                .build();
            let rt = match rt {
                Ok(rt) => {
                    let _ = built.send(Ok(()));
                    rt
                }
                Err(e) => {
                    let _ = built.send(Err(e));
                    return;
                }
            };
            rt.block_on(async move {
                tokio::spawn(expiry::run(services.clone()));
                tokio::spawn(jobs::run(services.clone()));
                tokio::spawn(housekeeping::run(services));
                // Resolves (with an error) once `keep` is dropped.
                let _ = stopped.await;
            });
        })?;
    // A wait of a few milliseconds, once, at the start.
    ready
        .recv()
        .map_err(|_| anyhow::anyhow!("the background thread stopped at its start"))??;
    tokio::spawn(async move {
        let _keep = keep;
        std::future::pending::<()>().await;
    });
    Ok(thread)
}

/// Sets the calling thread's nice value to the main thread's plus
/// `BACKGROUND_NICE` (19 at most): a server started with `nice` keeps its
/// background below its requests. On Linux the nice value belongs to a
/// thread, not to the process. A refusal (a sandbox that forbids it) is
/// logged once; the threads then run as the rest.
fn yield_to_requests() {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{getpid, getpriority_process, setpriority_process};
        static WARNED: std::sync::Once = std::sync::Once::new();
        let lowered = getpriority_process(Some(getpid())).and_then(|main| {
            setpriority_process(
                Some(rustix::thread::gettid()),
                (main + BACKGROUND_NICE).min(19),
            )
        });
        if let Err(e) = lowered {
            WARNED.call_once(|| {
                tracing::warn!(error = %e, "could not lower the background threads' priority; they run as the rest");
            });
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::clock::Clock;
    use crate::config::Config;
    use crate::store::db::Db;

    /// The nice value of each of this process's threads named `name`
    /// (`/proc/self/task/*/stat`, field 19).
    fn nice_of(name: &str) -> Vec<i32> {
        let mut found = Vec::new();
        let tasks = std::fs::read_dir("/proc/self/task").into_iter().flatten();
        for task in tasks.flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim_end() != name {
                continue;
            }
            if let Some(n) = stat_nice(&task.path().join("stat")) {
                found.push(n);
            }
        }
        found
    }

    /// Field 19 of a `stat` file; the fields after the name, which is in
    /// parentheses and may hold spaces, start at field 3.
    fn stat_nice(path: &std::path::Path) -> Option<i32> {
        let stat = std::fs::read_to_string(path).ok()?;
        let (_, after) = stat.rsplit_once(')')?;
        after.split_whitespace().nth(19 - 3)?.parse().ok()
    }

    #[test]
    fn the_background_yields_to_requests_and_stops_with_its_runtime() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config::for_data_dir(dir.path().join("data"));
        std::fs::create_dir_all(&config.data_dir).unwrap();
        let db = Db::open(&config.db_path(), config.durability).unwrap();
        let services = Services::new(db, Arc::new(config), Clock::system());
        let main = stat_nice(std::path::Path::new("/proc/self/stat")).unwrap();
        let want = (main + BACKGROUND_NICE).min(19);

        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let thread = rt.block_on(async { spawn(services) }).unwrap();
        // The thread that called `spawn` (a request's, in the server) keeps
        // its nice value.
        let caller = stat_nice(std::path::Path::new("/proc/thread-self/stat")).unwrap();
        assert_eq!(caller, main);
        // The outer thread and the runtime's workers: the outer one lowers
        // its priority first, and the workers it starts inherit it (and set
        // it again at their start). Wait (bounded) until all are listed.
        let settled = |bg: &[i32]| bg.len() >= 2 && bg.iter().all(|n| *n == want);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut bg = nice_of(THREAD_NAME);
        while !settled(&bg) && Instant::now() < deadline {
            std::thread::yield_now();
            bg = nice_of(THREAD_NAME);
        }
        assert!(
            settled(&bg),
            "{THREAD_NAME} threads at nice {bg:?}, want at least two at {want} (main thread {main})"
        );

        // The task holding the signal goes with the runtime; the thread ends.
        drop(rt);
        let (ended, joined) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = thread.join();
            let _ = ended.send(());
        });
        joined
            .recv_timeout(Duration::from_secs(10))
            .expect("the background thread ended with the runtime that started it");
    }
}
