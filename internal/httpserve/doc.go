// Package httpserve runs one HTTP listener on a goroutine of its own with
// the service's timeouts, until it is shut down. It imports nothing of the
// project.
package httpserve
