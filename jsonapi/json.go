package jsonapi

import (
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"
)

// AppendUUID appends id in its 36-character text form.
func AppendUUID(dst []byte, id [16]byte) []byte {
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
func AppendString(dst []byte, s string) []byte {
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

// AppendError appends {"error": msg}.
func AppendError(dst []byte, msg string) []byte {
	return append(AppendString(append(dst, `{"error":`...), msg), '}')
}

// AppendResource appends the JSON of v, an answer rendered by encoding/json
// (the admin routes', the requeue's); an answer that does not encode (it
// holds nothing that can fail) appends an error body saying why.
func AppendResource(dst []byte, v any) []byte {
	out, err := json.Marshal(v)
	if err != nil {
		return AppendError(dst, "encoding the answer: "+err.Error())
	}
	return append(dst, out...)
}
