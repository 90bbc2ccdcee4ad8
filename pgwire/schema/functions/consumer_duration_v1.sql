-- consumer_duration_v1: how long a lease of p_seconds lasts. That many
-- seconds (Queen's leaseTime, or what an extension asks), unless the
-- session sets queen.lease_ms (pgwire.Config.LeaseTime; tests only): then
-- every lease lasts that many milliseconds, so a test can outlive one
-- without waiting seconds. Called by consumer_pop_v1, consumer_extend_v1
-- and the pop statements of pop_known.go and pop_tail.go. Its name sorts
-- before consumer_extend_v1's: a LANGUAGE sql body is checked when it is
-- made, and function files are applied in name order.

CREATE OR REPLACE FUNCTION queen.consumer_duration_v1(p_seconds integer) RETURNS interval
LANGUAGE sql STABLE
AS $$
    SELECT CASE WHEN coalesce(nullif(current_setting('queen.lease_ms', true), ''), '0')::integer > 0
                THEN make_interval(secs => current_setting('queen.lease_ms', true)::integer / 1000.0)
                ELSE make_interval(secs => p_seconds) END
$$;
