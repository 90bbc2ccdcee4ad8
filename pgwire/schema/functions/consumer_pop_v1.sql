-- consumer_pop_v1: one pop of one partition for one group, in one call
-- (pgwire.Pop).
--   1. resolves the partition (by id, or by tenant, queue and name) and its
--      queue's options (leaseTime, delayedProcessing, windowBuffer);
--   2. a named group's first pop of the queue stores its subscription
--      choice; a cursor row missing for the partition is seeded from it;
--   3. claims the partition: one compare-and-set UPDATE of the cursor row,
--      only when it has no lease or an expired one (SKIP LOCKED: a row
--      another pop is claiming right now is held);
--   4. reads up to p_batch messages after the cursor (segments, in offset
--      order), not younger than delayedProcessing, and records what the
--      lease delivered (with its hash entries, migration 0010, so that a whole-batch
--      acknowledgement needs no segment read); with nothing to deliver it
--      releases the lease; with
--      p_auto_ack the cursor moves past what is delivered and no lease is
--      kept.
--   5. skips tombstoned offsets (migration 0012) inside what it delivers:
--      they are answered in o_gone, left out of the delivered count and
--      its hash entries (none are recorded then: that lease's
--      acknowledgements take the general path); a range that holds nothing
--      but tombstones is stepped over: the cursor moves past it, no lease
--      is kept, the retry count starts again (the messages it counted are
--      gone; an acknowledgement that moves the cursor resets it too), and
--      the answer is 'empty' with o_gone set.
-- o_status: 'ok' (segments in o_bases.. with frames after o_cursor up to
-- o_to, less o_gone), 'empty', 'leased', 'window' (newest message inside
-- windowBuffer), 'missing' (no such partition).
--
-- Lock order: it locks its consumer row only; partition rows are read, not
-- locked (docs/consumers.md).

CREATE OR REPLACE FUNCTION queen.consumer_pop_v1(
    p_tenant      uuid,
    p_queue       text,
    p_partition   text,
    p_pid         bigint,
    p_group       text,
    p_lease       uuid,
    p_batch       integer,
    p_auto_ack    boolean,
    p_sub_mode    text,
    p_sub_from    timestamptz,
    OUT o_status   text,
    OUT o_pid      bigint,
    OUT o_name     text,
    OUT o_last     bigint,
    OUT o_cursor   bigint,
    OUT o_to       bigint,
    OUT o_expires  timestamptz,
    OUT o_expired  boolean,
    OUT o_bases    bigint[],
    OUT o_created  timestamptz[],
    OUT o_payloads bytea[],
    OUT o_gone     bigint[]
)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
DECLARE
    v_qid     bigint;
    v_opts    jsonb;
    v_lease_s integer;
    v_delay   integer;
    v_window  integer;
    v_newest  timestamptz;
    v_seed    bigint;
    v_mode    text;
    v_after   timestamptz;
    v_n       bigint := 0;
    v_hashes  bytea;
    v_start   bigint;
