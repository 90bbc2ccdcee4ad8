-- jetstream_consumer_put_v1: creates or updates a JetStream consumer of a
-- tenant's queue (pgwire.PutConsumer), in one transaction.
--
-- p_action 'create': a consumer of that name with another config is
-- refused ('exists'), one with the same config is answered as it is
-- ('same'); 'update': a missing consumer is refused ('missing'); '': either.
-- An update changes the config alone (the deliver policy and start stay
-- what the cursors were seeded by). A queue that does not exist yet is made
-- as a push makes it, except by an update.
--
-- A created consumer's start, in the same transaction: its subscription
-- (consumer_subscriptions, which seeds the partitions made later:
-- 'all' from their start, 'new' after what was committed before now,
-- 'from' after what was committed before p_start_time) and a cursor row
-- on every partition there is, its floor by the deliver policy:
--   all                0
--   new                the partition's last offset
--   by_start_time      the last segment committed at or before the time
--   last               the last offset, less one on the partition whose
--                      newest segment is the newest (the last message)
--   last_per_subject   the last offset less one, on every partition
--   by_start_sequence  p_start_offset - 1 on partition p_start_pid alone
--                      (its filter pins that partition; 'no_partition'
--                      when the queue has no such partition)
-- A cursor row or subscription the group already has (a Queen consumer
-- group of that name) is kept: the consumer goes on from there.
--
-- Lock order: the queue row (FOR KEY SHARE, so that a delete of the queue
-- waits for this transaction or goes first), the definition row, then the
-- cursor rows in ascending partition id; partition rows are read, not
-- locked.
--
-- o_status: 'created', 'updated', 'same', 'exists', 'missing',
-- 'no_partition'; the definition's columns with every status but the last
-- two.

CREATE OR REPLACE FUNCTION queen.jetstream_consumer_put_v1(
    p_tenant uuid, p_queue text, p_name text, p_durable boolean, p_config jsonb, p_action text,
    p_policy text, p_start_time timestamptz, p_start_pid bigint, p_start_offset bigint,
    OUT o_status text, OUT o_id bigint, OUT o_durable boolean, OUT o_config jsonb, OUT o_policy text,
    OUT o_start_time timestamptz, OUT o_start_pid bigint, OUT o_start_offset bigint,
    OUT o_created_at timestamptz, OUT o_last_active_at timestamptz)
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
DECLARE
    v_qid    bigint;
    v_mode   text;
    v_newest bigint;
    r        queen.jetstream_consumers;
BEGIN
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue FOR KEY SHARE;
    IF v_qid IS NULL THEN
        IF p_action = 'update' THEN
            o_status := 'missing';
            RETURN;
        END IF;
        IF p_policy = 'by_start_sequence' THEN
            o_status := 'no_partition';
            RETURN;
        END IF;
        INSERT INTO queen.queues (tenant, name, namespace, task)
        VALUES (p_tenant, p_queue, split_part(p_queue, '.', 1), split_part(p_queue, '.', 2))
        ON CONFLICT (tenant, name) DO NOTHING;
        SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue FOR KEY SHARE;
    END IF;

    -- Twice at most: a create that lost the race for the name to another
    -- finds that one's row the second time.
    FOR attempt IN 1 .. 2 LOOP
        SELECT * INTO r FROM queen.jetstream_consumers j WHERE j.queue_id = v_qid AND j.name = p_name FOR UPDATE;
        IF FOUND THEN
            IF r.config = p_config THEN
                o_status := 'same';
            ELSIF p_action = 'create' THEN
                o_status := 'exists';
            ELSE
                o_status := 'updated';
                UPDATE queen.jetstream_consumers j SET config = p_config, last_active_at = clock_timestamp()
                WHERE j.id = r.id
                RETURNING * INTO r;
            END IF;
            EXIT;
        END IF;
        IF p_action = 'update' THEN
            o_status := 'missing';
            RETURN;
        END IF;
        IF p_policy = 'by_start_sequence'
           AND NOT EXISTS (SELECT 1 FROM queen.log_partitions p WHERE p.id = p_start_pid AND p.queue_id = v_qid) THEN
            o_status := 'no_partition';
            RETURN;
        END IF;
        INSERT INTO queen.jetstream_consumers AS j (queue_id, name, durable, config, deliver_policy, start_time, start_partition_id, start_offset)
        VALUES (v_qid, p_name, p_durable, p_config, p_policy, p_start_time, p_start_pid, p_start_offset)
        ON CONFLICT (queue_id, name) DO NOTHING
        RETURNING * INTO r;
        IF FOUND THEN
            o_status := 'created';
            EXIT;
        END IF;
    END LOOP;
    IF o_status IS NULL THEN
        RAISE EXCEPTION 'jetstream consumer % of queue %: neither found nor made', p_name, p_queue;
    END IF;

    IF o_status = 'created' THEN
        v_mode := CASE p_policy WHEN 'all' THEN 'all' WHEN 'by_start_sequence' THEN 'all' WHEN 'by_start_time' THEN 'from' ELSE 'new' END;
        INSERT INTO queen.consumer_subscriptions (queue_id, consumer_group, mode, start_after)
        VALUES (v_qid, p_name, v_mode, CASE v_mode WHEN 'from' THEN p_start_time WHEN 'new' THEN clock_timestamp() END)
        ON CONFLICT (queue_id, consumer_group) DO NOTHING;
        IF p_policy = 'last' THEN
            SELECT p.id INTO v_newest FROM queen.log_partitions p
            CROSS JOIN LATERAL (SELECT y.created_at FROM queen.log_segments y
                                WHERE y.partition_id = p.id ORDER BY y.end_offset DESC LIMIT 1) y
            WHERE p.queue_id = v_qid
            ORDER BY y.created_at DESC, p.id DESC LIMIT 1;
        END IF;
        INSERT INTO queen.consumer_cursors (partition_id, consumer_group, cursor_offset, delivered_to, start_offset)
        SELECT s.id, p_name, s.seed, s.seed, s.seed FROM (
            SELECT p.id, CASE p_policy
                WHEN 'all' THEN 0
                WHEN 'new' THEN p.last_offset
                WHEN 'by_start_time' THEN coalesce((SELECT y.end_offset FROM queen.log_segments y
                                                    WHERE y.partition_id = p.id AND y.created_at <= p_start_time
                                                    ORDER BY y.end_offset DESC LIMIT 1), 0)
                WHEN 'last' THEN CASE WHEN p.id = v_newest THEN greatest(p.last_offset - 1, 0) ELSE p.last_offset END
                WHEN 'last_per_subject' THEN greatest(p.last_offset - 1, 0)
                ELSE greatest(p_start_offset - 1, 0) END AS seed
            FROM queen.log_partitions p
            WHERE p.queue_id = v_qid AND (p_policy <> 'by_start_sequence' OR p.id = p_start_pid)
        ) s
        ORDER BY s.id
        ON CONFLICT (partition_id, consumer_group) DO NOTHING;
    END IF;

    o_id := r.id; o_durable := r.durable; o_config := r.config; o_policy := r.deliver_policy;
    o_start_time := r.start_time; o_start_pid := r.start_partition_id; o_start_offset := r.start_offset;
    o_created_at := r.created_at; o_last_active_at := r.last_active_at;
END
$$;
