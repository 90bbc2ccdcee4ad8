package jsonapi

// The statuses of answers: HTTP's numbers, which NATS answers carry too
// (an error answer's Nats-Service-Error-Code). The rooms answer with these;
// only the front door speaks HTTP.
const (
	StatusOK                  = 200
	StatusCreated             = 201
	StatusNoContent           = 204
	StatusBadRequest          = 400
	StatusNotFound            = 404
	StatusConflict            = 409
	StatusInternalServerError = 500
	StatusServiceUnavailable  = 503
)

// StatusTooLarge: a request body over its bound, or an answer larger than
// its transport carries (a NATS answer over max_payload).
const StatusTooLarge = 413
