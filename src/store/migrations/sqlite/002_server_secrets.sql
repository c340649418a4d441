-- Secrets the server makes for itself, shared by every process on this store. 'cursor' is the
-- AES-256-GCM key that seals pagination cursors (src/http/cursor.ts), made by the first process that
-- needs it. Whoever can read this table can read the plants too; it adds no exposure.
CREATE TABLE server_secrets (
  name       TEXT    PRIMARY KEY,
  value      BLOB    NOT NULL,
  created_at INTEGER NOT NULL -- milliseconds since the Unix epoch
);
