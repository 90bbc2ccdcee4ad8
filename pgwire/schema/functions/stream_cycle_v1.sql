-- stream_cycle_v1: one cycle of a streaming query (POST /streams/v1/cycle,
-- pgwire.StreamCycle): the processed batch of one source partition,
-- committed all or nothing in one call and one PostgreSQL transaction.
--
--   0. The query must be the tenant's, and the partition a partition of one
--      of the tenant's queues; else o_fail 'query' or 'partition'.
--   1. Cycles of one (query, partition) are serialized by a transaction
--      advisory lock on the pair, taken before any row lock and by cycles
--      alone (state reads take it shared, pgwire.StreamState, and lock no
--      row): a cycle waits for it holding nothing, and nothing that holds a
--      row waits for it, so it adds no edge to the lock order. Cycles of
--      other partitions do not wait.
--   2. The sink pushes and the source acknowledgement through txn_apply_v1,
--      the transaction wire's call (log_push_multi_v2: ordered pre-lock of
--      the pushed partition rows, the probe, the allocator; then
--      consumer_ack_v1, its consumer row after every partition row). Its
--      failure (o_fail 'duplicate', 'ack' or 'lease') rolled its block back;
--      this call returns it as it is and writes nothing.
--   3. With p_release and an acknowledgement whose lease is still held, the
--      lease is released (the tail the lease delivered beyond the
--      acknowledged message is delivered again); without it the lease stays
--      unless the acknowledgement reached everything the lease delivered.
--   4. The state operations, after every partition and consumer row: rows
--      of this (query, partition) in ascending key, the order reset and
--      queue deletes lock state rows in (ops of one key keep their order).
--      'upsert' stores the value, 'delete' removes the row.
--
-- Results when o_fail is NULL: txn_apply_v1's per segment and per ack, and
-- o_released (the lease was released), o_ops (state operations applied).

CREATE OR REPLACE FUNCTION queen.stream_cycle_v1(
    p_tenant        uuid,
    p_query         uuid,
    p_pid           bigint,
    p_queues        text[],
    p_partitions    text[],
    p_counts        integer[],
    p_hashes        bytea[],
    p_verified      bigint[],
    p_blobs         bytea[],
    p_ack_group     text,
    p_ack_lease     uuid,
    p_ack_hash      bytea,
    p_ack_status    text,
    p_ack_error     text,
    p_ack_txid      text,
    p_release       boolean,
    p_op_deletes    boolean[],
    p_op_keys       text[],
    p_op_values     jsonb[],
    OUT o_fail        text,
    OUT o_fail_reason text,
    OUT o_dup_segs    integer[],
    OUT o_dup_idx     integer[],
    OUT o_dup_offs    bigint[],
    OUT o_pids        bigint[],
    OUT o_qids        bigint[],
    OUT o_wins        integer[],
    OUT o_bases       bigint[],
    OUT o_ts          timestamptz,
    OUT o_dlq         boolean,
    OUT o_released    boolean,
    OUT o_queue       text,
    OUT o_name        text,
    OUT o_cursor      bigint,
    OUT o_ops         integer
)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    t      record;
    m      integer := CASE WHEN p_ack_txid IS NULL THEN 0 ELSE 1 END;
    op     record;
BEGIN
    o_dlq := false; o_released := false; o_ops := 0;
    PERFORM 1 FROM queen.stream_queries q WHERE q.id = p_query AND q.tenant = p_tenant;
    IF NOT FOUND THEN
        o_fail := 'query';
        RETURN;
    END IF;
    PERFORM 1 FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE p.id = p_pid AND q.tenant = p_tenant;
    IF NOT FOUND THEN
        o_fail := 'partition';
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext(p_query::text), hashtext(p_pid::text));

    SELECT * INTO t FROM queen.txn_apply_v1(p_tenant, p_queues, p_partitions, p_counts, p_hashes, p_verified, p_blobs,
        CASE WHEN m = 1 THEN ARRAY[p_pid] ELSE '{}'::bigint[] END,
        CASE WHEN m = 1 THEN ARRAY[p_ack_group] ELSE '{}'::text[] END,
        CASE WHEN m = 1 THEN ARRAY[p_ack_lease] ELSE '{}'::uuid[] END,
        CASE WHEN m = 1 THEN ARRAY[1] ELSE '{}'::integer[] END,
        CASE WHEN m = 1 THEN p_ack_hash ELSE ''::bytea END,
        CASE WHEN m = 1 THEN ARRAY[p_ack_status] ELSE '{}'::text[] END,
        CASE WHEN m = 1 THEN ARRAY[p_ack_error] ELSE '{}'::text[] END,
        CASE WHEN m = 1 THEN ARRAY[p_ack_txid] ELSE '{}'::text[] END);
    o_dup_segs := t.o_dup_segs; o_dup_idx := t.o_dup_idx; o_dup_offs := t.o_dup_offs;
    IF t.o_fail IS NOT NULL THEN
        o_fail := t.o_fail;
        o_fail_reason := t.o_fail_reason;
        RETURN;
    END IF;
    o_pids := t.o_pids; o_qids := t.o_qids; o_wins := t.o_wins; o_bases := t.o_bases; o_ts := t.o_ts;
    IF m = 1 THEN
        o_dlq := t.o_dlq[1]; o_released := t.o_released[1];
        o_queue := t.o_queues[1]; o_name := t.o_names[1]; o_cursor := t.o_cursors[1];
        IF p_release AND NOT o_released THEN
            UPDATE queen.consumer_cursors c
            SET lease_id = NULL, lease_expires_at = NULL, retry_count = 0, updated_at = clock_timestamp()
            WHERE c.partition_id = p_pid AND c.consumer_group = p_ack_group AND c.lease_id IS NOT NULL;
            o_released := FOUND;
        END IF;
    END IF;

    FOR op IN SELECT u.del, u.k, u.v FROM unnest(p_op_deletes, p_op_keys, p_op_values) WITH ORDINALITY AS u(del, k, v, i)
              ORDER BY u.k COLLATE "C", u.i LOOP
        IF op.del THEN
            DELETE FROM queen.stream_state s WHERE s.query_id = p_query AND s.partition_id = p_pid AND s.key = op.k;
        ELSE
            INSERT INTO queen.stream_state (query_id, partition_id, key, value)
            VALUES (p_query, p_pid, op.k, op.v)
            ON CONFLICT (query_id, partition_id, key) DO UPDATE SET value = excluded.value, updated_at = clock_timestamp();
        END IF;
        o_ops := o_ops + 1;
    END LOOP;
END
$$;
