package queenbridge

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outside are the names of texts that are not in the repository, which
// the docs and the code must not send a reader to: the repository's own
// docs are the reference. Built from parts, so that this file does not
// name them itself.
var outside = regexp.MustCompile(`\b(` + strings.Join([]string{
	"SP" + "EC", "DE" + "SIGN", "PERF-" + "NOTES", "life-of-" + "a-push",
}, "|") + `)\b`)

// machinePath is a folder of one machine: a home or a work directory (a
// scratch directory such as /tmp/queen-data in an example is anyone's).
var machinePath = regexp.MustCompile(`(^|[^\w.])/(work|home|Users|root)/`)

// TestDocsCiteOnlyFilesInTheRepository: every relative link of the README
// and docs/ resolves to a file of the repository, every doc named in
// backticks (`docs/x.md`, `x.md`) exists, no doc names a folder of the
// machine it was written on, and no doc, Go file or SQL file sends its
// reader to a text outside the repository.
func TestDocsCiteOnlyFilesInTheRepository(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	namedDoc := regexp.MustCompile("`([\\w./-]+\\.md)`")
	var checked int
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// An applied migration's text never changes (pgwire's
			// TestAppliedMigrationsDoNotChange), old comments and all.
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || path == "pgwire/schema/migrations") {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(path)
		if ext != ".md" && ext != ".go" && ext != ".sql" && ext != ".sh" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := string(b)
		checked++
		for i, line := range strings.Split(text, "\n") {
			if m := outside.FindString(line); m != "" && path != "doclinks_test.go" {
				t.Errorf("%s:%d names %s, which is not in the repository: cite the repository's own docs", path, i+1, m)
			}
		}
		if ext != ".md" {
			return nil
		}
		for i, line := range strings.Split(text, "\n") {
			if m := machinePath.FindString(line); m != "" {
				t.Errorf("%s:%d names a folder of one machine (%s)", path, i+1, strings.TrimSpace(m))
			}
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				target, _, _ = strings.Cut(target, "#")
				if _, err := os.Stat(filepath.Join(filepath.Dir(path), target)); err != nil {
					t.Errorf("%s:%d links to %s, which is not in the repository", path, i+1, m[1])
				}
			}
			for _, m := range namedDoc.FindAllStringSubmatch(line, -1) {
				_, here := os.Stat(filepath.Join(filepath.Dir(path), m[1]))
				_, atRoot := os.Stat(m[1])
				if here != nil && atRoot != nil {
					t.Errorf("%s:%d names %s, which is not in the repository", path, i+1, m[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d files", checked)
	}
}
