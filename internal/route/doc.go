// Package route is the shape of an HTTP route a room serves and the front
// door registers: its method and pattern, the right it needs, and the call
// that answers it with a status and a JSON body. The admin room and the
// console room hand the front door tables of them; neither imports the
// other to share the shape, and neither imports net/http.
//
// It imports nothing of the project but internal/tenancy.
//
// Goroutines: none; a Route is a value.
package route
