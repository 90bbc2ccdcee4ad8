-- What a lease delivered, so that an acknowledgement can be checked against
-- it without reading a segment: the 16-byte hash entries (xxh3_128 of each
-- transactionId, as in the hash blobs) of the delivered offsets, in offset
-- order. The entries themselves, not a digest of them: PostgreSQL's sha256
-- cost a pop more than the bytes do. NULL when the pop could not take them
-- (a segment written before migration 0006 keeps its hashes in log_txns) or
-- an answer was cut after they were recorded: that lease's acknowledgements
-- take the general path. docs/consumers.md, "The acknowledgement".
ALTER TABLE queen.consumer_cursors ADD COLUMN delivered_hashes bytea;
-- Random bytes do not compress; up to about 500 entries stay in the row.
ALTER TABLE queen.consumer_cursors ALTER COLUMN delivered_hashes SET STORAGE EXTERNAL;
ALTER TABLE queen.consumer_cursors SET (toast_tuple_target = 8160);
