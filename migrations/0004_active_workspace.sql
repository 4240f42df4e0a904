-- hds schema v4: the active workspace of each session or API token.
-- NULL means the oldest membership; POST /v1/workspaces/select sets it for the
-- one credential that asked, so two browsers of one person can look at two
-- workspaces. A workspace the person has left is ignored when read.
ALTER TABLE user_tokens ADD COLUMN workspace_id TEXT REFERENCES workspaces(id);
