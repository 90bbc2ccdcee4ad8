-- Where a cursor was put, by the group's first pop of the partition (its
-- subscription's start) or by a seek: what the group acknowledged since is
-- cursor_offset - start_offset, and a cursor that moved from it has
-- consumed (the admin routes' totalConsumed and state; docs/admin-groups.md).
-- Only seeding and seeks write it, never a pop or an acknowledgement, so it
-- costs the hot paths nothing. NULL on rows seeded before this migration:
-- read as 0.
ALTER TABLE queen.consumer_cursors ADD COLUMN start_offset bigint;
