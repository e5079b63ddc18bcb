-- A receiver that is down defers its webhook's other deliveries to the next attempt: the
-- update reads only those due before then, by webhook and due time.
CREATE INDEX outbox_webhook_due ON outbox (webhook_id, next_attempt_at);
DROP INDEX outbox_webhook;
