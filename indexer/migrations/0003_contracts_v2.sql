-- Contracts v2: `TaskCreated` carries the capability the escrow checked
-- against the registry, and the task gains its appeal ruling window, so logs
-- indexed under the old layout no longer decode. Everything here is derived
-- from the chain: the derived tables are emptied and the cursor is gone, so
-- the next pass indexes again from the deploy block. The reorg journal is
-- kept.

DELETE FROM ix_events;
DELETE FROM ix_tasks;
DELETE FROM ix_agents;
DELETE FROM ix_blocks;
DELETE FROM ix_cursor;
