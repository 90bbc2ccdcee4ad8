package readside

import (
	"github.com/queenbridge/queenbridge/storage"
)

// partView is a partition as a message's status reads it: the queue
// mode's cursor row (nil when the partition has none) and the named
// groups' (a bus).
type partView struct {
	p   *storage.MessagePartition
	qm  *storage.GroupState
	bus []storage.GroupState
}

func viewOf(p *storage.MessagePartition) partView {
	v := partView{p: p}
	for i := range p.Groups {
		if p.Groups[i].Group == storage.QueueMode {
			v.qm = &p.Groups[i]
		} else {
			v.bus = append(v.bus, p.Groups[i])
		}
	}
	return v
}

// leased: the queue mode holds a live lease, which delivered (cursor,
// delivered_to].
func (v partView) leased() bool { return v.qm != nil && !v.qm.LeaseExpires.IsZero() }

// status is the message at offset off's status (docs/admin-messages.md, "Status"): dead_letter
// when a group dead-lettered it; else, where the partition has a queue-mode
// cursor, completed at or before it, processing when the live lease
// delivered it, pending otherwise; else completed once every named group's
// cursor passed it; else pending. queueStatus is Queen's status by queue
// mode alone (pending where there is none); consumedBy counts the named
// groups whose cursor passed it.
func (v partView) status(off int64, dead bool) (status, queueStatus string, consumedBy int) {
	for _, g := range v.bus {
		if g.Cursor >= off {
			consumedBy++
		}
	}
	switch {
	case dead:
		queueStatus = MessageDeadLetter
	case v.qm != nil && off <= v.qm.Cursor:
		queueStatus = MessageCompleted
	case v.leased() && off <= v.qm.DeliveredTo:
		queueStatus = MessageProcessing
	default:
		queueStatus = MessagePending
	}
	switch {
	case dead || v.qm != nil:
		status = queueStatus
	case len(v.bus) > 0 && consumedBy == len(v.bus):
		status = MessageCompleted
	default:
		status = MessagePending
	}
	return status, queueStatus, consumedBy
}

// bounds are the offsets (lo, hi] that can have the given status ("": any)
// apart from dead letters, which the list reads from the dead letters
// themselves: so a list by status walks only the part of the log it can
// come from.
func (v partView) bounds(status string) (lo, hi int64) {
	last := v.p.Last
	switch status {
	case MessageCompleted:
		switch {
		case v.qm != nil:
			return 0, min(v.qm.Cursor, last)
		case len(v.bus) > 0:
			return 0, min(v.minBus(), last)
		}
		return 0, 0
	case MessageProcessing:
		if v.leased() {
			return v.qm.Cursor, min(v.qm.DeliveredTo, last)
		}
		return 0, 0
	case MessagePending:
		switch {
		case v.leased():
			return max(v.qm.Cursor, v.qm.DeliveredTo), last
		case v.qm != nil:
			return v.qm.Cursor, last
		case len(v.bus) > 0:
			return v.minBus(), last
		}
	}
	return 0, last
}

func (v partView) minBus() int64 {
	m := v.bus[0].Cursor
	for _, g := range v.bus[1:] {
		m = min(m, g.Cursor)
	}
	return m
}
