-- Each list shape reads its page from its index alone. A user's plants are spread over the table in
-- creation order, interleaved with everyone else's, so a 20-plant page read through an index of
-- (owner, seq) then fetched 20 rows from 20 different table pages; with name and tag in the index,
-- the page is one contiguous range of it (the `all` shape reads the table itself, in seq order).
-- The index's key columns and order are unchanged, so every query keeps its plan: seq stays the
-- position after the filter's columns, name and tag only ride along.
DROP INDEX plants_owner_seq;
DROP INDEX plants_owner_tag_seq;
DROP INDEX plants_tag_seq;
CREATE INDEX plants_owner_seq_page ON plants (owner, seq, name, tag);
CREATE INDEX plants_owner_tag_seq_page ON plants (owner, tag, seq, name);
CREATE INDEX plants_tag_seq_page ON plants (tag, seq, name);
