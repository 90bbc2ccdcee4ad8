package queenbridge

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryMetricIsDocumented: each metric name the metrics package
// registers appears in backticks in docs/operations.md's table, and the
// table names no metric the package does not register.
func TestEveryMetricIsDocumented(t *testing.T) {
	files, err := filepath.Glob("metrics/*.go")
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`"(queen_[a-z_]+)"`)
	registered := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range name.FindAllStringSubmatch(string(b), -1) {
			registered[m[1]] = true
		}
	}
	if len(registered) < 40 {
		t.Fatalf("found %d metric names in metrics/", len(registered))
	}
	doc, err := os.ReadFile("docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(queen_[a-z_]+)` \\|")
	documented := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
		if !registered[m[1]] {
			t.Errorf("docs/operations.md lists %s, which the metrics package does not register", m[1])
		}
	}
	for n := range registered {
		// A histogram's series (_count, _sum) are named in tests and
		// comments; the histogram itself is the row.
		base := strings.TrimSuffix(strings.TrimSuffix(n, "_count"), "_sum")
		if !documented[n] && !(base != n && documented[base]) {
			t.Errorf("%s is registered but docs/operations.md has no row for it", n)
		}
	}
}
