-- An executor's decline (`TaskDeclined`): the reason URI its event carries,
-- the reason's text when the URI could be read (`{"reason": "…"}`, inline
-- `data:` or `sha256:`), and why not when it could not. NULL for a task
-- nobody declined. No derivation mark goes: an escrow without `declineTask`
-- never emitted the event, so no task folded before holds one.

ALTER TABLE ix_tasks ADD COLUMN decline_reason_uri TEXT;
ALTER TABLE ix_tasks ADD COLUMN decline_reason TEXT;
ALTER TABLE ix_tasks ADD COLUMN decline_error TEXT;
