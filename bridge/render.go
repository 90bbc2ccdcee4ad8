package bridge

import (
	"encoding/hex"
	"strconv"
	"time"
	"unicode/utf8"
)

// render writes the response array by hand: one small object per item, no
// reflection.
func (c *pushCall) render() []byte {
	out := make([]byte, 0, 64+len(c.items)*200)
	out = append(out, '[')
	for i := range c.items {
		r := &c.st[i].result
		it := &c.items[i]
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"index":`...)
		out = strconv.AppendInt(out, int64(i), 10)
		out = append(out, `,"status":"`...)
		out = append(out, r.status...)
		out = append(out, '"')
		if r.hasID {
			out = append(out, `,"messageId":"`...)
			out = appendUUID(out, r.messageID)
			out = append(out, '"')
		}
		out = append(out, `,"transactionId":`...)
		out = appendJSONString(out, c.st[i].txid)
		out = append(out, `,"queue":`...)
		out = appendJSONString(out, it.Queue)
		out = append(out, `,"partition":`...)
		out = appendJSONString(out, it.Partition)
		if r.status == statusQueued || r.status == statusDuplicate {
			out = append(out, `,"offset":`...)
			out = strconv.AppendInt(out, r.offset, 10)
		}
		if r.status == statusQueued {
			out = append(out, `,"createdAt":"`...)
			out = r.createdAt.UTC().AppendFormat(out, time.RFC3339Nano)
			out = append(out, '"')
		}
		if r.errText != "" {
			out = append(out, `,"error":`...)
			out = appendJSONString(out, r.errText)
		}
		out = append(out, '}')
	}
	return append(out, ']')
}

func appendUUID(dst []byte, id [16]byte) []byte {
	var buf [36]byte
	hex.Encode(buf[0:8], id[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], id[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], id[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], id[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:], id[10:])
	return append(dst, buf[:]...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string literal.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// errorBody is {"error": msg}.
func errorBody(msg string) []byte {
	return append(appendJSONString([]byte(`{"error":`), msg), '}')
}
