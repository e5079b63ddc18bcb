CREATE TABLE locations (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    address      TEXT NOT NULL,
    city         TEXT NOT NULL,
    postal_code  TEXT NOT NULL DEFAULT '',
    country      TEXT NOT NULL,
    latitude     REAL NOT NULL,
    longitude    REAL NOT NULL,
    time_zone    TEXT NOT NULL,
    last_updated TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE evses (
    uid          INTEGER PRIMARY KEY,
    evse_id      TEXT NOT NULL UNIQUE,
    chargebox_id INTEGER NOT NULL,
    location_id  TEXT REFERENCES locations (id),
    status       TEXT NOT NULL,
    last_updated TEXT NOT NULL,
    version      INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX evses_location ON evses (location_id, uid);

CREATE TABLE connectors (
    evse_uid           INTEGER NOT NULL REFERENCES evses (uid),
    id                 INTEGER NOT NULL,
    standard           TEXT NOT NULL,
    format             TEXT NOT NULL,
    power_type         TEXT NOT NULL,
    max_electric_power REAL NOT NULL,
    max_amperage       REAL NOT NULL,
    max_voltage        REAL NOT NULL,
    tariff_ids         TEXT NOT NULL DEFAULT '[]',
    error_code         TEXT,
    error_info         TEXT,
    error_vendor_code  TEXT,
    deleted_at         TEXT,
    PRIMARY KEY (evse_uid, id)
) WITHOUT ROWID;

CREATE TABLE api_keys (
    name       TEXT PRIMARY KEY,
    hash       BLOB NOT NULL UNIQUE,
    scope      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);

CREATE TABLE settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
