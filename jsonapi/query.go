package jsonapi

import (
	"encoding/json"
	"strconv"
)

// IntParam is one integer query parameter and where it goes.
type IntParam struct {
	Name string
	Bits int // 32 or 64: the range it must fit
	Set  func(int64)
}

// ParseQueryInts reads integer query parameters; a value that is not an integer
// of the parameter's size is an error naming the parameter.
func ParseQueryInts(get func(string) string, params ...IntParam) error {
	for _, p := range params {
		v := get(p.Name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, p.Bits)
		if err != nil {
			return Badf("%s must be an integer, got %q", p.Name, v)
		}
		p.Set(n)
	}
	return nil
}

// decodeBody decodes a request body of a NATS subject (what names the
// subject's request in the error).
func decodeBody(body []byte, what string, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return Badf("%s body: %s", what, err.Error())
	}
	return nil
}

// ParseFetchQuery reads GET /api/v1/messages' query parameters.
func ParseFetchQuery(get func(string) string) (FetchRequest, error) {
	r := FetchRequest{Queue: get("queue"), Partition: get("partition")}
	err := ParseQueryInts(get,
		IntParam{"from", 64, func(n int64) { r.From = n }},
		IntParam{"limit", 32, func(n int64) { r.Limit = int(n) }},
		IntParam{"waitMs", 32, func(n int64) { r.WaitMs = int(n) }},
		IntParam{"maxBytes", 64, func(n int64) { r.MaxBytes = n }})
	return r, err
}

// DecodeFetch reads the body of <prefix>.v1.fetch.
func DecodeFetch(body []byte) (FetchRequest, error) {
	var r FetchRequest
	return r, decodeBody(body, "fetch", &r)
}

// DecodePop reads the body of <prefix>.v1.pop: the pop's query parameters
// as fields, queue and partition among them.
func DecodePop(body []byte) (PopRequest, error) {
	var r PopRequest
	return r, decodeBody(body, "pop", &r)
}

// DecodePopCancel decodes the body of <prefix>.v1.pop.cancel,
// {"requestId"}, and checks the id.
func DecodePopCancel(body []byte) (string, error) {
	var r struct {
		RequestID string `json:"requestId"`
	}
	if err := decodeBody(body, "pop cancel", &r); err != nil {
		return "", err
	}
	return r.RequestID, CheckName("requestId", r.RequestID, r.RequestID != "")
}

// DecodeError is msg of an error body {"error": msg}, or "" when body is
// not one.
func DecodeError(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	return e.Error
}
