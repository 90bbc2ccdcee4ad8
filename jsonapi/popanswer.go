package jsonapi

import "strconv"

// PopHead is what a pop answer says before its messages: the queue, the
// first partition it delivered from, the lease ("" with auto-ack), the
// group and how many partitions it claimed.
type PopHead struct {
	Queue, Partition string
	PartitionID      int64
	Lease, Group     string
	Claimed          int
}

// OpenPop appends the opening of a pop answer: {"success":true,"queue","partition",
// "partitionId","leaseId","consumerGroup","partitionsClaimed","messages":[
// — AppendPopped then appends each message, comma-separated, and
// ClosePop closes it.
func OpenPop(out []byte, h *PopHead) []byte {
	out = append(out, `{"success":true,"queue":`...)
	out = AppendString(out, h.Queue)
	out = append(out, `,"partition":`...)
	out = AppendString(out, h.Partition)
	out = append(out, `,"partitionId":"`...)
	out = strconv.AppendInt(out, h.PartitionID, 10)
	out = append(out, `","leaseId":`...)
	out = AppendString(out, h.Lease)
	out = append(out, `,"consumerGroup":`...)
	out = AppendString(out, h.Group)
	out = append(out, `,"partitionsClaimed":`...)
	out = strconv.AppendInt(out, int64(h.Claimed), 10)
	return append(out, `,"messages":[`...)
}

// ClosePop closes what OpenPop opened.
func ClosePop(out []byte) []byte { return append(out, `]}`...) }

// AppendAckResults appends the answer to an acknowledgement request: one
// object per acknowledgement, in request order.
func AppendAckResults(out []byte, rs []AckResult) []byte {
	out = append(out, '[')
	for i := range rs {
		if i > 0 {
			out = append(out, ',')
		}
		out = AppendAckResult(out, i, &rs[i])
	}
	return append(out, ']')
}
