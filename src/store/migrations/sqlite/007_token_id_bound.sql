-- Token ids stay at most 2^53 - 1 (src/domain/token.ts, TOKEN_ID_MAX), the largest integer every JSON reader
-- holds exactly: past it two tokens were listed with one id, and a revoke hit the other one. AUTOINCREMENT
-- gives the next id after the largest ever used, so an imported id near the bound would have led there.
-- An AFTER trigger sees the id AUTOINCREMENT chose; RAISE(ABORT) undoes the insert and the counter.
-- Rows already past the bound (stored by an earlier version) stay as they are.
CREATE TRIGGER tokens_id_at_most_9007199254740991 AFTER INSERT ON tokens
WHEN NEW.id > 9007199254740991
BEGIN
  SELECT RAISE(ABORT, 'tokens_id_at_most_9007199254740991: token ids end at 2^53 - 1');
END;
