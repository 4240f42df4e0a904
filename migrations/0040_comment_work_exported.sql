-- hds schema v40: the account export lists the comments a person edited or
-- deleted (theirs, or others' as an owner or admin) with their other work
-- on Actions, read through the same partial index by person, now holding
-- those two kinds too.
DROP INDEX action_events_work_by_user;
CREATE INDEX action_events_work_by_user ON action_events(actor_id, id)
    WHERE actor_type = 'user'
      AND kind IN ('claimed', 'assigned', 'snoozed', 'comment_edited', 'comment_deleted');
