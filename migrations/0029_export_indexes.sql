-- hds schema: what the account export reads by person (guide: "Account:
-- export and deletion"), each through an index on the person rather than a
-- scan of the instance: the control and context requests they made, and the
-- work they did on Actions (claims, assignments, snoozes). The last index
-- is partial: decisions, votes and comments have theirs, and Actions'
-- creation and closing (by Sources and the system) never enter it.
CREATE INDEX control_requests_by_person ON control_requests(requested_by, created_at);
CREATE INDEX context_requests_by_person ON context_requests(requested_by, created_at);
CREATE INDEX action_events_work_by_user ON action_events(actor_id, id)
    WHERE actor_type = 'user' AND kind IN ('claimed', 'assigned', 'snoozed');
