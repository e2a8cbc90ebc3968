-- Whether a decision worked, written into the rows from before `ok` existed
-- (0003) from what their outcome says: a failure was written as
-- `failed: …`. From here on every done decision has `ok`, and the store
-- reads it alone.
UPDATE decisions SET ok = CASE WHEN outcome LIKE 'failed%' THEN 0 ELSE 1 END
WHERE ok IS NULL AND outcome IS NOT NULL;
