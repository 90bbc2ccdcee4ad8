package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestConfigurationDocMatchesTheSettings holds docs/configuration.md to the
// settings table: every setting has a row with its variable, its flag and
// its default; the doc (and the README) names no QUEEN_ variable that is not
// a setting, and a renamed setting's old name only where it says so.
func TestConfigurationDocMatchesTheSettings(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := settingRows(string(doc))
	if len(rows) < 20 {
		t.Fatalf("docs/configuration.md has %d setting rows", len(rows))
	}
	known := map[string]bool{}
	for new, old := range oldNames {
		known[new], known[old] = true, true
	}
	for _, s := range (&config{}).settings() {
		known[s.env] = true
		row, ok := rows[s.env]
		if !ok {
			t.Errorf("%s is a setting, but docs/configuration.md has no row for it", s.env)
			continue
		}
		if want := "`-" + flagName(s.env) + "`"; row.flag != want {
			t.Errorf("%s: docs/configuration.md gives the flag %s, the binary reads %s", s.env, row.flag, want)
		}
		if got := documentedDefault(row.def); got != s.def && !(s.def == "" && derived(row.def)) {
			t.Errorf("%s: docs/configuration.md gives the default %q (%s), the binary %q", s.env, got, row.def, s.def)
		}
	}
	for env := range rows {
		if strings.HasPrefix(env, "QUEEN_") && !known[env] {
			t.Errorf("docs/configuration.md has a row for %s, which is no setting", env)
		}
	}

	// The doc and the README name only settings that exist, and a renamed
	// setting's old name only as such, on a line that says it was renamed.
	mention := regexp.MustCompile(`QUEEN_[A-Z0-9_]*[A-Z0-9]`)
	renamed := regexp.MustCompile(`(?i)formerly|renamed|deprecated|old name`)
	old := map[string]bool{}
	for _, name := range oldNames {
		old[name] = true
	}
	for _, f := range []string{"../../docs/configuration.md", "../../README.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, env := range mention.FindAllString(line, -1) {
				switch {
				case !known[env]:
					t.Errorf("%s:%d names %s, which is no setting", filepath.Base(f), i+1, env)
				case old[env] && !renamed.MatchString(line):
					t.Errorf("%s:%d names %s as a setting; it is the old name of %s", filepath.Base(f), i+1, env, newName(env))
				}
			}
		}
	}
}

// newName is the setting a deprecated name was renamed to.
func newName(old string) string {
	for n, o := range oldNames {
		if o == old {
			return n
		}
	}
	return ""
}

type settingRow struct{ flag, def string }

// settingRows reads the tables of docs/configuration.md: | `VAR` ... |
// `-flag` | default | what |, by the variable (the first code span of
// the first cell).
func settingRows(doc string) map[string]settingRow {
	rows := map[string]settingRow{}
	code := regexp.MustCompile("`([^`]*)`")
	for _, line := range strings.Split(doc, "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(line), "|") {
			continue
		}
		m := code.FindStringSubmatch(cells[0])
		if m == nil {
			continue
		}
		rows[m[1]] = settingRow{flag: strings.TrimSpace(cells[1]), def: strings.TrimSpace(cells[2])}
	}
	return rows
}

// documentedDefault is the value a default cell gives: its first code
// span ("`16777216` (16 MiB)" is 16777216), "" for an empty cell.
func documentedDefault(cell string) string {
	if m := regexp.MustCompile("`([^`]*)`").FindStringSubmatch(cell); m != nil {
		return m[1]
	}
	return cell
}

// derived says a default cell names a value made from another setting
// (`QUEEN_DATA_DIR/spool`), which the binary fills in after reading them.
func derived(cell string) bool {
	return cell == "" || strings.HasPrefix(documentedDefault(cell), "QUEEN_")
}
