-- Each executor's totals per funder and client, kept as its tasks are
-- folded (`store::totals`): an agent's page, its weight and its feedback's
-- givers add up these few rows instead of every task it executed. An index
-- with tasks and no totals counts them once on opening.
CREATE TABLE ix_agent_totals (
    executor TEXT NOT NULL,
    funder TEXT NOT NULL,
    client TEXT NOT NULL,
    tasks BIGINT NOT NULL,
    completed BIGINT NOT NULL,
    disputed BIGINT NOT NULL,
    refunded BIGINT NOT NULL,
    expired BIGINT NOT NULL,
    declined BIGINT NOT NULL,
    settled BIGINT NOT NULL,
    earnings BIGINT NOT NULL,
    below_floor BIGINT NOT NULL,
    completed_units BIGINT NOT NULL,
    failed_units BIGINT NOT NULL,
    last_active_at BIGINT,
    last_created_block BIGINT,
    PRIMARY KEY (executor, funder, client)
);
-- An agent's own funding: the executors it paid.
CREATE INDEX ix_agent_totals_funder ON ix_agent_totals (funder, executor);

-- With the sums kept, the executor's tasks are read for two things only:
-- a page of them in id order, and the latest ones for the latency medians
-- (read from the index alone: it holds the columns they are taken from).
-- These replace the wide index the sums read.
DROP INDEX ix_tasks_executor_record;
CREATE INDEX ix_tasks_executor ON ix_tasks (executor, task_id);
CREATE INDEX ix_tasks_executor_latest ON ix_tasks
    (executor, created_block, task_id, accepted_at, amount_units, created_at, completed_at);

-- Children by parent, for the tasks that have one: most tasks are roots
-- (parent '0'), and with statistics that say so PostgreSQL scanned the
-- whole table for a plan's second level rather than look a parent up. The
-- queries that walk down say `parent_id <> '0'`, so they use this index.
DROP INDEX ix_tasks_parent;
CREATE INDEX ix_tasks_children ON ix_tasks (parent_id, task_id) WHERE parent_id <> '0';

-- The task indexes a first backfill set aside (`store::bulk`), with their
-- definitions as the database stated them, until they are built again.
CREATE TABLE ix_deferred_indexes (
    name TEXT PRIMARY KEY,
    sql TEXT NOT NULL
);
