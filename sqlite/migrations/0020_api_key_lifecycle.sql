-- A key holds a set of scopes (their names, space-separated; existing keys keep their
-- one scope, partner or ingest), may expire, may carry its own rate limit (0 requests:
-- none), keeps the secret its last rotation replaced until the overlap ends, and
-- records the minute of its last use.
ALTER TABLE api_keys RENAME COLUMN scope TO scopes;
ALTER TABLE api_keys ADD COLUMN expires_at TEXT;
ALTER TABLE api_keys ADD COLUMN rate_requests INTEGER NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN rate_window_s INTEGER NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN last_used_at TEXT;
ALTER TABLE api_keys ADD COLUMN previous_hash BLOB;
ALTER TABLE api_keys ADD COLUMN previous_until TEXT;
CREATE UNIQUE INDEX api_keys_previous_hash ON api_keys (previous_hash);
