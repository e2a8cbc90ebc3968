-- The arbiter's decisions, one per task and level (dispute or appeal), written
-- before the ruling is sent and completed with its transaction afterwards, so
-- a restarted arbiter re-sends the same verdict instead of judging again.
-- Its history is kept under the component `arbiter`, apart from the other
-- services sharing the database.
CREATE TABLE arbiter_decisions (
    task_id       TEXT NOT NULL,
    level         TEXT NOT NULL,
    verdict       TEXT NOT NULL,
    share_bps     BIGINT NOT NULL,
    rationale_uri TEXT NOT NULL,
    judge         TEXT NOT NULL,
    body          TEXT NOT NULL,
    decided_at    BIGINT NOT NULL,
    tx_hash       TEXT,
    executed_at   BIGINT,
    PRIMARY KEY (task_id, level)
);

-- Where the log scan resumes.
CREATE TABLE arbiter_cursor (
    id          TEXT PRIMARY KEY,
    next_block  BIGINT NOT NULL
);
