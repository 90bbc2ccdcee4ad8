-- consumer_acks_merge_v1: the acknowledgement state of a JetStream
-- consumer on a partition (migration 0018) joined with a newer one: the
-- floor is the greater of the two, the acknowledged offsets the union of
-- both, the delivery counts the greater of each offset's. Then the floor
-- moves over the run of acknowledged offsets right above it, and what is at
-- or below it is dropped. So the join never undoes an acknowledgement: an
-- update from a bridge that lost the consumer (older, or only part of the
-- state) leaves a newer one as it was, two updates give the same state in
-- either order, and one applied twice is applied once. Empty sets are NULL.
-- The usual call (acknowledgements in order: no set on either side) does
-- no more than greatest().

CREATE OR REPLACE FUNCTION queen.consumer_acks_merge_v1(
    p_floor bigint, p_acked bigint[], p_offsets bigint[], p_counts integer[],
    p_new_floor bigint, p_new_acked bigint[], p_new_offsets bigint[], p_new_counts integer[],
    OUT o_floor bigint, OUT o_acked bigint[], OUT o_offsets bigint[], OUT o_counts integer[])
LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    v_all bigint[];
BEGIN
    o_floor := greatest(coalesce(p_floor, 0), coalesce(p_new_floor, 0));
    IF cardinality(p_acked) > 0 OR cardinality(p_new_acked) > 0 THEN
        -- Ascending and distinct, x = floor + rank holds exactly along the
        -- run right above the floor.
        SELECT coalesce(max(r.x) FILTER (WHERE r.x = o_floor + r.rn), o_floor), array_agg(r.x ORDER BY r.x)
        INTO o_floor, v_all
        FROM (SELECT a.x, row_number() OVER (ORDER BY a.x) AS rn
              FROM (SELECT DISTINCT u.x FROM unnest(coalesce(p_acked, '{}') || coalesce(p_new_acked, '{}')) AS u(x)
                    WHERE u.x > o_floor) a) r;
        SELECT array_agg(u.x ORDER BY u.x) INTO o_acked FROM unnest(v_all) AS u(x) WHERE u.x > o_floor;
    END IF;
    IF cardinality(p_offsets) > 0 OR cardinality(p_new_offsets) > 0 THEN
        SELECT array_agg(d.o ORDER BY d.o), array_agg(d.n ORDER BY d.o)
        INTO o_offsets, o_counts
        FROM (SELECT u.o, max(u.n) AS n
              FROM (SELECT a.o, a.n FROM unnest(p_offsets, p_counts) AS a(o, n)
                    UNION ALL
                    SELECT b.o, b.n FROM unnest(p_new_offsets, p_new_counts) AS b(o, n)) u
              WHERE u.o > o_floor
              GROUP BY u.o) d;
    END IF;
END
$$;
