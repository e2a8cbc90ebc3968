-- Waits measured on chain time (the head's timestamp, seconds), never on
-- a replica's wall clock: when a paused run began waiting for a decision
-- (stamped at the runner's first look at the paused run, cleared by every
-- change of state), and when the runner first took each decision (a
-- decision taken again after an interruption resolves against the same
-- time, so a reassignment it sends carries the same deadline).
ALTER TABLE runs ADD COLUMN paused_block_time BIGINT;
ALTER TABLE decisions ADD COLUMN taken_block_time BIGINT;
