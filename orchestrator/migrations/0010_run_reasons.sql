-- A run's one `reason` split in two: why it waits for a person
-- (`pause_reason`, a sentence, set while paused) and why it closes or closed
-- (`close_reason`: `cancelled`, `dispute_refunded` or
-- `checkpoint <name> rejected`, set from cancelling on). Old rows keep what
-- they said, in the column their state means.
ALTER TABLE runs ADD COLUMN pause_reason TEXT;
ALTER TABLE runs ADD COLUMN close_reason TEXT;
UPDATE runs SET pause_reason = reason WHERE state = 'paused';
UPDATE runs SET close_reason = reason WHERE state IN ('cancelling', 'cancelled', 'failed');
ALTER TABLE runs DROP COLUMN reason;
