//! Embedded, numbered migrations (`migrations/NNNN_*.sql`), applied at start in
//! a transaction. A database from a newer hds is refused rather than guessed at.

use rusqlite::{Connection, Transaction};
use rusqlite_migration::{HookResult, M, Migrations};

fn migrations() -> Migrations<'static> {
    Migrations::new(steps())
}

/// How many migrations this build knows: the `user_version` of a database
/// it has brought up to date.
fn known_versions() -> i64 {
    steps().len() as i64
}

fn steps() -> Vec<M<'static>> {
    vec![
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
        M::up(include_str!("../../migrations/0018_plainer_writes.sql")),
        M::up(include_str!("../../migrations/0019_rebuilt_answers.sql")),
        M::up(include_str!("../../migrations/0020_delivery_bodies.sql")),
        M::up(include_str!("../../migrations/0021_claims_in_memory.sql")),
        M::up(include_str!("../../migrations/0022_lighter_keys.sql")),
        M::up(include_str!("../../migrations/0023_votes_by_version.sql")),
        M::up(include_str!("../../migrations/0024_stripe_event_order.sql")),
        M::up_with_hook(
            include_str!("../../migrations/0025_hashed_sessions.sql"),
            hash_session_ids,
        ),
        M::up(include_str!("../../migrations/0026_mailed_invitations.sql")),
        M::up(include_str!(
            "../../migrations/0027_context_request_keys.sql"
        )),
        M::up(include_str!(
            "../../migrations/0028_withdrawn_approvals.sql"
        )),
        M::up(include_str!("../../migrations/0029_export_indexes.sql")),
        M::up(include_str!("../../migrations/0030_source_runs.sql")),
        M::up(include_str!("../../migrations/0031_unsubscribe_key.sql")),
        M::up(include_str!("../../migrations/0032_source_closed.sql")),
        M::up(include_str!(
            "../../migrations/0033_unsubscribable_mail.sql"
        )),
        M::up(include_str!("../../migrations/0034_failed_deliveries.sql")),
        M::up(include_str!("../../migrations/0035_former_members.sql")),
        M::up(include_str!("../../migrations/0036_muted_broadcasts.sql")),
        M::up(include_str!(
            "../../migrations/0037_mailed_signin_links.sql"
        )),
        M::up(include_str!("../../migrations/0038_restricted_open.sql")),
        M::up(include_str!("../../migrations/0039_comment_edits.sql")),
        M::up(include_str!(
            "../../migrations/0040_comment_work_exported.sql"
        )),
        M::up(include_str!("../../migrations/0041_stripe_ended.sql")),
        M::up(include_str!(
            "../../migrations/0042_analytics_approve_choice.sql"
        )),
        M::up(include_str!("../../migrations/0043_stripe_checkouts.sql")),
        M::up(include_str!("../../migrations/0044_signin_requests.sql")),
        M::up(include_str!(
            "../../migrations/0045_stripe_checkout_intents.sql"
        )),
        M::up(include_str!(
            "../../migrations/0046_search_by_workspace.sql"
        )),
        M::up(include_str!("../../migrations/0047_ready_probe.sql")),
        M::up(include_str!(
            "../../migrations/0048_analytics_exact_bounds.sql"
        )),
    ]
}

/// 0025: each stored browser session is keyed by the hash of its cookie
/// value from now on (store::sessions), so the rows already there are too.
fn hash_session_ids(tx: &Transaction) -> HookResult {
    let ids: Vec<String> = tx
        .prepare("SELECT id FROM web_sessions")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut update = tx.prepare("UPDATE web_sessions SET id = ?1 WHERE id = ?2")?;
    for id in ids {
        update.execute([crate::store::sessions::stored_id(&id), id])?;
    }
    Ok(())
}

/// The schema version this build writes (`PRAGMA user_version` once every
/// migration has run), found by migrating an empty database in memory.
pub fn latest_version() -> anyhow::Result<i64> {
    let mut c = Connection::open_in_memory()?;
    apply(&mut c)?;
    Ok(c.query_row("PRAGMA user_version", [], |r| r.get(0))?)
}

/// Refuses, before anything is written to it (not even its journal mode),
/// a database a newer hds has migrated.
pub fn refuse_newer(conn: &Connection) -> anyhow::Result<()> {
    let theirs: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let ours = known_versions();
    if theirs > ours {
        anyhow::bail!(
            "the database was written by a newer hds (schema {theirs}; this hds knows up to {ours}): run that version or newer on it, or restore a backup made by this one; nothing was changed"
        );
    }
    Ok(())
}

