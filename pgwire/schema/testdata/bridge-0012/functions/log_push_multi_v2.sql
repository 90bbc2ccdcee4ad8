-- log_push_multi_v2, the bundle call: it commits N segments, one per input
-- ordinal, over N distinct partitions, in one transaction. The bridge sends
-- the common bundle (partitions it knows, whose probe range is empty) as a
-- statement of its own (pgwire/push_known.go); everything else comes here:
-- new partitions, probes, replays, forgotten ranges, a failed expectation.
-- docs/write-path.md has the rules and the costs.
--
-- Its order and guarantees: alignment guard, provisioning skip, one ordered
-- pre-lock, the bundle timestamp after the locks, the bounded probe, a
-- duplicate segment writes nothing, completeness guard, input-order results.
-- The work is done per bundle, not per segment:
--
--   * callers pass the partition ids they already know (every result names
--     one), so only new partitions are resolved by name and provisioned;
--   * the pre-lock also reads each partition's last_offset and txns_start
--     under the lock, which decides which segments need a probe at all;
--   * every segment whose probe range is empty (the common case with a tight
--     p_verified) is allocated by one set-based UPDATE and stored by one
--     INSERT, all in one statement; a segment is one row, its payload and
--     its hash blob;
--   * results are typed arrays, not JSON built per segment;
--   * its statements run on generic plans: custom plans were re-made on
--     every call (array parameters defeat the plan cache's cost comparison),
--     which was a third of the call's CPU. They may not scan log_partitions
--     sequentially: a generic plan made while the table was small (a fresh
--     deployment, before autovacuum's first ANALYZE) would otherwise keep
--     doing so for the life of the session.
--
-- p_forgot_lo/p_forgot_hi (optional) name per segment a second range
-- (lo, hi] to probe below p_verified: frames the caller wrote but no longer
-- remembers. Only that range is probed, not everything above it.
--
-- p_pids (optional) carries each segment's partition id where the caller
-- knows it, 0 where not. A known id is still checked against tenant, queue
-- and partition name in the pre-lock, so a stale id fails the bundle (the
-- completeness guard) instead of writing to another partition.
--
-- p_min_windows (optional) widens a segment's probe window: replayed spool
-- records are probed even on queues whose window is 0.
--
-- Results, in input order:
--   o_pids[k]  partition id of segment k
--   o_wins[k]  the queue's deduplication window (seconds)
--   o_bases[k] first offset of segment k, or 0 when it was a duplicate
--   o_ts       the bundle timestamp
--   o_dup_segs, o_dup_idx, o_dup_offs: one entry per duplicate frame:
--              segment ordinal, frame index in it, the original's offset
--   o_qids[k]  the queue id of segment k, which the bridge then sends with
--              the known-partition statement
--
-- Lock order: queue rows (share, only where partitions are made), then
-- partition rows in ascending log_partitions.id.

CREATE OR REPLACE FUNCTION queen.log_push_multi_v2(
    p_queues      text[],
    p_partitions  text[],
    p_msg_counts  integer[],
    p_hashes      bytea[],
    p_verified    bigint[],
    p_blobs       bytea[],
    p_tenants     uuid[]    DEFAULT NULL,
    p_min_windows integer[] DEFAULT NULL,
    p_pids        bigint[]  DEFAULT NULL,
    p_forgot_lo   bigint[]  DEFAULT NULL,
    p_forgot_hi   bigint[]  DEFAULT NULL,
    OUT o_pids     bigint[],
    OUT o_wins     integer[],
    OUT o_bases    bigint[],
    OUT o_ts       timestamptz,
    OUT o_dup_segs integer[],
    OUT o_dup_idx  integer[],
    OUT o_dup_offs bigint[],
    OUT o_qids     bigint[]
)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
DECLARE
    n          integer := coalesce(array_length(p_queues, 1), 0);
    v_tenants  uuid[];
    v_kpids    bigint[];
    v_locked   integer;
    v_bad      integer;
    v_wrong    integer;
    -- per locked segment, in lock order (ascending partition id)
    v_ords     integer[];
    v_pids     bigint[];
    v_wins     integer[];
    v_qids     bigint[];
    v_lo       bigint[];   -- probe range (v_lo, v_hi], used where v_probe
    v_hi       bigint[];
    v_pwin     integer[];  -- probe window: greatest(queue window, p_min_windows)
    v_probe    boolean[];
    v_skip     integer[];  -- ordinals of duplicate segments: written by nobody
    v_written  integer;
    v_dups     jsonb;
    i          integer;
    k          integer;
BEGIN
    -- 1. Alignment guard: a silent misalignment would hand one request's
    -- verdict to another.
    IF coalesce(array_length(p_partitions, 1), 0) <> n
       OR coalesce(array_length(p_msg_counts, 1), 0) <> n
       OR coalesce(array_length(p_hashes, 1), 0) <> n
       OR coalesce(array_length(p_verified, 1), 0) <> n
       OR coalesce(array_length(p_blobs, 1), 0) <> n
       OR (p_tenants IS NOT NULL AND coalesce(array_length(p_tenants, 1), 0) <> n)
       OR (p_min_windows IS NOT NULL AND coalesce(array_length(p_min_windows, 1), 0) <> n)
       OR (p_pids IS NOT NULL AND coalesce(array_length(p_pids, 1), 0) <> n)
       OR (p_forgot_lo IS NOT NULL AND coalesce(array_length(p_forgot_lo, 1), 0) <> n)
       OR (p_forgot_hi IS NOT NULL AND coalesce(array_length(p_forgot_hi, 1), 0) <> n) THEN
        RAISE EXCEPTION 'log_push_multi_v2: misaligned arrays: queues %, partitions %, msg_counts %, hashes %, verified %, blobs %, tenants %, min_windows %, pids %, forgot_lo %, forgot_hi %',
            n, array_length(p_partitions, 1), array_length(p_msg_counts, 1), array_length(p_hashes, 1),
            array_length(p_verified, 1), array_length(p_blobs, 1), array_length(p_tenants, 1),
            array_length(p_min_windows, 1), array_length(p_pids, 1), array_length(p_forgot_lo, 1),
            array_length(p_forgot_hi, 1)
            USING ERRCODE = '22023';
    END IF;
    o_dup_segs := '{}'; o_dup_idx := '{}'; o_dup_offs := '{}';
    IF n = 0 THEN
        o_pids := '{}'; o_wins := '{}'; o_bases := '{}'; o_qids := '{}';
        o_ts := clock_timestamp();
        RETURN;
    END IF;
    v_tenants := coalesce(p_tenants, array_fill('00000000-0000-0000-0000-000000000000'::uuid, ARRAY[n]));
    v_kpids := coalesce(p_pids, array_fill(0::bigint, ARRAY[n]));

    -- 2. Resolution and the provisioning skip, for unknown partitions only.
    -- The look-up is a correlated scalar subquery per unknown row through the
    -- unique indexes (a hash anti-join would read every partition row).
    -- Only if something is still missing do the two ordered inserts run: ON
    -- CONFLICT takes its speculative locks in row order.
    IF array_position(v_kpids, 0) IS NOT NULL OR array_position(v_kpids, NULL) IS NOT NULL THEN
        FOR i IN 1 .. 2 LOOP
            SELECT array_agg(coalesce(nullif(u.kp, 0),
                       (SELECT p.id FROM queen.queues q JOIN queen.log_partitions p ON p.queue_id = q.id
                        WHERE q.tenant = u.t AND q.name = u.qn AND p.name = u.pn)) ORDER BY u.ord)
            INTO v_kpids
            FROM unnest(v_kpids, p_queues, p_partitions, v_tenants) WITH ORDINALITY AS u(kp, qn, pn, t, ord);
            EXIT WHEN i = 2 OR array_position(v_kpids, NULL) IS NULL;
            INSERT INTO queen.queues (tenant, name, namespace, task)
            SELECT DISTINCT u.t, u.qn, split_part(u.qn, '.', 1), split_part(u.qn, '.', 2)
            FROM unnest(p_queues, v_tenants, v_kpids) AS u(qn, t, kp)
            WHERE u.kp IS NULL
            ORDER BY 1, 2
            ON CONFLICT (tenant, name) DO NOTHING;
            -- The partition name's length, checked here where partitions
            -- are made (the table's CHECK would be evaluated again on every
            -- allocation UPDATE).
            IF EXISTS (SELECT 1 FROM unnest(p_partitions, v_kpids) AS u(pn, kp)
                       WHERE u.kp IS NULL AND octet_length(u.pn) NOT BETWEEN 1 AND 255) THEN
                RAISE EXCEPTION 'log_push_multi_v2: a partition name must be 1 to 255 bytes'
                    USING ERRCODE = '23514';
            END IF;
            -- The window copied into the new partition rows is read under a
            -- share lock on the queue rows (ascending id): a configure that
            -- changes the window waits for this bundle, or this bundle for it,
            -- so its trigger never misses a partition made meanwhile. Queue
            -- rows are locked before partition rows, everywhere.
            PERFORM 1 FROM queen.queues q
            WHERE (q.tenant, q.name) IN (SELECT u.t, u.qn FROM unnest(p_queues, v_tenants, v_kpids) AS u(qn, t, kp) WHERE u.kp IS NULL)
            ORDER BY q.id
            FOR SHARE;
            INSERT INTO queen.log_partitions (queue_id, name, dedup_window_seconds)
            SELECT DISTINCT q.id, u.pn, q.dedup_window_seconds
            FROM unnest(p_queues, p_partitions, v_tenants, v_kpids) AS u(qn, pn, t, kp)
            JOIN queen.queues q ON q.tenant = u.t AND q.name = u.qn
            WHERE u.kp IS NULL
            ORDER BY 1, 2
            ON CONFLICT (queue_id, name) DO NOTHING;
            v_kpids := array_replace(v_kpids, NULL, 0::bigint);
        END LOOP;
    END IF;

    -- 3. One set-based pre-lock, ascending log_partitions.id: the one global
    -- lock order (push, retention), which is why bundles cannot deadlock.
    -- Rows come back after their lock is granted, at their latest version,
    -- so last_offset and txns_start are read under the lock, and with them
    -- each segment's probe range: (greatest(p_verified, txns_start - 1),
    -- last_offset], joined by the forgotten range where there is one (one
    -- range from the lower start to the higher end), in a window > 0.
    -- The join runs from the given ids through the primary keys; the names
    -- are checked after it (as join conditions they let the planner drive
    -- from queues and read every partition of the queue per segment).
    -- The aggregates keep the subquery's (lock) order: no sorts.
    SELECT count(*), min(s.ord) FILTER (WHERE s.bad), min(s.ord) FILTER (WHERE s.wrong),
           array_agg(s.ord), array_agg(s.pid), array_agg(s.win), array_agg(s.qid),
           array_agg(CASE WHEN s.lo < s.last AND s.flo < s.fhi THEN least(s.lo, s.flo)
                          WHEN s.lo < s.last THEN s.lo ELSE s.flo END),
           array_agg(CASE WHEN s.lo < s.last THEN s.last ELSE s.fhi END),
           array_agg(s.pwin),
           array_agg(s.pwin > 0 AND (s.lo < s.last OR s.flo < s.fhi))
    INTO v_locked, v_bad, v_wrong, v_ords, v_pids, v_wins, v_qids, v_lo, v_hi, v_pwin, v_probe
    FROM (
        SELECT u.ord::integer AS ord, p.id AS pid, q.dedup_window_seconds AS win, p.queue_id AS qid,
               p.last_offset AS last,
               greatest(coalesce(u.v, 0), p.txns_start - 1) AS lo,
               greatest(coalesce(u.flo, 0), p.txns_start - 1) AS flo,
               least(coalesce(u.fhi, 0), p.last_offset) AS fhi,
               greatest(q.dedup_window_seconds, coalesce(u.mw, 0)) AS pwin,
               (u.n IS NULL OR u.n < 1 OR octet_length(u.h) IS DISTINCT FROM 16 * u.n) AS bad,
               (p.name IS DISTINCT FROM u.pn OR q.name IS DISTINCT FROM u.qn OR q.tenant IS DISTINCT FROM u.t) AS wrong
        FROM unnest(v_kpids, p_queues, p_partitions, v_tenants, p_msg_counts, p_verified, p_min_windows, p_hashes,
                    p_forgot_lo, p_forgot_hi)
             WITH ORDINALITY AS u(kp, qn, pn, t, n, v, mw, h, flo, fhi, ord)
        JOIN queen.log_partitions p ON p.id = u.kp
        JOIN queen.queues q ON q.id = p.queue_id
        ORDER BY p.id
        FOR UPDATE OF p
    ) s;

    -- Completeness guard: every input ordinal resolved to a locked partition.
    IF v_locked <> n THEN
        RAISE EXCEPTION 'log_push_multi_v2: % of % segments produced a result (missing ordinal %)',
            v_locked, n, (SELECT min(g) FROM generate_series(1, n) g WHERE g <> ALL (coalesce(v_ords, '{}')))
            USING ERRCODE = 'XX000';
    END IF;
    -- A known id must name the partition it is sent with: a stale one fails
    -- the bundle instead of writing to another partition.
    IF v_wrong IS NOT NULL THEN
        RAISE EXCEPTION 'log_push_multi_v2: segment %: partition id % is not partition % of queue % (tenant %)',
            v_wrong, v_kpids[v_wrong], p_partitions[v_wrong], p_queues[v_wrong], v_tenants[v_wrong]
            USING ERRCODE = '22023';
    END IF;
    -- Stride guard: position k of the hash blob is frame k; a wrong length
    -- would attribute verdicts to the wrong frames.
    IF v_bad IS NOT NULL THEN
        IF p_msg_counts[v_bad] IS NULL OR p_msg_counts[v_bad] < 1 THEN
            RAISE EXCEPTION 'log_push_multi_v2: segment %: msg_count must be at least 1, got %',
                v_bad, p_msg_counts[v_bad]
                USING ERRCODE = '22023';
        END IF;
        RAISE EXCEPTION 'log_push_multi_v2: segment %: hash blob is % bytes, want 16 x % = %',
            v_bad, octet_length(p_hashes[v_bad]), p_msg_counts[v_bad], 16 * p_msg_counts[v_bad]
            USING ERRCODE = '22023';
    END IF;

    -- 4. The bundle timestamp, once, after the locks.
    o_ts := clock_timestamp();

    -- 5a. Probes, only where the range is not empty, ascending partition id.
    -- A duplicate segment writes nothing: its ordinal is skipped below.
    IF true = ANY (v_probe) THEN
        FOR k IN 1 .. n LOOP
            CONTINUE WHEN NOT v_probe[k];
            v_dups := queen.log_probe_v2(v_pids[k], v_lo[k], v_hi[k],
                                         clock_timestamp() - make_interval(secs => v_pwin[k]),
                                         p_hashes[v_ords[k]], p_msg_counts[v_ords[k]]);
            CONTINUE WHEN v_dups IS NULL;
            v_skip := array_append(v_skip, v_ords[k]);
            SELECT o_dup_segs || array_agg(v_ords[k] ORDER BY d.i),
                   o_dup_idx || array_agg(d.i ORDER BY d.i),
                   o_dup_offs || array_agg(d.off ORDER BY d.i)
            INTO o_dup_segs, o_dup_idx, o_dup_offs
            FROM jsonb_to_recordset(v_dups) AS d(i integer, off bigint);
        END LOOP;
    END IF;

    -- 5b. The allocator: one UPDATE moves last_offset of every partition with
    -- a segment to write, and the same statement stores the segments, each
    -- one row with its payload and hash blobs, then answers in input
    -- order. base_offset = last_offset - msg_count + 1.
    -- last_write_at moves at most once a second, so the update stays HOT
    -- although that column is indexed. UPDATE ... FROM applies one FROM row
    -- per target row, so a partition named twice would lose an allocation:
    -- the count of written segments makes that loud.
    WITH a AS (
        UPDATE queen.log_partitions p SET
            last_offset   = p.last_offset + p_msg_counts[u.ord],
            last_write_at = CASE WHEN clock_timestamp() - p.last_write_at > interval '1 second'
                                 THEN clock_timestamp() ELSE p.last_write_at END
        FROM unnest(v_pids, v_ords) AS u(id, ord)
        WHERE p.id = u.id AND (v_skip IS NULL OR u.ord <> ALL (v_skip))
        RETURNING u.ord, p.id, p.last_offset AS last, p.last_offset - p_msg_counts[u.ord] + 1 AS base
    ), s AS (
        INSERT INTO queen.log_segments (partition_id, end_offset, base_offset, msg_count, created_at, payload, hashes)
        SELECT a.id, a.last, a.base, p_msg_counts[a.ord], o_ts, p_blobs[a.ord], p_hashes[a.ord] FROM a
    )
    SELECT count(a.ord), array_agg(l.pid ORDER BY l.ord), array_agg(l.win ORDER BY l.ord),
           array_agg(coalesce(a.base, 0) ORDER BY l.ord), array_agg(l.qid ORDER BY l.ord)
    INTO v_written, o_pids, o_wins, o_bases, o_qids
    FROM unnest(v_ords, v_pids, v_wins, v_qids) AS l(ord, pid, win, qid) LEFT JOIN a ON a.ord = l.ord;

    IF v_written + coalesce(array_length(v_skip, 1), 0) <> n THEN
        RAISE EXCEPTION 'log_push_multi_v2: % segments over fewer partitions: one segment per partition per bundle', n
            USING ERRCODE = '22023';
    END IF;
END
$$;
