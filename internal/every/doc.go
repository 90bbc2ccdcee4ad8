// Package every lets one event through per period: the rate limit of
// hot-path log lines. A Limit is safe for concurrent use (one atomic). It
// imports nothing of the project.
package every
