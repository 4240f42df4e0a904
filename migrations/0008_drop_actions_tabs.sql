-- hds schema v8: actions_tabs (workspace_id, environment, status,
-- snoozed_until) is covered by actions_inbox since 0006 (same leading columns,
-- snoozed_until at its end), so the tab counts read that one; one index less
-- to maintain on every insert.
DROP INDEX actions_tabs;
