package admin

import (
	"errors"
	"slices"

	"github.com/queenbridge/queenbridge/consume"
	"github.com/queenbridge/queenbridge/durability"
	"github.com/queenbridge/queenbridge/internal/route"
	"github.com/queenbridge/queenbridge/queues"
	"github.com/rs/zerolog"
)

// Config is what the admin routes read and change.
type Config struct {
	// DB runs every read and write of the routes (*pgwire.DB). Required.
	DB       Store
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

// Request and Route are the shape of an HTTP route (internal/route, which
// the console room's table shares).
type (
	Request = route.Request
	Route   = route.Route
)

// Routes lists every route the package serves.
func (a *Admin) Routes() []Route {
	return slices.Concat(a.queueRoutes(), a.groupRoutes(), a.statusRoutes(), a.consoleRoutes())
}
