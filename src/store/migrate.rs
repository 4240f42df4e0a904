//! Embedded, numbered migrations (`migrations/NNNN_*.sql`), applied at start in
//! a transaction. A database from a newer hds is refused rather than guessed at.

use rusqlite::Connection;
use rusqlite_migration::{M, Migrations};

fn migrations() -> Migrations<'static> {
    Migrations::new(vec![
        M::up(include_str!("../../migrations/0001_init.sql")),
        M::up(include_str!("../../migrations/0002_signin.sql")),
        M::up(include_str!("../../migrations/0003_inbox_tabs.sql")),
        M::up(include_str!("../../migrations/0004_active_workspace.sql")),
        M::up(include_str!("../../migrations/0005_invitations.sql")),
        M::up(include_str!("../../migrations/0006_inbox_search.sql")),
        M::up(include_str!("../../migrations/0007_action_work.sql")),
        M::up(include_str!("../../migrations/0008_drop_actions_tabs.sql")),
        M::up(include_str!("../../migrations/0009_snoozed_order.sql")),
        M::up(include_str!("../../migrations/0010_integrations.sql")),
        M::up(include_str!("../../migrations/0011_mail.sql")),
        M::up(include_str!("../../migrations/0012_notifications.sql")),
        M::up(include_str!("../../migrations/0013_runs.sql")),
        M::up(include_str!("../../migrations/0014_analytics_account.sql")),
        M::up(include_str!("../../migrations/0015_billing.sql")),
        M::up(include_str!(
            "../../migrations/0016_source_keys_by_source.sql"
        )),
        M::up(include_str!("../../migrations/0017_lighter_creates.sql")),
        M::up(include_str!(
            "../../migrations/0018_assignee_email_column.sql"
        )),
    ])
}

pub fn apply(conn: &mut Connection) -> anyhow::Result<()> {
    migrations()
        .to_latest(conn)
        .map_err(|e| anyhow::anyhow!("database migration failed: {e}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn migrations_are_valid() {
        super::migrations().validate().unwrap();
    }
}
