package leaf

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// The hub's side of the leafnode protocol, as nats-server v2.15.2 speaks it
// (server/leafnode.go): INFO, PING, PONG, LS+ subject [queue weight],
// LS- subject [queue], -ERR 'text', +OK, and LMSG/HMSG, which it sends only
// for subjects the leaf subscribed to (this leaf subscribes to none, so
// they are read past).

// maxLine bounds a control line: an INFO with many URLs is a few KB, an
// LS+ a subject. A longer line is not the protocol.
const maxLine = 1 << 20

type opKind int

const (
	opOther opKind = iota
	opInfo
	opPing
	opPong
	opSub
	opUnsub
	opErr
	opMsg
)

// op is one control line, parsed. Its byte slices alias the reader's
// buffer until the next read.
type op struct {
	kind    opKind
	subject string // LS+ / LS-
	queue   string // LS+ / LS-: "" for a plain subscription
	weight  int64  // LS+ of a queue group
	arg     []byte // INFO's JSON, -ERR's text
	size    int    // LMSG / HMSG: bytes of the payload to read past
}

// readLine returns the next control line without its CRLF.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) && len(long) <= maxLine {
			line, err = br.ReadSlice('\n')
			long = append(long, line...)
		}
		if err == nil && len(long) > maxLine || errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("leaf: a control line longer than %d bytes", maxLine)
		}
		line = long
	}
	if err != nil {
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}

// parseOp reads one control line.
func parseOp(line []byte) (op, error) {
	verb, rest, _ := bytes.Cut(line, []byte(" "))
	rest = bytes.TrimSpace(rest)
	switch string(bytes.ToUpper(verb)) {
	case "INFO":
		return op{kind: opInfo, arg: rest}, nil
	case "PING":
		return op{kind: opPing}, nil
	case "PONG":
		return op{kind: opPong}, nil
	case "+OK":
		return op{kind: opOther}, nil
	case "-ERR":
		return op{kind: opErr, arg: bytes.Trim(rest, "'")}, nil
	case "LS+":
		args := bytes.Fields(rest)
		switch len(args) {
		case 1:
			return op{kind: opSub, subject: string(args[0])}, nil
		case 2, 3:
			o := op{kind: opSub, subject: string(args[0]), queue: string(args[1]), weight: 1}
			if len(args) == 3 {
				if w, err := strconv.ParseInt(string(args[2]), 10, 64); err == nil && w > 0 {
					o.weight = w
				}
			}
			return o, nil
		}
		return op{}, fmt.Errorf("leaf: LS+ with %d arguments: %q", len(args), line)
	case "LS-":
		args := bytes.Fields(rest)
		switch len(args) {
		case 1:
			return op{kind: opUnsub, subject: string(args[0])}, nil
		case 2:
			return op{kind: opUnsub, subject: string(args[0]), queue: string(args[1])}, nil
		}
		return op{}, fmt.Errorf("leaf: LS- with %d arguments: %q", len(args), line)
	case "LMSG", "HMSG":
		args := bytes.Fields(rest)
		if len(args) < 2 {
			return op{}, fmt.Errorf("leaf: %s without a size: %q", verb, line)
		}
		n, err := strconv.Atoi(string(args[len(args)-1]))
		if err != nil || n < 0 {
			return op{}, fmt.Errorf("leaf: %s with a bad size: %q", verb, line)
		}
		return op{kind: opMsg, size: n}, nil
	}
	return op{}, fmt.Errorf("leaf: unknown protocol line %q", line)
}

// skipPayload reads past a message's payload and its CRLF.
func skipPayload(br *bufio.Reader, n int) error {
	_, err := br.Discard(n + 2)
	return err
}

// serverInfo is what the leaf reads of the hub's INFO.
type serverInfo struct {
	ServerID    string `json:"server_id"`
	Headers     bool   `json:"headers"`
	MaxPayload  int64  `json:"max_payload"`
	TLSRequired bool   `json:"tls_required"`
	// A leafnode listener's INFO says info_on_connect (or lists leafnode
	// URLs); a client port's does neither, and the hub would take the
	// CONNECT there and refuse the first LMSG.
	InfoOnConnect bool     `json:"info_on_connect"`
	LeafNodeURLs  []string `json:"leafnode_urls"`
}

// connectInfo is the leaf's CONNECT (server/leafnode.go leafConnectInfo):
// headers so that HMSG is allowed, protocol 1 as a leaf of a server that
// knows INFO updates, no cluster and no remote account, so that the hub
// treats the connection as a plain leaf bound to the user's account.
type connectInfo struct {
	User     string `json:"user,omitempty"`
	Pass     string `json:"pass,omitempty"`
	Token    string `json:"auth_token,omitempty"`
	ServerID string `json:"server_id"`
	Name     string `json:"name"`
	Headers  bool   `json:"headers"`
	Protocol int    `json:"protocol"`
}
