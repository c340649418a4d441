-- The column is named as in PostgreSQL, where `user` is a reserved word, so that both backends share
-- one set of token statements (src/store/sql.ts). SQLite renames in place (3.25+): no row is rewritten.
ALTER TABLE tokens RENAME COLUMN user TO username;
