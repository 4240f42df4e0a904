//! The `hds` binary: parse the CLI, start tracing, dispatch.

/// mimalloc: under load glibc malloc spent a quarter of the server's CPU,
/// mostly on frees across threads (request tasks ↔ the writer thread).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let cli = hds::cli::Cli::from_env();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "hds=info".into()),
        )
        .with_writer(std::io::stderr)
        // Colours only for a person at a terminal, not in journald or files.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    hds::cli::run(cli)
}
