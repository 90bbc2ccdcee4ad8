-- What a lease delivered, as a digest an acknowledgement can be checked
-- against without reading a segment: sha256 of the 16-byte hash entries
-- (xxh3_128 of each transactionId, as in the hash blobs) of the delivered
-- offsets, in offset order. NULL when the pop could not compute it (a
-- segment written before migration 0006 keeps its hashes in log_txns) or
-- an answer was cut after it was recorded: that lease's acknowledgements
-- take the general path. docs/consumers.md, "The acknowledgement".
ALTER TABLE queen.consumer_cursors ADD COLUMN delivered_digest bytea;
