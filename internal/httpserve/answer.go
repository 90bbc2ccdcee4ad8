package httpserve

import (
	"net/http"
	"time"
)

// WriteTimeout bounds the writing of one answer: a client that does not
// read its answer does not hold it (and its memory) for longer.
const WriteTimeout = 30 * time.Second

// WriteJSON answers with status and a JSON body, written within
// WriteTimeout.
func WriteJSON(w http.ResponseWriter, status int, body []byte) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(WriteTimeout))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
