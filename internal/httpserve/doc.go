// Package httpserve runs one HTTP listener on a goroutine of its own with
// the service's timeouts, until it is shut down; serves lean routes (a
// JSON POST such as the push) on the listener's connections itself and
// hands any other request, with its connection, to net/http (lean.go);
// reads request bodies whole within their bounds (size, arrival time, room
// in an in-flight byte budget: ReadBody); and writes JSON answers within
// their time bound (WriteJSON). It imports nothing of the project.
package httpserve
