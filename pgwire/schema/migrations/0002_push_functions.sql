-- The write path's functions. log_push_one_v1 is the single allocator: every
-- offset is assigned there, under the partition row lock.

-- log_probe_v1 looks for incoming hashes among the frames stored in
-- (p_lo, p_hi] of a partition no older than p_since. It answers
-- [{"i": incoming index, "off": original offset}, ...] or NULL. The offset range
-- bounds the index scan; the time cap only filters. The join must be a hash
-- join: a merge join sorts every stored frame in the range. The planner is told
-- so here, on this function alone, which only runs when the range is non-empty.
-- JIT is off: its compile time (~200 ms here) dwarfs any probe this runs.
CREATE OR REPLACE FUNCTION queen.log_probe_v1(
    p_pid bigint, p_lo bigint, p_hi bigint, p_since timestamptz,
    p_hashes bytea, p_count integer
) RETURNS jsonb
LANGUAGE sql STABLE
SET enable_mergejoin = off
SET jit = off
AS $$
    SELECT jsonb_agg(jsonb_build_object('i', d.i, 'off', d.off) ORDER BY d.i)
    FROM (
        SELECT inc.k AS i, min(st.off) AS off
        FROM (
            SELECT t.base_offset + s.j AS off,
                   substring(t.hashes FROM (s.j * 16 + 1)::integer FOR 16) AS h
            FROM queen.log_txns t,
                 generate_series(greatest(0, p_lo + 1 - t.base_offset),
                                 least(t.end_offset, p_hi) - t.base_offset) AS s(j)
            WHERE t.partition_id = p_pid
              AND t.end_offset > p_lo
              AND t.base_offset <= p_hi
              AND t.created_at >= p_since
        ) st
        JOIN (
            SELECT k, substring(p_hashes FROM k * 16 + 1 FOR 16) AS h
            FROM generate_series(0, p_count - 1) AS k
        ) inc ON inc.h = st.h
        GROUP BY inc.k
    ) d
$$;

