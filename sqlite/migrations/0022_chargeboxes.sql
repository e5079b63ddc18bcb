-- Charge boxes registered to connect over OCPP (chargenet.ChargeboxService): the
-- identity and password hash they connect with, their recorded connection (session set
-- while one is recorded), what their last BootNotification said, and the availability
-- last asked of each of their EVSEs. chargebox_epoch changes with every registration,
-- replacement and revocation, so that a running server notices what `chargenet
-- chargebox` did from another process.
CREATE TABLE chargeboxes (
    id            INTEGER PRIMARY KEY,
    identity      TEXT NOT NULL UNIQUE,
    password_hash BLOB NOT NULL,
    created_at    TEXT NOT NULL,
    session       TEXT,
    protocol      TEXT,
    connected_at  TEXT,
    last_seen_at  TEXT,
    boot_vendor   TEXT,
    boot_model    TEXT,
    boot_serial   TEXT,
    boot_firmware TEXT,
    booted_at     TEXT
);
CREATE INDEX chargeboxes_connected ON chargeboxes (last_seen_at) WHERE session IS NOT NULL;

CREATE TABLE chargebox_availability (
    evse_uid     INTEGER PRIMARY KEY,
    chargebox_id INTEGER NOT NULL,
    state        TEXT NOT NULL,
    requested_at TEXT NOT NULL,
    answer       TEXT NOT NULL,
    answered_at  TEXT
);
CREATE INDEX chargebox_availability_box ON chargebox_availability (chargebox_id, evse_uid);
CREATE INDEX chargebox_availability_pending ON chargebox_availability (chargebox_id, evse_uid) WHERE answer = 'pending';

CREATE TABLE chargebox_epoch (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    epoch INTEGER NOT NULL
);
INSERT INTO chargebox_epoch (id, epoch) VALUES (1, 0);
