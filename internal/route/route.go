package route

import (
	"context"
	"net/url"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// Request is what a route is handed: the path's values by name
// (percent-decoded), the query and the body (empty for GET and DELETE).
type Request struct {
	Path  func(name string) string
	Query url.Values
	Body  []byte
}

// Route is one HTTP route: Method and Pattern as net/http's ServeMux takes
// them ("GET", "/api/v1/resources/queues/{queue}"). Admin routes take admin
// tokens; the others any token that may read, each for its tenant.
type Route struct {
	Method, Pattern string
	Admin           bool
	Serve           func(ctx context.Context, tenant tenancy.TenantID, req Request) (status int, body []byte)
}
