-- A decline that weighs as an expiry: made past the deadline, or after
-- acceptance past the grace share (80%) of the time from acceptance to the
-- deadline (`tessera_records::decline_is_late`). 1 when late, 0 otherwise
-- (and for a task nobody declined). Derived from the stored events, so the
-- derivation mark goes and the next pass folds every task again from the
-- events already stored; nothing is read from the chain again.

ALTER TABLE ix_tasks ADD COLUMN late_decline BIGINT NOT NULL DEFAULT 0;

DELETE FROM ix_cursor WHERE id = 'derive';
