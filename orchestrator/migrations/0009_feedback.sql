-- Settlement-backed ERC-8004 feedback given for the sponsor: one row per
-- subject (`settled:<task id>` for a task, `plan:<run id>:<executor>` for a
-- plan's summary, `plan:<run id>` once a closed run has been looked at),
-- claimed before its transaction is sent and closed with it.
CREATE TABLE feedback (
    subject     TEXT PRIMARY KEY,
    run_id      TEXT NOT NULL,
    executor    TEXT NOT NULL,
    value       BIGINT NOT NULL,
    uri         TEXT NOT NULL,
    state       TEXT NOT NULL,
    tx_hash     TEXT,
    note        TEXT,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX feedback_run ON feedback (run_id);
