-- Secrets the server makes for itself, shared by every instance on this database. 'cursor' is the
-- AES-256-GCM key that seals pagination cursors (src/http/cursor.ts), made by the first instance that
-- needs it, so that a cursor one instance issued opens on every other. Whoever can read this table can
-- read the plants too; it adds no exposure.
CREATE TABLE server_secrets (
  name       text        PRIMARY KEY,
  value      bytea       NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
