-- hds schema v38: the inbox's "needs my vote" (scope=needs_my_vote; guide:
-- "GET /v1/me/actions"). Only a `restricted` Action can carry an approval
-- policy, and only an open one awaits a vote, so the list walks this partial
-- index of a workspace's open restricted Actions in the open list's order
-- (priority, then age), testing the policy, the listing and the person's
-- vote on each. A create of a `workspace` Action (most) writes nothing here.
CREATE INDEX actions_restricted_open
    ON actions(workspace_id, environment, priority_rank, created_at)
    WHERE status = 'open' AND visibility = 'restricted';
