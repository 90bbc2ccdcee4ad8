// Package procs sizes the Go scheduler to the process's load: a
// Controller lowers GOMAXPROCS to what the CPU the process has been using
// needs, and raises it as soon as the load asks for more, up to the value
// the process started with.
//
// Why: with more Ps than work, every goroutine hand-off of a request (the
// NATS connection's reader, the subscription, fusion's shard, the flush,
// the answer) wakes an idle thread on another core, which spins looking for
// work before it sleeps again. On a two-core machine a lone push cost the
// bridge about 40 % less CPU with one P than with two, at the same latency
// (docs/request-path.md); a load that needs the cores gets them back within
// one tick.
//
// It must not fight an operator: with GOMAXPROCS set in the environment
// the command does not start it. One goroutine (Start's) owns the decision
// state; Procs reads the current value atomically. It imports nothing of the
// project.
package procs
