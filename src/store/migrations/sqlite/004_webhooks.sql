-- Webhooks (src/webhooks/). An endpoint is a subscriber's URL; a delivery is one event (a stored new
-- plant) for one endpoint, queued in the transaction that stored the plant (the transactional outbox);
-- an attempt is one try to deliver it. Times are milliseconds since the Unix epoch.
CREATE TABLE webhook_endpoints (
  id              TEXT    PRIMARY KEY,  -- ep_…, opaque
  username        TEXT    NOT NULL,
  all_users       INTEGER NOT NULL CHECK (all_users IN (0, 1)), -- registered by an admin: every user's plants
  url             TEXT    NOT NULL,
  description     TEXT,
  secret          TEXT    NOT NULL,     -- whsec_…: signing needs the secret itself, so it cannot be hashed
  created_at      INTEGER NOT NULL,
  disabled_at     INTEGER,              -- the receiver answered 410 Gone
  disabled_reason TEXT
);
CREATE INDEX webhook_endpoints_username ON webhook_endpoints (username);

CREATE TABLE webhook_deliveries (
  seq             INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id        TEXT    NOT NULL,        -- msg_…: the webhook-id header of every attempt (time-ordered, random; no index: only shown)
  endpoint_id     TEXT    NOT NULL,
  plant_id        INTEGER NOT NULL,
  body            TEXT    NOT NULL,        -- the exact request body
  state           TEXT    NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts        INTEGER NOT NULL DEFAULT 0, -- attempts claimed so far
  next_attempt_at INTEGER,                 -- pending: due at; while claimed, the claim's end
  leased_by       TEXT,                    -- the instance holding the claim, if any
  created_at      INTEGER NOT NULL,
  finished_at     INTEGER                  -- delivered or failed at
);
-- Claims take each endpoint's first due events in order, reading only those however long its backlog
-- (one global order would sort every due event at each claim); sweeps find finished ones by age.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_attempt_at, seq) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE state <> 'pending';

CREATE TABLE webhook_attempts (
  seq             INTEGER PRIMARY KEY AUTOINCREMENT,
  endpoint_id     TEXT    NOT NULL,
  event_id        TEXT    NOT NULL,
  plant_id        INTEGER NOT NULL,
  attempt         INTEGER NOT NULL,
  status          INTEGER,                 -- the receiver's HTTP status, NULL when none came
  error           TEXT,
  at              INTEGER NOT NULL,
  state           TEXT    NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')), -- the event's, after this attempt
  next_attempt_at INTEGER
);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, seq);
CREATE INDEX webhook_attempts_at ON webhook_attempts (at);
