//! Subcommands (README: "Other commands"), one file each. Every flag also reads `HDS_<FLAG>`.

pub mod backup;
pub mod init;
pub mod keys;
pub mod serve;
pub mod users;
pub mod verify_receipt;
pub mod workspaces;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "hds",
    version = crate::VERSION,
    about = "Human-Decision Service: durable, signed human decisions for software"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run the service.
    Serve(Box<crate::config::Config>),
    /// Initialise a data dir: schema, signing key, workspace, admin, first Source.
    Init(init::Args),
    /// Copy the database to PATH while the server runs (SQLite online backup).
    Backup(backup::BackupArgs),
    /// Restore a backup into an idle data dir.
    Restore(backup::RestoreArgs),
    /// Receipt signing keys.
    #[command(subcommand)]
    Keys(keys::KeysCommand),
    /// Verify a receipt offline: exit 0 when valid, 1 when not, 2 when the
    /// file or the keys could not be read (nothing was judged).
    VerifyReceipt(verify_receipt::Args),
    /// People: one-time sign-in links.
    #[command(subcommand)]
    Users(users::UsersCommand),
    /// Workspaces: create a team workspace, list them, set a plan or an owner.
    #[command(subcommand)]
    Workspaces(workspaces::WorkspacesCommand),
}

impl Cli {
    /// Parses the command line and the environment. A variable set to the
    /// empty string counts as unset (`HDS_BASE_URL: ${HDS_BASE_URL:-}` in a
    /// compose file), and a refused value that came from a variable names
    /// it: the operator may never have typed the flag clap speaks of.
    pub fn from_env() -> Self {
        use clap::{CommandFactory, FromArgMatches};
        let cmd = empty_env_unset(Self::command());
        let matches = cmd.clone().try_get_matches().unwrap_or_else(|e| {
            if let Some(var) = from_variable(&cmd, &e) {
                let _ = e.print();
                eprintln!("(that value came from the environment variable {var})");
                std::process::exit(e.exit_code());
            }
            e.exit()
        });
        Self::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }
}

/// `cmd` with every argument whose environment variable is set but empty
/// no longer reading it, in every subcommand.
/// Except `HDS_DATA_DIR`: an empty one stays refused, since falling back to
/// `./hds-data` would start (or restore over) a data dir nobody meant.
fn empty_env_unset(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| match a.get_env() {
        Some(var)
            if var != "HDS_DATA_DIR" && std::env::var_os(var).is_some_and(|v| v.is_empty()) =>
        {
            a.env(None)
        }
        _ => a,
    })
    .mut_subcommands(empty_env_unset)
}

/// The environment variable a refused value came from: the argument clap
/// names was not on the command line, and its variable is set.
fn from_variable(cmd: &clap::Command, e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let long = arg.split_whitespace().next()?.strip_prefix("--")?;
    let (flag, with_value) = (format!("--{long}"), format!("--{long}="));
    if std::env::args_os().any(|a| {
        let a = a.to_string_lossy();
        a == flag || a.starts_with(&with_value)
    }) {
        return None;
    }
    fn find<'a>(cmd: &'a clap::Command, long: &str) -> Option<&'a clap::Arg> {
        cmd.get_arguments()
            .find(|a| a.get_long() == Some(long))
            .or_else(|| cmd.get_subcommands().find_map(|s| find(s, long)))
    }
    let var = find(cmd, long)?.get_env()?;
    std::env::var_os(var).map(|_| var.to_string_lossy().into_owned())
}

pub fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Serve(config) => serve::run(*config),
        Command::Init(a) => init::run(a),
        Command::Backup(a) => backup::backup(a),
        Command::Restore(a) => backup::restore(a),
        Command::Keys(k) => keys::run(k),
        Command::VerifyReceipt(a) => return verify_receipt::run(a),
        Command::Users(u) => users::run(u),
        Command::Workspaces(w) => workspaces::run(w),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader stopped reading (`hds keys list | head -1`): nothing
        // went wrong here, and there is no one left to tell.
        Err(e) if closed_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `println!` for the commands: a stdout that was closed (`hds init | head -1`)
/// is returned as an error, which ends the command quietly, where
/// `println!` panics. `clippy::print_stdout` keeps `println!` out of the crate.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
    }};
}
pub(crate) use say;

/// A value the operator typed, as a message shows it: surrounding spaces
/// dropped, control and invisible characters written as `\u{…}` escapes,
/// so a message stays one line that reads as it was typed.
pub(crate) fn shown(s: &str) -> String {
    crate::error::printable(s.trim().to_owned())
}

/// What a command taking a new person's e-mail says of one hds cannot use.
pub(crate) fn not_an_email(email: &str) -> String {
    not_an_email_quoted(&shown(email))
}

