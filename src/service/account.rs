//! The person's own account: export everything hds holds about them, and
//! delete it (guide: "Account: export and deletion"; DESIGN §14).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::access;
use crate::domain::action::Actor;
use crate::domain::time;
use crate::error::{Code, Error, Result};
use crate::service::Services;
use crate::service::caller::UserCaller;
use crate::service::{invitations, work};
use crate::store::account::{self as store, *};
use crate::store::{users, workspaces};

/// The person as hds knows them.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportProfile {
    pub id: String,
    pub email: String,
    pub name: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// GET /v1/account/export: everything hds holds about the caller, without
/// any secret or hash.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccountExport {
    /// Always `account_export`.
    pub object: &'static str,
    #[schema(format = DateTime)]
    pub exported_at: String,
    pub profile: ExportProfile,
    pub memberships: Vec<ExportMembership>,
    pub identities: Vec<ExportIdentity>,
    /// Sessions and API tokens, ended ones included.
    pub credentials: Vec<ExportCredential>,
    pub decisions: Vec<ExportDecision>,
    pub votes: Vec<ExportVote>,
    pub comments: Vec<ExportComment>,
    /// Claims, assignments and snoozes.
    pub work: Vec<ExportWork>,
    pub control_requests: Vec<ExportControlRequest>,
    pub context_requests: Vec<ExportContextRequest>,
    /// Dashboard usage events (kept 90 days).
    pub usage_events: Vec<ExportUsageEvent>,
    pub notifications: Vec<ExportNotification>,
    pub notification_preferences: Vec<ExportPreferences>,
    pub invitations_sent: Vec<ExportInvitation>,
}

/// The caller's account, as `GET` and `PATCH /v1/account` answer it.
#[derive(Debug, Serialize, ToSchema)]
pub struct Account {
    /// Always `account`.
    pub object: &'static str,
    pub id: String,
    pub email: String,
    /// Shown with the address in notices, e-mails and comments;
    /// null until set here or by an identity provider's sign-in.
    pub name: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// PATCH /v1/account: any subset of the fields.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AccountUpdate {
    /// 1-100 characters, one line (trimmed); `null` clears it.
    #[serde(default, deserialize_with = "crate::service::sources::present")]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 100)]
    pub name: Option<Option<String>>,
}

fn account_of(u: crate::store::users::User) -> Account {
    Account {
        object: "account",
        id: u.id,
        email: u.email,
        name: u.name,
        created_at: u.created_at,
    }
}

/// GET /v1/account
pub async fn get(s: &Services, user: &UserCaller) -> Result<Account> {
    let uid = user.user_id.clone();
    s.db.read(move |c| {
        users::by_id(c, &uid)?
            .map(account_of)
            .ok_or_else(|| Error::internal(anyhow::anyhow!("signed-in user {uid} not found")))
    })
    .await
}

/// PATCH /v1/account: sets or clears the name; answers the account.
pub async fn update(s: &Services, user: &UserCaller, req: AccountUpdate) -> Result<Account> {
    let name = match req.name {
        None => None,
        Some(None) => Some(None),
        Some(Some(n)) => Some(Some(crate::service::workspaces::check_name(&n)?)),
    };
    let uid = user.user_id.clone();
    s.write(move |c, fx| {
        if let Some(name) = name {
            users::set_name(c, &uid, name.as_deref())?;
            // The name shows on their workspaces' pages too.
            fx.user_changed(&uid);
            for (ws, _) in workspaces::of_user(c, &uid)? {
                fx.workspace_changed(&ws.id);
            }
        }
        users::by_id(c, &uid)?
            .map(account_of)
            .ok_or_else(|| Error::internal(anyhow::anyhow!("signed-in user {uid} not found")))
    })
    .await
}

/// DELETE /v1/account
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AccountDeleteRequest {
    /// The caller's own e-mail address (compared without ASCII case). Left
    /// out (or the body with it), the answer says what to send.
    #[serde(default)]
    #[schema(required = true, min_length = 1, max_length = 320)]
    pub confirm: String,
}

