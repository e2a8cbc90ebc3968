-- Indexes the GraphQL reads need on a big index (`make bench-indexer`'s
-- 50,000 tasks of one funder and one executor).
--
-- A plan's tree asks for the tasks of one plan and one funder, in creation
-- order. With separate indexes on `plan_id` and on `funder` (0009), SQLite,
-- knowing nothing of their spread, walked a busy funder's every task: one
-- index on both, in the order asked for, reads just the plan's tasks. It
-- starts with the plan, so it serves the plan filter too, and the plan's
-- own index goes (a backfill writes every task into each index).
CREATE INDEX ix_tasks_plan_funder ON ix_tasks (plan_id, funder, created_block, task_id);
DROP INDEX ix_tasks_plan;

-- An agent's record adds up its tasks as executor (by status, dispute,
-- late decline, pay, and per funder for its weight): this index holds
-- every column those sums read, in funder order, so they never visit the
-- table. It starts with the executor, so it serves the executor filter
-- too, and the executor's own index goes.
CREATE INDEX ix_tasks_executor_record ON ix_tasks
    (executor, funder, status, disputed, late_decline, amount_units, executor_paid,
     accepted_at, completed_at, settled_at);
DROP INDEX ix_tasks_executor;
