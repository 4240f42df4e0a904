//! Plans, usage counters and the Stripe ids of workspaces (guide: "Plans and
//! billing"). Monthly uses are counter rows bumped with the create they
//! count; levels (members, Sources) are counted, being small.

use rusqlite::{Connection, OptionalExtension, params};

use crate::domain::billing::Resource;
use crate::error::Result;

const PLAN_OF: &str = "SELECT plan_id FROM workspaces WHERE id = ?1";
const USAGE: &str =
    "SELECT actions, runs FROM usage_counters WHERE workspace_id = ?1 AND period = ?2";
const MEMBERS: &str = "SELECT count(*) FROM memberships WHERE workspace_id = ?1";
// An invitation to someone who became a member another way (the operator's
// `hds users link --create-as`) is not counted a second time.
const PENDING_INVITATIONS: &str = "SELECT count(*) FROM invitations i WHERE i.workspace_id = ?1 \
     AND i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > ?2 \
     AND NOT EXISTS (SELECT 1 FROM memberships m JOIN users u ON u.id = m.user_id \
                     WHERE m.workspace_id = i.workspace_id AND u.email = i.email)";
const SOURCES: &str = "SELECT count(*) FROM sources WHERE workspace_id = ?1 AND revoked_at IS NULL";
const OLDEST_OWNER: &str = "SELECT m.user_id, u.email FROM memberships m JOIN users u ON u.id = m.user_id \
     WHERE m.workspace_id = ?1 AND m.role = 'owner' ORDER BY m.created_at, m.user_id LIMIT 1";
const BY_CUSTOMER: &str = "SELECT id, stripe_subscription_id, stripe_subscription_created, \
     stripe_subscription_live, stripe_event_at FROM workspaces WHERE stripe_customer_id = ?1";

/// A count column (never negative: CHECKs and count(*)).
fn n(r: &rusqlite::Row, i: usize) -> rusqlite::Result<u64> {
    Ok(u64::try_from(r.get::<_, i64>(i)?).unwrap_or(0))
}

/// The workspace's plan id; None when there is no such workspace.
pub fn plan_of(c: &Connection, workspace_id: &str) -> Result<Option<String>> {
    Ok(c.prepare_cached(PLAN_OF)?
        .query_row([workspace_id], |r| r.get(0))
        .optional()?)
}

