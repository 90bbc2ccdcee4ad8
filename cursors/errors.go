package cursors

import (
	"errors"
	"fmt"

	"github.com/queenbridge/queenbridge/pgwire"
)

// Outcomes the JetStream API maps to JetStream's error codes.
var (
	// ErrStreamNotFound: no stream of that name (404/10059).
	ErrStreamNotFound = errors.New("stream not found")
	// ErrConsumerNotFound: no consumer of that name (404/10014; a pull
	// answers 503 as JetStream does when nothing serves it).
	ErrConsumerNotFound = errors.New("consumer not found")
	// ErrConsumerExists: a create (action "create") of a name defined
	// with another configuration (400/10148). The Store's own.
	ErrConsumerExists = pgwire.ErrConsumerExists
	// ErrConsumerMissing: an update (action "update") of a name that is
	// not defined (404/10149). The Store's own.
	ErrConsumerMissing = pgwire.ErrConsumerMissing
	// ErrInvalidConfig: a configuration the engine refuses; errors.Is
	// matches every *ConfigError.
	ErrInvalidConfig = errors.New("invalid consumer configuration")
	// ErrTooManyConsumers: the stream's consumer limit is reached
	// (400/10026).
	ErrTooManyConsumers = errors.New("maximum consumers limit reached")
	// ErrStopped: the engine is stopping or stopped.
	ErrStopped = errors.New("consumer engine stopped")
)

// missing turns the Store's "no such consumer" into what a look-up
// answers: ErrConsumerNotFound (ErrConsumerMissing is an update's).
func missing(err error) error {
	if errors.Is(err, ErrConsumerMissing) {
		return fmt.Errorf("%w (%w)", ErrConsumerNotFound, err)
	}
	return err
}

// ErrNotOwner: the consumer lives on another bridge (ID); the caller
// forwards the request there.
type ErrNotOwner struct{ ID string }

func (e ErrNotOwner) Error() string { return fmt.Sprintf("consumer is owned by bridge %s", e.ID) }

// IsNotOwner reports whether err is an ErrNotOwner, and the owner's id.
func IsNotOwner(err error) (string, bool) {
	if err == nil { // every ack and pull asks: no ErrNotOwner to make on the heap
		return "", false
	}
	var n ErrNotOwner
	if errors.As(err, &n) {
		return n.ID, true
	}
	return "", false
}

// ConfigError is a consumer configuration the engine refuses: Code is
// nats-server's error code (server/errors.json) for the API's answer,
// Description names the field and why.
type ConfigError struct {
	Code        int
	Description string
}

func (e *ConfigError) Error() string { return e.Description }

// Is makes errors.Is(err, ErrInvalidConfig) hold.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// nats-server's codes for the refusals the engine makes.
const (
	codeBadRequest     = 10003 // JSBadRequestErr: what the bridge does not serve
	codeInvalidConfig  = 10052 // JSStreamInvalidConfigF: names and filters
	codeFilterSubset   = 10093 // JSConsumerFilterNotSubsetErr
	codeInvalidPolicy  = 10094 // JSConsumerInvalidPolicyErrF
	codeMaxDeliverBack = 10116 // JSConsumerMaxDeliverBackoffErr
	codeBackOffNeg     = 10184 // JSConsumerBackOffNegativeErr
)

func invalid(code int, format string, args ...any) error {
	return &ConfigError{Code: code, Description: fmt.Sprintf(format, args...)}
}
