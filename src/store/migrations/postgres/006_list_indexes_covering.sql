-- Each list shape of one user, or of one tag, can read its page from its index alone (an index-only
-- scan): a user's plants are interleaved with everyone else's in the table, so a 20-plant page read
-- through an index of (owner, seq) then visited about 20 heap pages. With name and tag included, the
-- page is one range of the index, plus the heap only for pages that VACUUM has not yet marked
-- all-visible (autovacuum does so for the inserts of a running store). The key columns are unchanged,
-- so every query keeps its plan. The every-owner shape keeps reading the primary key in seq order.
-- CREATE INDEX holds off writes to plants (not reads) while it builds: a few seconds on a million plants.
CREATE INDEX plants_owner_seq_page ON plants (owner, seq) INCLUDE (name, tag);
CREATE INDEX plants_owner_tag_seq_page ON plants (owner, tag, seq) INCLUDE (name);
CREATE INDEX plants_tag_seq_page ON plants (tag, seq) INCLUDE (name);
DROP INDEX plants_owner_seq;
DROP INDEX plants_owner_tag_seq;
DROP INDEX plants_tag_seq;
