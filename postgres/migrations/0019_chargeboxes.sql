-- Charge boxes registered to connect over OCPP (chargenet.ChargeboxService): the
-- identity and password hash they connect with, their recorded connection (session set
-- while one is recorded), what their last BootNotification said, and the availability
-- last asked of each of their EVSEs. chargebox_epoch changes with every registration,
-- replacement and revocation, so that every replica notices what `chargenet chargebox`
-- did even when it missed the notification of chargenet_chargeboxes.
CREATE TABLE chargeboxes (
    id            bigint NOT NULL,
    identity      text COLLATE "C" NOT NULL,
    password_hash bytea NOT NULL,
    created_at    timestamptz NOT NULL,
    session       text,
    protocol      text,
    connected_at  timestamptz,
    last_seen_at  timestamptz,
    boot_vendor   text,
    boot_model    text,
    boot_serial   text,
    boot_firmware text,
    booted_at     timestamptz,
    CONSTRAINT chargeboxes_pkey PRIMARY KEY (id),
    CONSTRAINT chargeboxes_identity UNIQUE (identity)
);
CREATE INDEX chargeboxes_connected ON chargeboxes (last_seen_at) WHERE session IS NOT NULL;

CREATE TABLE chargebox_availability (
    evse_uid     bigint NOT NULL,
    chargebox_id bigint NOT NULL,
    state        text NOT NULL,
    requested_at timestamptz NOT NULL,
    answer       text NOT NULL,
    answered_at  timestamptz,
    CONSTRAINT chargebox_availability_pkey PRIMARY KEY (evse_uid)
);
CREATE INDEX chargebox_availability_box ON chargebox_availability (chargebox_id, evse_uid);
CREATE INDEX chargebox_availability_pending ON chargebox_availability (chargebox_id, evse_uid) WHERE answer = 'pending';

CREATE TABLE chargebox_epoch (
    id    int PRIMARY KEY CHECK (id = 1),
    epoch bigint NOT NULL
);
INSERT INTO chargebox_epoch (id, epoch) VALUES (1, 0);
