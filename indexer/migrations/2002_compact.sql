-- A compact index: raw logs, hashes and the events' task ids as bytes
-- (BYTEA: PostgreSQL's byte string; SQLite stores any declared type's
-- bytes as they are), and each task's checked transitions in its own row
-- instead of a table of their own. Everything here is derived from the
-- chain, so the tables start empty and the cursor is gone: the next pass
-- indexes again from the deploy block. The reorg journal is kept.

DROP TABLE ix_transitions;
DROP TABLE ix_tasks;
DROP TABLE ix_agents;
DROP TABLE ix_events;
DROP TABLE ix_blocks;
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

-- Hashes of recent blocks, to notice a reorganisation.
CREATE TABLE ix_blocks (
    number      BIGINT PRIMARY KEY,
    hash        TEXT NOT NULL
);

-- Each task as its events fold; `history` is its transitions, each checked
-- against the escrow's state machine, as a JSON array of
-- [block, log_index, event, from, to, valid (0/1), problem].
CREATE TABLE ix_tasks (
    task_id         TEXT PRIMARY KEY,
    plan_id         TEXT NOT NULL,
    parent_id       TEXT NOT NULL,
    funder          TEXT NOT NULL,
    client          TEXT NOT NULL,
    executor        TEXT NOT NULL,
    amount          TEXT NOT NULL,
    amount_units    BIGINT NOT NULL,
    status          TEXT NOT NULL,
    spec_uri        TEXT NOT NULL,
    result_uri      TEXT,
    capability      TEXT,
    spec            TEXT,
    envelope_error  TEXT,
    flagged         TEXT,
    created_block   BIGINT NOT NULL,
    updated_block   BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    accepted_at     BIGINT,
    completed_at    BIGINT,
    settled_at      BIGINT,
    disputed        BIGINT NOT NULL,
    executor_paid   BIGINT NOT NULL,
    history         TEXT NOT NULL
);
CREATE INDEX ix_tasks_plan ON ix_tasks (plan_id);
CREATE INDEX ix_tasks_parent ON ix_tasks (parent_id);
CREATE INDEX ix_tasks_executor ON ix_tasks (executor);

-- Registry state per agent.
CREATE TABLE ix_agents (
    agent           TEXT PRIMARY KEY,
    status          TEXT NOT NULL,
    metadata_uri    TEXT NOT NULL,
    offers          TEXT NOT NULL,
    registered_block BIGINT NOT NULL
);
