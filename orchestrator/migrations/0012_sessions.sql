-- Sponsors sign in with Ethereum (EIP-4361) on an operator-mode
-- orchestrator. `login_nonces`: the nonces handed out, each usable once
-- before `expires_at` (unix seconds). `sessions`: the bearer tokens a
-- login gives, stored as their keccak-256 only, with the sponsor's
-- lowercase 0x address and their expiry (unix seconds). In the store, so
-- replicas share them. `sponsor_approvals`: the grant budget a sponsor
-- approved for a run and when (unix seconds), for the per-sponsor cap
-- over a rolling 24 hours; `budget` in token base units, as decimal text.
CREATE TABLE login_nonces (
    nonce TEXT PRIMARY KEY,
    expires_at BIGINT NOT NULL
);
CREATE TABLE sessions (
    token_hash TEXT PRIMARY KEY,
    address TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX sessions_expiry ON sessions (expires_at);
CREATE TABLE sponsor_approvals (
    run_id TEXT PRIMARY KEY,
    sponsor TEXT NOT NULL,
    budget TEXT NOT NULL,
    approved_at BIGINT NOT NULL
);
CREATE INDEX sponsor_approvals_sponsor ON sponsor_approvals (sponsor, approved_at);
