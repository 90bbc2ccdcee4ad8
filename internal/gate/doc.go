// Package gate admits calls to a service until it closes, counts every
// admitted call until it is answered, and runs a bounded worker pool for
// calls that may wait: the part of a shutdown that must refuse new work,
// then wait for every answer of the work it took. It imports nothing of
// the project.
package gate
