package admin

import (
	"context"
	"errors"
	"net/url"
	"slices"

	"github.com/queenbridge/queenbridge/consume"
	"github.com/queenbridge/queenbridge/durability"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/queues"
	"github.com/rs/zerolog"
)

// Config is what the admin routes read and change.
type Config struct {
	DB       *pgwire.DB
	Consumer *consume.Consumer
	Queues   *queues.Settings
	Keeper   *durability.Keeper
	Logger   zerolog.Logger
}

// Admin serves the admin routes. It holds no state of its own.
type Admin struct {
	cfg Config
}

// New checks cfg.
func New(cfg Config) (*Admin, error) {
	if cfg.DB == nil || cfg.Consumer == nil || cfg.Queues == nil || cfg.Keeper == nil {
		return nil, errors.New("admin: Config needs DB, Consumer, Queues and Keeper")
	}
	return &Admin{cfg: cfg}, nil
}

// Request is what a route is handed: the path's values by name, the query
// and the body (empty for GET and DELETE).
type Request struct {
	Path  func(name string) string
	Query url.Values
	Body  []byte
}

// Route is one HTTP route: Method and Pattern as net/http's ServeMux takes
// them ("GET", "/api/v1/resources/queues/{queue}"). Admin routes take admin
// tokens; the others any token of the tenant.
type Route struct {
	Method, Pattern string
	Admin           bool
	Serve           func(ctx context.Context, tenant tenancy.TenantID, req Request) (status int, body []byte)
}

// Routes lists every route the package serves.
func (a *Admin) Routes() []Route {
	return slices.Concat(a.queueRoutes(), a.groupRoutes(), a.messageRoutes(), a.statusRoutes())
}
