-- Whose plant an event announces, so that an all-users endpoint's events of other users can be told
-- apart: they are not delivered once its user holds no admin token, and a caller that is not admin does
-- not see them in the endpoint's history (src/store/all-users-sql.ts). Events queued before this
-- migration (and imported ones) have none, and count as other users'.
ALTER TABLE webhook_deliveries ADD COLUMN owner text;
ALTER TABLE webhook_attempts ADD COLUMN owner text;
