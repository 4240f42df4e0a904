//! `hds workspaces create NAME --owner EMAIL` and `hds workspaces list`
//! (README: "Other commands"; guide: "Workspaces and members").

use anyhow::bail;

use crate::cli::DataDir;
use crate::clock::Clock;
use crate::domain::time;
use crate::service::workspaces::{check_name, create_team};
use crate::store::{db::open_cli_connection, users, workspaces};

#[derive(clap::Subcommand)]
pub enum WorkspacesCommand {
    /// Create a team workspace with one owner; prints its id.
    Create(CreateArgs),
    /// List every workspace: id, kind, member count, owners, name.
    List(ListArgs),
    /// Put a workspace on a plan from hds.toml's `[billing.plans.<id>]`, or
    /// back on the built-in unlimited `self_hosted`.
    SetPlan(SetPlanArgs),
}

#[derive(clap::Args)]
pub struct SetPlanArgs {
    pub workspace_id: String,
    pub plan_id: String,
    /// The configuration file defining the plans; default `<data-dir>/hds.toml`.
    #[arg(long = "config", env = "HDS_CONFIG")]
    pub config_file: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub dir: DataDir,
}

#[derive(clap::Args)]
pub struct CreateArgs {
    /// The workspace's name: 1-100 characters, one line.
    pub name: String,
    /// Its owner's e-mail. A person not known yet is created (with no other
    /// workspace); `hds users link EMAIL` then signs them in.
    #[arg(long)]
    pub owner: String,
    #[command(flatten)]
    pub dir: DataDir,
}

#[derive(clap::Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub dir: DataDir,
}

/// What `create` did.
#[derive(Debug)]
pub struct Created {
    pub workspace_id: String,
    /// Whether the owner was created by this command.
    pub new_owner: bool,
}

pub fn run(cmd: WorkspacesCommand) -> anyhow::Result<()> {
    match cmd {
        WorkspacesCommand::Create(a) => {
            let made = create(&a)?;
            println!("{}", made.workspace_id);
            if made.new_owner {
                eprintln!(
                    "Created {} as its owner; `hds users link {}` prints a sign-in link.",
                    a.owner, a.owner
                );
            }
            Ok(())
        }
        WorkspacesCommand::SetPlan(a) => {
            set_plan(&a)?;
            println!("{} is on plan {}", a.workspace_id, a.plan_id);
            Ok(())
        }
        WorkspacesCommand::List(a) => {
            for line in list(&a)? {
                println!("{line}");
            }
            Ok(())
        }
    }
}

fn open(dir: &DataDir) -> anyhow::Result<rusqlite::Connection> {
    if !dir.db_path().exists() {
        bail!(
            "{} has no database; run `hds init` first",
            dir.data_dir.display()
        );
    }
    open_cli_connection(&dir.db_path())
}

/// Works while the server runs: one short IMMEDIATE transaction.
pub fn create(a: &CreateArgs) -> anyhow::Result<Created> {
    let err = |e: crate::error::Error| anyhow::anyhow!("{}", e.message);
    let name = check_name(&a.name).map_err(err)?;
    let email = a.owner.trim();
    if !email.contains('@') || email.chars().any(|c| c.is_control() || c.is_whitespace()) {
        bail!("`{}` is not an e-mail address", a.owner);
    }
    let mut conn = open(&a.dir)?;
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let now = time::format(Clock::system().now());
    let (owner, new_owner) = match users::by_email(&tx, email).map_err(err)? {
        Some(u) => (u, false),
        None => (users::create(&tx, email, None, &now).map_err(err)?, true),
    };
    let w = create_team(&tx, &name, &owner.id, &now).map_err(err)?;
    tx.commit()?;
    Ok(Created {
        workspace_id: w.id,
        new_owner,
    })
}

/// One line per workspace, oldest first: `id  kind  N members  owners  name`.
pub fn list(a: &ListArgs) -> anyhow::Result<Vec<String>> {
    let conn = open(&a.dir)?;
    let all = workspaces::all(&conn).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(all
        .into_iter()
        .map(|s| {
            format!(
                "{}\t{}\t{} member{}\towners: {}\t{}",
                s.workspace.id,
                s.workspace.kind,
                s.members,
                if s.members == 1 { "" } else { "s" },
                if s.owners.is_empty() {
                    "none".to_owned()
                } else {
                    s.owners.join(", ")
                },
                s.workspace.name
            )
        })
        .collect())
}

/// Puts a workspace on a plan the configuration defines (or `self_hosted`).
/// Works while the server runs; limits apply from the next create.
pub fn set_plan(a: &SetPlanArgs) -> anyhow::Result<()> {
    let mut config = crate::config::Config::for_data_dir(a.dir.data_dir.clone());
    config.config_file = a.config_file.clone();
    config.load_file()?;
    if config.billing.plan(&a.plan_id).is_none() {
        let known: Vec<&str> = std::iter::once(crate::config::billing::SELF_HOSTED)
            .chain(config.billing.plans.keys().map(String::as_str))
            .collect();
        bail!(
            "no plan `{}`: define [billing.plans.{}] in hds.toml, or use one of: {}",
            a.plan_id,
            a.plan_id,
            known.join(", ")
        );
    }
    let conn = open(&a.dir)?;
    let found = crate::store::billing::set_plan(&conn, &a.workspace_id, &a.plan_id)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if !found {
        bail!(
            "no workspace `{}`; `hds workspaces list` shows their ids",
            a.workspace_id
        );
    }
    Ok(())
}
