-- seq is the creation order and the pagination position; identity values are never reused.
CREATE TABLE plants (
  seq   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  owner text   NOT NULL,
  id    bigint NOT NULL,
  name  text   NOT NULL,
  tag   text,
  UNIQUE (owner, id)
);
-- One index per list query shape, each ending in seq, so a page is an index range scan whatever
-- the store's size.
CREATE INDEX plants_owner_seq ON plants (owner, seq);
CREATE INDEX plants_owner_tag_seq ON plants (owner, tag, seq);
CREATE INDEX plants_tag_seq ON plants (tag, seq);

CREATE TABLE tokens (
  id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  hash       text        NOT NULL UNIQUE, -- SHA-256 of the secret, hex; the secret itself is never stored
  username   text        NOT NULL,
  scopes     text[]      NOT NULL,
  admin      boolean     NOT NULL,
  name       text,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz,
  revoked_at timestamptz
);
