-- Consumers: Queen's consumer API on the log. A consumer group is a cursor
-- per partition; acknowledging moves it and deletes nothing. A lease makes
-- one consumer at a time own a partition for a group.
--
-- Lock order (docs/write-path.md): queue rows, then partition rows in
-- ascending id, then consumer rows in ascending (partition_id,
-- consumer_group). The consumer statements below lock consumer rows only
-- (they read partition rows without locking them); retention locks
-- partition rows and then only reads consumer rows. So no statement waits
-- for a partition row while it holds a consumer row.

-- The state of one consumer group on one partition.
CREATE TABLE queen.consumer_cursors (
    partition_id     bigint      NOT NULL,
    consumer_group   text        NOT NULL CHECK (octet_length(consumer_group) BETWEEN 1 AND 255),
    -- The last acknowledged offset (0: none). Everything after it is
    -- deliverable once no live lease holds the partition.
    cursor_offset    bigint      NOT NULL DEFAULT 0,
    lease_id         uuid,
    lease_expires_at timestamptz,
    -- What the current (or last) lease delivered: the offsets
    -- (claim cursor, delivered_to], delivered_count of them; acks are
    -- resolved inside that range only.
    delivered_to     bigint      NOT NULL DEFAULT 0,
    delivered_count  integer     NOT NULL DEFAULT 0,
    acked_count      integer     NOT NULL DEFAULT 0,
    retry_count      integer     NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (partition_id, consumer_group)
) WITH (fillfactor = 70);
CREATE INDEX consumer_cursors_lease ON queen.consumer_cursors (lease_id) WHERE lease_id IS NOT NULL;

-- Where a named group starts on a partition it has no cursor for yet,
-- chosen by its first pop of the queue and shared by every later partition
-- and worker: 'all' from the beginning, or after start_after.
CREATE TABLE queen.consumer_subscriptions (
    queue_id       bigint      NOT NULL,
    consumer_group text        NOT NULL,
    mode           text        NOT NULL CHECK (mode IN ('all', 'new', 'from')),
    start_after    timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue_id, consumer_group)
);

-- Messages a group gave up on: failed past the queue's retryLimit, or
-- acknowledged with status dlq. The message itself stays in its segment
-- (read back by offset); the cursor has moved past it.
CREATE TABLE queen.dead_letters (
    id             bigserial PRIMARY KEY,
    queue_id       bigint      NOT NULL,
    partition_id   bigint      NOT NULL,
    consumer_group text        NOT NULL,
    message_offset bigint      NOT NULL,
    transaction_id text        NOT NULL,
    error_message  text,
    retry_count    integer     NOT NULL,
    failed_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (partition_id, consumer_group, message_offset)
);
CREATE INDEX dead_letters_queue ON queen.dead_letters (queue_id, consumer_group, id);

-- consumer_option_v1: a consumer option of a queue (Queen's spelling, kept
-- in other_options), or its default.
CREATE FUNCTION queen.consumer_option_v1(p_opts jsonb, p_name text, p_default integer) RETURNS integer
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN jsonb_typeof(p_opts -> p_name) = 'number' THEN greatest(0, floor((p_opts ->> p_name)::numeric))::integer
                ELSE p_default END
$$;

