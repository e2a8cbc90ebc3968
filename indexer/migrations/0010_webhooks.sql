-- Webhooks: subscribers and their durable outbox. A delivery is written in
-- the transaction that stores its event (or, for a retraction, in the one
-- that rolls the event back), so a crash neither loses nor doubles one.
-- TEXT and BIGINT only: one schema for SQLite and PostgreSQL.

-- A subscriber: where events are POSTed, the HMAC secret they are signed
-- with, and which events it wants (each filter NULL for any; `kinds` a
-- JSON array of event names). `dropped` counts deliveries discarded when
-- its pending deliveries passed the bound (oldest first).
CREATE TABLE ix_webhooks (
    id          TEXT PRIMARY KEY,
    url         TEXT NOT NULL,
    secret      TEXT NOT NULL,
    plan        TEXT,
    agent       TEXT,
    funder      TEXT,
    kinds       TEXT,
    created     BIGINT NOT NULL,
    dropped     BIGINT NOT NULL DEFAULT 0
);

-- One delivery to one subscriber, keyed by its idempotency key
-- (`{chain}:{block_hash}:{log_index}`, `…:retracted` for the retraction of
-- that event, which names it in `retracts`). Pending while `delivered_at`
-- is NULL; tried again at `next_attempt_at` (ms) after a failure.
CREATE TABLE ix_deliveries (
    webhook         TEXT NOT NULL,
    idem_key        TEXT NOT NULL,
    retracts        TEXT,
    block           BIGINT NOT NULL,
    log_index       BIGINT NOT NULL,
    payload         TEXT NOT NULL,
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    delivered_at    BIGINT,
    last_error      TEXT,
    created         BIGINT NOT NULL,
    PRIMARY KEY (webhook, idem_key)
);
CREATE INDEX ix_deliveries_due ON ix_deliveries (webhook, delivered_at, next_attempt_at);
CREATE INDEX ix_deliveries_block ON ix_deliveries (block);
