-- The live feed (GET /plants/events, docs/feed.md): one row per plant created or deleted, written in the
-- transaction that created or deleted it. SQLite has one writer, so pos is the commit order. body is the
-- plant as the webhook body carries it. Rows are kept FEED_RETENTION: feed_marks remembers where the log
-- ended at a time, and a sweep removes the events up to the newest mark older than that; feed_pruned
-- remembers how far that went, so that a resume from before it is refused (410) rather than given a gap.
-- Plants imported from an export file write no event (an import restores a store; it does not create).
CREATE TABLE plant_events (
  pos     INTEGER PRIMARY KEY AUTOINCREMENT,
  owner   TEXT    NOT NULL,
  deleted INTEGER NOT NULL CHECK (deleted IN (0, 1)),
  body    TEXT    NOT NULL
);
-- No index by owner: a stream catching up reads the log in pages, everyone's, and keeps its user's
-- (src/feed/hub.ts); an index every create would pay for is not worth what it would save a resume.
CREATE TABLE feed_marks (
  at  INTEGER NOT NULL, -- ms since the epoch
  pos INTEGER NOT NULL
);
CREATE TABLE feed_pruned (
  one INTEGER PRIMARY KEY CHECK (one = 1),
  pos INTEGER NOT NULL
);
INSERT INTO feed_pruned (one, pos) VALUES (1, 0);
