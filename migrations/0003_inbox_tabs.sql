-- hds schema v3: the inbox's tab counts (open, snoozed, resolved, cancelled,
-- expired) read only this index, however much history the workspace holds.
CREATE INDEX actions_tabs ON actions(workspace_id, environment, status, snoozed_until);
