//! `hds init`: schema, receipt signing key, first workspace, admin user and one
//! Source, in one transaction. Prints the secrets once.

use crate::clock::Clock;
use crate::domain::access::Role;
use crate::domain::time;
use anyhow::bail;
use serde_json::json;

use crate::cli::DataDir;
use crate::service::keyring::{self};
use crate::store::{db::open_cli_connection, receipts, sources, users, workspaces};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub dir: DataDir,
    /// E-mail of the first admin (workspace owner).
    #[arg(
        long,
        env = "HDS_ADMIN_EMAIL",
        default_value = "admin@localhost.localdomain",
        value_parser = crate::cli::admin_email_arg
    )]
    pub admin_email: String,
    /// Name of the first workspace.
    #[arg(long, env = "HDS_WORKSPACE", default_value = "Default")]
    pub workspace: String,
    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Public base URL the admin's sign-in link starts with.
    #[arg(long, env = "HDS_BASE_URL", default_value = "http://127.0.0.1:8080", value_parser = crate::config::parse_base_url)]
    pub base_url: String,
}

/// What `hds init` creates; the secrets exist in clear only here.
pub fn initialise(
    data_dir: &std::path::Path,
    admin_email: &str,
    workspace: &str,
) -> anyhow::Result<serde_json::Value> {
    initialise_at(
        data_dir,
        admin_email,
        workspace,
        "http://127.0.0.1:8080",
        true,
    )
}

/// `initialise` with the public base URL of the admin's sign-in link.
/// `with_token`: also issue the admin an API token (`hds init` prints it;
/// the server's first start hands none out, so it makes none: a token
/// nobody holds would only sit on the account page).
pub fn initialise_at(
    data_dir: &std::path::Path,
    admin_email: &str,
    workspace: &str,
    base_url: &str,
    with_token: bool,
) -> anyhow::Result<serde_json::Value> {
    // The rules of `hds workspaces create`: checked before anything is made.
    if !crate::domain::validate::looks_like_email(admin_email) {
        bail!(
            "the admin e-mail: {}",
            crate::cli::not_an_email(admin_email)
        );
    }
    let workspace = crate::service::workspaces::check_name(workspace)
        .map_err(|e| anyhow::anyhow!("the workspace name: {}", e.message))?;
    let workspace = workspace.as_str();
    let dir = DataDir {
        data_dir: data_dir.to_owned(),
    };
    crate::files::create_data_dir(data_dir)?;
    // A first `hds serve` (which makes no token) says this once, in its log
    // (app::start); `hds init` says it here.
    if let Some(other) = crate::files::restrict_data_dir(data_dir)?
        && with_token
    {
        eprintln!(
            "warning: {}",
            crate::files::shared_data_dir_warning(data_dir, &other)
        );
    }
    let mut conn = open_cli_connection(&dir.db_path())?;
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let has_users: bool = tx.query_row("SELECT EXISTS (SELECT 1 FROM users)", [], |r| r.get(0))?;
    if has_users {
        bail!("{} is already initialised", data_dir.display());
    }
    let err = crate::error::Error::for_operator;
    let clock_now = Clock::system().now();
    let now = time::format(clock_now);
    if receipts::active_kid(&tx).map_err(err)?.is_none() {
        keyring::rotate(&dir.keys_dir(), &tx, &now)?;
    }
    let ws = workspaces::create(&tx, workspace, "team", &now).map_err(err)?;
    let user = users::create(&tx, admin_email, Some("Admin"), &now).map_err(err)?;
    workspaces::add_member(&tx, &ws.id, &user.id, Role::Owner, &now).map_err(err)?;
    let token = if with_token {
        Some(
            users::issue_token(&tx, &user.id, "hds init", None, &now)
                .map_err(err)?
                .0,
        )
    } else {
        None
    };
    let (source, secrets) =
        sources::create(&tx, &ws.id, "Default Source", None, &now).map_err(err)?;
    let signin_url =
        crate::service::signin::new_link(&tx, base_url, &user.id, clock_now).map_err(err)?;
    tx.commit()?;
    Ok(json!({
        "workspace_id": ws.id,
        "user_id": user.id,
        "user_token": token,
        "signin_url": signin_url,
        "source_id": source.id,
        "source_key_live": secrets.live_key,
        "source_key_test": secrets.test_key,
        "webhook_secret": secrets.webhook_secret,
    }))
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let out = initialise_at(
        &a.dir.data_dir,
        &a.admin_email,
        &a.workspace,
        &a.base_url,
        true,
    )?;
    // The secrets are shown once: a reader that left before them is told
    // how to get new ones (not the quiet end of a listing).
    show(&a, &out).map_err(|e| {
        anyhow::anyhow!(
            "initialised {}, but its secrets could not be written ({e}): `hds users link {}` signs in; then the Source page replaces its keys and webhook secret, and the account page makes a token",
            a.dir.data_dir.display(),
            a.admin_email
        )
    })
}

fn show(a: &Args, out: &serde_json::Value) -> std::io::Result<()> {
    if a.json {
        crate::cli::say!("{out}")?;
        return Ok(());
    }
    let field = |k: &str| out[k].as_str().unwrap_or("").to_owned();
    crate::cli::say!("Initialised {}", a.dir.data_dir.display())?;
    crate::cli::say!(
        "  workspace        {} ({})",
        field("workspace_id"),
        a.workspace
    )?;
    crate::cli::say!(
        "  admin            {} <{}>",
        field("user_id"),
        a.admin_email
    )?;
    crate::cli::say!("  sign-in link     {}", field("signin_url"))?;
    crate::cli::say!("  user token       {}", field("user_token"))?;
    crate::cli::say!("  source           {}", field("source_id"))?;
    crate::cli::say!("  live key         {}", field("source_key_live"))?;
    crate::cli::say!("  test key         {}", field("source_key_test"))?;
    crate::cli::say!("  webhook secret   {}", field("webhook_secret"))?;
    crate::cli::say!(
        "These secrets are shown once. Store them now. The sign-in link works once, within 24 hours;"
    )?;
    crate::cli::say!("`hds users link EMAIL` prints a new one.")?;
    Ok(())
}
