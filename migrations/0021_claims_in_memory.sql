-- hds schema v21: a job's claim lives in the worker, not in its row.
--
-- One process owns the data directory and its one job worker knows which
-- jobs it is running; the claim column only repeated that, at the cost of a
-- write per attempt (the claim) on the single writer, and a release of
-- every claim at each start. The worker now reads due jobs on a reader,
-- skipping those it runs (src/workers/jobs.rs). Dropping the column frees
-- whatever a stopped process had claimed.
DROP INDEX jobs_due_by_kind;
ALTER TABLE jobs DROP COLUMN claimed_at;
-- the worker's queries: due jobs of a kind, oldest due first
CREATE INDEX jobs_due_by_kind ON jobs(kind, run_at, id);
