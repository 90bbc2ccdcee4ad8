// Package jsconsume holds no code: its tests run queen-bridge as a process
// and read a JetStream stream of it with nats.go's jetstream package and the
// nats CLI, beside a real JetStream server answering the same cases (the
// consumer wire suite, a killed or restarted bridge, tombstones). They live
// apart from the bridge package's tests so that each set runs in a test
// binary, and under a timeout, of its own.
//
// It imports nothing of the project.
package jsconsume
