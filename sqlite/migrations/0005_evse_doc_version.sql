-- The version of the EVSE its doc was written for: a doc whose doc_version differs
-- from version (a row changed by a program that does not keep docs) is not used.
ALTER TABLE evses ADD COLUMN doc_version INTEGER;
UPDATE evses SET doc_version = version WHERE doc IS NOT NULL;
DROP INDEX evses_without_doc;
CREATE INDEX evses_stale_doc ON evses (uid) WHERE doc IS NULL OR doc_version IS NOT version;