/// The same, for a value already made printable.
fn not_an_email_quoted(shown: &str) -> String {
    format!(
        "`{shown}` is not an e-mail address such as ana@example.com (no spaces or invisible characters, a dotted domain name after the @)"
    )
}

/// `--admin-email` (`HDS_ADMIN_EMAIL`) of `init` and `serve`: checked as
/// the argument is read, so a refusal names the flag (or the variable) and
/// nothing is created before it.
pub fn admin_email_arg(s: &str) -> Result<String, String> {
    if crate::domain::validate::looks_like_email(s) {
        Ok(s.to_owned())
    } else {
        // Quoted as given: spaces around it may be the mistake.
        Err(not_an_email_quoted(&crate::error::printable(s.to_owned())))
    }
}

/// Writes the lines of a listing to stdout; an error (a closed pipe) ends
/// the command instead of a panic, as `println!` would.
pub fn print_lines<I: IntoIterator<Item = String>>(lines: I) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    for line in lines {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}

fn closed_pipe(e: &anyhow::Error) -> bool {
    e.downcast_ref::<std::io::Error>()
        .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}

/// `--data-dir` for commands other than `serve`.
/// Where `hds serve` records its base URL in the data dir.
const BASE_URL_FILE: &str = "base-url";

#[derive(Clone, Debug, clap::Args)]
pub struct DataDir {
    /// Directory holding the database and the receipt signing keys.
    #[arg(long, env = "HDS_DATA_DIR", default_value = "./hds-data")]
    pub data_dir: std::path::PathBuf,
}

impl DataDir {
    pub fn db_path(&self) -> std::path::PathBuf {
        self.data_dir.join("hds.db")
    }
    pub fn keys_dir(&self) -> std::path::PathBuf {
        self.data_dir.join("keys")
    }
    /// The base URL the last `hds serve` on this data dir ran with, recorded
    /// in `<data-dir>/base-url` at its start; None before the first start.
    pub fn recorded_base_url(&self) -> Option<String> {
        let text = std::fs::read_to_string(self.data_dir.join(BASE_URL_FILE)).ok()?;
        crate::config::parse_base_url(text.trim()).ok()
    }
    pub fn write_base_url(data_dir: &std::path::Path, base_url: &str) -> std::io::Result<()> {
        if !data_dir.exists() {
            return Ok(());
        }
        std::fs::write(data_dir.join(BASE_URL_FILE), format!("{base_url}\n"))
    }
    /// The database of an initialised data dir, for the commands that use
    /// one (`keys`, `backup`, `workspaces`): a missing one is not created.
    pub fn existing_db(&self) -> anyhow::Result<std::path::PathBuf> {
        let db = self.db_path();
        anyhow::ensure!(
            db.exists(),
            "{} has no database; run `hds init --data-dir {}` first (or pass the right --data-dir)",
            self.data_dir.display(),
            self.data_dir.display()
        );
        Ok(db)
    }

    /// Takes the data dir's lock; fails when a server holds it. Two locks:
    /// `hds.lock`, which every earlier hds takes too, and the directory
    /// itself, which a deleted or replaced `hds.lock` (a "stale lock file"
    /// removed by hand) does not release.
    pub fn lock(&self) -> anyhow::Result<DataDirLock> {
        use anyhow::Context;
        crate::files::create_data_dir(&self.data_dir)?;
        // Held by another process: in use. Anything else (a file system
        // without locks, such as some network ones) is said as it is.
        let refused = |what: &std::path::Path, e: std::fs::TryLockError| match e {
            std::fs::TryLockError::WouldBlock => anyhow::anyhow!(
                "{} is in use by a running hds; stop it first",
                self.data_dir.display()
            ),
            std::fs::TryLockError::Error(e) => anyhow::anyhow!(
                "could not lock {}: {e} (hds needs a local file system that supports file locks)",
                what.display()
            ),
        };
        let dir = std::fs::File::open(&self.data_dir)
            .with_context(|| format!("opening {}", self.data_dir.display()))?;
        dir.try_lock().map_err(|e| refused(&self.data_dir, e))?;
        let lock = self.data_dir.join("hds.lock");
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock)
            .with_context(|| {
                format!(
                    "opening {} (does this user own the data dir? `hds init` run as another user makes it theirs)",
                    lock.display()
                )
            })?;
        f.try_lock().map_err(|e| refused(&lock, e))?;
        Ok(DataDirLock {
            _dir: dir,
            _file: f,
        })
    }
}

/// The data dir's locks, held until dropped.
pub struct DataDirLock {
    _dir: std::fs::File,
    _file: std::fs::File,
}
