-- seq is the creation order and the pagination position. AUTOINCREMENT keeps it from ever being
-- reused after the newest plant is deleted, so a cursor never points at a different plant.
CREATE TABLE plants (
  seq   INTEGER PRIMARY KEY AUTOINCREMENT,
  owner TEXT    NOT NULL,
  id    INTEGER NOT NULL,
  name  TEXT    NOT NULL,
  tag   TEXT,
  UNIQUE (owner, id)
);
-- One index per list query shape, each ending in seq, so a page is an index range scan whatever
-- the store's size.
CREATE INDEX plants_owner_seq ON plants (owner, seq);
CREATE INDEX plants_owner_tag_seq ON plants (owner, tag, seq);
CREATE INDEX plants_tag_seq ON plants (tag, seq);

CREATE TABLE tokens (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  hash       TEXT    NOT NULL UNIQUE, -- SHA-256 of the secret, hex; the secret itself is never stored
  user       TEXT    NOT NULL,
  scopes     TEXT    NOT NULL,        -- space-separated
  admin      INTEGER NOT NULL CHECK (admin IN (0, 1)),
  name       TEXT,
  created_at INTEGER NOT NULL,        -- milliseconds since the Unix epoch
  expires_at INTEGER,
  revoked_at INTEGER
);
