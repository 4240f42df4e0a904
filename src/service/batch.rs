//! Batch decisions (POST /v1/actions/decisions and the inbox's batch bar):
//! up to 100 bound decisions by one reviewer, decided in one write job with
//! exactly the rules of a single decision (`decisions::decide_in`). Each item
//! runs in its own savepoint, so a refused item (changed since shown, closed,
//! forbidden…) undoes only its own writes and is reported; the others stand.
//! Items are decided in request order, so their receipts chain in that order.

use rusqlite::Connection;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::domain::action::ActionRecord;
use crate::domain::strict_json;
use crate::error::{Error, Result};
use crate::service::Services;
use crate::service::actions::{access_now, check_reason};
use crate::service::caller::UserCaller;
use crate::service::decisions::{DecisionRequest, decide_in};
use crate::service::effects::Effects;

/// The most decisions one batch may carry.
pub const MAX_BATCH: usize = 100;

/// POST /v1/actions/decisions
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    /// 1 to 100 decisions, each on a different Action; decided in this order.
    #[schema(min_items = 1, max_items = 100)]
    pub decisions: Vec<BatchItem>,
}

/// One decision of a batch: the body of POST /v1/actions/{id}/decision plus
/// the Action's id.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchItem {
    pub action_id: String,
    #[serde(deserialize_with = "strict_json::version")]
    #[schema(minimum = 1)]
    pub action_version: i64,
    #[serde(deserialize_with = "strict_json::fingerprint")]
    #[schema(pattern = "^sha256:[0-9a-f]{64}$")]
    pub fingerprint: String,
    #[serde(default)]
    pub option_id: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub response: Option<Value>,
    #[serde(default)]
    #[schema(max_length = 2000)]
    pub reason: Option<String>,
}

impl BatchItem {
    fn split(self) -> (String, DecisionRequest) {
        let req = DecisionRequest {
            action_version: self.action_version,
            fingerprint: self.fingerprint,
            option_id: self.option_id,
            response: self.response,
            reason: self.reason,
        };
        (self.action_id, req)
    }
}

/// What became of one item: the decided Action (with its receipt), or the
/// error the single route would have answered for it.
pub struct ItemOutcome {
    pub action_id: String,
    pub result: Result<ActionRecord>,
}

/// The batch's shape: 1..=100 items, no Action twice.
pub fn check(items: &[BatchItem]) -> Result<()> {
    if items.is_empty() {
        return Err(Error::field(
            "decisions",
            "decisions is empty: send 1 to 100 decisions",
        ));
    }
    if items.len() > MAX_BATCH {
        return Err(Error::field(
            "decisions",
            format!(
                "decisions has {} items; at most {MAX_BATCH} per batch: split it into several requests",
                items.len()
            ),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for (i, item) in items.iter().enumerate() {
        if !seen.insert(item.action_id.as_str()) {
            return Err(Error::field(
                &format!("decisions[{i}].action_id"),
                format!(
                    "Action {} appears more than once; decide each Action once per batch",
                    item.action_id
                ),
            ));
        }
    }
    Ok(())
}

/// Decides every item in one write job, in order; answers one outcome per
/// item, in order. Only a server failure (the database) fails the batch.
pub async fn decide_many(
    s: &Services,
    user: UserCaller,
    items: Vec<BatchItem>,
) -> Result<Vec<ItemOutcome>> {
    check(&items)?;
    let svc = s.clone();
    let now = s.clock.now();
    s.write(move |c, fx| {
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let (action_id, req) = item.split();
            let result = in_savepoint(c, fx, |c, fx| {
                check_reason(&req.reason)?;
                decide_in(c, fx, &svc, &user, &action_id, req, now)
            })?;
            out.push(ItemOutcome { action_id, result });
        }
        Ok(out)
    })
    .await
}

/// Runs one item in its own savepoint with its own effects: a refusal undoes
/// its writes and declares nothing; a server error fails the whole job.
fn in_savepoint(
    c: &Connection,
    fx: &mut Effects,
    f: impl FnOnce(&Connection, &mut Effects) -> Result<ActionRecord>,
) -> Result<Result<ActionRecord>> {
    c.prepare_cached("SAVEPOINT batch_item")?.execute([])?;
    let mut mine = Effects::default();
    let r = f(c, &mut mine);
    match &r {
        Ok(_) => fx.absorb(mine),
        Err(_) => {
            c.prepare_cached("ROLLBACK TO batch_item")?.execute([])?;
        }
    }
    c.prepare_cached("RELEASE batch_item")?.execute([])?;
    match r {
        Err(e) if !e.code.status().is_client_error() => Err(e),
        r => Ok(r),
    }
}

/// What the dashboard asks before deciding a batch with `option_id`, read
/// once over the picked `ids` the person may see: the label of the option
/// where it needs a reason (`reason_required`), and where it is destructive.
#[derive(Debug, Default)]
pub struct PickedOption {
    pub needs_reason: Option<String>,
    pub destructive: Option<String>,
}

pub async fn picked_option(
    s: &Services,
    user: &UserCaller,
    ids: Vec<String>,
    option_id: String,
) -> Result<PickedOption> {
    let user = user.clone();
    s.db.read(move |c| {
        let mut out = PickedOption::default();
        for id in ids {
            let Some(a) = crate::store::actions::get(c, &id)? else {
                continue;
            };
            if access_now(c, &a, &user)?.is_none() {
                continue;
            }
            let Some(o) = a.spec.option(&option_id) else {
                continue;
            };
            if o.reason_required && out.needs_reason.is_none() {
                out.needs_reason = Some(o.label.clone());
            }
            if o.style.as_deref() == Some("destructive") && out.destructive.is_none() {
                out.destructive = Some(o.label.clone());
            }
            if out.needs_reason.is_some() && out.destructive.is_some() {
                break;
            }
        }
        Ok(out)
    })
    .await
}
