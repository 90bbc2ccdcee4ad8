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
			var grew int64
			var ok bool
			if body, grew, ok = growBody(r.Context(), body, r.ContentLength, budget, lim.BudgetWait); !ok {
				return nil, taken, http.StatusServiceUnavailable, ErrBusy
			}
			taken += grew
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

// growBody makes room for more of a body whose length is declared (-1:
// not), taking the room from budget (waiting up to wait) before it is
// allocated: 4 KiB first, then as much again as the body holds, never
// more than the declared length and one byte (which finds its end). It
// reports the bytes taken, and false, with nothing taken, when the budget
// stayed full.
func growBody(ctx context.Context, body []byte, declared int64, budget Budget, wait time.Duration) ([]byte, int64, bool) {
	grow := int64(max(cap(body), 4<<10))
	if declared > 0 {
		grow = min(grow, max(declared-int64(len(body)), 1))
	}
	if !budget.Take(ctx, grow, wait) {
		return body, 0, false
	}
	nb := make([]byte, len(body), cap(body)+int(grow))
	copy(nb, body)
	return nb, grow, true
}
