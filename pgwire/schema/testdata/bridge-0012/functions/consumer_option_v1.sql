-- consumer_option_v1: a consumer option of a queue (Queen's spelling, kept
-- in other_options), or its default. Called by consumer_pop_v1 and
-- consumer_ack_v1.

CREATE OR REPLACE FUNCTION queen.consumer_option_v1(p_opts jsonb, p_name text, p_default integer) RETURNS integer
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN jsonb_typeof(p_opts -> p_name) = 'number' THEN greatest(0, floor((p_opts ->> p_name)::numeric))::integer
                ELSE p_default END
$$;
