-- Queen's clients configure queues with options this service does not act
-- on (leaseTime, retryLimit, priority, ...). They are kept as sent, so that
-- they read back as set, and the configure answer lists them as not acted on.
ALTER TABLE queen.queues ADD COLUMN other_options jsonb NOT NULL DEFAULT '{}'::jsonb;
