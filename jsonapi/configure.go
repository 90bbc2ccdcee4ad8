package jsonapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ConfigureRequest is POST /api/v1/configure's body, or <prefix>.v1.configure's:
// {"queue", "namespace"?, "task"?, "options"?}. Options left out keep
// their value.
type ConfigureRequest struct {
	Queue string
	// The options this service acts on; nil: not sent.
	EncryptionEnabled  *bool
	DedupWindowSeconds *int32
	RetentionSeconds   *int32
	// Other options, kept as sent (Queen's consumer options among them).
	Other map[string]json.RawMessage
}

// DecodeConfigure reads and checks a configure body. The namespace and task
// are the queue name's first two dot-separated parts; a body that names
// others is refused rather than quietly overruled.
func DecodeConfigure(body []byte) (ConfigureRequest, error) {
	var w struct {
		Queue     *string                    `json:"queue"`
		Namespace *string                    `json:"namespace"`
		Task      *string                    `json:"task"`
		Options   map[string]json.RawMessage `json:"options"`
	}
	var r ConfigureRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return r, Badf("configure body: %s", err.Error())
	}
	if w.Queue == nil {
		return r, Badf("queue is required")
	}
	r.Queue = *w.Queue
	if err := CheckName("queue", r.Queue, true); err != nil {
		return r, err
	}
	parts := strings.SplitN(r.Queue, ".", 3)
	derived := map[string]string{"namespace": parts[0], "task": ""}
	if len(parts) > 1 {
		derived["task"] = parts[1]
	}
	for _, f := range []struct {
		name  string
		given *string
	}{{"namespace", w.Namespace}, {"task", w.Task}} {
		if f.given != nil && *f.given != "" && *f.given != derived[f.name] {
			return r, Badf("%s %q does not match queue %q: this service takes the %s from the queue name (%q)",
				f.name, *f.given, r.Queue, f.name, derived[f.name])
		}
	}
	// In name order: the first bad option is the one said, every time.
	for _, k := range slices.Sorted(maps.Keys(w.Options)) {
		v := w.Options[k]
		var err error
		switch k {
		case "encryptionEnabled":
			err = json.Unmarshal(v, &r.EncryptionEnabled)
		case "dedupWindowSeconds":
			err = json.Unmarshal(v, &r.DedupWindowSeconds)
		case "retentionSeconds":
			err = json.Unmarshal(v, &r.RetentionSeconds)
		default:
			if err = checkEviction(k, v); err != nil {
				return r, err
			}
			if r.Other == nil {
				r.Other = map[string]json.RawMessage{}
			}
			r.Other[k] = v
		}
		if err != nil {
			return r, Badf("options.%s: %v", k, err)
		}
	}
	if r.DedupWindowSeconds != nil && *r.DedupWindowSeconds < 0 {
		return r, Badf("options.dedupWindowSeconds must be >= 0")
	}
	if r.RetentionSeconds != nil && *r.RetentionSeconds < 0 {
		return r, Badf("options.retentionSeconds must be >= 0")
	}
	return r, nil
}

// checkEviction checks the two options of eviction, kept with the other
// options where retention reads them: retentionEnabled is a boolean (or
// null) and maxWaitTimeSeconds a whole number of seconds, at least 0 (or
// null). Retention would read anything else as "off": said here instead.
func checkEviction(name string, v json.RawMessage) error {
	switch name {
	case "retentionEnabled":
		var b *bool
		if json.Unmarshal(v, &b) != nil {
			return Badf("options.retentionEnabled must be true or false, got %s", v)
		}
	case "maxWaitTimeSeconds":
		var n *int32
		if json.Unmarshal(v, &n) != nil || n != nil && *n < 0 {
			return Badf("options.maxWaitTimeSeconds must be a whole number of seconds from 0 to 2147483647, got %s", v)
		}
	}
	return nil
}

// QueueConfigured is a queue's settings after a change: the configure
// answer, and the queue.changed broadcast between bridges.
type QueueConfigured struct {
	Configured bool         `json:"configured"` // always true: Queen's clients check it
	Queue      string       `json:"queue"`
	Tenant     string       `json:"tenant"`
	Namespace  string       `json:"namespace"`
	Task       string       `json:"task"`
	Options    QueueOptions `json:"options"`
	// NotActedOn names the options set on the queue that this service
	// keeps but does not act on.
	NotActedOn []string `json:"notActedOn"`
	// Deleted (the queue.changed broadcast only): the queue was deleted;
	// Options are then what a queue of that name has now (the defaults, or
	// those of a queue a push made since), which is what a bridge that does
	// not know Deleted caches. PartitionIDs are the deleted partitions.
	Deleted      bool    `json:"deleted,omitempty"`
	PartitionIDs []int64 `json:"partitionIds,omitempty"`
}

// QueueOptions are a queue's options as one JSON object: the ones this
// service acts on, and the others as they were sent.
type QueueOptions struct {
	EncryptionEnabled  bool
	DedupWindowSeconds int32
	RetentionSeconds   int32
	Other              map[string]json.RawMessage
}

// ActedOn are the queue options this service acts on.
var ActedOn = []string{"encryptionEnabled", "dedupWindowSeconds", "retentionSeconds"}

// MarshalJSON writes the others first, so the acted-on ones win a clash.
func (o QueueOptions) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(o.Other)+3)
	for k, v := range o.Other {
		m[k] = v
	}
	m["encryptionEnabled"], m["dedupWindowSeconds"], m["retentionSeconds"] = o.EncryptionEnabled, o.DedupWindowSeconds, o.RetentionSeconds
	return json.Marshal(m)
}

// UnmarshalJSON reads both kinds back. The acted-on options are taken by
// their exact names: matched as encoding/json matches fields, regardless of
// case, an option kept as sent ("encryptionenabled", written after
// "encryptionEnabled") would overrule them, or fail the whole read.
func (o *QueueOptions) UnmarshalJSON(b []byte) error {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	var read QueueOptions
	for _, f := range []struct {
		name string
		dst  any
	}{{"encryptionEnabled", &read.EncryptionEnabled}, {"dedupWindowSeconds", &read.DedupWindowSeconds}, {"retentionSeconds", &read.RetentionSeconds}} {
		if v, ok := all[f.name]; ok {
			if err := json.Unmarshal(v, f.dst); err != nil {
				return fmt.Errorf("options.%s: %w", f.name, err)
			}
			delete(all, f.name)
		}
	}
	read.Other = all
	*o = read
	return nil
}

// AppendQueueConfigured appends the JSON of c; it fails, appending
// nothing, only when an option kept as sent is not JSON.
func AppendQueueConfigured(dst []byte, c *QueueConfigured) ([]byte, error) {
	out, err := json.Marshal(c)
	if err != nil {
		return dst, fmt.Errorf("queue %q: its settings do not encode: %w", c.Queue, err)
	}
	return append(dst, out...), nil
}

// DecodeQueueConfigured reads a queue.changed broadcast.
func DecodeQueueConfigured(b []byte) (QueueConfigured, error) {
	var c QueueConfigured
	return c, json.Unmarshal(b, &c)
}