/// Everything hds holds about the caller, read in one snapshot.
pub async fn export(s: &Services, user: &UserCaller) -> Result<AccountExport> {
    let uid = user.user_id.clone();
    let now = time::format(s.clock.now());
    s.db.read(move |c| {
        let u = users::by_id(c, &uid)?
            .ok_or_else(|| Error::internal(anyhow::anyhow!("signed-in user {uid} not found")))?;
        Ok(AccountExport {
            object: "account_export",
            exported_at: now,
            profile: ExportProfile {
                id: u.id,
                email: u.email,
                name: u.name,
                created_at: u.created_at,
            },
            memberships: store::memberships(c, &uid)?,
            identities: store::identities(c, &uid)?,
            credentials: store::credentials(c, &uid)?,
            decisions: store::decisions(c, &uid)?,
            votes: store::votes(c, &uid)?,
            comments: store::comments(c, &uid)?,
            work: store::work(c, &uid)?,
            control_requests: store::control_requests(c, &uid)?,
            context_requests: store::context_requests(c, &uid)?,
            usage_events: store::usage_events(c, &uid)?,
            notifications: store::notifications(c, &uid)?,
            notification_preferences: store::preferences(c, &uid)?,
            invitations_sent: store::invitations_sent(c, &uid)?,
        })
    })
    .await
}

/// The e-mail a deleted account keeps: unique, and undeliverable (RFC 2606
/// reserves `.invalid`).
pub fn placeholder_email(user_id: &str) -> String {
    format!("deleted-{user_id}@invalid")
}

/// How the dashboard names a person by address: a deleted account's
/// placeholder reads "a deleted account" (the API shows the placeholder).
pub fn shown_address(email: String) -> String {
    if email.starts_with("deleted-usr_") && email.ends_with("@invalid") {
        "a deleted account".to_owned()
    } else {
        email
    }
}

/// Deletes the caller's account in one transaction: refused with 409
/// `LAST_OWNER` (nothing written) when they are the last owner of a
/// workspace that has other members; otherwise they leave every workspace
/// (what they held released, their pending invitations revoked), and
/// `store::account::erase` revokes every credential, the current one
/// included, and erases their personal data. Decisions, receipts, votes,
/// comments and history keep the user id: receipts are signed and never
/// change.
pub async fn delete(s: &Services, user: &UserCaller, req: AccountDeleteRequest) -> Result<()> {
    if req.confirm.trim().is_empty() {
        return Err(Error::field(
            "confirm",
            "send {\"confirm\": \"<your e-mail address>\"} to confirm that the account is to be deleted",
        ));
    }
    if !req.confirm.trim().eq_ignore_ascii_case(&user.email) {
        return Err(Error::field(
            "confirm",
            "type your own e-mail address to confirm that the account is to be deleted",
        ));
    }
    let (uid, email) = (user.user_id.clone(), user.email.clone());
    let now = time::format(s.clock.now());
    s.write(move |c, fx| {
        let memberships = workspaces::of_user(c, &uid)?;
        for (ws, role) in &memberships {
            let owners = workspaces::owner_count(c, &ws.id)?;
            if access::account_deletion_orphans(*role, owners, store::member_count(c, &ws.id)?) {
                return Err(Error::new(
                    Code::LastOwner,
                    format!(
                        "you are the last owner of the workspace “{}”, which has other members; make another member owner first",
                        ws.name
                    ),
                )
                .with_detail("workspace_id", ws.id.as_str()));
            }
        }
        for (ws, role) in &memberships {
            let release = work::Release {
                workspace_id: &ws.id,
                user_id: &uid,
                email: &email,
                role: None,
                old_role: *role,
                by: Actor::user(&uid),
                reason: "account deleted".into(),
            };
            work::release_held(c, fx, &release, &now)?;
            store::pin_assignments(c, &ws.id, &uid, &email, &placeholder_email(&uid))?;
            invitations::revoke_offered_by(c, fx, &ws.id, &uid, None, &now)?;
            workspaces::remove_member(c, &ws.id, &uid, &now)?;
        }
        // Every workspace they were ever in: those they left before keep
        // notices, run timelines and closed Actions that name them too.
        let mut shared: Vec<String> = memberships.iter().map(|(ws, _)| ws.id.clone()).collect();
        for ws in workspaces::left_by(c, &uid)? {
            if !shared.contains(&ws) {
                store::pin_assignments(c, &ws, &uid, &email, &placeholder_email(&uid))?;
                shared.push(ws);
            }
        }
        store::scrub_mentions(c, &uid, &email, &shared, "a deleted account")?;
        store::erase(c, &uid, &placeholder_email(&uid), &now)
    })
    .await
}
