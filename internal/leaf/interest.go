package leaf

import (
	"slices"
	"strings"
)

// interest is the hub's subscriptions in the leaf's account as its LS+ and
// LS- announce them. The hub counts for us: it sends LS+ for a plain
// subject when its first subscriber comes and LS- when its last goes, and
// for a queue group LS+ with the group's weight whenever that changes and
// LS- when the group is empty. So a key (subject, or subject and queue) is
// either present or not, and nothing here counts subscribers.
//
// Not safe for concurrent use: Conn guards it with imu.
type interest struct {
	literal map[string]*subjectSubs // subjects without wildcards
	wild    map[string]*subjectSubs // subjects with * or >
	queues  int                     // queue groups over both maps: Publish looks them up only when there are any
	// wildQueued are the wild subjects that have queue groups, so that
	// Publish matches its subject against those alone (a delivery goes
	// through queueGroups once per message).
	wildQueued []*subjectSubs
}

// subjectSubs is what the hub announced for one subject: a plain
// subscription, and queue groups with their weights.
type subjectSubs struct {
	subject string
	// prefix is subject up to its first wildcard token: a subject that
	// does not start with it cannot match, which one comparison tells
	// (most of a delivery's candidates fail there).
	prefix string
	plain  bool
	queues map[string]int64
}

// mayMatch reports whether the literal subject matches the wild s.
func (s *subjectSubs) mayMatch(subject string) bool {
	return strings.HasPrefix(subject, s.prefix) && Match(s.subject, subject)
}

func newInterest() *interest {
	return &interest{literal: map[string]*subjectSubs{}, wild: map[string]*subjectSubs{}}
}

func (in *interest) table(subject string) map[string]*subjectSubs {
	if hasWildcard(subject) {
		return in.wild
	}
	return in.literal
}

// add records an LS+: queue "" is a plain subscription.
func (in *interest) add(subject, queue string, weight int64) {
	tab := in.table(subject)
	s := tab[subject]
	if s == nil {
		s = &subjectSubs{subject: subject, prefix: literalPrefix(subject)}
		tab[subject] = s
	}
	if queue == "" {
		s.plain = true
		return
	}
	if s.queues == nil {
		s.queues = map[string]int64{}
	}
	if _, had := s.queues[queue]; !had {
		in.queues++
		if len(s.queues) == 0 && hasWildcard(subject) {
			in.wildQueued = append(in.wildQueued, s)
		}
	}
	s.queues[queue] = weight
}

// remove records an LS-; it reports whether the subject has no
// subscription left of either kind.
func (in *interest) remove(subject, queue string) (gone bool) {
	tab := in.table(subject)
	s := tab[subject]
	if s == nil {
		return false // an LS- for a key never announced: nothing changes
	}
	if queue == "" {
		s.plain = false
	} else if _, had := s.queues[queue]; had {
		delete(s.queues, queue)
		in.queues--
		if len(s.queues) == 0 && hasWildcard(subject) {
			in.wildQueued = slices.DeleteFunc(in.wildQueued, func(w *subjectSubs) bool { return w == s })
		}
	}
	if s.plain || len(s.queues) > 0 {
		return false
	}
	delete(tab, subject)
	return true
}

// matches reports whether any subscription matches the literal subject.
func (in *interest) matches(subject string) bool {
	if _, ok := in.literal[subject]; ok {
		return true
	}
	for _, s := range in.wild {
		if s.mayMatch(subject) {
			return true
		}
	}
	return false
}

// queueGroups appends the queue groups with a subscription matching the
// literal subject, each once: the hub hands a leaf's message to a queue
// group only when the message names it.
func (in *interest) queueGroups(dst []string, subject string) []string {
	if in.queues == 0 {
		return dst
	}
	add := func(s *subjectSubs) {
		for q := range s.queues {
			if !slices.Contains(dst, q) {
				dst = append(dst, q)
			}
		}
	}
	if s := in.literal[subject]; s != nil {
		add(s)
	}
	for _, s := range in.wildQueued {
		if s.mayMatch(subject) {
			add(s)
		}
	}
	return dst
}

// lostSince lists the subjects that had interest in old and have none
// here: old's literal subjects that nothing here matches, and old's
// wildcard subjects that are not here (a literal subject they matched may
// have lost its interest with them).
func (in *interest) lostSince(old *interest) []string {
	var lost []string
	for subject := range old.literal {
		if !in.matches(subject) {
			lost = append(lost, subject)
		}
	}
	for pattern := range old.wild {
		if _, ok := in.wild[pattern]; !ok {
			lost = append(lost, pattern)
		}
	}
	return lost
}

func hasWildcard(subject string) bool { return len(literalPrefix(subject)) < len(subject) }

// literalPrefix is pattern up to its first wildcard token ("" when the
// first token is one).
func literalPrefix(pattern string) string {
	for i := 0; i < len(pattern); i++ {
		if c := pattern[i]; (c == '*' || c == '>') && (i == 0 || pattern[i-1] == '.') &&
			(i == len(pattern)-1 || pattern[i+1] == '.') {
			return pattern[:i]
		}
	}
	return pattern
}

// Match reports whether the literal subject matches pattern, a NATS
// subject that may hold wildcards: * stands for one token, a final >
// for one or more.
func Match(pattern, subject string) bool {
	for {
		pt, prest, pmore := strings.Cut(pattern, ".")
		st, srest, smore := strings.Cut(subject, ".")
		switch {
		case pt == ">" && !pmore:
			return true
		case pt != "*" && pt != st:
			return false
		case !pmore || !smore:
			return pmore == smore
		}
		pattern, subject = prest, srest
	}
}
