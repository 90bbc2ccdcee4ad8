-- Deleting a queue (DELETE /api/v1/resources/queues/:queue,
-- queue_delete_v1) removes its row, its partitions, cursors, subscriptions
-- and dead letters in one transaction, and leaves its segments and hash
-- blobs to be removed afterwards, in bounded batches (log_purge_step_v1,
-- called with the retention ticks of every bridge): a large queue's
-- segments may take longer to remove than one statement may run. This
-- table lists the partitions whose rows are still to go. Nothing reaches
-- those rows once the partition row is gone (every reader and writer finds
-- a partition through log_partitions, and partition ids are never reused),
-- so they wait here unseen.
CREATE TABLE queen.log_purges (
    partition_id bigint      PRIMARY KEY,
    queue_id     bigint      NOT NULL,
    queued_at    timestamptz NOT NULL DEFAULT now()
);
