-- The answer kept for an idempotency key is one value, made and read by the server
-- (status, headers and body, in its own form): the store keeps it as it is. Kept
-- answers move into it.
ALTER TABLE idempotency_keys ADD COLUMN answer bytea NOT NULL DEFAULT ''::bytea;
UPDATE idempotency_keys SET answer = convert_to(json_build_object('status', status, 'header', header,
    'body', convert_from(body, 'UTF8')::json)::text, 'UTF8');
ALTER TABLE idempotency_keys DROP COLUMN status, DROP COLUMN header, DROP COLUMN body;
