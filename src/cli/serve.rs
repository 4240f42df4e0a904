//! `hds serve`: run the service until SIGINT/SIGTERM.

use crate::cli::DataDir;
use crate::config::Config;

pub fn run(config: Config) -> anyhow::Result<()> {
    let _lock = DataDir {
        data_dir: config.data_dir.clone(),
    }
    .lock()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        // Blocking work is SQLite reads on a pool of 4 connections: more threads
        // than that only queue, and each costs memory (its allocator heap, stack).
        .max_blocking_threads(8)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listen = config.listen;
        let state = crate::app::start(config).await?;
        let has_users = state.services.db.read(|c| Ok(c.query_row("SELECT EXISTS (SELECT 1 FROM users)", [], |r| r.get::<_, bool>(0))?)).await?;
        let listener = tokio::net::TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        // Tests and scripts read this line to learn the port when listening on :0.
        println!("hds listening on http://{addr}");
        if !has_users {
            println!("no users yet: run `hds init --data-dir {}` to create the admin, a workspace and the first Source", state.services.config.data_dir.display());
        }
        tracing::info!(%addr, "hds started");
        crate::app::serve(listener, state, shutdown_signal()).await?;
        tracing::info!("hds stopped");
        Ok(())
    })
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}
