-- The answer kept for an idempotency key is one value, made and read by the server
-- (status, headers and body, in its own form): the store keeps it as it is. Kept
-- answers move into it.
ALTER TABLE idempotency_keys ADD COLUMN answer BLOB NOT NULL DEFAULT x'';
UPDATE idempotency_keys SET answer = CAST(json_object('status', status, 'header', json(header),
    'body', json(CAST(body AS TEXT))) AS BLOB);
ALTER TABLE idempotency_keys DROP COLUMN status;
ALTER TABLE idempotency_keys DROP COLUMN header;
ALTER TABLE idempotency_keys DROP COLUMN body;
