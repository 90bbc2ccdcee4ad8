// Package proccpu reads the CPU time of local processes from /proc, for the
// benchmarks and queen-bench: a process's own time, and a PostgreSQL
// cluster's (the postmaster, the children it has reaped, and the children
// still running). Linux only; it holds no state and starts no goroutine. It
// imports nothing of the project.
package proccpu
