-- Location ids are COLLATE "C": they compare byte by byte whatever the database's
-- default collation, as Go strings and the SQLite store do; keyset cursors depend on it.
CREATE TABLE locations (
    id           text COLLATE "C" NOT NULL,
    name         text NOT NULL,
    address      text NOT NULL,
    city         text NOT NULL,
    postal_code  text NOT NULL DEFAULT '',
    country      text NOT NULL,
    latitude     double precision NOT NULL,
    longitude    double precision NOT NULL,
    time_zone    text NOT NULL,
    last_updated timestamptz NOT NULL,
    CONSTRAINT locations_pkey PRIMARY KEY (id)
);

CREATE TABLE evses (
    uid          bigint NOT NULL,
    evse_id      text NOT NULL,
    chargebox_id bigint NOT NULL,
    location_id  text COLLATE "C",
    status       text NOT NULL,
    last_updated timestamptz NOT NULL,
    version      bigint NOT NULL DEFAULT 1,
    CONSTRAINT evses_pkey PRIMARY KEY (uid),
    CONSTRAINT evses_evse_id_key UNIQUE (evse_id),
    CONSTRAINT evses_location_id_fkey FOREIGN KEY (location_id) REFERENCES locations (id)
);
-- A location's EVSE uids, in order, from the index alone.
CREATE INDEX evses_location_uid ON evses (location_id, uid);

CREATE TABLE connectors (
    evse_uid           bigint NOT NULL,
    id                 bigint NOT NULL,
    standard           text NOT NULL,
    format             text NOT NULL,
    power_type         text NOT NULL,
    max_electric_power double precision NOT NULL,
    max_amperage       double precision NOT NULL,
    max_voltage        double precision NOT NULL,
    tariff_ids         text[] NOT NULL DEFAULT '{}',
    error_code         text,
    error_info         text,
    error_vendor_code  text,
    deleted_at         timestamptz,
    CONSTRAINT connectors_pkey PRIMARY KEY (evse_uid, id),
    CONSTRAINT connectors_evse_uid_fkey FOREIGN KEY (evse_uid) REFERENCES evses (uid)
);

-- Names and hashes stay unique among revoked keys too: a name identifies one key for good.
CREATE TABLE api_keys (
    name       text NOT NULL,
    hash       bytea NOT NULL,
    scope      text NOT NULL,
    created_at timestamptz NOT NULL,
    revoked_at timestamptz,
    CONSTRAINT api_keys_pkey PRIMARY KEY (name),
    CONSTRAINT api_keys_hash_key UNIQUE (hash)
);

CREATE TABLE settings (
    name  text NOT NULL,
    value text NOT NULL,
    CONSTRAINT settings_pkey PRIMARY KEY (name)
);
