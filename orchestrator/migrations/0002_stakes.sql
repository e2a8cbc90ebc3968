-- The classification a run came from and its stakes: a high-stakes run needs
-- a confirmation bound to its exact amounts and recipients before approval.
ALTER TABLE runs ADD COLUMN stakes TEXT NOT NULL DEFAULT 'low';
ALTER TABLE runs ADD COLUMN classification TEXT;