BEGIN
    -- Two statements, each keyed: a CASE in one WHERE would keep either
    -- index from being used.
    IF p_pid > 0 THEN
        SELECT p.id, p.name, p.last_offset, q.id, q.other_options
        INTO o_pid, o_name, o_last, v_qid, v_opts
        FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
        WHERE p.id = p_pid AND q.tenant = p_tenant;
    ELSE
        SELECT p.id, p.name, p.last_offset, q.id, q.other_options
        INTO o_pid, o_name, o_last, v_qid, v_opts
        FROM queen.queues q JOIN queen.log_partitions p ON p.queue_id = q.id
        WHERE q.tenant = p_tenant AND q.name = p_queue AND p.name = p_partition;
    END IF;
    IF o_pid IS NULL THEN
        o_status := 'missing';
        RETURN;
    END IF;
    v_lease_s := queen.consumer_option_v2(v_opts, 'leaseTime');
    v_delay := queen.consumer_option_v2(v_opts, 'delayedProcessing');
    v_window := queen.consumer_option_v2(v_opts, 'windowBuffer');
    IF v_window > 0 THEN
        SELECT x.created_at INTO v_newest FROM queen.log_segments x
        WHERE x.partition_id = o_pid ORDER BY x.end_offset DESC LIMIT 1;
        IF v_newest > clock_timestamp() - make_interval(secs => v_window) THEN
            o_status := 'window';
            RETURN;
        END IF;
    END IF;

    -- 2. Seeding a missing cursor row.
    IF NOT EXISTS (SELECT 1 FROM queen.consumer_cursors c WHERE c.partition_id = o_pid AND c.consumer_group = p_group) THEN
        v_seed := 0;
        -- Queue mode is stored too (always from the beginning), so that
        -- retention knows every group that reads the queue.
        -- Looked up first: an insert, even one that finds the row, waits for
        -- every concurrent first pop of the group inserting it too.
        IF NOT EXISTS (SELECT 1 FROM queen.consumer_subscriptions sub WHERE sub.queue_id = v_qid AND sub.consumer_group = p_group) THEN
            INSERT INTO queen.consumer_subscriptions (queue_id, consumer_group, mode, start_after)
            VALUES (v_qid, p_group,
                    CASE WHEN p_group = '__QUEUE_MODE__' THEN 'all' WHEN p_sub_from IS NOT NULL THEN 'from' WHEN p_sub_mode = 'new' THEN 'new' ELSE 'all' END,
                    CASE WHEN p_group = '__QUEUE_MODE__' THEN NULL WHEN p_sub_from IS NOT NULL THEN p_sub_from WHEN p_sub_mode = 'new' THEN clock_timestamp() END)
            ON CONFLICT (queue_id, consumer_group) DO NOTHING;
        END IF;
        IF p_group <> '__QUEUE_MODE__' THEN
            SELECT sub.mode, sub.start_after INTO v_mode, v_after FROM queen.consumer_subscriptions sub
            WHERE sub.queue_id = v_qid AND sub.consumer_group = p_group;
            IF v_after IS NOT NULL THEN
                -- Start after the last segment committed at or before the
                -- subscription's time, looking back from the end.
                SELECT coalesce(max(x.end_offset), 0) INTO v_seed FROM (
                    SELECT y.end_offset FROM queen.log_segments y
                    WHERE y.partition_id = o_pid AND y.created_at <= v_after
                    ORDER BY y.end_offset DESC LIMIT 1) x;
            END IF;
        END IF;
        INSERT INTO queen.consumer_cursors (partition_id, consumer_group, cursor_offset, delivered_to, start_offset)
        VALUES (o_pid, p_group, v_seed, v_seed, v_seed)
        ON CONFLICT (partition_id, consumer_group) DO NOTHING;
    END IF;

    -- 3. The claim: one compare-and-set.
    UPDATE queen.consumer_cursors c SET
        lease_id = CASE WHEN p_auto_ack THEN NULL ELSE p_lease END,
        lease_expires_at = CASE WHEN p_auto_ack THEN NULL ELSE clock_timestamp() + queen.consumer_duration_v1(v_lease_s) END,
        delivered_to = c.cursor_offset, delivered_count = 0, acked_count = 0,
        delivered_hashes = NULL, updated_at = clock_timestamp()
    FROM (SELECT x.partition_id, x.consumer_group, x.lease_id IS NOT NULL AS expired FROM queen.consumer_cursors x
          WHERE x.partition_id = o_pid AND x.consumer_group = p_group
            AND (x.lease_id IS NULL OR x.lease_expires_at <= clock_timestamp())
          FOR UPDATE SKIP LOCKED) o
    WHERE c.partition_id = o.partition_id AND c.consumer_group = o.consumer_group
    RETURNING c.cursor_offset, c.lease_expires_at, o.expired INTO o_cursor, o_expires, o_expired;
    IF o_cursor IS NULL THEN
        o_status := 'leased';
        RETURN;
    END IF;

    -- 4. What to deliver: whole segments after the cursor until p_batch
    -- frames, the last one cut at the batch. One statement: each segment
    -- after the cursor holds at least one frame, so p_batch segments are
    -- enough; a running sum of their frames after the cursor decides which
    -- are needed and how much of the last. (Appending to the answer's arrays
    -- in a loop copied them on every segment.)
    SELECT coalesce(array_agg(d.base_offset ORDER BY d.end_offset), '{}'), coalesce(array_agg(d.created_at ORDER BY d.end_offset), '{}'),
           coalesce(array_agg(d.payload ORDER BY d.end_offset), '{}'), coalesce(max(d.start_at + least(d.n, p_batch - (d.run - d.n))), o_cursor),
           coalesce(sum(least(d.n, p_batch - (d.run - d.n))), 0), min(d.start_at),
           CASE WHEN bool_and(d.hashes IS NOT NULL) THEN string_agg(
               substring(d.hashes FROM ((d.start_at + 1 - d.base_offset) * 16 + 1)::integer FOR (least(d.n, p_batch - (d.run - d.n)) * 16)::integer),
               ''::bytea ORDER BY d.end_offset) END
    INTO o_bases, o_created, o_payloads, o_to, v_n, v_start, v_hashes
    FROM (
        SELECT w.*, sum(w.n) OVER (ORDER BY w.end_offset) AS run
        FROM (
            SELECT x.base_offset, x.end_offset, x.created_at, x.payload, x.hashes,
                   greatest(x.base_offset - 1, o_cursor) AS start_at,
                   x.end_offset - greatest(x.base_offset - 1, o_cursor) AS n
            FROM queen.log_segments x
            WHERE x.partition_id = o_pid AND x.end_offset > o_cursor
              AND (v_delay = 0 OR x.created_at <= clock_timestamp() - make_interval(secs => v_delay))
            ORDER BY x.end_offset
            LIMIT p_batch
        ) w
    ) d
    WHERE d.run - d.n < p_batch;

    -- 5. Tombstones inside the range: one index probe, bounded by it, that
    -- finds nothing on a partition without them.
    IF v_n > 0 THEN
        SELECT array_agg(t.message_offset ORDER BY t.message_offset) INTO o_gone FROM queen.log_tombstones t
        WHERE t.partition_id = o_pid AND t.message_offset > v_start AND t.message_offset <= o_to;
        IF o_gone IS NOT NULL THEN
            v_n := v_n - cardinality(o_gone);
            v_hashes := NULL;
            IF v_n = 0 THEN
                UPDATE queen.consumer_cursors c SET cursor_offset = o_to, delivered_to = o_to, delivered_count = 0, acked_count = 0,
                    retry_count = 0, delivered_hashes = NULL, lease_id = NULL, lease_expires_at = NULL, updated_at = clock_timestamp()
                WHERE c.partition_id = o_pid AND c.consumer_group = p_group;
                o_cursor := o_to;
                o_status := 'empty';
                o_expires := NULL;
                RETURN;
            END IF;
        END IF;
    END IF;
    IF v_n = 0 THEN
        UPDATE queen.consumer_cursors c SET lease_id = NULL, lease_expires_at = NULL, updated_at = clock_timestamp()
        WHERE c.partition_id = o_pid AND c.consumer_group = p_group;
        o_status := 'empty';
        o_expires := NULL;
        RETURN;
    END IF;
    IF p_auto_ack THEN
        UPDATE queen.consumer_cursors c SET cursor_offset = o_to, delivered_to = o_to,
            delivered_count = v_n, acked_count = v_n, retry_count = 0, delivered_hashes = v_hashes, updated_at = clock_timestamp()
        WHERE c.partition_id = o_pid AND c.consumer_group = p_group;
    ELSE
        UPDATE queen.consumer_cursors c SET delivered_to = o_to, delivered_count = v_n, delivered_hashes = v_hashes
        WHERE c.partition_id = o_pid AND c.consumer_group = p_group;
    END IF;
    o_status := 'ok';
END
$$;
