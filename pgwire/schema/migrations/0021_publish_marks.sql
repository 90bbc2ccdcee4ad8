-- The publish relay's mark per (slot, partition) (docs/publish.md): the
-- place in the source's WAL (commit position, index in the transaction) of
-- the last message of that slot stored in that partition. It is written by
-- the very transaction that stores the segment, so a message is stored if
-- and only if its place is at or below its partition's mark: a replay after
-- a crash skips exactly what is stored, whatever the queue's deduplication
-- window. A partition's messages of one slot are stored in WAL order, which
-- is what makes one mark per partition enough.
-- slot: the source cluster's system identifier, '/', the slot's name.
CREATE TABLE queen.publish_marks (
    slot         text    NOT NULL,
    partition_id bigint  NOT NULL,
    lsn          bigint  NOT NULL,
    idx          integer NOT NULL,
    PRIMARY KEY (slot, partition_id)
) WITH (fillfactor = 70);
