-- The highest encryption key id any bridge has sealed a payload of the
-- queue with (NULL: none recorded). A bridge that does not hold that key
-- refuses pops of the queue before claiming anything, instead of claiming
-- messages it cannot open (a key rotation half rolled out).
ALTER TABLE queen.queues ADD COLUMN encryption_key_id smallint;
