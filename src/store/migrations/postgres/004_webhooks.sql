-- Webhooks (src/webhooks/). An endpoint is a subscriber's URL; a delivery is one event (a stored new
-- plant) for one endpoint, queued in the transaction that stored the plant (the transactional outbox);
-- an attempt is one try to deliver it. Instances claim due deliveries with FOR UPDATE SKIP LOCKED.
CREATE TABLE webhook_endpoints (
  id              text        PRIMARY KEY, -- ep_…, opaque
  username        text        NOT NULL,
  all_users       boolean     NOT NULL,    -- registered by an admin: every user's plants
  url             text        NOT NULL,
  description     text,
  secret          text        NOT NULL,    -- whsec_…: signing needs the secret itself, so it cannot be hashed
  created_at      timestamptz NOT NULL DEFAULT now(),
  disabled_at     timestamptz,             -- the receiver answered 410 Gone
  disabled_reason text
);
CREATE INDEX webhook_endpoints_username ON webhook_endpoints (username);

CREATE TABLE webhook_deliveries (
  seq             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event_id        text        NOT NULL,        -- msg_…: the webhook-id header of every attempt (time-ordered, random; no index: only shown)
  endpoint_id     text        NOT NULL,
  plant_id        bigint      NOT NULL,
  body            text        NOT NULL,        -- the exact request body
  state           text        NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts        integer     NOT NULL DEFAULT 0, -- attempts claimed so far
  next_attempt_at timestamptz,                 -- pending: due at; while claimed, the claim's end
  leased_by       text,                        -- the instance holding the claim, if any
  created_at      timestamptz NOT NULL DEFAULT now(),
  finished_at     timestamptz                  -- delivered or failed at
);
-- A claim reads each endpoint's oldest due events: one range of this index per endpoint.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_attempt_at, seq) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE state <> 'pending';

CREATE TABLE webhook_attempts (
  seq             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint_id     text        NOT NULL,
  event_id        text        NOT NULL,
  plant_id        bigint      NOT NULL,
  attempt         integer     NOT NULL,
  status          integer,                  -- the receiver's HTTP status, NULL when none came
  error           text,
  at              timestamptz NOT NULL,
  state           text        NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')), -- the event's, after this attempt
  next_attempt_at timestamptz
);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, seq);
CREATE INDEX webhook_attempts_at ON webhook_attempts (at);
