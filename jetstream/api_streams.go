package jetstream

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strings"
)

// The page sizes of the list and names answers (nats-server's
// JSApiListLimit and JSApiNamesLimit).
const (
	listLimit  = 256
	namesLimit = 1024
)

// streamJSON describes a declared stream with its state.
func (a *API) streamJSON(s *Stream, st StreamState) *streamInfoJSON {
	return &streamInfoJSON{
		Config: streamConfigJSON{
			Name: s.Name, Subjects: s.Filters, Retention: "limits",
			MaxConsumers: -1, MaxMsgs: -1, MaxBytes: -1, MaxMsgsPerSubject: -1,
			MaxMsgSize: int32(min(a.cfg.MaxBodyBytes, 1<<31-1)),
			Discard:    "old", Storage: "file", Replicas: 1,
			DenyDelete: true, DenyPurge: true,
		},
		Created: st.Created.UTC(),
		State: streamStateJSON{
			Msgs: st.Messages, Bytes: st.Bytes, FirstSeq: st.FirstSeq, FirstTime: st.FirstTime.UTC(),
			LastSeq: st.LastSeq, LastTime: st.LastTime.UTC(), Consumers: st.Consumers,
		},
		TS: a.cfg.Now().UTC(),
	}
}

// streamInfo answers STREAM.INFO.<stream>.
func (a *API) streamInfo(ctx context.Context, r request, name string) any {
	resp := streamInfoResponse{apiResponse: apiResponse{Type: typeStreamInfo}}
	var req struct {
		SubjectsFilter string `json:"subjects_filter"`
		DeletedDetails bool   `json:"deleted_details"`
		Offset         int    `json:"offset"`
	}
	if body := bytes.TrimSpace(r.msg.Data); len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			resp.Error = errInvalidJSON(err)
			return resp
		}
	}
	s := a.streams[name]
	if s == nil {
		resp.Error = errStreamNotFound
		return resp
	}
	if req.SubjectsFilter != "" {
		resp.Error = errNotSupported("the state of each subject (subjects_filter)")
		return resp
	}
	st, err := a.cfg.Engine.StreamState(ctx, r.tenant, name)
	if err != nil {
		resp.Error = engineError(err)
		return resp
	}
	resp.streamInfoJSON = a.streamJSON(s, st)
	return resp
}

// pagedRequest reads the optional body of a list or names request.
func pagedRequest(data []byte) (apiPagedRequest, *apiError) {
	var req apiPagedRequest
	if body := bytes.TrimSpace(data); len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			return req, errInvalidJSON(err)
		}
	}
	req.Offset = max(req.Offset, 0)
	return req, nil
}

// page cuts [offset, offset+limit) out of n items.
func page(n, offset, limit int) (int, int) {
	from := min(offset, n)
	return from, min(from+limit, n)
}

// streamList answers STREAM.LIST and STREAM.NAMES: the declared streams,
// by name, those holding the request's subject when it names one.
func (a *API) streamList(ctx context.Context, r request, names bool) any {
	req, bad := pagedRequest(r.msg.Data)
	if bad != nil {
		typ := typeStreamList
		if names {
			typ = typeStreamNames
		}
		return apiResponse{Type: typ, Error: bad}
	}
	var matched []*Stream
	for i := range a.cfg.Streams {
		s := &a.cfg.Streams[i]
		if req.Subject == "" || holds(s, req.Subject) {
			matched = append(matched, s)
		}
	}
	sort.Slice(matched, func(i, j int) bool { return matched[i].Name < matched[j].Name })
	if names {
		resp := streamNamesResponse{apiResponse: apiResponse{Type: typeStreamNames}, Streams: []string{}}
		from, to := page(len(matched), req.Offset, namesLimit)
		resp.apiPaged = apiPaged{Total: len(matched), Offset: req.Offset, Limit: namesLimit}
		for _, s := range matched[from:to] {
			resp.Streams = append(resp.Streams, s.Name)
		}
		return resp
	}
	resp := streamListResponse{apiResponse: apiResponse{Type: typeStreamList}, Streams: []*streamInfoJSON{}}
	from, to := page(len(matched), req.Offset, listLimit)
	resp.apiPaged = apiPaged{Total: len(matched), Offset: req.Offset, Limit: listLimit}
	for _, s := range matched[from:to] {
		st, err := a.cfg.Engine.StreamState(ctx, r.tenant, s.Name)
		if err != nil {
			return apiResponse{Type: typeStreamList, Error: engineError(err)}
		}
		resp.Streams = append(resp.Streams, a.streamJSON(s, st))
	}
	return resp
}

// holds reports whether some subject matching subject is one of s's.
func holds(s *Stream, subject string) bool {
	t, err := parseFilter(subject)
	if err != nil {
		return false
	}
	for _, f := range s.Filters {
		ft, _ := parseFilter(f)
		if overlaps(t, ft) {
			return true
		}
	}
	return false
}

// accountInfo answers $JS.API.INFO: the declared streams and the tenant's
// consumers on them, with no limits.
func (a *API) accountInfo(ctx context.Context, r request) any {
	resp := accountInfoResponse{
		apiResponse: apiResponse{Type: typeAccountInfo},
		Streams:     len(a.cfg.Streams),
		Limits:      accountLimitsJSON{MaxMemory: -1, MaxStore: -1, MaxStreams: -1, MaxConsumers: -1},
		API:         apiStatsJSON{Total: a.n.requests.Load(), Errors: a.n.errors.Load()},
	}
	for _, s := range a.cfg.Streams {
		st, err := a.cfg.Engine.StreamState(ctx, r.tenant, s.Name)
		if err != nil {
			return apiResponse{Type: typeAccountInfo, Error: engineError(err)}
		}
		resp.Store += st.Bytes
		resp.Consumers += st.Consumers
	}
	return resp
}

// streamRefusal answers the stream management subjects: the streams are
// declared in the bridge's configuration (QUEEN_JETSTREAM) and their
// messages are Queen's queue, so they are neither created, changed,
// purged nor deleted through the API, and single messages are not read
// or deleted by sequence (a sequence is an offset within one partition).
func (a *API) streamRefusal(t []string) any {
	op := strings.Join(t[1:min(len(t), 2)], "")
	name := ""
	if len(t) >= 3 {
		name = t[2]
	}
	if op == "MSG" && len(t) >= 4 {
		op, name = "MSG."+t[2], t[3]
	}
	typ := "io.nats.jetstream.api.v1.stream_" + strings.ToLower(strings.ReplaceAll(op, ".", "_")) + "_response"
	switch op {
	case "CREATE":
		return apiResponse{Type: typ, Error: errNotSupported("creating a stream through the API (streams are declared in QUEEN_JETSTREAM)")}
	case "UPDATE", "DELETE", "PURGE", "MSG.GET", "MSG.DELETE", "SNAPSHOT", "RESTORE", "LEADER", "PEER":
		if a.streams[name] == nil {
			return apiResponse{Type: typ, Error: errStreamNotFound}
		}
		return apiResponse{Type: typ, Error: errNotSupported("STREAM." + op + " (streams are declared in QUEEN_JETSTREAM; their messages are a Queen queue)")}
	}
	return apiResponse{Type: typeError, Error: errNotSupported("STREAM." + strings.Join(t[1:], "."))}
}
