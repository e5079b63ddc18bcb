-- The W3C traceparent of the change that caused an event ('' when it was not traced):
-- its webhook deliveries continue that trace.
ALTER TABLE events ADD COLUMN traceparent text NOT NULL DEFAULT '';
