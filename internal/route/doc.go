// Package route is the shape of an HTTP route a room serves and the front
// door registers: its method and pattern, the right it needs, and the call
// that answers it with a status and a JSON body. The admin, consume and
// console rooms hand the front door tables of them; none imports another to
// share the shape, and none imports net/http.
//
// It imports nothing of the project but internal/tenancy.
//
// Goroutines: none; a Route is a value.
package route
