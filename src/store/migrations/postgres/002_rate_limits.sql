-- Fixed-window counters shared by every instance (per-token rate limit, failed authentications).
-- UNLOGGED: counters need no crash safety, and skipping the WAL makes each hit cheaper.
CREATE UNLOGGED TABLE rate_limit_windows (
  key          text    NOT NULL,
  window_start bigint  NOT NULL, -- milliseconds since the Unix epoch, by the database's clock
  window_ms    integer NOT NULL,
  count        integer NOT NULL,
  PRIMARY KEY (key, window_start)
);
