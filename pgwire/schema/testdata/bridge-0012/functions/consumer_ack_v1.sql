-- consumer_ack_v1: acknowledgements of one partition for one group, in one
-- call and one lock of the cursor row (pgwire.Ack). Each item is a
-- transactionId's hash (16 bytes each in p_hashes, xxh3_128 as in the hash
-- blobs), its status and error. A transactionId is resolved to its offset
-- only inside what the lease delivered, (cursor, delivered_to]: the segments
-- of that range and nothing else of the partition's history are read.
--   completed/success: the cursor moves to max(cursor, offset), but never
--     past a message of the same call that is to be delivered again;
--   failed: below the queue's retryLimit the lease is released and the
--     retry count rises by one for the call; at the limit the message goes
--     to the dead letters and the cursor moves past it;
--   dlq: to the dead letters at once; retry: the lease is released, not
--     counted.
-- The lease is released when its acknowledgements reach what it delivered.
-- With p_lease set, a lease other than the row's, or an expired one, fails
-- every item. o_err is NULL where the item succeeded.

CREATE OR REPLACE FUNCTION queen.consumer_ack_v1(
    p_tenant   uuid,
    p_pid      bigint,
    p_group    text,
    p_lease    uuid,
    p_hashes   bytea,
    p_statuses text[],
    p_errors   text[],
    p_txids    text[],
    OUT o_err      text[],
    OUT o_dlq      boolean[],
    OUT o_released boolean,
    OUT o_queue    text,
    OUT o_name     text,
    OUT o_cursor   bigint
)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_mergejoin = off
SET jit = off
AS $$
DECLARE
    n        integer := coalesce(array_length(p_statuses, 1), 0);
    r        record;
    v_qid    bigint;
    v_limit  integer;
    v_offs   bigint[];
    v_block  bigint;      -- lowest offset to be delivered again
    v_move   bigint;
    v_retry  boolean := false;
    v_acked  integer := 0;
    v_all_ok boolean := true;
    v_dead   bigint[] := '{}';
    k        integer;
    st       text;
BEGIN
    o_err := array_fill(NULL::text, ARRAY[n]);
    o_dlq := array_fill(false, ARRAY[n]);
    o_released := false;
    SELECT q.id, q.name, p.name, queen.consumer_option_v1(q.other_options, 'retryLimit', 3)
    INTO v_qid, o_queue, o_name, v_limit
    FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE p.id = p_pid AND q.tenant = p_tenant;
    IF v_qid IS NULL THEN
        o_err := array_fill('no partition with this partitionId'::text, ARRAY[n]);
        RETURN;
    END IF;
    SELECT * INTO r FROM queen.consumer_cursors c
    WHERE c.partition_id = p_pid AND c.consumer_group = p_group FOR UPDATE;
    IF NOT FOUND THEN
        o_err := array_fill('the consumer group has not popped this partition'::text, ARRAY[n]);
        RETURN;
    END IF;
    o_cursor := r.cursor_offset;
    IF p_lease IS NOT NULL AND (r.lease_id IS DISTINCT FROM p_lease OR r.lease_expires_at <= clock_timestamp()) THEN
        o_err := array_fill('lease expired or not held'::text, ARRAY[n]);
        RETURN;
    END IF;

    -- Resolve each hash inside (cursor, delivered_to].
    SELECT array_agg(d.off ORDER BY d.k) INTO v_offs FROM (
        SELECT inc.k, min(st.off) AS off
        FROM generate_series(0, n - 1) AS inc(k)
        LEFT JOIN (
            SELECT t.base_offset + j.j AS off, substring(t.hashes FROM (j.j * 16 + 1)::integer FOR 16) AS h
            FROM (SELECT x.base_offset, x.end_offset, x.hashes FROM queen.log_segments x
                  WHERE x.partition_id = p_pid AND x.end_offset > r.cursor_offset AND x.base_offset <= r.delivered_to
                    AND x.hashes IS NOT NULL
                  UNION ALL
                  SELECT x.base_offset, x.end_offset, x.hashes FROM queen.log_txns x
                  WHERE x.partition_id = p_pid AND x.end_offset > r.cursor_offset AND x.base_offset <= r.delivered_to) t,
                 generate_series(greatest(0, r.cursor_offset + 1 - t.base_offset),
                                 least(t.end_offset, r.delivered_to) - t.base_offset) AS j(j)
        ) st ON st.h = substring(p_hashes FROM inc.k * 16 + 1 FOR 16)
        GROUP BY inc.k
    ) d;

    -- The lowest offset of this call that is to be delivered again.
    FOR k IN 1 .. n LOOP
        st := coalesce(nullif(p_statuses[k], ''), 'completed');
        IF v_offs[k] IS NULL THEN
            o_err[k] := 'transactionId is not among the messages delivered after the cursor';
            CONTINUE;
        END IF;
        IF st = 'retry' OR (st = 'failed' AND r.retry_count < v_limit) THEN
            v_block := least(coalesce(v_block, v_offs[k]), v_offs[k]);
        END IF;
    END LOOP;

    v_move := r.cursor_offset;
    FOR k IN 1 .. n LOOP
        CONTINUE WHEN v_offs[k] IS NULL;
        st := coalesce(nullif(p_statuses[k], ''), 'completed');
        IF st NOT IN ('completed', 'success', 'failed', 'dlq', 'retry') THEN
            o_err[k] := 'status must be completed, success, failed, dlq or retry';
            CONTINUE;
        END IF;
        IF st = 'retry' OR (st = 'failed' AND r.retry_count < v_limit) THEN
            v_retry := true;
            v_all_ok := false;
            CONTINUE;
        END IF;
        IF st IN ('failed', 'dlq') THEN
            v_all_ok := false;
            IF v_block IS NULL OR v_offs[k] < v_block THEN
                INSERT INTO queen.dead_letters (queue_id, partition_id, consumer_group, message_offset, transaction_id, error_message, retry_count)
                VALUES (v_qid, p_pid, p_group, v_offs[k], coalesce(p_txids[k], ''), p_errors[k], r.retry_count)
                ON CONFLICT (partition_id, consumer_group, message_offset) DO NOTHING;
                o_dlq[k] := true;
            END IF;
        END IF;
        IF v_block IS NULL OR v_offs[k] < v_block THEN
            v_move := greatest(v_move, v_offs[k]);
            IF NOT v_offs[k] = ANY (v_dead) THEN
                v_dead := v_dead || v_offs[k];
                v_acked := v_acked + 1;
            END IF;
        END IF;
    END LOOP;

    o_cursor := v_move;
    o_released := v_retry OR r.acked_count + v_acked >= r.delivered_count OR v_move >= r.delivered_to;
    UPDATE queen.consumer_cursors c SET
        cursor_offset = v_move,
        acked_count = r.acked_count + v_acked,
        retry_count = CASE WHEN v_retry AND EXISTS (SELECT 1 FROM unnest(p_statuses) s WHERE s = 'failed') THEN r.retry_count + 1
                           WHEN v_retry THEN r.retry_count
                           WHEN o_released THEN 0
                           ELSE r.retry_count END,
        lease_id = CASE WHEN o_released THEN NULL ELSE c.lease_id END,
        lease_expires_at = CASE WHEN o_released THEN NULL ELSE c.lease_expires_at END,
        updated_at = clock_timestamp()
    WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
END
$$;
