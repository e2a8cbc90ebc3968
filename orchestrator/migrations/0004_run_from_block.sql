-- The block a run was approved at: a restarted runner reads the escrow's
-- logs for the run's tasks from there, not from the deployment.
ALTER TABLE runs ADD COLUMN from_block BIGINT;
