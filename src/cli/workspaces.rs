//! `hds workspaces create NAME --owner EMAIL`, `list`, `set-plan` and
//! `set-owner` (README: "Other commands"; guide: "Workspaces and members").

use anyhow::bail;

use crate::cli::{DataDir, not_an_email, shown};
use crate::clock::Clock;
use crate::domain::access::Role;
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
    /// Make a person an owner of a workspace, adding them as a member if
    /// they are not one: the operator's way to give a workspace an owner
    /// again (its last owner deleted their account, or left the company).
    SetOwner(SetOwnerArgs),
}

#[derive(clap::Args)]
pub struct SetOwnerArgs {
    pub workspace_id: String,
    /// The person's e-mail. A person not known yet is created; `hds users
    /// link EMAIL` then signs them in.
    pub email: String,
    #[command(flatten)]
    pub dir: DataDir,
}

/// What `set-owner` did.
#[derive(Debug, PartialEq, Eq)]
pub enum OwnerSet {
    /// The person was a member with another role, which they no longer have.
    Promoted { from: Role },
    /// The person was not a member, and joins as owner.
    Added { new_person: bool },
    /// The person owned it already; nothing changed.
    AlreadyOwner,
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
            crate::cli::say!("{}", made.workspace_id)?;
            if made.new_owner {
                let owner = shown(&a.owner);
                eprintln!(
                    "Created {owner} as its owner; `hds users link {owner}` prints a sign-in link."
                );
            }
            Ok(())
        }
        WorkspacesCommand::SetPlan(a) => {
            set_plan(&a)?;
            crate::cli::say!(
                "{} is on plan {}",
                shown(&a.workspace_id),
                shown(&a.plan_id)
            )?;
            Ok(())
        }
        WorkspacesCommand::SetOwner(a) => {
            let (email, ws) = (shown(&a.email), shown(&a.workspace_id));
            match set_owner(&a)? {
                OwnerSet::Promoted { from } => {
                    crate::cli::say!("{email} is now an owner of {ws} (was {})", from.as_str())?
                }
                OwnerSet::Added { new_person } => {
                    crate::cli::say!("{email} joined {ws} as an owner")?;
                    if new_person {
                        eprintln!(
                            "Created {email}; `hds users link {email}` prints a sign-in link."
                        );
                    }
                }
                OwnerSet::AlreadyOwner => crate::cli::say!("{email} already owns {ws}")?,
            }
            Ok(())
        }
        WorkspacesCommand::List(a) => crate::cli::print_lines(list(&a)?),
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
    // An existing person keeps the address they have; a new one needs an
    // address hds can use, as everywhere else.
    let mut conn = open(&a.dir)?;
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let now = time::format(Clock::system().now());
    let (owner, new_owner) = match users::by_email(&tx, email).map_err(err)? {
        Some(u) => (u, false),
        None => {
            if !crate::domain::validate::looks_like_email(email) {
                bail!(not_an_email(email));
            }
            (users::create(&tx, email, None, &now).map_err(err)?, true)
        }
    };
    let w = create_team(&tx, &name, &owner.id, &now).map_err(err)?;
    tx.commit()?;
    Ok(Created {
        workspace_id: w.id,
        new_owner,
    })
}

/// Makes EMAIL an owner of the workspace (guide: "Account"). Works while
/// the server runs: one short IMMEDIATE transaction; a role change takes
/// effect at the person's next request.
pub fn set_owner(a: &SetOwnerArgs) -> anyhow::Result<OwnerSet> {
    let err = |e: crate::error::Error| anyhow::anyhow!("{}", e.message);
    let email = a.email.trim();
    let ws = a.workspace_id.trim();
    let mut conn = open(&a.dir)?;
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    if workspaces::get(&tx, ws).map_err(err)?.is_none() {
        bail!(
            "no workspace `{}`; `hds workspaces list` shows their ids",
            shown(ws)
        );
    }
    let now = time::format(Clock::system().now());
    // An existing person keeps the address they have; a new one needs an
    // address hds can use, as everywhere else.
    let (person, new_person) = match users::by_email(&tx, email).map_err(err)? {
        Some(u) => (u, false),
        None => {
            if !crate::domain::validate::looks_like_email(email) {
                bail!(not_an_email(email));
            }
            (users::create(&tx, email, None, &now).map_err(err)?, true)
        }
    };
    let done = match workspaces::role_of(&tx, ws, &person.id).map_err(err)? {
        Some(Role::Owner) => OwnerSet::AlreadyOwner,
        Some(from) => {
            workspaces::set_role(&tx, ws, &person.id, Role::Owner).map_err(err)?;
            OwnerSet::Promoted { from }
        }
        None => {
            workspaces::add_member(&tx, ws, &person.id, Role::Owner, &now).map_err(err)?;
            OwnerSet::Added { new_person }
        }
    };
    tx.commit()?;
    Ok(done)
}

/// One line per workspace, oldest first: `id  kind  N members  owners  name`.
pub fn list(a: &ListArgs) -> anyhow::Result<Vec<String>> {
    let conn = open(&a.dir)?;
    let all = workspaces::all(&conn).map_err(crate::error::Error::for_operator)?;
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
    let conn = open(&a.dir)?;
    let (ws, plan_id) = (a.workspace_id.trim(), a.plan_id.trim());
    // Both arguments are checked, so one run names every mistake.
    let mut wrong = Vec::new();
    if workspaces::get(&conn, ws)
        .map_err(crate::error::Error::for_operator)?
        .is_none()
    {
        wrong.push(format!(
            "no workspace `{}`; `hds workspaces list` shows their ids",
            shown(ws)
        ));
    }
    if config.billing.plan(plan_id).is_none() {
        let known: Vec<&str> = std::iter::once(crate::config::billing::SELF_HOSTED)
            .chain(config.billing.plans.keys().map(String::as_str))
            .collect();
        let plan = shown(plan_id);
        wrong.push(format!(
            "no plan `{plan}`: define [billing.plans.{plan}] in hds.toml, or use one of: {}",
            known.join(", ")
        ));
    }
    if !wrong.is_empty() {
        bail!("{}", wrong.join("\n"));
    }
    let found = crate::store::billing::set_plan(&conn, ws, plan_id)
        .map_err(crate::error::Error::for_operator)?;
    if !found {
        bail!(
            "no workspace `{}`; `hds workspaces list` shows their ids",
            shown(ws)
        );
    }
    Ok(())
}
