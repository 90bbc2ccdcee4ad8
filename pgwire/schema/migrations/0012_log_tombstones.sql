-- Messages deleted one by one (DELETE /api/v1/messages/:partitionId/:transactionId,
-- SPEC §12.4). The log is append-only: a message's bytes share a segment
-- with others and go only when retention removes the segment. A delete
-- records the message's (partition, offset) here instead, and from its
-- commit on every read path skips that offset as it skips one retention
-- removed: pops (popKnownSQL, the hot tail's claim, consumer_pop_v1), the
-- offset read, the dead-letter list and the message detail. Nothing is
-- erased; the transactionId stays known to deduplication (log_txns and the
-- segment's hash blob are untouched).
--
-- The primary key is the index every probe uses: a pop asks for the
-- tombstones inside the range it delivers, (cursor, to], an index range
-- that finds nothing on a partition without them. No foreign key, as
-- elsewhere in the schema: partition ids are never reused, so a row left
-- behind by a removed partition names nothing. Retention removes the rows
-- of the offsets whose segments it removes (log_retention_step_v1).
CREATE TABLE queen.log_tombstones (
    partition_id   bigint NOT NULL,
    message_offset bigint NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (partition_id, message_offset)
);

-- consumer_pop_v1 answers the tombstoned offsets inside what it delivered
-- (a new OUT column, o_gone, which callers selecting their own columns do
-- not see). CREATE OR REPLACE cannot add an OUT column: the function is
-- dropped here and its file makes it anew in the same transaction.
DROP FUNCTION queen.consumer_pop_v1(uuid, text, text, bigint, text, uuid, integer, boolean, text, timestamptz);
