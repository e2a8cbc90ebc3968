-- Replicas (`tessera serve --replica`, PostgreSQL only). One lease per
-- sponsor lane (the sponsor's address): the replica holding it drives every
-- live run of that sponsor, sends its transactions and counts its nonces;
-- the others answer the API and take the lane over once the holder stops
-- renewing. `expires_at` and `heartbeat_at` are the database's clock in ms;
-- `epoch` grows with each change of holder. Created on SQLite too (one
-- schema for both), where nothing uses it.
CREATE TABLE leases (
    lane         TEXT PRIMARY KEY,
    owner        TEXT,
    expires_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    epoch        BIGINT NOT NULL
);

-- The sponsor (lane) a run belongs to: the proposing replica's. Rows from
-- before it are adopted by the first replica that starts on the database.
ALTER TABLE runs ADD COLUMN sponsor TEXT;