/// Every workspace's plan other than `self_hosted`: (id, name, plan id),
/// oldest first. Read once at start (service::billing::plans_defined).
pub fn plans_in_use(c: &Connection) -> Result<Vec<(String, String, String)>> {
    let mut st = c.prepare(
        "SELECT id, name, plan_id FROM workspaces WHERE plan_id != 'self_hosted' ORDER BY created_at, id",
    )?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Sets the plan by hand (the operator); false: no such workspace.
pub fn set_plan(c: &Connection, workspace_id: &str, plan_id: &str) -> Result<bool> {
    let n = c.execute(
        "UPDATE workspaces SET plan_id = ?2 WHERE id = ?1",
        params![workspace_id, plan_id],
    )?;
    Ok(n == 1)
}

/// Sets the plan from an event of the Stripe subscription the workspace
/// now follows (`s.subscription_id`), and what the workspace keeps of it.
pub fn set_plan_from_stripe(c: &Connection, plan_id: &str, s: &StripeState) -> Result<()> {
    c.execute(
        "UPDATE workspaces SET plan_id = ?2, stripe_subscription_id = ?3,
             stripe_subscription_created = ?4, stripe_subscription_live = ?5, stripe_event_at = ?6
         WHERE id = ?1",
        params![
            s.workspace_id,
            plan_id,
            s.subscription_id,
            s.subscription_created,
            s.live,
            s.event_at
        ],
    )?;
    Ok(())
}

/// Remembers that a subscription ended for good (deleted, canceled or
/// incomplete_expired): Stripe never makes such a one live again.
pub fn remember_ended(
    c: &Connection,
    workspace_id: &str,
    subscription_id: &str,
    at: &str,
) -> Result<()> {
    c.prepare_cached(
        "INSERT INTO stripe_ended_subscriptions (subscription_id, workspace_id, ended_at)
         VALUES (?1, ?2, ?3) ON CONFLICT (subscription_id) DO NOTHING",
    )?
    .execute([subscription_id, workspace_id, at])?;
    Ok(())
}

/// Whether a subscription is known to have ended for good.
pub fn has_ended(c: &Connection, workspace_id: &str, subscription_id: &str) -> Result<bool> {
    Ok(c.prepare_cached(
        "SELECT 1 FROM stripe_ended_subscriptions WHERE subscription_id = ?1 AND workspace_id = ?2",
    )?
    .query_row([subscription_id, workspace_id], |_| Ok(()))
    .optional()?
    .is_some())
}

/// This month's (actions, runs): one row, or zeros.
pub fn monthly_usage(c: &Connection, workspace_id: &str, period: &str) -> Result<(u64, u64)> {
    Ok(c.prepare_cached(USAGE)?
        .query_row([workspace_id, period], |r| Ok((n(r, 0)?, n(r, 1)?)))
        .optional()?
        .unwrap_or((0, 0)))
}

/// Adds one use of a monthly resource: one UPSERT, no read.
pub fn bump(c: &Connection, workspace_id: &str, period: &str, what: Resource) -> Result<()> {
    let sql = match what {
        Resource::Actions => {
            "INSERT INTO usage_counters (workspace_id, period, actions) VALUES (?1, ?2, 1)
             ON CONFLICT (workspace_id, period) DO UPDATE SET actions = actions + 1"
        }
        Resource::Runs => {
            "INSERT INTO usage_counters (workspace_id, period, runs) VALUES (?1, ?2, 1)
             ON CONFLICT (workspace_id, period) DO UPDATE SET runs = runs + 1"
        }
        // Levels are counted, not bumped.
        Resource::Members | Resource::Sources => return Ok(()),
    };
    c.prepare_cached(sql)?.execute([workspace_id, period])?;
    Ok(())
}

/// Members plus invitations still pending at `now`.
pub fn members_and_pending(c: &Connection, workspace_id: &str, now: &str) -> Result<u64> {
    let members = c
        .prepare_cached(MEMBERS)?
        .query_row([workspace_id], |r| n(r, 0))?;
    let pending = c
        .prepare_cached(PENDING_INVITATIONS)?
        .query_row([workspace_id, now], |r| n(r, 0))?;
    Ok(members + pending)
}

/// Sources not revoked.
pub fn live_sources(c: &Connection, workspace_id: &str) -> Result<u64> {
    Ok(c.prepare_cached(SOURCES)?
        .query_row([workspace_id], |r| n(r, 0))?)
}

/// The oldest owner: (user id, e-mail).
pub fn oldest_owner(c: &Connection, workspace_id: &str) -> Result<Option<(String, String)>> {
    Ok(c.prepare_cached(OLDEST_OWNER)?
        .query_row([workspace_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// The workspace's Stripe customer id, once created.
pub fn stripe_customer(c: &Connection, workspace_id: &str) -> Result<Option<String>> {
    Ok(c.query_row(
        "SELECT stripe_customer_id FROM workspaces WHERE id = ?1",
        [workspace_id],
        |r| r.get::<_, Option<String>>(0),
    )
    .optional()?
    .flatten())
}

/// Stores the Stripe customer id unless one is already stored; the stored one.
pub fn set_stripe_customer(c: &Connection, workspace_id: &str, customer: &str) -> Result<String> {
    // A customer id another workspace holds (Stripe never answers one
    // twice, but a stand-in or a copied database may) is Stripe's answer
    // being wrong, said as such, not a failed write.
    if let Some(other) = by_stripe_customer(c, customer)?
        && other.workspace_id != workspace_id
    {
        return Err(crate::error::Error::new(
            crate::error::Code::ProviderUnavailable,
            format!(
                "Stripe answered customer {customer}, which another workspace already has; nothing was stored"
            ),
        ));
    }
    c.execute(
        "UPDATE workspaces SET stripe_customer_id = ?2 WHERE id = ?1 AND stripe_customer_id IS NULL",
        params![workspace_id, customer],
    )?;
    Ok(stripe_customer(c, workspace_id)?.unwrap_or_else(|| customer.to_owned()))
}

/// A Checkout session started for a workspace and not yet followed by a
/// paid subscription.
#[derive(Clone, Debug)]
pub struct PendingCheckout {
    pub session_id: String,
    pub plan_id: String,
    pub url: String,
    /// Unix seconds.
    pub expires_at: i64,
}

/// A Checkout session asked of Stripe and not yet stored
/// (`stripe_checkout_intents`): what to ask again after a crash.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckoutIntent {
    pub plan_id: String,
    pub idempotency_key: String,
    /// The form sent: (name, value) pairs.
    pub form: Vec<(String, String)>,
    /// When it was written (ignored by `put_checkout_intent`, which stamps
    /// the time it is given).
    pub created_at: String,
}

pub fn checkout_intent(c: &Connection, workspace_id: &str) -> Result<Option<CheckoutIntent>> {
    let row: Option<(String, String, String, String)> = c
        .prepare_cached(
            "SELECT plan_id, idempotency_key, form, created_at FROM stripe_checkout_intents WHERE workspace_id = ?1",
        )?
        .query_row([workspace_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .optional()?;
    Ok(match row {
        Some((plan_id, idempotency_key, form, created_at)) => Some(CheckoutIntent {
            plan_id,
            idempotency_key,
            form: serde_json::from_str(&form)?,
            created_at,
        }),
        None => None,
    })
}

/// Records what is about to be asked of Stripe (replacing an intent before).
pub fn put_checkout_intent(
    c: &Connection,
    workspace_id: &str,
    intent: &CheckoutIntent,
    now: &str,
) -> Result<()> {
    c.prepare_cached(
        "INSERT INTO stripe_checkout_intents (workspace_id, plan_id, idempotency_key, form, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (workspace_id) DO UPDATE SET plan_id = ?2, idempotency_key = ?3, form = ?4, created_at = ?5",
    )?
    .execute(params![
        workspace_id,
        intent.plan_id,
        intent.idempotency_key,
        serde_json::to_string(&intent.form)?,
        now
    ])?;
    Ok(())
}

pub fn drop_checkout_intent(c: &Connection, workspace_id: &str) -> Result<()> {
    c.prepare_cached("DELETE FROM stripe_checkout_intents WHERE workspace_id = ?1")?
        .execute([workspace_id])?;
    Ok(())
}

pub fn pending_checkout(c: &Connection, workspace_id: &str) -> Result<Option<PendingCheckout>> {
    Ok(c.prepare_cached(
        "SELECT session_id, plan_id, url, expires_at FROM stripe_checkouts WHERE workspace_id = ?1",
    )?
    .query_row([workspace_id], |r| {
        Ok(PendingCheckout {
            session_id: r.get(0)?,
            plan_id: r.get(1)?,
            url: r.get(2)?,
            expires_at: r.get(3)?,
        })
    })
    .optional()?)
}

pub fn set_pending_checkout(c: &Connection, workspace_id: &str, p: &PendingCheckout) -> Result<()> {
    c.prepare_cached(
        "INSERT INTO stripe_checkouts (workspace_id, session_id, plan_id, url, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (workspace_id) DO UPDATE SET session_id = ?2, plan_id = ?3, url = ?4, expires_at = ?5",
    )?
    .execute(params![workspace_id, p.session_id, p.plan_id, p.url, p.expires_at])?;
    Ok(())
}

/// A paid subscription came (or the session was expired, or its customer
/// is gone): the session is done with. Its row stays, as lapsed, so the
/// next session's Idempotency-Key names it and Stripe never answers that
/// one again. (A session still being asked for is the checkout's to settle,
/// under its lock: `stripe_checkout_intents` is left alone.)
pub fn close_pending_checkout(c: &Connection, workspace_id: &str) -> Result<()> {
    c.prepare_cached("UPDATE stripe_checkouts SET expires_at = 0 WHERE workspace_id = ?1")?
        .execute([workspace_id])?;
    Ok(())
}

/// The subscription the workspace follows, unless it ended for good:
/// (its id, whether it is live). An `unpaid` or `paused` one is not live
/// but may be made so again in the portal.
pub fn standing_subscription(c: &Connection, workspace_id: &str) -> Result<Option<(String, bool)>> {
    Ok(c.prepare_cached(
        "SELECT w.stripe_subscription_id, w.stripe_subscription_live FROM workspaces w
         WHERE w.id = ?1 AND w.stripe_subscription_id IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM stripe_ended_subscriptions e
                           WHERE e.subscription_id = w.stripe_subscription_id AND e.workspace_id = w.id)",
    )?
    .query_row([workspace_id], |r| Ok((r.get(0)?, r.get(1)?)))
    .optional()?)
}

/// Forgets the workspace's customer when it is still `gone` (Stripe no
/// longer has it), so a new one can be kept.
/// Whether it was still that one.
pub fn forget_stripe_customer(c: &Connection, workspace_id: &str, gone: &str) -> Result<bool> {
    let n = c
        .prepare_cached(
            "UPDATE workspaces SET stripe_customer_id = NULL WHERE id = ?1 AND stripe_customer_id = ?2",
        )?
        .execute([workspace_id, gone])?;
    Ok(n == 1)
}

/// The workspace whose Stripe customer this is.
pub fn by_stripe_customer(c: &Connection, customer: &str) -> Result<Option<StripeState>> {
    Ok(c.prepare_cached(BY_CUSTOMER)?
        .query_row([customer], |r| {
            Ok(StripeState {
                workspace_id: r.get(0)?,
                subscription_id: r.get(1)?,
                subscription_created: r.get(2)?,
                live: r.get(3)?,
                event_at: r.get(4)?,
            })
        })
        .optional()?)
}

/// The workspace of a Stripe customer, and the subscription it follows.
#[derive(Clone, Debug)]
pub struct StripeState {
    pub workspace_id: String,
    /// The subscription its plan follows (kept after it ended); None
    /// before the first subscription event.
    pub subscription_id: Option<String>,
    /// When Stripe created that subscription (Unix seconds).
    pub subscription_created: Option<i64>,
    /// Paid, on trial or being retried; false once it ended.
    pub live: bool,
    /// `created` of the last event of it applied (Unix seconds).
    pub event_at: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_customer_another_workspace_has_is_refused_and_nothing_stored() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        c.execute_batch(
            "INSERT INTO workspaces(id, name, kind, created_at) VALUES ('ws_1', 'A', 'team', '2026-11-01'), ('ws_2', 'B', 'team', '2026-11-01');",
        )
        .unwrap();
        assert_eq!(set_stripe_customer(&c, "ws_1", "cus_1").unwrap(), "cus_1");
        // The same workspace again: what it has.
        assert_eq!(set_stripe_customer(&c, "ws_1", "cus_9").unwrap(), "cus_1");
        let e = set_stripe_customer(&c, "ws_2", "cus_1").unwrap_err();
        assert_eq!(e.code, crate::error::Code::ProviderUnavailable);
        assert!(e.message.contains("another workspace"), "{}", e.message);
        assert_eq!(stripe_customer(&c, "ws_2").unwrap(), None);
    }

    #[test]
    fn an_invitation_to_someone_already_a_member_is_not_counted_again() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        c.execute_batch(
            "INSERT INTO workspaces(id, name, kind, created_at) VALUES ('ws_1', 'A', 'team', '2026-11-01');
             INSERT INTO users(id, email, created_at) VALUES ('usr_1', 'Ann@Example.com', '2026-11-01');
             INSERT INTO memberships(workspace_id, user_id, role, created_at) VALUES ('ws_1', 'usr_1', 'owner', '2026-11-01');
             INSERT INTO invitations(id, workspace_id, email, role, token_hash, created_at, expires_at)
               VALUES ('inv_1', 'ws_1', 'ann@example.com', 'viewer', 'h1', '2026-11-01', '2026-11-08'),
                      ('inv_2', 'ws_1', 'bo@example.com', 'viewer', 'h2', '2026-11-01', '2026-11-08');",
        )
        .unwrap();
        // Ann (a member, invited again under another case) once, Bo's
        // pending invitation once.
        assert_eq!(members_and_pending(&c, "ws_1", "2026-11-02").unwrap(), 2);
    }

    #[test]
    fn lookups_and_counts_use_their_indexes() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        for (sql, wants) in [
            (
                PLAN_OF,
                "SEARCH workspaces USING INDEX sqlite_autoindex_workspaces_1 (id=?)",
            ),
            (
                USAGE,
                "SEARCH usage_counters USING PRIMARY KEY (workspace_id=? AND period=?)",
            ),
            (
                MEMBERS,
                "SEARCH memberships USING COVERING INDEX sqlite_autoindex_memberships_1 (workspace_id=?)",
            ),
            (
                PENDING_INVITATIONS,
                "SEARCH i USING INDEX invitations_by_workspace (workspace_id=?)",
            ),
            (
                SOURCES,
                "SEARCH sources USING INDEX sources_by_workspace (workspace_id=?)",
            ),
            (
                OLDEST_OWNER,
                "SEARCH m USING INDEX sqlite_autoindex_memberships_1 (workspace_id=?)",
            ),
            (
                BY_CUSTOMER,
                "SEARCH workspaces USING INDEX workspaces_stripe_customer (stripe_customer_id=?)",
            ),
        ] {
            let plan = crate::store::query_plan(&c, sql);
            let text = plan.join("\n");
            assert!(text.contains(wants), "{sql}:\n{text}");
            assert!(
                !plan.iter().any(|l| l.starts_with("SCAN")),
                "{sql}:\n{text}"
            );
        }
    }
}
