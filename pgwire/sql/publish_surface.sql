-- The publish surface: queen.publish, callable inside any transaction of a
-- database the bridge watches (docs/publish.md). It writes nothing but one
-- transactional logical message (pg_logical_emit_message(true, 'queen', ...)),
-- which logical decoding hands to the bridge's relay when, and only when, the
-- transaction commits, in commit order. The bridge runs this file in every
-- database it relays from, at each start of the relay: every statement is
-- idempotent.
--
-- The message content, version 1 (read by publish/content.go):
--   byte 0     version, 1
--   byte 1     flags: 1 = the payload is raw bytes (the bytea form)
--   then four names, each an int2 byte length (0: absent) and UTF-8 bytes:
--              queue, partition, transaction_id, trace_id
--   the rest   the payload: jsonb's text, or the raw bytes
--
-- Bad arguments raise an error naming the argument, so the caller's
-- transaction fails as a constraint violation would, and nothing is written.

CREATE SCHEMA IF NOT EXISTS queen;

CREATE OR REPLACE FUNCTION queen.publish_name(p_arg text, p_value text, p_required boolean)
RETURNS bytea
LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    b bytea;
BEGIN
    IF p_value IS NULL THEN
        IF p_required THEN
            RAISE EXCEPTION 'queen.publish: % is required', p_arg USING ERRCODE = 'null_value_not_allowed';
        END IF;
        RETURN decode('0000', 'hex');
    END IF;
    b := convert_to(p_value, 'UTF8');
    IF octet_length(b) < 1 OR octet_length(b) > 255 THEN
        RAISE EXCEPTION 'queen.publish: % must be 1..255 bytes, got %', p_arg, octet_length(b)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_value ~ '[\u0001-\u001f\u007f-\u009f]' THEN
        RAISE EXCEPTION 'queen.publish: % must not contain control characters', p_arg
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN int2send(octet_length(b)::int2) || b;
END
$$;

CREATE OR REPLACE FUNCTION queen.publish(queue text, partition text, payload jsonb,
    transaction_id text DEFAULT NULL, trace_id text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM pg_logical_emit_message(true, 'queen', decode('0100', 'hex')
        || queen.publish_name('queue', $1, true)
        || queen.publish_name('partition', coalesce($2, 'Default'), true)
        || queen.publish_name('transaction_id', $4, false)
        || queen.publish_name('trace_id', $5, false)
        || convert_to(coalesce($3::text, 'null'), 'UTF8'));
END
$$;

CREATE OR REPLACE FUNCTION queen.publish(queue text, partition text, payload bytea,
    transaction_id text DEFAULT NULL, trace_id text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    IF $3 IS NULL THEN
        RAISE EXCEPTION 'queen.publish: payload is required (the bytea form)' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM pg_logical_emit_message(true, 'queen', decode('0101', 'hex')
        || queen.publish_name('queue', $1, true)
        || queen.publish_name('partition', coalesce($2, 'Default'), true)
        || queen.publish_name('transaction_id', $4, false)
        || queen.publish_name('trace_id', $5, false)
        || $3);
END
$$;

-- Callable by the roles the operator grants it to (docs/publish.md).
REVOKE ALL ON FUNCTION queen.publish(text, text, jsonb, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION queen.publish(text, text, bytea, text, text) FROM PUBLIC;

-- The publication pgoutput requires; empty, since the relay reads messages
-- only, never table changes.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = 'queen_publish') THEN
        CREATE PUBLICATION queen_publish;
    END IF;
END
$$;
