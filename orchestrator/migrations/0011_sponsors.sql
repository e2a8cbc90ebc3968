-- Many sponsors on one orchestrator. `owner` is the sponsor a run belongs
-- to (lowercase 0x address): the one who may see and decide it, and the
-- funder of its tasks. `sponsor` stays the lane (the key that sends; the
-- operator in operator mode). `grant_json` is the sponsor's signed grant
-- that funds the run (tessera_bindings::grant::SignedGrant), `permit_json`
-- an EIP-2612 permit the sponsor signed with it, sent once when the
-- sponsor's allowance to the escrow falls short. Runs from before have no
-- owner: the lane's key owns and funds them, as it did.
ALTER TABLE runs ADD COLUMN owner TEXT;
ALTER TABLE runs ADD COLUMN grant_json TEXT;
ALTER TABLE runs ADD COLUMN permit_json TEXT;
CREATE INDEX runs_owner ON runs (owner, created_at);