-- consumer_pop_v1: one pop of one partition for one group, in one call.
--   1. resolves the partition (by id, or by tenant, queue and name) and its
--      queue's options (leaseTime, delayedProcessing, windowBuffer);
--   2. a named group's first pop of the queue stores its subscription
--      choice; a cursor row missing for the partition is seeded from it;
--   3. claims the partition: one compare-and-set UPDATE of the cursor row,
--      only when it has no lease or an expired one (SKIP LOCKED: a row
--      another pop is claiming right now is held);
--   4. reads up to p_batch messages after the cursor (segments, in offset
--      order), not younger than delayedProcessing, and records what the
--      lease delivered; with nothing to deliver it releases the lease; with
--      p_auto_ack the cursor moves past what is delivered and no lease is
--      kept.
-- o_status: 'ok' (segments in o_bases.. with frames after o_cursor up to
-- o_to), 'empty', 'leased', 'window' (newest message inside windowBuffer),
-- 'missing' (no such partition).
CREATE FUNCTION queen.consumer_pop_v1(
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
    OUT o_payloads bytea[]
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
    v_lease_s := queen.consumer_option_v1(v_opts, 'leaseTime', 300);
    v_delay := queen.consumer_option_v1(v_opts, 'delayedProcessing', 0);
    v_window := queen.consumer_option_v1(v_opts, 'windowBuffer', 0);
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
        INSERT INTO queen.consumer_subscriptions (queue_id, consumer_group, mode, start_after)
        VALUES (v_qid, p_group,
                CASE WHEN p_group = '__QUEUE_MODE__' THEN 'all' WHEN p_sub_from IS NOT NULL THEN 'from' WHEN p_sub_mode = 'new' THEN 'new' ELSE 'all' END,
                CASE WHEN p_group = '__QUEUE_MODE__' THEN NULL WHEN p_sub_from IS NOT NULL THEN p_sub_from WHEN p_sub_mode = 'new' THEN clock_timestamp() END)
        ON CONFLICT (queue_id, consumer_group) DO NOTHING;
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
        INSERT INTO queen.consumer_cursors (partition_id, consumer_group, cursor_offset, delivered_to)
        VALUES (o_pid, p_group, v_seed, v_seed)
        ON CONFLICT (partition_id, consumer_group) DO NOTHING;
    END IF;

    -- 3. The claim: one compare-and-set.
    UPDATE queen.consumer_cursors c SET
        lease_id = CASE WHEN p_auto_ack THEN NULL ELSE p_lease END,
        lease_expires_at = CASE WHEN p_auto_ack THEN NULL ELSE clock_timestamp() + make_interval(secs => v_lease_s) END,
        delivered_to = c.cursor_offset, delivered_count = 0, acked_count = 0,
        updated_at = clock_timestamp()
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
           coalesce(sum(least(d.n, p_batch - (d.run - d.n))), 0)
    INTO o_bases, o_created, o_payloads, o_to, v_n
    FROM (
        SELECT w.*, sum(w.n) OVER (ORDER BY w.end_offset) AS run
        FROM (
            SELECT x.base_offset, x.end_offset, x.created_at, x.payload,
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
    IF v_n = 0 THEN
        UPDATE queen.consumer_cursors c SET lease_id = NULL, lease_expires_at = NULL, updated_at = clock_timestamp()
        WHERE c.partition_id = o_pid AND c.consumer_group = p_group;
        o_status := 'empty';
        o_expires := NULL;
        RETURN;
    END IF;
    IF p_auto_ack THEN
        UPDATE queen.consumer_cursors c SET cursor_offset = o_to, delivered_to = o_to,
            delivered_count = v_n, acked_count = v_n, retry_count = 0, updated_at = clock_timestamp()
        WHERE c.partition_id = o_pid AND c.consumer_group = p_group;
    ELSE
        UPDATE queen.consumer_cursors c SET delivered_to = o_to, delivered_count = v_n
        WHERE c.partition_id = o_pid AND c.consumer_group = p_group;
    END IF;
    o_status := 'ok';
END
$$;

-- consumer_ack_v1: acknowledgements of one partition for one group, in one
-- call and one lock of the cursor row. Each item is a transactionId's hash
-- (16 bytes each in p_hashes, xxh3_128 as in the hash blobs), its status
-- and error. A transactionId is resolved to its offset only inside what the
-- lease delivered, (cursor, delivered_to]: the segments of that range and
-- nothing else of the partition's history are read.
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
CREATE FUNCTION queen.consumer_ack_v1(
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

-- consumer_extend_v1: a lease's expiry becomes max(current, now + seconds)
-- on every partition it holds (one pop's lease may hold several), only
-- while it has not expired. The rows are locked in ascending
-- (partition_id, consumer_group). No row: unknown or expired.
-- consumer_shrink_v1: a pop delivered less than consumer_pop_v1 recorded
-- (its answer would have been larger than the transport carries): what it
-- delivered ends at p_to, p_n messages. Only while nothing moved since: the
-- same lease (or, with auto-ack, the cursor still where the pop left it).
-- Answers whether it applied.
CREATE FUNCTION queen.consumer_shrink_v1(p_pid bigint, p_group text, p_lease uuid, p_old_to bigint, p_to bigint, p_n integer)
RETURNS boolean
LANGUAGE sql
AS $$
    WITH s AS (
        UPDATE queen.consumer_cursors c SET
            delivered_to = p_to, delivered_count = p_n,
            cursor_offset = CASE WHEN p_lease IS NULL THEN p_to ELSE c.cursor_offset END,
            acked_count = CASE WHEN p_lease IS NULL THEN p_n ELSE c.acked_count END,
            updated_at = clock_timestamp()
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group AND c.delivered_to = p_old_to
          AND (CASE WHEN p_lease IS NULL THEN c.lease_id IS NULL AND c.cursor_offset = p_old_to ELSE c.lease_id = p_lease END)
        RETURNING 1
    )
    SELECT count(*) = 1 FROM s
$$;

CREATE FUNCTION queen.consumer_extend_v1(p_tenant uuid, p_lease uuid, p_seconds integer) RETURNS timestamptz
LANGUAGE sql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
    WITH held AS (
        SELECT c.partition_id, c.consumer_group FROM queen.consumer_cursors c
        JOIN queen.log_partitions p ON p.id = c.partition_id
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE c.lease_id = p_lease AND c.lease_expires_at > clock_timestamp() AND q.tenant = p_tenant
        ORDER BY c.partition_id, c.consumer_group
        FOR UPDATE OF c
    ), ext AS (
        UPDATE queen.consumer_cursors c SET
            lease_expires_at = greatest(c.lease_expires_at, clock_timestamp() + make_interval(secs => p_seconds)),
            updated_at = clock_timestamp()
        FROM held h
        WHERE c.partition_id = h.partition_id AND c.consumer_group = h.consumer_group
        RETURNING c.lease_expires_at
    )
    SELECT max(lease_expires_at) FROM ext
$$;

-- consumer_floor_v1: the highest offset retention may remove from a
-- partition of a queue that keeps what its groups have not consumed
-- (retainUnconsumed): the lowest cursor of the groups that read the
-- queue, 0 while one of them has no cursor on this partition yet; with no
-- group at all, no limit.
CREATE FUNCTION queen.consumer_floor_v1(p_pid bigint, p_qid bigint) RETURNS bigint
LANGUAGE sql STABLE
SET enable_seqscan = off
AS $$
    SELECT CASE
        WHEN EXISTS (SELECT 1 FROM queen.consumer_subscriptions s
                     WHERE s.queue_id = p_qid
                       AND NOT EXISTS (SELECT 1 FROM queen.consumer_cursors c
                                       WHERE c.partition_id = p_pid AND c.consumer_group = s.consumer_group)) THEN 0
        ELSE coalesce((SELECT min(c.cursor_offset) FROM queen.consumer_cursors c WHERE c.partition_id = p_pid),
                      9223372036854775807) END
$$;

-- log_retention_step_v1, as migration 0006 defined it, and for queues with
-- the option retainUnconsumed (other_options, true): a segment is removed
-- only once every group that reads the queue has acknowledged past its end
-- (consumer_floor_v1). Without the option, a cursor that retention passed
-- skips ahead: pops read the segments after it that are left. The lock
-- order is unchanged (at most p_max_partitions partition rows, ascending
-- id); consumer rows are only read, never locked, here.
CREATE OR REPLACE FUNCTION queen.log_retention_step_v1(p_max_partitions integer, p_batch integer,
    OUT o_partitions integer, OUT o_segments bigint, OUT o_txns bigint)
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
DECLARE
    r       record;
    n       bigint;
    removed bigint;
BEGIN
    o_partitions := 0; o_segments := 0; o_txns := 0;
    IF NOT EXISTS (SELECT 1 FROM queen.queues WHERE retention_seconds > 0) THEN
        RETURN;
    END IF;
    FOR r IN
        SELECT p.id,
               clock_timestamp() - make_interval(secs => q.retention_seconds) AS segments_before,
               clock_timestamp() - make_interval(secs => greatest(q.retention_seconds, q.dedup_window_seconds)) AS txns_before,
               CASE WHEN q.other_options -> 'retainUnconsumed' = 'true'::jsonb THEN queen.consumer_floor_v1(p.id, q.id)
                    ELSE 9223372036854775807 END AS floor
        FROM queen.log_partitions p
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE q.retention_seconds > 0
          AND ((SELECT s.created_at FROM queen.log_segments s WHERE s.partition_id = p.id
                  AND (q.other_options -> 'retainUnconsumed' IS DISTINCT FROM 'true'::jsonb
                       OR s.end_offset <= queen.consumer_floor_v1(p.id, q.id))
                ORDER BY s.end_offset LIMIT 1)
                   < clock_timestamp() - make_interval(secs => q.retention_seconds)
               OR (SELECT t.created_at FROM queen.log_txns t WHERE t.partition_id = p.id ORDER BY t.end_offset LIMIT 1)
                   < clock_timestamp() - make_interval(secs => greatest(q.retention_seconds, q.dedup_window_seconds)))
        ORDER BY p.id
        LIMIT p_max_partitions
        FOR UPDATE OF p
    LOOP
        WITH gone AS (
            DELETE FROM queen.log_segments s
            WHERE s.partition_id = r.id AND s.end_offset IN (
                SELECT x.end_offset FROM queen.log_segments x
                WHERE x.partition_id = r.id AND x.created_at < r.segments_before AND x.end_offset <= r.floor
                ORDER BY x.end_offset LIMIT p_batch)
            RETURNING s.partition_id, s.end_offset, s.base_offset, s.created_at, s.hashes
        ), kept AS (
            INSERT INTO queen.log_txns (partition_id, end_offset, base_offset, created_at, hashes)
            SELECT g.partition_id, g.end_offset, g.base_offset, g.created_at, g.hashes FROM gone g
            WHERE g.hashes IS NOT NULL AND g.created_at >= r.txns_before
        )
        SELECT count(*) INTO n FROM gone;
        o_segments := o_segments + n;
        removed := n;

        DELETE FROM queen.log_txns t
        WHERE t.partition_id = r.id AND t.end_offset IN (
            SELECT x.end_offset FROM queen.log_txns x
            WHERE x.partition_id = r.id AND x.created_at < r.txns_before
            ORDER BY x.end_offset LIMIT p_batch);
        GET DIAGNOSTICS n = ROW_COUNT;
        o_txns := o_txns + n;
        removed := removed + n;
        IF removed > 0 THEN
            UPDATE queen.log_partitions p SET txns_start = coalesce(least(
                (SELECT t.base_offset FROM queen.log_txns t WHERE t.partition_id = r.id ORDER BY t.end_offset LIMIT 1),
                (SELECT s.base_offset FROM queen.log_segments s WHERE s.partition_id = r.id ORDER BY s.end_offset LIMIT 1)),
                p.last_offset + 1)
            WHERE p.id = r.id;
        END IF;
        o_partitions := o_partitions + 1;
    END LOOP;
END
$$;
