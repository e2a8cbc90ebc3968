-- What a run has spent against its budget, as the chain says while it
-- runs: JSON `{"committed", "paid", "refunded"}` in token base units
-- (every attempt of every sub-task; retries and changed executors
-- included). Empty until the first look at the chain after approval.
ALTER TABLE runs ADD COLUMN spend TEXT;
