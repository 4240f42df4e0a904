//! SQLite storage: one module per aggregate, plain sync functions over
//! `&Connection`. `Db` owns the connections and keeps blocking work off the
//! async runtime: reads on a small pool, writes through one group-committing
//! writer thread.

pub mod account;
pub mod actions;
pub mod analytics;
pub mod billing;
pub mod db;
pub mod deliveries;
pub mod events;
pub mod idempotency;
pub mod invitations;
pub mod jobs;
pub mod mail;
pub mod migrate;
pub mod notifications;
pub mod oidc;
pub mod receipts;
pub mod requests;
pub mod runs;
pub mod sessions;
pub mod signin;
pub mod sources;
pub mod users;
pub mod votes;
pub mod work;
pub mod workspaces;

pub use db::{Db, Durability};

/// Test support for the plan tests of every store module: the `EXPLAIN
/// QUERY PLAN` detail lines of `sql`, each parameter bound to NULL (the
/// planner picks an index by the shape of the statement, not the values).
#[cfg(test)]
pub(crate) fn query_plan(c: &rusqlite::Connection, sql: &str) -> Vec<String> {
    let mut st = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let nulls = vec![rusqlite::types::Value::Null; st.parameter_count()];
    st.query_map(rusqlite::params_from_iter(nulls), |r| r.get::<_, String>(3))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}
