// Package tenancy holds the one type every room names a tenant by. It
// imports nothing of the project, so that the core (pgwire, segment,
// spool) may use it too.
//
// Goroutines: none; the values are immutable.
package tenancy