-- log_push_one_v1 writes one segment of p_count frames to partition p_pid, or,
-- when p_window > 0 and one of its hashes is already stored inside the window,
-- writes nothing and answers the duplicates. The caller holds the partition row
-- lock already (log_push_multi_v1's pre-lock); the statements below take it
-- again, which is free.
CREATE OR REPLACE FUNCTION queen.log_push_one_v1(
    p_pid      bigint,
    p_window   integer,
    p_tenant   uuid,
    p_count    integer,
    p_hashes   bytea,
    p_verified bigint,
    p_blob     bytea,
    p_now      timestamptz,
    OUT o_base bigint,
    OUT o_dups jsonb
)
LANGUAGE plpgsql AS $$
DECLARE
    v_last  bigint;
    v_start bigint;
    v_lo    bigint;
BEGIN
    IF p_count IS NULL OR p_count < 1 THEN
        RAISE EXCEPTION 'log_push_one_v1: partition %: msg_count must be at least 1, got %', p_pid, p_count
            USING ERRCODE = '22023';
    END IF;
    -- Stride guard: position k of the blob is frame k; a wrong length would
    -- attribute verdicts to the wrong frames.
    IF octet_length(p_hashes) IS DISTINCT FROM 16 * p_count THEN
        RAISE EXCEPTION 'log_push_one_v1: partition %: hash blob is % bytes, want 16 x % = %',
            p_pid, octet_length(p_hashes), p_count, 16 * p_count
            USING ERRCODE = '22023';
    END IF;

    IF p_window > 0 THEN
        SELECT last_offset, txns_start INTO v_last, v_start
        FROM queen.log_partitions WHERE id = p_pid FOR UPDATE;
        v_lo := greatest(coalesce(p_verified, 0), v_start - 1);
        IF v_lo < v_last THEN
            o_dups := queen.log_probe_v1(p_pid, v_lo, v_last,
                                         clock_timestamp() - make_interval(secs => p_window),
                                         p_hashes, p_count);
            IF o_dups IS NOT NULL THEN
                RETURN; -- nothing written: no allocator bump, no inserts
            END IF;
        END IF;
    END IF;

    -- The one allocation statement. last_write_at moves at most once a
    -- second, so the update stays HOT although that column is indexed.
    UPDATE queen.log_partitions SET
        last_offset   = last_offset + p_count,
        last_write_at = CASE WHEN clock_timestamp() - last_write_at > interval '1 second'
                             THEN clock_timestamp() ELSE last_write_at END
    WHERE id = p_pid
    RETURNING last_offset INTO v_last;
    o_base := v_last - p_count + 1;

    INSERT INTO queen.log_segments (partition_id, end_offset, base_offset, msg_count, created_at, payload)
    VALUES (p_pid, v_last, o_base, p_count, p_now, p_blob);
    -- Unconditional: ack-by-transactionId resolves through it whatever the window.
    INSERT INTO queen.log_txns (partition_id, end_offset, base_offset, created_at, hashes)
    VALUES (p_pid, v_last, o_base, p_now, p_hashes);
END
$$;

-- log_push_multi_v1 commits N segments, one per input ordinal, in one
-- transaction. Results come back as a JSON array in input order:
--   {"pid": partition id, "win": window, "ts": bundle timestamp, "base": first offset}   queued
--   {"pid": partition id, "win": window, "ts": bundle timestamp, "dups": [{"i","off"}]}  duplicate
-- "win" is the queue's deduplication window in seconds, so the caller knows how
-- long its own record of what it wrote stands in for the probe.
-- p_min_windows (optional) widens a segment's probe window: replayed spool
-- records are probed even on queues whose window is 0.
CREATE OR REPLACE FUNCTION queen.log_push_multi_v1(
    p_queues      text[],
    p_partitions  text[],
    p_msg_counts  integer[],
    p_hashes      bytea[],
    p_verified    bigint[],
    p_blobs       bytea[],
    p_tenants     uuid[]    DEFAULT NULL,
    p_min_windows integer[] DEFAULT NULL
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    n         integer := coalesce(array_length(p_queues, 1), 0);
    v_tenants uuid[];
    v_missing bigint;
    v_ords    integer[];
    v_pids    bigint[];
    v_wins    integer[];
    v_now     timestamptz;
    v_res_pid bigint[];
    v_res_base bigint[];
    v_res_dups jsonb[];
    v_res_win integer[];
    v_one     record;
    v_ord     integer;
    i         integer;
BEGIN
    -- 1. Alignment guard: a silent misalignment would hand one request's
    -- verdict to another.
    IF coalesce(array_length(p_partitions, 1), 0) <> n
       OR coalesce(array_length(p_msg_counts, 1), 0) <> n
       OR coalesce(array_length(p_hashes, 1), 0) <> n
       OR coalesce(array_length(p_verified, 1), 0) <> n
       OR coalesce(array_length(p_blobs, 1), 0) <> n
       OR (p_tenants IS NOT NULL AND coalesce(array_length(p_tenants, 1), 0) <> n)
       OR (p_min_windows IS NOT NULL AND coalesce(array_length(p_min_windows, 1), 0) <> n) THEN
        RAISE EXCEPTION 'log_push_multi_v1: misaligned arrays: queues %, partitions %, msg_counts %, hashes %, verified %, blobs %, tenants %, min_windows %',
            n, array_length(p_partitions, 1), array_length(p_msg_counts, 1), array_length(p_hashes, 1),
            array_length(p_verified, 1), array_length(p_blobs, 1), array_length(p_tenants, 1),
            array_length(p_min_windows, 1)
            USING ERRCODE = '22023';
    END IF;
    IF n = 0 THEN
        RETURN '[]'::jsonb;
    END IF;
    v_tenants := coalesce(p_tenants, array_fill('00000000-0000-0000-0000-000000000000'::uuid, ARRAY[n]));

    -- 2. Provisioning skip: one existence count; the inserts run only when
    -- something is missing. Each insert is ordered on its unique key, because
    -- ON CONFLICT takes its speculative locks in row order. The look-up is a
    -- correlated scalar subquery on purpose: it runs once per input row
    -- through the unique indexes, where NOT EXISTS let the planner pick a
    -- hash anti-join that read every partition row on every call (0.38 ms at
    -- 1,000 partitions, growing with their number, against 0.10 ms).
    SELECT count(*) INTO v_missing
    FROM unnest(p_queues, p_partitions, v_tenants) AS u(qn, pn, t)
    WHERE (SELECT p.id FROM queen.queues q JOIN queen.log_partitions p ON p.queue_id = q.id
           WHERE q.tenant = u.t AND q.name = u.qn AND p.name = u.pn) IS NULL;
    IF v_missing > 0 THEN
        INSERT INTO queen.queues (tenant, name, namespace, task)
        SELECT DISTINCT u.t, u.qn, split_part(u.qn, '.', 1), split_part(u.qn, '.', 2)
        FROM unnest(p_queues, v_tenants) AS u(qn, t)
        ORDER BY 1, 2
        ON CONFLICT (tenant, name) DO NOTHING;
        INSERT INTO queen.log_partitions (queue_id, name)
        SELECT DISTINCT q.id, u.pn
        FROM unnest(p_queues, p_partitions, v_tenants) AS u(qn, pn, t)
        JOIN queen.queues q ON q.tenant = u.t AND q.name = u.qn
        ORDER BY 1, 2
        ON CONFLICT (queue_id, name) DO NOTHING;
    END IF;

    -- 3. One set-based pre-lock, ascending log_partitions.id: the one global
    -- lock order (push, retention), which is why bundles cannot deadlock.
    -- It also resolves each ordinal's partition id and window, once.
    SELECT array_agg(s.ord ORDER BY s.pid, s.ord),
           array_agg(s.pid ORDER BY s.pid, s.ord),
           array_agg(s.win ORDER BY s.pid, s.ord)
    INTO v_ords, v_pids, v_wins
    FROM (
        SELECT u.ord::integer AS ord, p.id AS pid, q.dedup_window_seconds AS win
        FROM unnest(p_queues, p_partitions, v_tenants) WITH ORDINALITY AS u(qn, pn, t, ord)
        JOIN queen.queues q ON q.tenant = u.t AND q.name = u.qn
        JOIN queen.log_partitions p ON p.queue_id = q.id AND p.name = u.pn
        ORDER BY p.id
        FOR UPDATE OF p
    ) s;

    -- 4. The bundle timestamp, once, after the locks.
    v_now := clock_timestamp();

    -- 5. Per segment, ascending partition id.
    v_res_pid := array_fill(NULL::bigint, ARRAY[n]);
    v_res_base := array_fill(NULL::bigint, ARRAY[n]);
    v_res_dups := array_fill(NULL::jsonb, ARRAY[n]);
    v_res_win := array_fill(NULL::integer, ARRAY[n]);
    FOR i IN 1 .. coalesce(array_length(v_ords, 1), 0) LOOP
        v_ord := v_ords[i];
        IF v_res_pid[v_ord] IS NOT NULL THEN
            RAISE EXCEPTION 'log_push_multi_v1: ordinal % resolved twice', v_ord USING ERRCODE = 'XX000';
        END IF;
        -- An assignment, not SELECT INTO: PL/pgSQL evaluates it as a simple
        -- expression, without starting an executor per segment (about 10 %
        -- of a 12-segment call here).
        v_one := queen.log_push_one_v1(
            v_pids[i],
            greatest(v_wins[i], coalesce(p_min_windows[v_ord], 0)),
            v_tenants[v_ord], p_msg_counts[v_ord], p_hashes[v_ord],
            p_verified[v_ord], p_blobs[v_ord], v_now);
        v_res_pid[v_ord] := v_pids[i];
        v_res_base[v_ord] := v_one.o_base;
        v_res_dups[v_ord] := v_one.o_dups;
        v_res_win[v_ord] := v_wins[i];
    END LOOP;

    -- 6. Completeness guard: every input ordinal has exactly one result.
    IF coalesce(array_length(v_ords, 1), 0) <> n OR array_position(v_res_pid, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'log_push_multi_v1: % of % segments produced a result (missing ordinal %)',
            coalesce(array_length(v_ords, 1), 0), n, array_position(v_res_pid, NULL)
            USING ERRCODE = 'XX000';
    END IF;

    RETURN (
        SELECT jsonb_agg(CASE WHEN u.d IS NULL
                              THEN jsonb_build_object('pid', u.p, 'win', u.w, 'ts', v_now, 'base', u.b)
                              ELSE jsonb_build_object('pid', u.p, 'win', u.w, 'ts', v_now, 'dups', u.d) END
                         ORDER BY u.o)
        FROM unnest(v_res_pid, v_res_base, v_res_dups, v_res_win) WITH ORDINALITY AS u(p, b, d, w, o));
END
$$;

-- log_segment_at_v1 returns the segment of partition p_pid that covers offset
-- p_off, or no row when retention removed it.
CREATE OR REPLACE FUNCTION queen.log_segment_at_v1(p_pid bigint, p_off bigint)
RETURNS TABLE (base_offset bigint, msg_count integer, created_at timestamptz, payload bytea)
LANGUAGE sql STABLE AS $$
    SELECT s.base_offset, s.msg_count, s.created_at, s.payload
    FROM queen.log_segments s
    WHERE s.partition_id = p_pid AND s.end_offset >= p_off AND s.base_offset <= p_off
    ORDER BY s.end_offset
    LIMIT 1
$$;
