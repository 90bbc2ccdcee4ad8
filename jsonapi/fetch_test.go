package jsonapi

import "testing"

// The read answer: {"messages":[...],"next":n}.

func TestReadAnswer(t *testing.T) {
	t.Parallel()
	golden(t, CloseMessages(OpenMessages(nil), 1), `{"messages":[],"next":1}`)

	out := OpenMessages(nil)
	out = AppendMessage(out, 41, uuidA, "order-1001", "", []byte(`{"total":12.5}`), false, at)
	out = append(out, ',')
	out = AppendMessage(out, 42, uuidB, "t", "trace-9", []byte(`"aGk="`), true, atWhole)
	golden(t, CloseMessages(out, 43), `{"messages":[`+
		`{"offset":41,"messageId":"01234567-89ab-cdef-0123-456789abcdef","transactionId":"order-1001","traceId":"",`+
		`"payload":{"total":12.5},"createdAt":"2026-11-30T12:00:00.123456Z"},`+
		`{"offset":42,"messageId":"ffeeddcc-bbaa-9988-7766-554433221100","transactionId":"t","traceId":"trace-9",`+
		`"payload":"aGk=","encoding":"base64","createdAt":"2026-01-02T03:04:05Z"}`+
		`],"next":43}`)

	golden(t, AppendMessage(nil, 9223372036854775807, uuidA, nasty, nasty, []byte(`"x\"y"`), false, atWhole),
		`{"offset":9223372036854775807,"messageId":"01234567-89ab-cdef-0123-456789abcdef","transactionId":`+nastyJSON+
			`,"traceId":`+nastyJSON+`,"payload":"x\"y","createdAt":"2026-01-02T03:04:05Z"}`)
}
