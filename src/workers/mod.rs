//! Background loops beside the HTTP layer, using the same services: the
//! expiry pass, the job queue's worker and housekeeping.
//!
//! They run on a runtime of their own whose threads yield the CPU to the
//! requests' threads (guide: "Webhooks"): their nice value is raised by `BACKGROUND_NICE` (Linux; elsewhere they run as the rest). On an idle
//! machine this changes nothing; on a saturated one a delivery waits a
//! little while the requests that queue more of them are answered first,
//! and the backlog drains when the load falls. The writer thread, which
//! commits both kinds of work, keeps the normal priority.

pub mod expiry;
pub mod housekeeping;
pub mod jobs;
pub mod mail;
pub mod webhooks;

use crate::service::Services;

/// How much nicer the background threads are than the rest: at +10 a
/// thread weighs 110 against 1,024 for a request's thread in Linux's
/// scheduler, so under contention it gets about a tenth of a busy thread's
/// share, and never nothing.
pub const BACKGROUND_NICE: i32 = 10;

/// The background threads' name, as `/proc/<pid>/task/*/comm` shows it.
pub const THREAD_NAME: &str = "hds-background";

/// Starts the background loops on their own thread and runtime; returns
/// that thread. They stop when the calling runtime does (when `hds serve`
/// ends, or a test's runtime is dropped): a task left on it holds the
/// signal.
pub fn spawn(services: Services) -> anyhow::Result<std::thread::JoinHandle<()>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name(THREAD_NAME)
        .on_thread_start(yield_to_requests)
        // Reads on the pool of 4 connections, at most one per loop.
        .max_blocking_threads(4)
        .build()?;
    let (keep, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _keep = keep;
        std::future::pending::<()>().await;
    });
    let thread = std::thread::Builder::new()
        .name(THREAD_NAME.into())
        .spawn(move || {
            yield_to_requests();
            rt.block_on(async move {
                tokio::spawn(expiry::run(services.clone()));
                tokio::spawn(jobs::run(services.clone()));
                tokio::spawn(housekeeping::run(services));
                // Resolves (with an error) once `keep` is dropped.
                let _ = stopped.await;
            });
        })?;
    Ok(thread)
}

/// Sets the calling thread's nice value to the main thread's plus
/// `BACKGROUND_NICE` (19 at most): a server started with `nice` keeps its
/// background below its requests. On Linux the nice value belongs to a
/// thread, not to the process, and a new thread starts with its parent's.
fn yield_to_requests() {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{getpid, getpriority_process, setpriority_process};
        let lowered = getpriority_process(Some(getpid())).and_then(|main| {
            setpriority_process(
                Some(rustix::thread::gettid()),
                (main + BACKGROUND_NICE).min(19),
            )
        });
        if let Err(e) = lowered {
            tracing::warn!(error = %e, "could not lower the background threads' priority");
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
        // A thread is listed as soon as it exists, before it names itself
        // and lowers its priority: wait (bounded) until every one has. The
        // writer, which commits requests, keeps the main thread's.
        let settled = |bg: &[i32], writer: &[i32]| {
            !bg.is_empty() && bg.iter().all(|n| *n == want) && !writer.is_empty()
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        let (mut bg, mut writer) = (nice_of(THREAD_NAME), nice_of("hds-writer"));
        while !settled(&bg, &writer) && Instant::now() < deadline {
            std::thread::yield_now();
            (bg, writer) = (nice_of(THREAD_NAME), nice_of("hds-writer"));
        }
        assert!(!bg.is_empty(), "no {THREAD_NAME} thread");
        assert!(
            bg.iter().all(|n| *n == want),
            "nice {bg:?}, want {want} (main thread {main})"
        );
        assert!(
            !writer.is_empty() && writer.iter().all(|n| *n == main),
            "writer nice {writer:?}"
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