pub fn apply(conn: &mut Connection) -> anyhow::Result<()> {
    refuse_newer(conn)?;
    migrations()
        .to_latest(conn)
        .map_err(|e| anyhow::anyhow!("database migration failed: {e}"))
}

#[cfg(test)]
mod tests {
    use rusqlite::{Connection, Row};

    /// Every row `sql` answers, mapped by `f`.
    fn all<T>(c: &Connection, sql: &str, f: impl FnMut(&Row) -> rusqlite::Result<T>) -> Vec<T> {
        c.prepare(sql)
            .unwrap()
            .query_map([], f)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn migrations_are_valid() {
        super::migrations().validate().unwrap();
    }

    /// 0018 on a database of schema 17: the e-mail assignee moves to the
    /// plain column, lower-cased as the generated one was; the history keeps
    /// its rows and ids, and new ids follow them.
    #[test]
    fn migration_18_keeps_assignees_and_history() {
        let mut c = Connection::open_in_memory().unwrap();
        super::migrations().to_version(&mut c, 17).unwrap();
        // Rows alone, without the workspace and Source they name.
        c.execute_batch(
            r#"PRAGMA foreign_keys = OFF;
               INSERT INTO actions(id, workspace_id, source_id, environment, status, priority, priority_rank,
                   title, action_version, fingerprint, spec, visibility, created_at, updated_at)
               VALUES ('act_1', 'ws_1', 'src_1', 'live', 'open', 'normal', 1, 't', 1, 'f',
                       '{"title":"t","assignee_email":"Ann@Example.COM"}', 'workspace', '2026', '2026'),
                      ('act_2', 'ws_1', 'src_1', 'live', 'open', 'normal', 1, 't', 1, 'f',
                       '{"title":"t"}', 'workspace', '2026', '2026');
               INSERT INTO action_events(action_id, kind, actor_type, action_version, created_at)
               VALUES ('act_1', 'created', 'source', 1, '2026'), ('act_2', 'created', 'source', 1, '2026');"#,
        )
        .unwrap();
        super::apply(&mut c).unwrap();
        let emails: Vec<Option<String>> =
            all(&c, "SELECT assignee_email FROM actions ORDER BY id", |r| {
                r.get(0)
            });
        assert_eq!(emails, [Some("ann@example.com".to_string()), None]);
        c.execute(
            "INSERT INTO action_events(action_id, kind, actor_type, action_version, created_at)
             VALUES ('act_1', 'commented', 'user', 1, '2026')",
            [],
        )
        .unwrap();
        let ids: Vec<(i64, String)> = all(
            &c,
            "SELECT id, action_id FROM action_events ORDER BY id",
            |r| Ok((r.get(0)?, r.get(1)?)),
        );
        assert_eq!(
            ids,
            [
                (1, "act_1".into()),
                (2, "act_2".into()),
                (3, "act_1".into())
            ]
        );
        let sequenced: i64 = c
            .query_row(
                "SELECT count(*) FROM sqlite_sequence WHERE name = 'action_events'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(sequenced, 0);
    }

    /// 0037 on a database of schema 36: every mail keeps every column (a
    /// sent invitation without its bodies, a pending digest with them), the
    /// three indexes are back, and a `signin` mail is now accepted.
    #[test]
    fn migration_37_keeps_mail() {
        let mut c = Connection::open_in_memory().unwrap();
        super::migrations().to_version(&mut c, 36).unwrap();
        let cols = "id, workspace_id, user_id, to_addr, kind, subject, text_body, html_body, secret, \
                    status, attempts, last_error, last_attempt_at, sent_at, created_at, unsubscribable";
        c.execute_batch(&format!(
            r#"PRAGMA foreign_keys = OFF;
               INSERT INTO mail_outbox({cols}) VALUES
                 ('mail_1', 'ws_1', NULL, 'ana@example.com', 'invitation', 'Join', NULL, NULL, 1,
                  'sent', 1, NULL, '2026-01', '2026-01', '2026-00', 0),
                 ('mail_2', 'ws_1', 'usr_1', 'bo@example.com', 'digest', 'Digest', 'text', '<p>', 0,
                  'pending', 2, 'SMTP 451', '2026-02', NULL, '2026-01', 1);"#
        ))
        .unwrap();
        let before: Vec<String> = all(
            &c,
            &format!("SELECT json_array({cols}) FROM mail_outbox ORDER BY id"),
            |r| r.get(0),
        );
        super::apply(&mut c).unwrap();
        let after: Vec<String> = all(
            &c,
            &format!("SELECT json_array({cols}) FROM mail_outbox ORDER BY id"),
            |r| r.get(0),
        );
        assert_eq!(after, before);
        let indexes: Vec<String> = all(
            &c,
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'mail_outbox' AND sql IS NOT NULL ORDER BY name",
            |r| r.get(0),
        );
        // (0037 made `mail_outbox_signin`; 0044 drops it again.)
        assert_eq!(
            indexes,
            [
                "mail_outbox_by_status",
                "mail_outbox_by_workspace",
                "mail_outbox_settled",
            ]
        );
        c.execute(
            "INSERT INTO mail_outbox(id, user_id, to_addr, kind, subject, status, created_at)
             VALUES ('mail_3', 'usr_1', 'ana@example.com', 'signin', 'Sign in', 'pending', '2026-03')",
            [],
        )
        .unwrap();
        let fk: i64 = c
            .query_row(
                "SELECT count(*) FROM pragma_foreign_key_list('mail_outbox')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(
            fk, 2,
            "workspace_id and user_id still reference their tables"
        );
    }

    /// 0019 on a database of schema 18: stored responses keep their text;
    /// a new row has its text or an Action's id, exactly one of them.
    #[test]
    fn migration_19_keeps_stored_responses() {
        let mut c = Connection::open_in_memory().unwrap();
        super::migrations().to_version(&mut c, 18).unwrap();
        c.execute_batch(
            r#"INSERT INTO idempotency_keys(source_id, environment, key, request_hash, status_code, response, created_at)
               VALUES ('src_1', 'live', 'k1', 'h', 201, '{"data":{}}', '2026');"#,
        )
        .unwrap();
        super::apply(&mut c).unwrap();
        let row: (String, Option<String>, Option<String>) = c
            .query_row(
                "SELECT key, response, action_id FROM idempotency_keys",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(row, ("k1".into(), Some(r#"{"data":{}}"#.into()), None));
        c.execute_batch("PRAGMA foreign_keys = OFF;").unwrap();
        for (response, action_id) in [(None, None), (Some("{}"), Some("act_1"))] {
            let refused = c.execute(
                "INSERT INTO idempotency_keys(source_id, environment, key, request_hash, status_code, response, action_id, created_at)
                 VALUES ('src_1', 'live', 'k2', 'h', 201, ?1, ?2, '2026')",
                rusqlite::params![response, action_id],
            );
            assert!(refused.is_err(), "{response:?} {action_id:?}");
        }
    }

    /// 0020 on a database of schema 19: each delivery keeps its body, now in
    /// `webhook_bodies`, and its attempts; the body column is gone.
    #[test]
    fn migration_20_keeps_bodies() {
        let mut c = Connection::open_in_memory().unwrap();
        super::migrations().to_version(&mut c, 19).unwrap();
        c.execute_batch(
            r#"PRAGMA foreign_keys = OFF;
               INSERT INTO webhook_deliveries(id, workspace_id, source_id, action_id, environment,
                   event_type, url, body, status, created_at, updated_at)
               VALUES ('msg_1', 'ws_1', 'src_1', 'act_1', 'live', 'action.resolved', 'https://a.example/',
                       '{"type":"action.resolved"}', 'delivered', '2026', '2026'),
                      ('msg_2', 'ws_1', 'src_1', 'act_2', 'live', 'action.expired', 'https://a.example/',
                       '{"type":"action.expired"}', 'pending', '2026', '2026');
               INSERT INTO webhook_attempts(delivery_id, attempt, started_at, status_code, duration_ms)
               VALUES ('msg_1', 1, '2026', 200, 3);
               PRAGMA foreign_keys = ON;"#,
        )
        .unwrap();
        // As the server runs it: foreign keys on.
        super::apply(&mut c).unwrap();
        let rows: Vec<(String, String)> = all(
            &c,
            "SELECT d.id, b.body FROM webhook_deliveries d
             JOIN webhook_bodies b ON b.id = d.body_id ORDER BY d.id",
            |r| Ok((r.get(0)?, r.get(1)?)),
        );
        assert_eq!(
            rows,
            [
                ("msg_1".into(), r#"{"type":"action.resolved"}"#.into()),
                ("msg_2".into(), r#"{"type":"action.expired"}"#.into())
            ]
        );
        let attempts: i64 = c
            .query_row("SELECT count(*) FROM webhook_attempts", [], |r| r.get(0))
            .unwrap();
        assert_eq!(attempts, 1);
        assert!(
            c.prepare("SELECT body FROM webhook_deliveries").is_err(),
            "the body column is dropped"
        );
    }
    /// 0021 on a database of schema 20: jobs a stopped process had claimed
    /// are due again, with the rest, in the order they were due; the claim
    /// column is gone.
    #[test]
    fn migration_21_frees_claimed_jobs() {
        let mut c = Connection::open_in_memory().unwrap();
        super::migrations().to_version(&mut c, 20).unwrap();
        c.execute_batch(
            r#"INSERT INTO jobs(kind, subject, run_at, claimed_at, created_at)
               VALUES ('webhook', 'msg_1', '2026-11-23T10:00:01.000Z', '2026-11-23T10:00:02.000Z', '2026'),
                      ('webhook', 'msg_2', '2026-11-23T10:00:00.000Z', NULL, '2026'),
                      ('email', 'mail_1', '2026-11-23T10:00:00.000Z', '2026-11-23T10:00:02.000Z', '2026');"#,
        )
        .unwrap();
        super::apply(&mut c).unwrap();
        let now = "2026-11-23T10:01:00.000Z";
        let subjects = |kind| {
            crate::store::jobs::due(&c, kind, now, 10, "[]")
                .unwrap()
                .into_iter()
                .map(|j| j.subject)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            subjects(crate::store::jobs::Kind::Webhook),
            ["msg_2", "msg_1"]
        );
        assert_eq!(subjects(crate::store::jobs::Kind::Email), ["mail_1"]);
        let columns: Vec<String> = all(&c, "SELECT name FROM pragma_table_info('jobs')", |r| {
            r.get(0)
        });
        assert!(!columns.iter().any(|n| n == "claimed_at"), "{columns:?}");
    }

    /// 0022 on a database of schema 21: an Action whose create answer is
    /// rebuilt from it keeps that key; the time and Action indexes are gone.
    #[test]
    fn migration_22_gives_each_rebuilt_answer_its_key() {
        let mut c = Connection::open_in_memory().unwrap();
        super::migrations().to_version(&mut c, 21).unwrap();
        c.execute_batch(
            r#"PRAGMA foreign_keys = OFF;
               INSERT INTO actions(id, workspace_id, source_id, environment, status, priority, priority_rank,
                   title, action_version, fingerprint, spec, visibility, created_at, updated_at)
               VALUES ('act_1', 'ws_1', 'src_1', 'live', 'open', 'normal', 1, 't', 1, 'f', '{"title":"t"}', 'workspace', '2026', '2026'),
                      ('act_2', 'ws_1', 'src_1', 'live', 'open', 'normal', 1, 't', 1, 'f', '{"title":"t"}', 'workspace', '2026', '2026'),
                      ('act_3', 'ws_1', 'src_1', 'live', 'open', 'normal', 1, 't', 1, 'f', '{"title":"t"}', 'workspace', '2026', '2026');
               INSERT INTO idempotency_keys(source_id, environment, key, request_hash, status_code, response, action_id, created_at)
               VALUES ('src_1', 'live', 'k1', 'h', 201, NULL, 'act_1', '2026'),
                      ('src_1', 'live', 'k2', 'h', 201, '{"data":{}}', NULL, '2026');
               PRAGMA foreign_keys = ON;"#,
        )
        .unwrap();
        super::apply(&mut c).unwrap();
        let keys: Vec<(String, Option<String>)> =
            all(&c, "SELECT id, answer_key FROM actions ORDER BY id", |r| {
                Ok((r.get(0)?, r.get(1)?))
            });
        assert_eq!(
            keys,
            [
                ("act_1".into(), Some("k1".into())),
                ("act_2".into(), None),
                ("act_3".into(), None)
            ]
        );
        let indexes: Vec<String> = all(
            &c,
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'idempotency_keys'",
            |r| r.get(0),
        );
        assert_eq!(indexes, ["sqlite_autoindex_idempotency_keys_1"]);
    }

    /// 0025: the stored session rows are keyed by the hash of their cookie.
    #[test]
    fn migration_25_keeps_browser_sessions_under_the_hash_of_their_cookie() {
        let mut c = Connection::open_in_memory().unwrap();
        super::migrations().to_version(&mut c, 24).unwrap();
        c.execute_batch(
            "INSERT INTO web_sessions(id, data, expires_at) VALUES ('cookieA', x'7b7d', 10), ('cookieB', x'7b7d', 20);",
        )
        .unwrap();
        super::apply(&mut c).unwrap();
        let rows: Vec<(String, i64)> = all(
            &c,
            "SELECT id, expires_at FROM web_sessions ORDER BY expires_at",
            |r| Ok((r.get(0)?, r.get(1)?)),
        );
        assert_eq!(
            rows,
            [
                (crate::store::sessions::stored_id("cookieA"), 10),
                (crate::store::sessions::stored_id("cookieB"), 20)
            ]
        );
    }

    /// 0028 on a database of schema 27: an approval on an open Action by
    /// someone who may not vote there now (gone, or a viewer) is withdrawn,
    /// as the build before did not count it; a member's approval, a
    /// rejection and an approval on a closed Action are left as they were.
    #[test]
    fn migration_28_withdraws_the_approvals_that_no_longer_counted() {
        let mut c = Connection::open_in_memory().unwrap();
        super::migrations().to_version(&mut c, 27).unwrap();
        c.execute_batch(
            r#"PRAGMA foreign_keys = OFF;
               INSERT INTO actions(id, workspace_id, source_id, environment, status, priority, priority_rank,
                   title, action_version, fingerprint, spec, visibility, created_at, updated_at)
               VALUES ('act_open', 'ws_1', 'src_1', 'live', 'open', 'normal', 1, 't', 1, 'f', '{"title":"t"}', 'restricted', '2026', '2026'),
                      ('act_done', 'ws_1', 'src_1', 'live', 'resolved', 'normal', 1, 't', 1, 'f', '{"title":"t"}', 'restricted', '2026', '2026');
               INSERT INTO workspaces(id, name, kind, created_at) VALUES ('ws_1', 'W', 'team', '2026');
               INSERT INTO memberships(workspace_id, user_id, role, created_at)
               VALUES ('ws_1', 'usr_member', 'reviewer', '2026'), ('ws_1', 'usr_viewer', 'viewer', '2026');
               INSERT INTO action_votes(action_id, action_version, user_id, vote, created_at)
               VALUES ('act_open', 1, 'usr_member', 'approve', '2026-01'),
                      ('act_open', 1, 'usr_viewer', 'approve', '2026-02'),
                      ('act_open', 1, 'usr_gone', 'approve', '2026-03'),
                      ('act_open', 1, 'usr_gone2', 'reject', '2026-04'),
                      ('act_done', 1, 'usr_gone', 'approve', '2026-05');
               PRAGMA foreign_keys = ON;"#,
        )
        .unwrap();
        super::apply(&mut c).unwrap();
        let withdrawn: Vec<(String, String)> = all(
            &c,
            "SELECT action_id, user_id FROM action_votes WHERE withdrawn_at IS NOT NULL ORDER BY created_at",
            |r| Ok((r.get(0)?, r.get(1)?)),
        );
        assert_eq!(
            withdrawn,
            [
                ("act_open".to_owned(), "usr_viewer".to_owned()),
                ("act_open".to_owned(), "usr_gone".to_owned())
            ]
        );
    }

    /// 0035 on a database of schema 34: the workspaces a person left a trace
    /// in (an accepted invitation, a notice, a comment, an act on an Action)
    /// and is no longer a member of are remembered as left; a current
    /// membership is not, nor an account deleted already.
    #[test]
    fn migration_35_remembers_the_workspaces_people_left() {
        let mut c = Connection::open_in_memory().unwrap();
        super::migrations().to_version(&mut c, 34).unwrap();
        c.execute_batch(
            r#"PRAGMA foreign_keys = OFF;
               INSERT INTO actions(id, workspace_id, source_id, environment, status, priority, priority_rank,
                   title, action_version, fingerprint, spec, visibility, created_at, updated_at)
               VALUES ('act_1', 'ws_b', 'src_1', 'live', 'open', 'normal', 1, 't', 1, 'f', '{"title":"t"}', 'workspace', '2026', '2026');
               INSERT INTO workspaces(id, name, kind, created_at)
               VALUES ('ws_a', 'A', 'team', '2026'), ('ws_b', 'B', 'team', '2026'), ('ws_c', 'C', 'team', '2026');
               INSERT INTO memberships(workspace_id, user_id, role, created_at)
               VALUES ('ws_a', 'usr_stays', 'reviewer', '2026');
               INSERT INTO invitations(id, workspace_id, email, role, token_hash, created_at, expires_at, accepted_at, accepted_by)
               VALUES ('inv_1', 'ws_a', 'x@example.com', 'reviewer', 'h1', '2026', '2027', '2026-02', 'usr_left'),
                      ('inv_2', 'ws_a', 'y@example.com', 'reviewer', 'h2', '2026', '2027', '2026-02', 'usr_stays');
               INSERT INTO notifications(user_id, id, workspace_id, kind, title, body, path, created_at)
               VALUES ('usr_noticed', 'ntf_1', 'ws_c', 'action.new', 't', 'b', '/app', '2026');
               INSERT INTO users(id, email, created_at)
               VALUES ('usr_deleted', 'deleted-usr_deleted@invalid', '2026');
               INSERT INTO action_comments(id, action_id, author_user_id, body, created_at)
               VALUES ('cmt_1', 'act_1', 'usr_commented', 'hi', '2026'),
                      ('cmt_2', 'act_1', 'usr_deleted', 'bye', '2026');
               INSERT INTO action_events(action_id, kind, actor_type, actor_id, action_version, created_at)
               VALUES ('act_1', 'claimed', 'user', 'usr_acted', 1, '2026'),
                      ('act_1', 'created', 'source', 'src_1', 1, '2026');
               PRAGMA foreign_keys = ON;"#,
        )
        .unwrap();
        super::apply(&mut c).unwrap();
        let left: Vec<(String, String)> = all(
            &c,
            "SELECT user_id, workspace_id FROM former_members ORDER BY user_id",
            |r| Ok((r.get(0)?, r.get(1)?)),
        );
        let pair = |u: &str, w: &str| (u.to_owned(), w.to_owned());
        assert_eq!(
            left,
            [
                pair("usr_acted", "ws_b"),
                pair("usr_commented", "ws_b"),
                pair("usr_left", "ws_a"),
                pair("usr_noticed", "ws_c"),
            ]
        );
    }

    /// 0023 on a database of schema 22: each vote takes the version its
    /// `vote_cast` event was recorded with, or the Action's current one
    /// without it; a reviewer may then vote once per version.
    #[test]
    fn migration_23_gives_each_vote_its_version() {
        let mut c = Connection::open_in_memory().unwrap();
        super::migrations().to_version(&mut c, 22).unwrap();
        c.execute_batch(
            r#"PRAGMA foreign_keys = OFF;
               INSERT INTO actions(id, workspace_id, source_id, environment, status, priority, priority_rank,
                   title, action_version, fingerprint, spec, visibility, created_at, updated_at)
               VALUES ('act_1', 'ws_1', 'src_1', 'live', 'open', 'normal', 1, 't', 2, 'f', '{"title":"t"}', 'restricted', '2026', '2026');
               INSERT INTO users(id, email, created_at)
               VALUES ('usr_a', 'a@x', '2026'), ('usr_b', 'b@x', '2026'), ('usr_c', 'c@x', '2026');
               INSERT INTO action_events(action_id, kind, actor_type, actor_id, action_version, created_at)
               VALUES ('act_1', 'vote_cast', 'user', 'usr_a', 1, '2026'),
                      ('act_1', 'updated', 'source', 'src_1', 2, '2026'),
                      ('act_1', 'vote_cast', 'user', 'usr_b', 2, '2026');
               INSERT INTO action_votes(action_id, user_id, vote, reason, created_at)
               VALUES ('act_1', 'usr_a', 'approve', 'fine', '2026-01'),
                      ('act_1', 'usr_b', 'approve', NULL, '2026-02'),
                      ('act_1', 'usr_c', 'reject', NULL, '2026-03');
               PRAGMA foreign_keys = ON;"#,
        )
        .unwrap();
        super::apply(&mut c).unwrap();
        let votes: Vec<(String, i64, String, Option<String>)> = all(
            &c,
            "SELECT user_id, action_version, vote, reason FROM action_votes ORDER BY user_id",
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        );
        assert_eq!(
            votes,
            [
                ("usr_a".into(), 1, "approve".into(), Some("fine".into())),
                ("usr_b".into(), 2, "approve".into(), None),
                ("usr_c".into(), 2, "reject".into(), None),
            ]
        );
        assert_eq!(
            crate::store::votes::all(&c, "act_1", 2).unwrap(),
            [
                ("usr_b".to_owned(), "approve".to_owned()),
                ("usr_c".to_owned(), "reject".to_owned())
            ]
        );
        let indexes: Vec<String> = all(
            &c,
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'action_votes' ORDER BY name",
            |r| r.get(0),
        );
        assert_eq!(
            indexes,
            ["action_votes_by_user", "sqlite_autoindex_action_votes_1"]
        );
    }

    /// 0024 on a database of schema 23: a workspace with a Stripe
    /// subscription follows it, as live; one without follows none.
    #[test]
    fn migration_24_keeps_each_workspace_on_its_subscription() {
        let mut c = Connection::open_in_memory().unwrap();
        super::migrations().to_version(&mut c, 23).unwrap();
        c.execute_batch(
            r#"INSERT INTO workspaces(id, name, kind, created_at, plan_id, stripe_customer_id, stripe_subscription_id)
               VALUES ('ws_paid', 'a', 'team', '2026', 'team', 'cus_1', 'sub_1'),
                      ('ws_free', 'b', 'team', '2026', 'self_hosted', NULL, NULL);"#,
        )
        .unwrap();
        super::apply(&mut c).unwrap();
        let state = crate::store::billing::by_stripe_customer(&c, "cus_1")
            .unwrap()
            .unwrap();
        assert_eq!(state.subscription_id.as_deref(), Some("sub_1"));
        assert!(state.live);
        assert_eq!((state.subscription_created, state.event_at), (None, None));
        let live: Vec<(String, bool)> = all(
            &c,
            "SELECT id, stripe_subscription_live FROM workspaces ORDER BY id",
            |r| Ok((r.get(0)?, r.get(1)?)),
        );
        assert_eq!(live, [("ws_free".into(), false), ("ws_paid".into(), true)]);
    }

    /// 0046 indexes each Action's workspace beside its title: on a database
    /// that already holds Actions, the rebuilt index finds each by title
    /// within its workspace, passes FTS5's own check, and a later title
    /// change is re-indexed under the same workspace.
    #[test]
    fn migration_46_indexes_existing_titles_by_workspace() {
        let mut c = Connection::open_in_memory().unwrap();
        super::migrations().to_version(&mut c, 45).unwrap();
        c.execute_batch(
            "PRAGMA foreign_keys = OFF;
             INSERT INTO actions(id, workspace_id, source_id, environment, status, priority, priority_rank,
                 title, action_version, fingerprint, spec, visibility, created_at, updated_at)
             VALUES
               ('act_1', 'ws_01KAAAAAAAAAAAAAAAAAAAAAAA', 'src_1', 'live', 'open', 'normal', 2,
                'Deploy the API', 1, 'sha256:x', '{}', 'workspace', '2026-01', '2026-01'),
               ('act_2', 'ws_01KBBBBBBBBBBBBBBBBBBBBBBB', 'src_2', 'live', 'open', 'normal', 2,
                'Deploy the site', 1, 'sha256:x', '{}', 'workspace', '2026-01', '2026-01'),
               ('act_3', 'ws_01KAAAAAAAAAAAAAAAAAAAAAAA', 'src_1', 'live', 'open', 'normal', 2,
                'Rotate keys v1.0', 1, 'sha256:x', '{}', 'workspace', '2026-01', '2026-01');",
        )
        .unwrap();
        super::apply(&mut c).unwrap();
        let found = |q: &str| -> Vec<String> {
            let mut st = c
                .prepare(
                    "SELECT a.id FROM actions_fts f JOIN actions a ON a.rowid = f.rowid
                      WHERE actions_fts MATCH ?1 ORDER BY a.id",
                )
                .unwrap();
            st.query_map([q], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        let a = "fts_ws : \"\u{E000}01KAAAAAAAAAAAAAAAAAAAAAAA\"";
        assert_eq!(found(&format!("{a} AND title : (\"deploy\"*)")), ["act_1"]);
        assert_eq!(found("title : (\"deploy\"*)"), ["act_1", "act_2"]);
        // A digit prefix reaches titles only, not the workspaces' ULIDs.
        assert_eq!(found("title : (\"0\"*)"), ["act_3"]);
        assert_eq!(found("title : (\"01k\"*)"), Vec::<String>::new());
        c.execute(
            "INSERT INTO actions_fts(actions_fts, rank) VALUES ('integrity-check', 1)",
            [],
        )
        .unwrap();
        c.execute(
            "UPDATE actions SET title = 'Ship the API' WHERE id = 'act_1'",
            [],
        )
        .unwrap();
        assert_eq!(found(&format!("{a} AND title : (\"ship\"*)")), ["act_1"]);
        assert_eq!(
            found(&format!("{a} AND title : (\"deploy\"*)")),
            Vec::<String>::new()
        );
        c.execute(
            "INSERT INTO actions_fts(actions_fts, rank) VALUES ('integrity-check', 1)",
            [],
        )
        .unwrap();
    }

    /// 0048 counts a decision time exactly on a bucket's bound in the bucket
    /// that bound closes: decisions the trigger of 47 put one bucket too
    /// high move down, others stay, and decisions after it land right.
    #[test]
    fn migration_48_counts_times_on_a_bound_in_their_bucket() {
        let mut c = Connection::open_in_memory().unwrap();
        super::migrations().to_version(&mut c, 47).unwrap();
        let create = |c: &Connection, id: &str, at: &str| {
            c.execute(
                "INSERT INTO actions(id, workspace_id, source_id, environment, status, priority,
                     priority_rank, title, action_version, fingerprint, spec, visibility,
                     created_at, updated_at)
                 VALUES (?1, 'ws_1', 'src_1', 'live', 'open', 'normal', 2, 't', 1, 'sha256:x',
                         '{}', 'workspace', ?2, ?2)",
                [id, at],
            )
            .unwrap();
        };
        let decide = |c: &Connection, id: &str, at: &str| {
            c.execute(
                r#"UPDATE actions SET status = 'resolved', closed_at = ?2, updated_at = ?2,
                       resolution = '{"option_id":"a","decided_by":{"type":"user","id":"usr_1"}}'
                   WHERE id = ?1"#,
                [id, at],
            )
            .unwrap();
        };
        let buckets = |c: &Connection| -> Vec<i64> {
            c.query_row(
                "SELECT h0, h1, h2, h3, h4, h5, h6, h7, h8, h9, h10, h11, h12, h13, h14
                   FROM analytics_daily",
                [],
                |r| (0..15).map(|i| r.get(i)).collect(),
            )
            .unwrap()
        };
        c.execute_batch("PRAGMA foreign_keys = OFF;").unwrap();
        // Exactly 2 h, exactly 30 min, and 100 s.
        create(&c, "act_1", "2026-11-25T12:00:00.000Z");
        decide(&c, "act_1", "2026-11-25T14:00:00.000Z");
        create(&c, "act_2", "2026-11-25T01:00:00.000Z");
        decide(&c, "act_2", "2026-11-25T01:30:00.000Z");
        create(&c, "act_3", "2026-11-25T12:00:00.000Z");
        decide(&c, "act_3", "2026-11-25T12:01:40.000Z");
        // Another at exactly 2 h, as if decided before v14 (counted in no
        // bucket): the move takes no more than the bucket above holds, so
        // the buckets still add up to `decided`.
        create(&c, "act_6", "2026-11-25T12:00:00.000Z");
        decide(&c, "act_6", "2026-11-25T14:00:00.000Z");
        c.execute_batch("UPDATE analytics_daily SET h9 = h9 - 1, decided = decided - 1")
            .unwrap();
        let before = buckets(&c);
        assert_eq!((before[3], before[7], before[9]), (1, 1, 1), "{before:?}");
        super::apply(&mut c).unwrap();
        let decided: i64 = c
            .query_row("SELECT decided FROM analytics_daily", [], |r| r.get(0))
            .unwrap();
        assert_eq!(buckets(&c).iter().sum::<i64>(), decided);
        let mut want = vec![0; 15];
        want[3] = 1; // 100 s: 1–2 min
        want[6] = 1; // 1800 s: 10–30 min
        want[8] = 1; // 7200 s: 1–2 h
        assert_eq!(buckets(&c), want);
        // Decided after the migration: exactly 1 h is in 30 min–1 h.
        create(&c, "act_4", "2026-11-25T12:00:00.000Z");
        decide(&c, "act_4", "2026-11-25T13:00:00.000Z");
        want[7] = 1;
        assert_eq!(buckets(&c), want);
        // A millisecond past 10 s: 10–30 s.
        create(&c, "act_5", "2026-11-25T12:00:00.000Z");
        decide(&c, "act_5", "2026-11-25T12:00:10.001Z");
        want[1] = 1;
        assert_eq!(buckets(&c), want);
    }
}
