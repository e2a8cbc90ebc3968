-- Durable plan runs. One schema for SQLite and PostgreSQL: only TEXT and
-- BIGINT columns, application-assigned keys, no backend-specific types.

-- A plan and where its run stands. `id` is the plan id (0x + 64 hex).
CREATE TABLE runs (
    id          TEXT PRIMARY KEY,
    plan_json   TEXT NOT NULL,
    state       TEXT NOT NULL,
    reason      TEXT,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    -- wall-clock ms since the run began waiting for a recovery decision
    paused_at   BIGINT
);

-- Per sub-task progress. The chain is the truth; this row records which
-- attempt is current (the task id derives from plan, index and attempt) and
-- the output handed to dependants once paid.
CREATE TABLE subtasks (
    run_id      TEXT NOT NULL,
    idx         BIGINT NOT NULL,
    attempt     BIGINT NOT NULL,
    executor    TEXT NOT NULL,
    phase       TEXT NOT NULL,
    task_id     TEXT,
    result_uri  TEXT,
    output      TEXT,
    PRIMARY KEY (run_id, idx)
);

-- The run's event stream, replayed to late subscribers. `dedup` makes each
-- chain transition (tx hash + log index) or synthesized event appear once.
CREATE TABLE run_events (
    run_id      TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    kind        TEXT NOT NULL,
    dedup       TEXT NOT NULL,
    body        TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (run_id, seq),
    UNIQUE (run_id, dedup)
);

-- User decisions (review, retry, change executor, cancel), consumed by the
-- runner in order.
CREATE TABLE decisions (
    run_id      TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    idx         BIGINT,
    kind        TEXT NOT NULL,
    arg         TEXT,
    created_at  BIGINT NOT NULL,
    done_at     BIGINT,
    outcome     TEXT,
    PRIMARY KEY (run_id, seq)
);
