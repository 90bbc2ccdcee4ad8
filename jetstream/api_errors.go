package jetstream

import (
	"errors"
	"fmt"
)

// The API errors the bridge answers with: nats-server's code, error code
// and description (server/errors.json), so that nats.go's checks
// (ErrStreamNotFound, ErrConsumerNotFound, ...) and the CLI's messages
// work as against JetStream. What the bridge does not serve is refused
// with nats-server's own error where one fits (a pull consumer with flow
// control, say) and otherwise with bad request (10003) and a description
// that names what is not supported.
var (
	errStreamNotFound      = &apiError{404, 10059, "stream not found"}
	errConsumerNotFound    = &apiError{404, 10014, "consumer not found"}
	errConsumerExists      = &apiError{400, 10148, "consumer already exists"}
	errConsumerMissing     = &apiError{400, 10149, "consumer does not exist"}
	errMaxConsumers        = &apiError{400, 10026, "maximum consumers limit reached"}
	errStreamMismatch      = &apiError{400, 10056, "stream name in subject does not match request"}
	errConfigRequired      = &apiError{400, 10078, "consumer config required"}
	errDurableNotInSubject = &apiError{400, 10016, "consumer expected to be durable but no durable name set in subject"}
	errDurableNotSet       = &apiError{400, 10018, "consumer expected to be durable but a durable name was not set"}
	errDurableMismatch     = &apiError{400, 10017, "consumer name in subject does not match durable name in request"}
	errEphemeralDurable    = &apiError{400, 10020, "consumer expected to be ephemeral but a durable name was set in request"}
	errPathSeparators      = &apiError{400, 10127, "Consumer name can not contain path separators"}
	errMultipleFilters     = &apiError{400, 10137, "consumer with multiple subject filters cannot use subject based API"}
	errFilterMismatch      = &apiError{400, 10131, "Consumer create request did not match filtered subject from create subject"}
	errDuplicateFilters    = &apiError{400, 10136, "consumer cannot have both FilterSubject and FilterSubjects specified"}
	errEmptyFilter         = &apiError{400, 10139, "consumer filter in FilterSubjects cannot be empty"}
	errOverlappingFilters  = &apiError{400, 10138, "consumer subject filters cannot overlap"}
	errFilterNotSubset     = &apiError{400, 10093, "consumer filter subject is not a valid subset of the interest subjects"}
	errPullRateLimit       = &apiError{400, 10086, "consumer in pull mode can not have rate limit set"}
	errHeartbeatNeedsPush  = &apiError{400, 10088, "consumer idle heartbeat requires a push based consumer"}
	errFlowControlNeedPush = &apiError{400, 10089, "consumer flow control requires a push based consumer"}
	errAckFCNeedsPush      = &apiError{400, 10218, "flow control ack policy requires a push based consumer"}
	errAckPolicyInvalid    = &apiError{400, 10181, "consumer ack policy invalid"}
	errReplayPolicyInvalid = &apiError{400, 10182, "consumer replay policy invalid"}
	errAckWaitNegative     = &apiError{400, 10183, "consumer ack wait needs to be positive"}
	errBackOffNegative     = &apiError{400, 10184, "consumer backoff needs to be positive"}
	errMaxDeliverBackoff   = &apiError{400, 10116, "max deliver is required to be > length of backoff values"}
	errReplicasNotSupp     = &apiError{500, 10074, "replicas > 1 not supported in non-clustered mode"}
	errNotEmptyRequest     = &apiError{400, 10038, "expected an empty request payload"}
	apiNotForAccount       = &apiError{503, 10039, "JetStream not enabled for account"}
	errUnavailable         = &apiError{503, 10008, "JetStream system temporarily unavailable"}
)

// errInvalidJSON is nats-server's 10025 for a body that does not decode.
func errInvalidJSON(err error) *apiError {
	return &apiError{400, 10025, "invalid JSON: " + err.Error()}
}

// errInvalidConfig is nats-server's 10052 (JSStreamInvalidConfigF), which
// it answers for an invalid consumer name or filter.
func errInvalidConfig(desc string) *apiError { return &apiError{500, 10052, desc} }

// errInvalidPolicy is nats-server's 10094 (deliver policy conflicts).
func errInvalidPolicy(desc string) *apiError { return &apiError{400, 10094, desc} }

// errNotSupported refuses what the bridge does not serve: bad request
// (10003), the description naming it and why.
func errNotSupported(what string) *apiError {
	return &apiError{400, 10003, "bad request: " + what + " is not supported by queen-bridge"}
}

// engineError maps an engine's error to JetStream's.
func engineError(err error) *apiError {
	var ce *ConfigError
	switch {
	case errors.Is(err, ErrStreamNotFound):
		return errStreamNotFound
	case errors.Is(err, ErrConsumerNotFound):
		return errConsumerNotFound
	case errors.Is(err, ErrConsumerExists):
		return errConsumerExists
	case errors.Is(err, ErrConsumerMissing):
		return errConsumerMissing
	case errors.Is(err, ErrTooManyConsumers):
		return errMaxConsumers
	case errors.As(err, &ce):
		code := 400
		if ce.Code == 10052 {
			code = 500
		}
		return &apiError{code, ce.Code, ce.Description}
	}
	// The store failed or the engine is stopping: JetStream's "try again".
	return &apiError{errUnavailable.Code, errUnavailable.ErrCode, fmt.Sprintf("%s: %v", errUnavailable.Description, err)}
}
