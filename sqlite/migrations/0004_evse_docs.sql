-- Each EVSE's contract JSON (chargenet.EVSEJSON), written in the transaction of every
-- change to the EVSE or its connectors, so that a read sends it as stored. Rows of
-- earlier versions are filled in when the store opens.
ALTER TABLE evses ADD COLUMN doc TEXT;
CREATE INDEX evses_without_doc ON evses (uid) WHERE doc IS NULL;
