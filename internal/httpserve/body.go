package httpserve

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

// Budget is where the bytes of bodies held in memory are taken from: Take
// waits up to wait for room and reports whether it got it.
type Budget interface {
	Take(ctx context.Context, n int64, wait time.Duration) bool
}

// BodyLimits bound the reading of one body: its size, the time it takes to
// arrive and the wait for room in the Budget.
type BodyLimits struct {
	MaxBytes   int64
	Timeout    time.Duration
	BudgetWait time.Duration
}

// ErrBusy: the in-flight body budget stayed full for the whole wait.
var ErrBusy = errors.New("too many request bytes in flight; try again shortly")

// ReadBody reads the whole body once, up to lim.MaxBytes. Memory is taken
// as bytes arrive (a declared Content-Length is a promise, not an
// allocation), each step from budget, and the body must arrive within
// lim.Timeout. It reports the bytes taken, on failure too: the caller gives
// them back once it has answered. On failure status is the HTTP status to
// answer with (413, 408, 503 or 400).
func ReadBody(w http.ResponseWriter, r *http.Request, lim BodyLimits, budget Budget) (body []byte, taken int64, status int, err error) {
	tooBig := func() ([]byte, int64, int, error) {
		return nil, taken, http.StatusRequestEntityTooLarge, errors.New("body larger than " + strconv.FormatInt(lim.MaxBytes, 10) + " bytes")
	}
	if r.ContentLength > lim.MaxBytes {
		return tooBig()
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(lim.Timeout))
	rd := http.MaxBytesReader(w, r.Body, lim.MaxBytes)
	for {
		if len(body) == cap(body) {
			grow := int64(max(cap(body), 4<<10))
			if r.ContentLength > 0 {
				grow = min(grow, max(r.ContentLength-int64(len(body)), 1)) // one byte more finds EOF
			}
			if !budget.Take(r.Context(), grow, lim.BudgetWait) {
				return nil, taken, http.StatusServiceUnavailable, ErrBusy
			}
			taken += grow
			nb := make([]byte, len(body), cap(body)+int(grow))
			copy(nb, body)
			body = nb
		}
		n, rerr := rd.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		var maxErr *http.MaxBytesError
		switch {
		case rerr == io.EOF:
			return body, taken, 0, nil
		case errors.As(rerr, &maxErr):
			return tooBig()
		case errors.Is(rerr, os.ErrDeadlineExceeded):
			return nil, taken, http.StatusRequestTimeout, errors.New("the body did not arrive within " + lim.Timeout.String())
		case rerr != nil:
			return nil, taken, http.StatusBadRequest, errors.New("reading the body: " + rerr.Error())
		}
	}
}
