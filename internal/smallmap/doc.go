// Package smallmap is a map for a handful of entries that lives on the stack:
// it scans fixed arrays while it holds few entries and switches to a Go map
// beyond that. The push path builds several per request (layer-1 dedup,
// per-queue encryption, grouping by partition); with Go maps they were most
// of a one-item push's allocations. A Map belongs to one goroutine. It
// imports nothing of the project.
package smallmap
