package jetstream

// The answers are JetStream's PubAck shapes, rendered from each stream's
// templates (jsonapi.PubAcks); a refusal carries JetStream's API error.

// refusal is an answer that is not a PubAck: JetStream's API error, its
// HTTP-like code and its error code (nats-server's errors.json), and a
// description for people.
type refusal struct {
	code, errCode int
	desc          string
}

// The codes of an API error, as nats-server uses HTTP's numbers; the
// push path's statuses are the same numbers.
const (
	codeBadRequest  = 400
	codeUnavailable = 503
)

// JetStream's error codes for the refusals the intake answers, as
// nats-server numbers them (server/errors.json), so that clients that
// branch on an APIError's ErrorCode branch alike.
const (
	errBadRequest        = 10003 // JSBadRequestErr: what no JetStream code names
	errTemporarily       = 10008 // JSClusterNotAvailErr: shutting down, too busy
	errNotForAccount     = 10039 // JSNotEnabledForAccountErr: no tenant for the account
	errTooLarge          = 10054 // JSStreamMessageExceedsMaximumErr
	errStreamNotMatch    = 10060 // JSStreamNotMatchErr
	errStoreFailed       = 10077 // JSStreamStoreFailedF: neither written nor spooled
	errTTLDisabled       = 10166 // JSMessageTTLDisabledErr
	errCountersDisabled  = 10168 // JSMessageIncrDisabledErr
	errAtomicDisabled    = 10174 // JSAtomicPublishDisabledErr
	errSchedulesDisabled = 10188 // JSMessageSchedulesDisabledErr
)
