-- Every dependency edge, not only the parent: the upstream tasks a task's
-- envelope names in its `inputs` (at most 32 per task, in the envelope's
-- order). Derived from the stored creation events, so the derivation mark
-- goes and the next pass folds every task again from the events already
-- stored; nothing is read from the chain again.

CREATE TABLE ix_task_inputs (
    task_id     TEXT NOT NULL,
    position    BIGINT NOT NULL,
    input_id    TEXT NOT NULL,
    PRIMARY KEY (task_id, position)
);
CREATE INDEX ix_task_inputs_input ON ix_task_inputs (input_id);

DELETE FROM ix_cursor WHERE id = 'derive';
