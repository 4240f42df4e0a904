-- hds schema: where a member stopped hearing of new Actions (the last
-- workspace-wide `action.new` notice when they switched the kind off, or
-- the policy let go of it), so that hearing of them again marks only the
-- notices made meanwhile read, not the unread ones from before. NULL while
-- they hear of them, and for those who switched it off before this column
-- (hearing again then marks every notice so far read, as before).
ALTER TABLE memberships ADD COLUMN ntf_muted_at INTEGER;
