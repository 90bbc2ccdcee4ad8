-- stream_register_v1: register a streaming query of a tenant, idempotent by
-- name (POST /streams/v1/queries, pgwire.StreamRegister).
--   - an unknown name is stored under p_id: o_fresh;
--   - a known name with the same config_hash keeps its id and state; its
--     source and sink queues are updated;
--   - a known name with another hash and p_reset: the query's state is
--     deleted and the new hash stored: o_reset;
--   - a known name with another hash and no reset: o_conflict, nothing
--     written; o_hash is the stored hash.
-- A re-registration also drops state rows whose source partition is gone
-- (a queue deleted while an acknowledgement-less cycle of the query was
-- writing): partition ids are never reused, so such rows are unreachable.
-- State rows are deleted after locking them in ascending (query,
-- partition, key), the order every writer of state rows keeps.

CREATE OR REPLACE FUNCTION queen.stream_register_v1(
    p_tenant  uuid,
    p_id      uuid,
    p_name    text,
    p_source  text,
    p_sink    text,
    p_hash    text,
    p_reset   boolean,
    OUT o_id       uuid,
    OUT o_hash     text,
    OUT o_fresh    boolean,
    OUT o_reset    boolean,
    OUT o_conflict boolean
)
LANGUAGE plpgsql
AS $$
BEGIN
    o_fresh := false; o_reset := false; o_conflict := false;
    INSERT INTO queen.stream_queries (id, tenant, name, source_queue, sink_queue, config_hash)
    VALUES (p_id, p_tenant, p_name, p_source, p_sink, p_hash)
    ON CONFLICT (tenant, name) DO NOTHING
    RETURNING id, config_hash INTO o_id, o_hash;
    IF FOUND THEN
        o_fresh := true;
        RETURN;
    END IF;
    SELECT q.id, q.config_hash INTO o_id, o_hash FROM queen.stream_queries q
    WHERE q.tenant = p_tenant AND q.name = p_name FOR UPDATE;
    IF o_hash <> p_hash AND NOT p_reset THEN
        o_conflict := true;
        RETURN;
    END IF;
    IF o_hash <> p_hash THEN
        PERFORM 1 FROM (SELECT 1 FROM queen.stream_state s WHERE s.query_id = o_id
                        ORDER BY s.partition_id, s.key FOR UPDATE) x;
        DELETE FROM queen.stream_state s WHERE s.query_id = o_id;
        o_reset := true;
    ELSE
        PERFORM 1 FROM (SELECT 1 FROM queen.stream_state s WHERE s.query_id = o_id
                          AND NOT EXISTS (SELECT 1 FROM queen.log_partitions p WHERE p.id = s.partition_id)
                        ORDER BY s.partition_id, s.key FOR UPDATE) x;
        DELETE FROM queen.stream_state s WHERE s.query_id = o_id
          AND NOT EXISTS (SELECT 1 FROM queen.log_partitions p WHERE p.id = s.partition_id);
    END IF;
    UPDATE queen.stream_queries q SET source_queue = p_source, sink_queue = p_sink, config_hash = p_hash, updated_at = now()
    WHERE q.id = o_id;
    o_hash := p_hash;
END
$$;
