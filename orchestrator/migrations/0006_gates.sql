-- Where each checkpoint of a run stands: JSON `{name: {"state": "reached" |
-- "escalated" | "approved" | "rejected", "at": ms, "by"?}}`. Empty until a
-- checkpoint is reached.
ALTER TABLE runs ADD COLUMN gates TEXT;
