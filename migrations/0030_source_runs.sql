-- hds schema: a Source lists its own runs (GET /v1/source/runs, guide:
-- "Runs"), newest first, in its key's environment, with or without a
-- status, each by an index on the Source rather than a read of the
-- workspace's runs. Runs are written a few times in their life, so two
-- more indexes cost little.
CREATE INDEX runs_by_source ON runs(source_id, environment, id);
CREATE INDEX runs_by_source_status ON runs(source_id, environment, status, id);
