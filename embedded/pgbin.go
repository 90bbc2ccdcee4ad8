package embedded

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// FindPostgresBin returns a directory holding both initdb and postgres. It looks,
// in order, on PATH, at `pg_config --bindir`, and at the newest
// /usr/lib/postgresql/<version>/bin. It returns ErrNoPostgres when none has them.
func FindPostgresBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if hasServerBins(dir) {
			return dir, nil
		}
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if hasServerBins(dir) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersionOf(dirs[i]) > pgVersionOf(dirs[j]) })
	for _, dir := range dirs {
		if hasServerBins(dir) {
			return dir, nil
		}
	}
	return "", ErrNoPostgres
}

func hasServerBins(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// pgVersionOf reads the major version out of /usr/lib/postgresql/<v>/bin so
// that 15 sorts above 9.6; unparsable names sort last.
func pgVersionOf(binDir string) float64 {
	v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	if err != nil {
		return -1
	}
	return v
}

// describeMissing adds the directories searched to ErrNoPostgres.
func describeMissing() error {
	return fmt.Errorf("%w; searched PATH, pg_config --bindir and /usr/lib/postgresql/*/bin", ErrNoPostgres)
}
