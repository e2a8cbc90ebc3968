-- The client's rating of the work in its approval (`TaskSettled`'s
-- `rating`, 0 to 100 percent); NULL unless the task settled by approval.
-- The executor's totals count an approved task `rating/100` of its units
-- completed and the rest failed (`store::totals`). Derived from the stored
-- events, so the derivation mark goes and the next pass folds every task
-- again from the events already stored (moving the totals by the
-- difference); nothing is read from the chain again.

ALTER TABLE ix_tasks ADD COLUMN rating BIGINT;

DELETE FROM ix_cursor WHERE id = 'derive';
