-- A key holds a set of scopes (their names, space-separated; existing keys keep their
-- one scope, partner or ingest), may expire, may carry its own rate limit (0 requests:
-- none), keeps the secret its last rotation replaced until the overlap ends, and
-- records the minute of its last use.
ALTER TABLE api_keys RENAME COLUMN scope TO scopes;
ALTER TABLE api_keys
    ADD COLUMN expires_at timestamptz,
    ADD COLUMN rate_requests integer NOT NULL DEFAULT 0,
    ADD COLUMN rate_window_s integer NOT NULL DEFAULT 0,
    ADD COLUMN last_used_at timestamptz,
    ADD COLUMN previous_hash bytea,
    ADD COLUMN previous_until timestamptz;
CREATE UNIQUE INDEX api_keys_previous_hash ON api_keys (previous_hash);
