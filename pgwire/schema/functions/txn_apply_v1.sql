-- txn_apply_v1: one transaction of Queen's transaction wire (POST
-- /api/v1/transaction, pgwire.Transaction), all or nothing, in one call and
-- one PostgreSQL transaction: its pushes, then its acknowledgements.
-- dlq_requeue_v1 calls it too, for its pushes, with no acknowledgement.
--
--   1. The pushes: one segment per partition, exactly as a bundle writes
--      them, through log_push_multi_v2 (provisioning with ordered inserts,
--      one pre-lock of every pushed partition row ORDER BY id FOR UPDATE,
--      one timestamp after the locks, the window probe, then the one
--      allocator): a partition's items get consecutive offsets in request
--      order. The caller sets p_verified per segment: 0 probes the whole
--      window (client transactionIds), a value past any offset probes
--      nothing (every transactionId minted by the bridge just now). A
--      duplicate frame aborts everything.
--   2. The acknowledgements, one consumer_ack_v1 call per (partition,
--      group, lease), in the order given (the caller sorts them ascending
--      by partition id, then group, then lease): consumer rows are locked
--      after every partition row, the one lock order. The items of group g
--      are p_ack_ends[g-1]+1 .. p_ack_ends[g] of the item arrays (16 bytes
--      each in p_ack_hashes). An item consumer_ack_v1 does not apply
--      aborts everything.
--
-- An abort rolls back the block (a subtransaction): no offset moves, no
-- partition or queue made by the pushes stays, no cursor moves, no dead
-- letter is written; then the call returns normally, saying why in
-- o_fail ('duplicate': o_dup_* name every duplicate frame as
-- log_push_multi_v2 does; 'ack' or 'lease': o_fail_item is the failing
-- item's ordinal and o_fail_reason consumer_ack_v1's text). Any other
-- error (a statement timeout, a malformed segment) fails the statement,
-- and so its transaction, as usual.
--
-- Results when o_fail is NULL: per segment o_pids, o_qids, o_wins,
-- o_bases; the timestamp o_ts; per ack item o_dlq; per group o_released,
-- o_queues, o_names, o_cursors.

CREATE OR REPLACE FUNCTION queen.txn_apply_v1(
    p_tenant        uuid,
    p_queues        text[],
    p_partitions    text[],
    p_counts        integer[],
    p_hashes        bytea[],
    p_verified      bigint[],
    p_blobs         bytea[],
    p_ack_pids      bigint[],
    p_ack_groups    text[],
    p_ack_leases    uuid[],
    p_ack_ends      integer[],
    p_ack_hashes    bytea,
    p_ack_statuses  text[],
    p_ack_errors    text[],
    p_ack_txids     text[],
    OUT o_fail        text,
    OUT o_fail_item   integer,
    OUT o_fail_reason text,
    OUT o_dup_segs    integer[],
    OUT o_dup_idx     integer[],
    OUT o_dup_offs    bigint[],
    OUT o_pids        bigint[],
    OUT o_qids        bigint[],
    OUT o_wins        integer[],
    OUT o_bases       bigint[],
    OUT o_ts          timestamptz,
    OUT o_dlq         boolean[],
    OUT o_released    boolean[],
    OUT o_queues      text[],
    OUT o_names       text[],
    OUT o_cursors     bigint[]
)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
DECLARE
    n    integer := coalesce(array_length(p_queues, 1), 0);
    m    integer := coalesce(array_length(p_ack_pids, 1), 0);
    p    record;
    a    record;
    g    integer;
    lo   integer;
    hi   integer;
    k    integer;
BEGIN
    IF coalesce(array_length(p_ack_groups, 1), 0) <> m OR coalesce(array_length(p_ack_ends, 1), 0) <> m
       OR coalesce(array_length(p_ack_leases, 1), 0) <> m
       OR (m > 0 AND (p_ack_ends[m] <> coalesce(array_length(p_ack_statuses, 1), 0)
                      OR p_ack_ends[m] <> coalesce(array_length(p_ack_errors, 1), 0)
                      OR p_ack_ends[m] <> coalesce(array_length(p_ack_txids, 1), 0)
                      OR 16 * p_ack_ends[m] <> coalesce(octet_length(p_ack_hashes), 0))) THEN
        RAISE EXCEPTION 'txn_apply_v1: misaligned acknowledgement arrays' USING ERRCODE = '22023';
    END IF;
    o_dlq := '{}'; o_released := '{}'; o_queues := '{}'; o_names := '{}'; o_cursors := '{}';
    o_pids := '{}'; o_qids := '{}'; o_wins := '{}'; o_bases := '{}';
    o_dup_segs := '{}'; o_dup_idx := '{}'; o_dup_offs := '{}';
    BEGIN
        IF n > 0 THEN
            SELECT * INTO p FROM queen.log_push_multi_v2(p_queues, p_partitions, p_counts, p_hashes, p_verified, p_blobs,
                                                         array_fill(p_tenant, ARRAY[n]));
            IF cardinality(p.o_dup_segs) > 0 THEN
                o_fail := 'duplicate';
                o_dup_segs := p.o_dup_segs; o_dup_idx := p.o_dup_idx; o_dup_offs := p.o_dup_offs;
                RAISE EXCEPTION USING ERRCODE = 'QT001';
            END IF;
            o_pids := p.o_pids; o_qids := p.o_qids; o_wins := p.o_wins; o_bases := p.o_bases; o_ts := p.o_ts;
        END IF;
        FOR g IN 1 .. m LOOP
            lo := CASE WHEN g = 1 THEN 1 ELSE p_ack_ends[g - 1] + 1 END;
            hi := p_ack_ends[g];
            SELECT * INTO a FROM queen.consumer_ack_v1(p_tenant, p_ack_pids[g], p_ack_groups[g], p_ack_leases[g],
                substring(p_ack_hashes FROM (lo - 1) * 16 + 1 FOR (hi - lo + 1) * 16),
                p_ack_statuses[lo:hi], p_ack_errors[lo:hi], p_ack_txids[lo:hi]);
            FOR k IN 1 .. hi - lo + 1 LOOP
                CONTINUE WHEN a.o_err[k] IS NULL;
                -- consumer_ack_v1 answers exactly this text, for every
                -- item, when the named lease is not the live one.
                o_fail := CASE WHEN a.o_err[k] = 'lease expired or not held' THEN 'lease' ELSE 'ack' END;
                o_fail_item := lo + k - 1;
                o_fail_reason := a.o_err[k];
                RAISE EXCEPTION USING ERRCODE = 'QT002';
            END LOOP;
            o_dlq := o_dlq || a.o_dlq;
            o_released := o_released || a.o_released;
            o_queues := o_queues || a.o_queue;
            o_names := o_names || a.o_name;
            o_cursors := o_cursors || a.o_cursor;
        END LOOP;
    EXCEPTION WHEN SQLSTATE 'QT001' OR SQLSTATE 'QT002' THEN
        -- Everything the block wrote is undone; o_fail and what names the
        -- failure were set before the raise and stay.
        o_pids := '{}'; o_qids := '{}'; o_wins := '{}'; o_bases := '{}'; o_ts := NULL;
        o_dlq := '{}'; o_released := '{}'; o_queues := '{}'; o_names := '{}'; o_cursors := '{}';
    END;
END
$$;
