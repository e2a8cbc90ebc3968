-- A compact index: raw logs, hashes and the events' task ids as bytes
-- (BYTEA: PostgreSQL's byte string; SQLite keeps the bytes of any declared
-- type as they are), and each task's checked transitions in its own row
-- instead of a table of their own. Everything here is derived from the
-- chain, so the tables are emptied and the cursor is gone: the next pass
-- indexes again from the deploy block. The reorg journal is kept.

DROP TABLE ix_transitions;
DROP TABLE ix_events;
DELETE FROM ix_tasks;
DELETE FROM ix_agents;
DELETE FROM ix_blocks;
DELETE FROM ix_cursor;

-- Every TaskEscrow and AgentRegistry log, keyed by its position in the
-- chain. `raw` holds its content: the emitting address (20 bytes), the
-- number of topics (1 byte), the topics (32 bytes each), then the data.
-- `task_id` is the task's id as 32 big-endian bytes.
CREATE TABLE ix_events (
    block       BIGINT NOT NULL,
    log_index   BIGINT NOT NULL,
    block_hash  BYTEA NOT NULL,
    tx_hash     BYTEA NOT NULL,
    contract    TEXT NOT NULL,
    kind        TEXT NOT NULL,
    task_id     BYTEA,
    agent       TEXT,
    raw         BYTEA NOT NULL,
    PRIMARY KEY (block, log_index)
);
-- A task's events in chain order, read in task order by a derivation.
CREATE INDEX ix_events_task ON ix_events (task_id, block, log_index);
CREATE INDEX ix_events_agent ON ix_events (agent) WHERE agent IS NOT NULL;

-- A task's transitions, each checked against the escrow's state machine:
-- a JSON array of [block, log_index, event, from, to, valid (0/1), problem].
ALTER TABLE ix_tasks ADD COLUMN history TEXT NOT NULL DEFAULT '[]';
