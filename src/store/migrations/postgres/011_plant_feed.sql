-- The live feed (GET /plants/events, docs/feed.md): one row per plant created or deleted, written in the
-- statement that created or deleted it. Several instances commit side by side, so an identity value is
-- not the commit order; the order is (tx, pos): tx is the writing transaction's id, and a reader takes
-- only events whose transaction is older than every transaction still running (the snapshot's xmin).
-- Those are final: no transaction can later commit an event that sorts before them. body is the plant
-- as the webhook body carries it. Rows are kept FEED_RETENTION: feed_marks remembers where the log
-- ended at a time, a sweep removes the events up to the newest mark older than that, and feed_pruned
-- remembers how far that went, so that a resume from before it is refused (410) rather than given a gap.
-- Plants imported from an export file write no event (an import restores a store; it does not create).
CREATE TABLE plant_events (
  tx      xid8    NOT NULL DEFAULT pg_current_xact_id(),
  pos     bigint  GENERATED ALWAYS AS IDENTITY,
  owner   text    NOT NULL,
  deleted boolean NOT NULL,
  body    text    NOT NULL,
  PRIMARY KEY (tx, pos)
);
-- No index by owner: a stream catching up reads the log in pages, everyone's, and keeps its user's
-- (src/feed/hub.ts); an index every create would pay for is not worth what it would save a resume.
CREATE TABLE feed_marks (
  at  timestamptz NOT NULL DEFAULT now(),
  tx  xid8        NOT NULL,
  pos bigint      NOT NULL
);
CREATE TABLE feed_pruned (
  one boolean PRIMARY KEY CHECK (one),
  tx  xid8    NOT NULL,
  pos bigint  NOT NULL
);
INSERT INTO feed_pruned (one, tx, pos) VALUES (true, '0', 0);
