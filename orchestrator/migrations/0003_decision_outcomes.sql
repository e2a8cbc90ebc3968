-- Whether a decision worked: a reverted or failed transaction is a failure
-- with its message and, when the chain refused, the decoded revert.
ALTER TABLE decisions ADD COLUMN ok BIGINT;
ALTER TABLE decisions ADD COLUMN error TEXT;
ALTER TABLE decisions ADD COLUMN revert TEXT;
