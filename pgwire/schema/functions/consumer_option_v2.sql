-- consumer_option_v2: a consumer option of a queue (Queen's spelling, kept
-- in other_options), or its default where the queue does not set it. The
-- one place in SQL that holds the defaults of the options the database acts
-- on; every statement asks it by the option's name (consumer_option_v1
-- took the default from each caller and stays for bridges that still
-- call it). The answers show the same defaults from jsonapi.OptionDefaults,
-- and TestOptionDefaultsAgree holds the two, and the table in docs/api.md,
-- to each other. NULL for an option it does not know.

CREATE OR REPLACE FUNCTION queen.consumer_option_v2(p_opts jsonb, p_name text) RETURNS integer
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN jsonb_typeof(p_opts -> p_name) = 'number' THEN greatest(0, floor((p_opts ->> p_name)::numeric))::integer
                ELSE CASE p_name WHEN 'leaseTime' THEN 300
                                 WHEN 'retryLimit' THEN 3
                                 WHEN 'delayedProcessing' THEN 0
                                 WHEN 'windowBuffer' THEN 0
                                 WHEN 'maxWaitTimeSeconds' THEN 0 END END
$$;
