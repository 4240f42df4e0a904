-- hds schema v23: a vote counts for the version it was cast on.
--
-- Votes were kept one per reviewer per Action, whatever version the
-- reviewer saw: after a material PATCH, votes cast on the earlier content
-- still counted toward the quorum, and the reviewer could not vote again.
-- A vote now carries the `action_version` it was bound to; the tally counts
-- the votes of the Action's current version only, and a reviewer votes
-- once per version. Earlier votes stay, as the history does.
--
-- The version of each existing vote is the one its `vote_cast` event was
-- recorded with (the binding the vote was checked against); a vote without
-- that event takes the Action's current version, as it counted before.
CREATE TABLE action_votes_v23 (
    action_id   TEXT NOT NULL REFERENCES actions(id),
    action_version INTEGER NOT NULL,
    user_id     TEXT NOT NULL REFERENCES users(id),
    vote        TEXT NOT NULL CHECK (vote IN ('approve', 'reject')),
    reason      TEXT,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (action_id, action_version, user_id)
) STRICT;
INSERT INTO action_votes_v23(action_id, action_version, user_id, vote, reason, created_at)
    SELECT v.action_id,
           coalesce(
               (SELECT e.action_version FROM action_events e
                 WHERE e.action_id = v.action_id AND e.kind = 'vote_cast'
                   AND e.actor_type = 'user' AND e.actor_id = v.user_id
                 ORDER BY e.id DESC LIMIT 1),
               (SELECT a.action_version FROM actions a WHERE a.id = v.action_id)),
           v.user_id, v.vote, v.reason, v.created_at
      FROM action_votes v;
DROP TABLE action_votes;
ALTER TABLE action_votes_v23 RENAME TO action_votes;
CREATE INDEX action_votes_by_user ON action_votes(user_id);
