-- Webhook operations (docs/webhooks.md, "Operations"). A rotated secret keeps signing, next to the new
-- one, until its overlap ends; it is stored as the current one is (signing needs it) and erased by the
-- dispatcher's sweep once past its end, which every instance also enforces when it signs. A test event
-- is a delivery like any other, flagged, with no plant behind it (plant_id 0). An event queued again
-- (resend, recover) starts its retry schedule over from round_start attempts. An endpoint disabled by
-- hand says so in disabled_reason, as a 410 does.
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret text;
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_expires_at timestamptz;
ALTER TABLE webhook_deliveries ADD COLUMN test boolean NOT NULL DEFAULT false;
ALTER TABLE webhook_deliveries ADD COLUMN round_start integer NOT NULL DEFAULT 0;
ALTER TABLE webhook_attempts ADD COLUMN test boolean NOT NULL DEFAULT false;
-- A resend finds a finished event by its id, a recover an endpoint's failed events by age; only finished
-- events are in these indexes, so a create (which queues pending ones) never pays for them.
CREATE INDEX webhook_deliveries_finished_event ON webhook_deliveries (endpoint_id, event_id) WHERE state <> 'pending';
CREATE INDEX webhook_deliveries_failed ON webhook_deliveries (endpoint_id, created_at) WHERE state = 'failed';
