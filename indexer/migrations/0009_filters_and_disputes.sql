-- A task's dispute as its events tell it, and the indexes the task list's
-- filters read.
--
-- The dispute: the client's reason URI and time (`TaskDisputed`), the
-- arbiter's ruling (`DisputeRuled`: executor share in basis points, the
-- rationale URI, who ruled, when), the appeal (`RulingAppealed`: who
-- appealed, the reason URI, when) and its ruling (`AppealRuled`), and why
-- the task settled (`TaskSettled`'s settlement, snake case). NULL where the
-- event never came. Derived from the stored events, so the derivation mark
-- goes and the next pass folds every task again from the events already
-- stored; nothing is read from the chain again.

ALTER TABLE ix_tasks ADD COLUMN settlement TEXT;
ALTER TABLE ix_tasks ADD COLUMN disputed_at BIGINT;
ALTER TABLE ix_tasks ADD COLUMN dispute_reason_uri TEXT;
ALTER TABLE ix_tasks ADD COLUMN ruled_at BIGINT;
ALTER TABLE ix_tasks ADD COLUMN ruling_share_bps BIGINT;
ALTER TABLE ix_tasks ADD COLUMN ruling_rationale_uri TEXT;
ALTER TABLE ix_tasks ADD COLUMN ruling_arbiter TEXT;
ALTER TABLE ix_tasks ADD COLUMN appealed_at BIGINT;
ALTER TABLE ix_tasks ADD COLUMN appellant TEXT;
ALTER TABLE ix_tasks ADD COLUMN appeal_reason_uri TEXT;
ALTER TABLE ix_tasks ADD COLUMN appeal_ruled_at BIGINT;
ALTER TABLE ix_tasks ADD COLUMN appeal_share_bps BIGINT;
ALTER TABLE ix_tasks ADD COLUMN appeal_rationale_uri TEXT;
ALTER TABLE ix_tasks ADD COLUMN appeal_arbiter TEXT;

-- The task list pages in task id order under each filter: an index per
-- filtered column, the id second, walks one filter's tasks in page order
-- (plan, parent and executor have theirs since the first layout).
CREATE INDEX ix_tasks_status ON ix_tasks (status, task_id);
CREATE INDEX ix_tasks_capability ON ix_tasks (capability, task_id);
CREATE INDEX ix_tasks_funder ON ix_tasks (funder, task_id);
CREATE INDEX ix_tasks_client ON ix_tasks (client, task_id);
CREATE INDEX ix_tasks_created_at ON ix_tasks (created_at);
CREATE INDEX ix_tasks_updated_block ON ix_tasks (updated_block);
-- The disputes list: disputed tasks, latest change first.
CREATE INDEX ix_tasks_disputed ON ix_tasks (updated_block, task_id) WHERE disputed = 1;

DELETE FROM ix_cursor WHERE id = 'derive';
