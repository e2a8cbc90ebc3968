-- Nested plans: a task of a nested plan carries, in its envelope, its step
-- path in the plan (`2.1.0`: top-level step 2, its child plan's step 1,
-- that one's step 0) and the labels of the plans enclosing it, outermost
-- first (a JSON array of strings). Both are NULL for a task whose envelope
-- names none. Derived from the stored creation events, so the derivation
-- mark goes and the next pass folds every task again from the events
-- already stored; nothing is read from the chain again.

ALTER TABLE ix_tasks ADD COLUMN path TEXT;
ALTER TABLE ix_tasks ADD COLUMN groups TEXT;

DELETE FROM ix_cursor WHERE id = 'derive';
