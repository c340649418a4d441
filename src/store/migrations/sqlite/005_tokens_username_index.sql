-- GET /tokens and DELETE /tokens/{id} for a token that is not admin read one user's tokens (src/http/tokens.ts):
-- an index range scan in id order rather than a scan of every user's tokens.
CREATE INDEX tokens_username_id ON tokens (username, id);
