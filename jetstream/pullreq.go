package jetstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// PullError is a pull request the bridge refuses; Error is the text after
// "Bad Request - " in the 400 status it is answered with.
type PullError struct{ why string }

func (e *PullError) Error() string { return e.why }

// ParsePullRequest reads a CONSUMER.MSG.NEXT body as nats-server does: an
// object (batch, expires, max_bytes, no_wait, idle_heartbeat), a bare
// integer (the batch) or nothing (one message, no expiry); a batch of 0 is
// 1. Refused, with nats-server's words where it has them: an idle
// heartbeat over half the expiry ("heartbeat value too large"), the
// priority-group fields (no consumer here has priority groups), negative
// numbers, and a body that is none of the three shapes (nats-server takes
// that as a batch of 1; here it is a mistake worth hearing about).
func ParsePullRequest(body []byte) (PullRequest, error) {
	req := bytes.TrimSpace(body)
	if len(req) == 0 {
		return PullRequest{Batch: 1}, nil
	}
	if req[0] != '{' {
		n, err := strconv.Atoi(string(req))
		if err != nil {
			return PullRequest{}, &PullError{fmt.Sprintf("pull request %.32q is neither a JSON object, a batch size nor empty", req)}
		}
		if n < 0 {
			return PullRequest{}, &PullError{"batch must not be negative"}
		}
		return PullRequest{Batch: max(n, 1)}, nil
	}
	var j pullRequestJSON
	if err := json.Unmarshal(req, &j); err != nil {
		return PullRequest{}, &PullError{err.Error()}
	}
	switch {
	case j.Heartbeat > 0 && j.Heartbeat*2 > j.Expires:
		return PullRequest{}, &PullError{"heartbeat value too large"}
	case j.MinPending != 0 || j.MinAckPending != 0:
		return PullRequest{}, &PullError{"Not a Overflow Priority consumer"}
	case j.ID != "":
		return PullRequest{}, &PullError{"Not a Pinned Client Priority consumer"}
	case j.Priority < 0 || j.Priority > 9:
		return PullRequest{}, &PullError{"Priority must be between 0 and 9"}
	case j.Group != "" || j.Priority != 0:
		return PullRequest{}, &PullError{"Invalid Priority Group"}
	case j.Batch < 0:
		return PullRequest{}, &PullError{"batch must not be negative"}
	case j.Expires < 0:
		return PullRequest{}, &PullError{"expires must not be negative"}
	case j.MaxBytes < 0:
		return PullRequest{}, &PullError{"max_bytes must not be negative"}
	case j.Heartbeat < 0:
		return PullRequest{}, &PullError{"idle_heartbeat must not be negative"}
	}
	return PullRequest{Batch: max(j.Batch, 1), Expires: j.Expires, MaxBytes: j.MaxBytes, NoWait: j.NoWait, Heartbeat: j.Heartbeat}, nil
}
