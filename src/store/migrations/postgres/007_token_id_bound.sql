-- Token ids stay at most 2^53 - 1 (src/domain/token.ts, TOKEN_ID_MAX), the largest integer every JSON reader
-- holds exactly: past it two tokens were listed with one id, and a revoke hit the other one. A check
-- rather than the identity's MAXVALUE: ALTER ... SET MAXVALUE fails on a sequence already past it, and
-- the check covers ids an import gives explicitly too. NOT VALID: rows already past the bound (stored
-- by an earlier version) stay, and this migration cannot fail on them; every new row is checked.
ALTER TABLE tokens ADD CONSTRAINT tokens_id_at_most_9007199254740991 CHECK (id <= 9007199254740991) NOT VALID;
