package cursors

import "strings"

// subjectMatches reports whether subject matches the NATS filter: '*' is
// one token, '>' one or more at the end.
func subjectMatches(filter, subject string) bool {
	for {
		ft, frest, fmore := strings.Cut(filter, ".")
		st, srest, smore := strings.Cut(subject, ".")
		switch {
		case ft == ">":
			return st != ""
		case ft != "*" && ft != st:
			return false
		case st == "":
			return false
		}
		if !fmore || !smore {
			return fmore == smore
		}
		filter, subject = frest, srest
	}
}

// matchesAny: no filters match everything; an unknown subject ("") matches
// no filter, since the engine cannot tell where it belongs.
func matchesAny(filters []string, subject string) bool {
	if len(filters) == 0 {
		return true
	}
	for _, f := range filters {
		if subjectMatches(f, subject) {
			return true
		}
	}
	return false
}

// rebuildSubject is the subject a message of partition had when its frame
// keeps none (segments written before subjects were stored): the stream's
// filter with its wildcards filled from the partition's tokens, as the
// intake derived the partition from the subject. It is "" when no single
// filter fits (several do, or the partition is not made of subject
// tokens: a Queen-Partition override, a Queen client's push). A literal
// filter fits only the partition Default.
func rebuildSubject(filters []string, partition string) string {
	out := ""
	for _, f := range filters {
		s, ok := fill(f, partition)
		if !ok {
			continue
		}
		if out != "" {
			return "" // ambiguous
		}
		out = s
	}
	return out
}

func fill(filter, partition string) (string, bool) {
	if !strings.ContainsAny(filter, "*>") {
		return filter, partition == "Default"
	}
	ftoks := strings.Split(filter, ".")
	ptoks := strings.Split(partition, ".")
	var b strings.Builder
	j := 0
	for i, ft := range ftoks {
		if i > 0 {
			b.WriteByte('.')
		}
		switch ft {
		case "*":
			if j >= len(ptoks) || ptoks[j] == "" {
				return "", false
			}
			b.WriteString(ptoks[j])
			j++
		case ">":
			if j >= len(ptoks) {
				return "", false
			}
			for k, t := range ptoks[j:] {
				if t == "" {
					return "", false
				}
				if k > 0 {
					b.WriteByte('.')
				}
				b.WriteString(t)
			}
			j = len(ptoks)
		default:
			b.WriteString(ft)
		}
	}
	return b.String(), j == len(ptoks)
}

// mayHold reports whether a partition may hold messages a consumer's
// filters match: its subject rebuilt from the stream's filters matches
// them, or it cannot be rebuilt (a Queen-Partition override, a Queen
// client's push), and then only its messages' stored subjects can tell.
// Counts of what is pending use it, so that a filtered consumer does not
// count the other subjects of its stream.
func mayHold(filters, streamFilters []string, partition string) bool {
	if len(filters) == 0 {
		return true
	}
	subject := rebuildSubject(streamFilters, partition)
	return subject == "" || matchesAny(filters, subject)
}
