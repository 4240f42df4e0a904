//! `hds users link EMAIL`: a one-time sign-in link, for instances without an
//! identity provider (and for the first sign-in of anyone an admin vouches for).

use crate::clock::Clock;
use crate::domain::access::Role;
use crate::domain::time;
use anyhow::bail;

use crate::cli::DataDir;
use crate::store::{db::open_cli_connection, users, workspaces};

#[derive(clap::Subcommand)]
pub enum UsersCommand {
    /// Print a one-time sign-in link (valid 24 hours, usable once).
    Link(LinkArgs),
}

#[derive(clap::Args)]
pub struct LinkArgs {
    /// The person's e-mail.
    pub email: String,
    /// Create the person when they do not exist yet, as a member of the first
    /// workspace with this role (admin, reviewer or viewer).
    /// Owners are made with `hds workspaces set-owner`.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(["admin", "reviewer", "viewer"]))]
    pub create_as: Option<String>,
    #[command(flatten)]
    pub dir: DataDir,
    /// Public base URL the link starts with. Default: the one the last
    /// `hds serve` on this data dir ran with, else http://127.0.0.1:8080.
    #[arg(long, env = "HDS_BASE_URL", value_parser = crate::config::parse_base_url)]
    pub base_url: Option<String>,
}

/// The link's base URL when none is given and no `hds serve` recorded one.
const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8080";

pub fn run(cmd: UsersCommand) -> anyhow::Result<()> {
    match cmd {
        UsersCommand::Link(a) => {
            let (url, note) = link_with_note(&a)?;
            crate::cli::say!("{url}")?;
            if let Some(note) = note {
                eprintln!("{note}");
            }
            eprintln!(
                "This link signs {} in once, within 24 hours. Send it privately.",
                crate::cli::shown(&a.email)
            );
            Ok(())
        }
    }
}

/// Works while the server runs: one short IMMEDIATE transaction on the database.
pub fn link(a: &LinkArgs) -> anyhow::Result<String> {
    Ok(link_with_note(a)?.0)
}

/// The link, and what the command must say on stderr when `--create-as`
/// named a person who exists already: their role is never changed here
/// (the members page and PATCH /v1/workspaces/members/{user_id} do that).
pub fn link_with_note(a: &LinkArgs) -> anyhow::Result<(String, Option<String>)> {
    if !a.dir.db_path().exists() {
        bail!(
            "{} has no database; run `hds init` first",
            a.dir.data_dir.display()
        );
    }
    let err = crate::error::Error::for_operator;
    let mut conn = open_cli_connection(&a.dir.db_path())?;
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let clock_now = Clock::system().now();
    let now = time::format(clock_now);
    let create_as = match a.create_as.as_deref() {
        None => None,
        Some(r) => match Role::parse(r).filter(|r| *r != Role::Owner) {
            Some(role) => Some(role),
            None => bail!("--create-as takes admin, reviewer or viewer"),
        },
    };
    let mut note = None;
    let email = a.email.trim();
    let user = match (users::by_email(&tx, email).map_err(err)?, create_as) {
        (Some(u), None) => u,
        (Some(u), Some(asked)) => {
            note = Some(unchanged_role(&tx, &u, asked).map_err(err)?);
            u
        }
        (None, _) if !crate::domain::validate::looks_like_email(email) => {
            bail!(crate::cli::not_an_email(email))
        }
        (None, Some(role)) => {
            let Some(ws) = workspaces::oldest(&tx).map_err(err)? else {
                bail!("this data dir has no workspace; run `hds init` first");
            };
            let u = users::create(&tx, email, None, &now).map_err(err)?;
            workspaces::add_member(&tx, &ws, &u.id, role, &now).map_err(err)?;
            u
        }
        (None, None) => bail!(
            "no user has the e-mail {}; pass --create-as reviewer to add them",
            crate::cli::shown(email)
        ),
    };
    let base_url = a
        .base_url
        .clone()
        .or_else(|| a.dir.recorded_base_url())
        .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
    let url = crate::service::signin::new_link(&tx, &base_url, &user.id, clock_now).map_err(err)?;
    tx.commit()?;
    Ok((url, note))
}

/// Says that `--create-as` changed nothing for a person who exists.
fn unchanged_role(
    c: &rusqlite::Connection,
    u: &users::User,
    asked: Role,
) -> crate::error::Result<String> {
    let Some(ws) = workspaces::oldest(c)? else {
        return Ok(format!(
            "{} exists already; --create-as {asked} was ignored",
            u.email
        ));
    };
    let name = workspaces::get(c, &ws)?.map_or(ws.clone(), |w| w.name);
    Ok(match workspaces::role_of(c, &ws, &u.id)? {
        Some(role) => format!(
            "{} is already a{} {role} of {name}; the role was not changed (asked: {asked}) — \
             use the members page (/app/members) or PATCH /v1/workspaces/members/{}",
            u.email,
            if role == Role::Admin || role == Role::Owner {
                "n"
            } else {
                ""
            },
            u.id
        ),
        None => format!(
            "{} exists already and is not a member of {name}; --create-as {asked} was ignored \
             and no membership was added",
            u.email
        ),
    })
}
