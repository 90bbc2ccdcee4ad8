package queenbridge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/queenbridge/queenbridge"

// TestImportsFollowArchitecture holds every package's non-test imports to
// the rules in docs/architecture.md: project imports to its "imports" block,
// outside libraries to its "external" block.
func TestImportsFollowArchitecture(t *testing.T) {
	allowed, external, pkgs := architecture(t)
	if errs := checkImports(pkgs, allowed, external); len(errs) > 0 {
		t.Fatalf("imports that docs/architecture.md does not allow:\n%s", strings.Join(errs, "\n"))
	}
}

// TestEveryPackageHasADocFile: each package says in its doc.go what it owns,
// what it must not import, its goroutines and its failure model
// (docs/architecture.md).
func TestEveryPackageHasADocFile(t *testing.T) {
	pkgs, err := listPackages()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		if p.Name == "main" || strings.Contains(p.ImportPath, "/internal/test") {
			continue
		}
		if !slices.Contains(p.GoFiles, "doc.go") {
			t.Errorf("%s has no doc.go", p.ImportPath)
		}
	}
}

// The checker itself must catch what it is there to catch.
func TestImportCheckerCatchesViolations(t *testing.T) {
	allowed := map[string][]string{"bridge": {"fusion"}, "fusion": nil, "gone": nil}
	external := map[string][]string{"net/http": {"bridge"}}
	pkgs := []listedPackage{
		{ImportPath: module + "/bridge", Imports: []string{module + "/fusion", "net/http"}},
		{ImportPath: module + "/fusion", Imports: []string{module + "/bridge", "net/http/httptest"}},
		{ImportPath: module + "/newroom", Imports: []string{"fmt"}},
	}
	got := strings.Join(checkImports(pkgs, allowed, external), "\n")
	for _, want := range []string{
		"fusion imports bridge",
		"fusion imports net/http/httptest",
		"newroom is not in docs/architecture.md",
		"gone is in docs/architecture.md but is not a package",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("checker missed %q; it said:\n%s", want, got)
		}
	}
	if strings.Contains(got, "bridge imports") {
		t.Errorf("checker refused an allowed import:\n%s", got)
	}
}

// architecture is the rules of docs/architecture.md (its "imports" and
// "external" blocks) and the packages of the module as go list sees them.
func architecture(t *testing.T) (allowed, external map[string][]string, pkgs []listedPackage) {
	t.Helper()
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	if allowed, err = rules(doc, "imports"); err != nil {
		t.Fatal(err)
	}
	if external, err = rules(doc, "external"); err != nil {
		t.Fatal(err)
	}
	if pkgs, err = listPackages(); err != nil {
		t.Fatal(err)
	}
	return allowed, external, pkgs
}

// rules reads the fenced block ```name of the document: "key: value value".
func rules(doc []byte, name string) (map[string][]string, error) {
	out := map[string][]string{}
	in, found := false, false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "```"+name:
			in, found = true, true
		case in && line == "```":
			in = false
		case in && line != "":
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				return nil, errors.New("docs/architecture.md: a rule line without a colon: " + line)
			}
			out[strings.TrimSpace(k)] = strings.Fields(v)
		}
	}
	if !found {
		return nil, errors.New("docs/architecture.md has no ```" + name + " block")
	}
	return out, sc.Err()
}

type listedPackage struct {
	ImportPath string
	Dir        string
	Name       string
	GoFiles    []string
	Imports    []string
}

func listPackages() ([]listedPackage, error) {
	// The go command of the toolchain that runs the test: its GOROOT is in
	// the environment go test runs it with.
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	out, err := exec.Command(goBin, "list", "-json", "./...").Output()
	if err != nil {
		return nil, err
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
}

// checkImports lists every import the rules do not allow, every package
// the rules miss, and every rule for a package that does not exist. The
// module root (this test's package) is exempt.
func checkImports(pkgs []listedPackage, allowed, external map[string][]string) []string {
	var errs []string
	seen := map[string]bool{}
	for _, p := range pkgs {
		name, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue
		}
		seen[name] = true
		may, listed := allowed[name]
		if !listed {
			errs = append(errs, name+" is not in docs/architecture.md")
			continue
		}
		for _, imp := range p.Imports {
			if dep, own := strings.CutPrefix(imp, module+"/"); own {
				if !contains(may, dep) {
					errs = append(errs, name+" imports "+dep)
				}
				continue
			}
			for prefix, users := range external {
				if (imp == prefix || strings.HasPrefix(imp, prefix+"/")) && !contains(users, name) {
					errs = append(errs, name+" imports "+imp)
				}
			}
		}
	}
	for name := range allowed {
		if !seen[name] {
			errs = append(errs, name+" is in docs/architecture.md but is not a package")
		}
	}
	sort.Strings(errs)
	return errs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// houseSize is the most lines of Go, tests aside, a package holds unless
// the "sizes" block of docs/architecture.md says why it holds more: past
// it, a room has usually become a hub of several concerns.
const houseSize = 2000

// TestRoomsKeepTheHouseSize: every package over houseSize lines outside
// tests is named, with its reason, in the "sizes" block.
func TestRoomsKeepTheHouseSize(t *testing.T) {
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	why, err := rules(doc, "sizes")
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := listPackages()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		name, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue
		}
		n := 0
		for _, f := range p.GoFiles {
			b, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			n += bytes.Count(b, []byte("\n"))
		}
		if n > houseSize && len(why[name]) == 0 {
			t.Errorf("%s holds %d lines of Go outside tests, over %d, and the sizes block of docs/architecture.md does not say why", name, n, houseSize)
		}
	}
}

// hubImporters is how many packages may import each hub at most (their
// lines in the "imports" block): a room that reads storage takes its own
// Store interface and storage's types, a room that renders a route's JSON
// keeps its wire types beside the route, so only the wiring and what is
// truly database or hot-wire code import these.
var hubImporters = map[string]int{"pgwire": 8, "jsonapi": 9}

func TestHubsStayNarrow(t *testing.T) {
	allowed, _, _ := architecture(t)
	for hub, most := range hubImporters {
		var users []string
		for name, deps := range allowed {
			if contains(deps, hub) {
				users = append(users, name)
			}
		}
		sort.Strings(users)
		if len(users) > most {
			t.Errorf("%d packages may import %s, more than %d: %s", len(users), hub, most, strings.Join(users, " "))
		}
	}
}
