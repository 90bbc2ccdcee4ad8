// Package readside owns reads and the news that wakes them: fetching
// messages from an offset, reads parked until a push to their partition is
// announced, the hot-list that coalesces local wake-ups to at most one per
// partition per 5 ms tick, and MESSAGE_AVAILABLE announcements to and from
// peers on <prefix>.v1.available.
//
// It must not import bridge, queues or durability, nor net/http or
// Prometheus; the front door decodes read requests, renders answers (and
// decrypts payloads) and calls Fetch and Announce.
//
// Goroutines: each read runs on its caller's goroutine and parks on a
// channel of its own; the hot-list loop and the publisher loop are owned by
// Reads (Start starts them, Stop ends them and waits). A mutex guards the
// parked set and each pending key set (held for map operations only).
package readside
