-- The indexer's tables (its history is kept under the component `indexer`,
-- apart from the other services sharing the database). TEXT and BIGINT
-- only: one schema for SQLite and PostgreSQL.

-- Every TaskEscrow and AgentRegistry log, keyed by its position in the
-- chain; `raw` holds its content as `address:topic,topic,…:data` (0x hex).
-- Everything else is derived from these rows.
CREATE TABLE ix_events (
    block       BIGINT NOT NULL,
    log_index   BIGINT NOT NULL,
    block_hash  TEXT NOT NULL,
    tx_hash     TEXT NOT NULL,
    contract    TEXT NOT NULL,
    kind        TEXT NOT NULL,
    task_id     TEXT,
    agent       TEXT,
    raw         TEXT NOT NULL,
    PRIMARY KEY (block, log_index)
);
CREATE INDEX ix_events_task ON ix_events (task_id);
CREATE INDEX ix_events_agent ON ix_events (agent);

-- Hashes of recent blocks, to notice a reorganisation.
CREATE TABLE ix_blocks (
    number      BIGINT PRIMARY KEY,
    hash        TEXT NOT NULL
);

-- Where ingestion resumes ('ingest', written in the same transaction as the
-- events) and where task derivation resumes ('derive').
CREATE TABLE ix_cursor (
    id          TEXT PRIMARY KEY,
    next_block  BIGINT NOT NULL
);

-- Each task as its events fold (rebuilt whenever its events change).
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
    executor_paid   BIGINT NOT NULL
);
CREATE INDEX ix_tasks_plan ON ix_tasks (plan_id);
CREATE INDEX ix_tasks_parent ON ix_tasks (parent_id);
CREATE INDEX ix_tasks_executor ON ix_tasks (executor);

-- Each transition, checked against the escrow's state machine.
CREATE TABLE ix_transitions (
    task_id     TEXT NOT NULL,
    block       BIGINT NOT NULL,
    log_index   BIGINT NOT NULL,
    kind        TEXT NOT NULL,
    from_status TEXT NOT NULL,
    to_status   TEXT NOT NULL,
    valid       BIGINT NOT NULL,
    problem     TEXT,
    PRIMARY KEY (task_id, block, log_index)
);

-- Registry state per agent.
CREATE TABLE ix_agents (
    agent           TEXT PRIMARY KEY,
    status          TEXT NOT NULL,
    metadata_uri    TEXT NOT NULL,
    offers          TEXT NOT NULL,
    registered_block BIGINT NOT NULL
);

-- Every reorganisation seen, with what it took away.
CREATE TABLE ix_reorgs (
    seq             BIGINT PRIMARY KEY,
    detected_head   BIGINT NOT NULL,
    fork_block      BIGINT NOT NULL,
    depth           BIGINT NOT NULL,
    orphaned_events BIGINT NOT NULL,
    affected_tasks  TEXT NOT NULL,
    at              BIGINT NOT NULL
);
