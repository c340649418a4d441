-- WEBHOOK_MAX_QUEUED_PER_USER (docs/webhooks.md, "Operations"): the events a user's test, resend and
-- recover have pending are counted per user, so they are flagged when queued. The flag stays once an event
-- ends (only pending ones count, and an operation queueing one again sets it again). The index holds those
-- pending only: counting reads no more rows than the bound allows, and a create never pays for it.
ALTER TABLE webhook_deliveries ADD COLUMN by_operation boolean NOT NULL DEFAULT false;
UPDATE webhook_deliveries SET by_operation = true WHERE test AND state = 'pending';
CREATE INDEX webhook_deliveries_by_operation ON webhook_deliveries (endpoint_id) WHERE state = 'pending' AND by_operation;
