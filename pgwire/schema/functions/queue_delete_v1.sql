-- queue_delete_v1: deletes a tenant's queue (DELETE
-- /api/v1/resources/queues/:queue). In one transaction it locks, in the one
-- global order, the queue row, then its JetStream consumers' definitions in
-- ascending id, then its partition rows in ascending id, then their
-- consumer rows in ascending (partition_id, consumer_group), and removes
-- the consumer rows (cursors and leases), the streaming queries' state of
-- its partitions, the subscriptions, the dead letters, the JetStream
-- consumers, the partition rows and the queue row. From its commit on
-- no reader or writer reaches the queue: each finds a partition through its
-- row (by tenant and names, or by id with the tenant checked), and
-- partition ids are never reused.
--
-- What waits on those locks: a push to a known partition of the queue
-- finds its row gone and provisions the queue anew (or its bundle fails
-- and is spooled, then written into a new queue by the drain); a claim or
-- an acknowledgement finds its consumer row gone; a push creating a
-- partition waits on the queue row and then finds no queue.
--
-- The segments and hash blobs of the deleted partitions, which may be far
-- more than one statement should delete, are listed in log_purges and
-- removed afterwards in bounded batches (log_purge_step_v1).
--
-- o_existed: the queue was there. o_pids: its partitions, ascending.

CREATE OR REPLACE FUNCTION queen.queue_delete_v1(p_tenant uuid, p_name text,
    OUT o_existed boolean, OUT o_queue_id bigint, OUT o_pids bigint[])
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
BEGIN
    o_pids := '{}';
    SELECT q.id INTO o_queue_id FROM queen.queues q
    WHERE q.tenant = p_tenant AND q.name = p_name
    FOR UPDATE;
    o_existed := FOUND;
    IF NOT o_existed THEN
        RETURN;
    END IF;
    -- Rows are locked as the sort hands them over: ascending id. The
    -- definitions before the cursor rows: the JetStream acknowledgement
    -- statement holds its consumers' definitions while it locks cursor rows.
    PERFORM 1 FROM (
        SELECT j.id FROM queen.jetstream_consumers j
        WHERE j.queue_id = o_queue_id
        ORDER BY j.id
        FOR UPDATE) x;
    SELECT coalesce(array_agg(x.id), '{}') INTO o_pids FROM (
        SELECT p.id FROM queen.log_partitions p
        WHERE p.queue_id = o_queue_id
        ORDER BY p.id
        FOR UPDATE) x;
    PERFORM 1 FROM (
        SELECT c.partition_id FROM queen.consumer_cursors c
        WHERE c.partition_id = ANY (o_pids)
        ORDER BY c.partition_id, c.consumer_group
        FOR UPDATE) x;

    -- Streaming queries' state of the partitions, locked after the
    -- consumer rows in the order every writer of state rows keeps.
    PERFORM 1 FROM (
        SELECT 1 FROM queen.stream_state s
        WHERE s.partition_id = ANY (o_pids)
        ORDER BY s.query_id, s.partition_id, s.key
        FOR UPDATE) x;

    DELETE FROM queen.consumer_cursors c WHERE c.partition_id = ANY (o_pids);
    DELETE FROM queen.stream_state s WHERE s.partition_id = ANY (o_pids);
    DELETE FROM queen.consumer_subscriptions s WHERE s.queue_id = o_queue_id;
    DELETE FROM queen.dead_letters d WHERE d.queue_id = o_queue_id;
    DELETE FROM queen.jetstream_consumers j WHERE j.queue_id = o_queue_id;
    INSERT INTO queen.log_purges (partition_id, queue_id)
    SELECT u.pid, o_queue_id FROM unnest(o_pids) AS u(pid)
    ON CONFLICT (partition_id) DO NOTHING;
    DELETE FROM queen.log_partitions p WHERE p.id = ANY (o_pids);
    DELETE FROM queen.queues q WHERE q.id = o_queue_id;
END
$$;
