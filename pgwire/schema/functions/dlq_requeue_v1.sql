-- dlq_requeue_v1: dead letters sent again (POST /api/v1/dlq/requeue,
-- pgwire.Requeue), all or nothing, in one call and one PostgreSQL
-- transaction: the new pushes of their messages, then the removal of the
-- dead-letter entries. docs/console.md has the rules.
--
--   1. The pushes: a transaction of pushes and no acknowledgements,
--      through txn_apply_v1 (which writes them as a bundle does, through
--      log_push_multi_v2: one pre-lock of every pushed partition row ORDER
--      BY id FOR UPDATE, the window probe, the allocator). The caller sets
--      p_verified to 0: the transactionIds are derived from the dead
--      letters, so the window is probed like any client's. A duplicate
--      frame aborts everything (txn_apply_v1 has rolled its pushes back),
--      and o_dup_* name every duplicate frame (segment ordinal, frame
--      index, the stored original's offset).
--   2. The dead letters p_dead, after every partition row (the one lock
--      order): the tenant's rows locked in ascending (partition, group,
--      offset), then deleted. One already gone (a concurrent requeue, a
--      message delete, a queue delete) or another tenant's aborts
--      everything: o_fail 'gone'.
--
-- An abort rolls back the block (a subtransaction): no offset moves, no
-- partition or queue made by the pushes stays, no dead letter goes; then
-- the call returns normally, saying why in o_fail. Any other error fails
-- the statement, and so its transaction, as usual.
--
-- Results when o_fail is NULL: per segment o_pids, o_qids, o_wins,
-- o_bases; the timestamp o_ts.

CREATE OR REPLACE FUNCTION queen.dlq_requeue_v1(
    p_tenant     uuid,
    p_queues     text[],
    p_partitions text[],
    p_counts     integer[],
    p_hashes     bytea[],
    p_verified   bigint[],
    p_blobs      bytea[],
    p_dead       bigint[],
    OUT o_fail     text,
    OUT o_dup_segs integer[],
    OUT o_dup_idx  integer[],
    OUT o_dup_offs bigint[],
    OUT o_pids     bigint[],
    OUT o_qids     bigint[],
    OUT o_wins     integer[],
    OUT o_bases    bigint[],
    OUT o_ts       timestamptz
)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
DECLARE
    t    record;
    k    bigint;
BEGIN
    BEGIN
        SELECT * INTO t FROM queen.txn_apply_v1(p_tenant, p_queues, p_partitions, p_counts, p_hashes, p_verified, p_blobs,
                                                '{}', '{}', '{}', '{}', '', '{}', '{}', '{}');
        o_fail := t.o_fail; o_dup_segs := t.o_dup_segs; o_dup_idx := t.o_dup_idx; o_dup_offs := t.o_dup_offs;
        o_pids := t.o_pids; o_qids := t.o_qids; o_wins := t.o_wins; o_bases := t.o_bases; o_ts := t.o_ts;
        IF o_fail IS NOT NULL THEN -- 'duplicate', the one failure without acknowledgements: nothing was written
            RETURN;
        END IF;
        -- The lock order: every pushed partition row is locked already
        -- (txn_apply_v1); the dead letters come after them, in one order,
        -- so that requeues of overlapping dead letters, message deletes and
        -- queue deletes wait on each other instead of deadlocking.
        PERFORM 1 FROM queen.dead_letters d JOIN queen.queues q ON q.id = d.queue_id
        WHERE d.id = ANY (p_dead) AND q.tenant = p_tenant
        ORDER BY d.partition_id, d.consumer_group, d.message_offset
        FOR UPDATE OF d;
        WITH gone AS (
            DELETE FROM queen.dead_letters d USING queen.queues q
            WHERE d.id = ANY (p_dead) AND q.id = d.queue_id AND q.tenant = p_tenant
            RETURNING 1
        )
        SELECT count(*) INTO k FROM gone;
        IF k <> coalesce(cardinality(p_dead), 0) THEN
            o_fail := 'gone';
            RAISE EXCEPTION USING ERRCODE = 'QT003';
        END IF;
    EXCEPTION WHEN SQLSTATE 'QT003' THEN
        -- Everything the block wrote is undone; o_fail stays.
        o_pids := '{}'; o_qids := '{}'; o_wins := '{}'; o_bases := '{}'; o_ts := NULL;
    END;
END
$$;
