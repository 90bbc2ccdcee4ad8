package ownership

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/segment"
)

// Group is one partition's frames of one request, as forwarded.
type Group struct {
	Queue, Partition string
	Frames           []segment.Frame
}

// Answer is the owner's outcome of one forwarded group: its verdicts, one
// per frame in order, or Refused when the owner did not take the group (it
// is stopping, or its fusion refused it) and the sender must write it.
type Answer struct {
	Refused  bool
	Verdicts []fusion.Verdict
}

// wireVersion leads every forward request and answer. A request with a
// frame that carries a NATS subject and header (segment.FlagNATS) is
// wireNATS: a bridge that predates them refuses it as a bad request, and
// the sender writes the group itself, instead of the owner misreading it.
const (
	wireVersion = 1
	wireNATS    = 2
)

var errShort = errors.New("ownership: truncated forward message")

// appendRequest encodes a forward request: the tenant and the groups.
func appendRequest(dst []byte, tenant tenancy.TenantID, groups []Group) []byte {
	version := byte(wireVersion)
	for i := range groups {
		for j := range groups[i].Frames {
			if groups[i].Frames[j].HasNATS() {
				version = wireNATS
			}
		}
	}
	dst = append(dst, version)
	dst = append(dst, tenant[:]...)
	dst = binary.AppendUvarint(dst, uint64(len(groups)))
	for i := range groups {
		g := &groups[i]
		dst = appendString(dst, g.Queue)
		dst = appendString(dst, g.Partition)
		dst = binary.AppendUvarint(dst, uint64(len(g.Frames)))
		for j := range g.Frames {
			f := &g.Frames[j]
			nats := f.HasNATS()
			dst = append(dst, f.ID[:]...)
			if nats {
				dst = append(dst, f.Flags|segment.FlagNATS)
			} else {
				dst = append(dst, f.Flags&^segment.FlagNATS)
			}
			dst = appendString(dst, f.TransactionID)
			dst = appendString(dst, f.TraceID)
			dst = binary.AppendUvarint(dst, uint64(len(f.Payload)))
			dst = append(dst, f.Payload...)
			if nats {
				dst = appendString(dst, f.Subject)
				dst = binary.AppendUvarint(dst, uint64(len(f.Header)))
				dst = append(dst, f.Header...)
			}
		}
	}
	return dst
}

// decodeRequest is appendRequest's inverse. Payloads and headers alias b.
func decodeRequest(b []byte) (tenant tenancy.TenantID, groups []Group, err error) {
	r := reader{b: b}
	if v := r.byte(); v != wireVersion && v != wireNATS {
		return tenant, nil, fmt.Errorf("ownership: forward request version %d, want %d or %d", v, wireVersion, wireNATS)
	}
	copy(tenant[:], r.bytes(16))
	n := r.count(2)
	groups = make([]Group, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		g := Group{Queue: r.str(), Partition: r.str()}
		nf := r.count(20)
		g.Frames = make([]segment.Frame, 0, nf)
		for j := 0; j < nf && r.err == nil; j++ {
			var f segment.Frame
			copy(f.ID[:], r.bytes(16))
			f.Flags = r.byte()
			f.TransactionID = r.str()
			f.TraceID = r.str()
			f.Payload = r.bytes(r.count(1))
			if f.Flags&segment.FlagNATS != 0 {
				// The bit frames the fields here; segment.Pack sets it again.
				f.Flags &^= segment.FlagNATS
				f.Subject = r.str()
				if h := r.bytes(r.count(1)); len(h) > 0 {
					f.Header = h
				}
			}
			g.Frames = append(g.Frames, f)
		}
		groups = append(groups, g)
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = errors.New("ownership: trailing bytes after a forward request")
	}
	return tenant, groups, r.err
}

// appendAnswer encodes the owner's answers, one per group in order.
func appendAnswer(dst []byte, answers []Answer) []byte {
	dst = append(dst, wireVersion)
	dst = binary.AppendUvarint(dst, uint64(len(answers)))
	for _, a := range answers {
		if a.Refused {
			dst = append(dst, 1)
			continue
		}
		dst = append(dst, 0)
		dst = binary.AppendUvarint(dst, uint64(len(a.Verdicts)))
		for _, v := range a.Verdicts {
			dst = append(dst, byte(v.Status))
			dst = binary.AppendVarint(dst, v.PartitionID)
			dst = binary.AppendVarint(dst, v.Offset)
			var ts int64
			if !v.CreatedAt.IsZero() {
				ts = v.CreatedAt.UnixMicro()
			}
			dst = binary.AppendVarint(dst, ts)
			dst = append(dst, v.MessageID[:]...)
			if v.Status == fusion.Error {
				msg := "write failed at the owner"
				if v.Err != nil {
					msg = v.Err.Error()
				}
				dst = appendString(dst, msg)
			}
		}
	}
	return dst
}

// decodeAnswer is appendAnswer's inverse; it checks the answer matches the
// groups sent.
func decodeAnswer(b []byte, groups []Group) ([]Answer, error) {
	r := reader{b: b}
	if v := r.byte(); v != wireVersion {
		return nil, fmt.Errorf("ownership: forward answer version %d, want %d", v, wireVersion)
	}
	if n := r.count(1); r.err == nil && n != len(groups) {
		return nil, fmt.Errorf("ownership: forward answer has %d groups for %d sent", n, len(groups))
	}
	answers := make([]Answer, len(groups))
	for i := 0; i < len(groups) && r.err == nil; i++ {
		if r.byte() == 1 {
			answers[i].Refused = true
			continue
		}
		n := r.count(19)
		if r.err == nil && n != len(groups[i].Frames) {
			return nil, fmt.Errorf("ownership: forward answer has %d verdicts for %d frames", n, len(groups[i].Frames))
		}
		vs := make([]fusion.Verdict, n)
		for j := range vs {
			v := &vs[j]
			v.Status = fusion.Status(r.byte())
			v.PartitionID = r.varint()
			v.Offset = r.varint()
			if ts := r.varint(); ts != 0 {
				v.CreatedAt = time.UnixMicro(ts).UTC()
			}
			copy(v.MessageID[:], r.bytes(16))
			switch v.Status {
			case fusion.Queued, fusion.Duplicate:
			case fusion.Error:
				v.Err = errors.New(r.str())
			default:
				if r.err == nil {
					r.err = fmt.Errorf("ownership: forward answer has verdict status %d", v.Status)
				}
			}
		}
		answers[i].Verdicts = vs
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = errors.New("ownership: trailing bytes after a forward answer")
	}
	if r.err != nil {
		return nil, r.err
	}
	return answers, nil
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// reader decodes with bounds checks; the first error sticks and every read
// after it returns zero values.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = errShort
	}
	r.b = nil
}

func (r *reader) byte() byte {
	if len(r.b) < 1 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || len(r.b) < n {
		r.fail()
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

// count reads a length and checks that at least min bytes per unit remain,
// so a forged count cannot make a huge allocation.
func (r *reader) count(min int) int {
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > uint64(len(r.b)-n)/uint64(min) {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) str() string { return string(r.bytes(r.count(1))) }
