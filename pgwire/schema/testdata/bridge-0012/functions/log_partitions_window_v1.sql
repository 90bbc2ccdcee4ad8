-- log_partitions_window_v1 is the trigger (queues_window_to_partitions,
-- migration 0006) that keeps each partition row's copy of its queue's
-- deduplication window. The bridge's known-partition statement learns the
-- window from the row it updates instead of reading the queue row (which was
-- a quarter of that statement's cost at one segment).
--
-- It runs wherever a queue's window changes (configure, by any bridge), in
-- the same transaction, and updates the queue's partitions in ascending id,
-- the one lock order (after the queue row, which the configure holds).
-- Partitions are made by log_push_multi_v2, which copies the window under a
-- share lock on the queue row.

CREATE OR REPLACE FUNCTION queen.log_partitions_window_v1() RETURNS trigger
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
BEGIN
    PERFORM 1 FROM queen.log_partitions p WHERE p.queue_id = NEW.id ORDER BY p.id FOR UPDATE;
    UPDATE queen.log_partitions p SET dedup_window_seconds = NEW.dedup_window_seconds
    WHERE p.queue_id = NEW.id AND p.dedup_window_seconds IS DISTINCT FROM NEW.dedup_window_seconds;
    RETURN NULL;
END
$$;
