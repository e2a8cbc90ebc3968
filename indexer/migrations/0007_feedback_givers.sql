-- Who gave each feedback (`NewFeedback`) or revoked it (`FeedbackRevoked`):
-- the 20 bytes of the event's `clientAddress` topic, so an agent's feedback
-- can be read per giver. Anyone may give feedback on anyone, so a window
-- of the newest feedback on an agent can be filled with junk; feedback from
-- the funders of the agent's tasks (the only feedback that can match a
-- settlement) is read in windows of its own, per giver. Rows stored before
-- take the topic from their raw content: the address (20 bytes), the count
-- of topics (1 byte), then the topics; the third topic's last 20 bytes
-- start at byte 98.

ALTER TABLE ix_events ADD COLUMN giver BYTEA;
UPDATE ix_events SET giver = substr(raw, 98, 20)
    WHERE contract = 'reputation' AND kind IN ('NewFeedback', 'FeedbackRevoked');
CREATE INDEX ix_events_giver ON ix_events (agent, giver, block) WHERE giver IS NOT NULL;
