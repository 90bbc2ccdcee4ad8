package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/queenbridge/queenbridge/internal/budget"
	"github.com/queenbridge/queenbridge/internal/httpserve"
	"github.com/rs/zerolog"
)

// maxEchoBody is the largest push body the HTTP floor serves on its lean
// route (a larger one goes to net/http, which answers 404).
const maxEchoBody = 1 << 20

// serveEchoHTTP runs the HTTP floor on addr until ctx ends: the bridge's
// own listener and lean connection loop (internal/httpserve) with one
// route, POST /api/v1/push, that admits every request and answers it 201
// with one "queued" status per item after delay. What it costs a request
// is what the bridge's HTTP transport costs before any work of its own.
func serveEchoHTTP(ctx context.Context, addr string, delay time.Duration, out io.Writer) error {
	route := httpserve.LeanRoute{
		Method: http.MethodPost, Path: "/api/v1/push", MaxBody: maxEchoBody,
		Budget: budget.New(64 << 20), BudgetWait: time.Second, BodyTimeout: 10 * time.Second,
		Admit: func(*httpserve.Head) (int, []byte) { return 0, nil },
		Refused: func(_ int, msg string) []byte {
			return []byte(`{"error":` + strconv.Quote(msg) + `}`)
		},
		Serve: func(_ context.Context, _ *httpserve.Head, body []byte) (int, []byte) {
			if delay > 0 {
				time.Sleep(delay) // where the bridge waits for its commit
			}
			return http.StatusCreated, echoFor(body)
		},
	}
	srv, err := httpserve.Listen(addr, http.NotFoundHandler(), zerolog.Nop(), route)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "echo http://%s pid %d delay %s\n", srv.Addr(), os.Getpid(), delay)
	<-ctx.Done()
	stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(stop)
}
