package queenbridge

import (
	"fmt"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestDocGoImportLinesFollowArchitecture holds what each package's doc.go
// says about its imports to the rules of docs/architecture.md and to the
// package's imports: a doc.go must say what its package must not import
// (or that it imports nothing of the project, or nothing but a list), name
// only packages and libraries it does not import and the rules do not
// allow it, and a doc that lists what its package must not import must
// list the front door and every guarded library (NATS, net/http,
// Prometheus) the rules deny it. "Only A and B import L" must name
// exactly the packages the rules allow L.
func TestDocGoImportLinesFollowArchitecture(t *testing.T) {
	allowed, external, pkgs := architecture(t)
	docs := map[string]string{}
	imports := map[string][]string{}
	for _, p := range pkgs {
		name, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok || p.Name == "main" || !contains(p.GoFiles, "doc.go") {
			continue
		}
		text, err := packageDoc(filepath.Join(p.Dir, "doc.go"))
		if err != nil {
			t.Fatal(err)
		}
		docs[name] = text
		imports[name] = p.Imports
	}
	if len(docs) < 20 {
		t.Fatalf("found %d doc.go files: %v", len(docs), docs)
	}
	if errs := checkDocImports(docs, imports, allowed, external); len(errs) > 0 {
		t.Fatalf("doc.go lines that do not agree with docs/architecture.md or the imports:\n%s", strings.Join(errs, "\n"))
	}
}

// The checker itself must catch what it is there to catch.
func TestDocImportCheckerCatchesStaleLines(t *testing.T) {
	allowed := map[string][]string{
		"bridge": {"fusion", "auth"}, "fusion": nil, "auth": {"internal/tenancy"},
		"internal/tenancy": nil, "spool": nil, "quiet": nil, "vague": nil,
	}
	external := map[string][]string{
		"net/http":                            {"bridge", "internal/tenancy", "cmd/queen-bridge"},
		"github.com/nats-io/nats.go":          {"bridge"},
		"github.com/prometheus/client_golang": {"bridge"},
	}
	docs := map[string]string{
		"bridge":           "Only bridge (and cmd) import net/http.",
		"fusion":           "It must not import bridge, net/http or Prometheus.",
		"auth":             "It must not import any other package of the project, nor net/http.",
		"internal/tenancy": "It imports nothing of the project.",
		"spool":            "spool must not import fusion, bridge, NATS, net/http or Prometheus.",
		"quiet":            "It holds no state.",
		"vague":            "It must not import the rooms, bridge, NATS, net/http or Prometheus.",
	}
	imports := map[string][]string{
		"fusion": {"github.com/nats-io/nats.go/micro"},
		"spool":  {module + "/fusion"},
	}
	got := strings.Join(checkDocImports(docs, imports, allowed, external), "\n")
	for _, want := range []string{
		"bridge: \"only bridge, cmd import net/http\", but docs/architecture.md allows net/http to bridge, cmd, internal/tenancy",
		"fusion: must not import NATS, but the rules deny it and its doc does not say so",
		"auth: says it must not import internal/tenancy, but docs/architecture.md allows it",
		"spool: says it must not import fusion, but it does",
		"quiet: its doc.go does not say what it must not import",
		"vague: names \"the rooms\"",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("checker missed %q; it said:\n%s", want, got)
		}
	}
	if strings.Contains(got, "internal/tenancy:") {
		t.Errorf("checker refused a true doc:\n%s", got)
	}
}

// packageDoc is the package comment of a doc.go, its lines joined.
func packageDoc(path string) (string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		return "", err
	}
	if f.Doc == nil {
		return "", fmt.Errorf("%s has no package comment", path)
	}
	return strings.Join(strings.Fields(f.Doc.Text()), " "), nil
}

var (
	// "It must not import A, B or C, nor D." The subject is the package
	// (It, or its name); a sentence about another package is passed over.
	mustNotImport = regexp.MustCompile(`([\w/()]+) must not import ([^.;:]+)`)
	// "It imports nothing of the project", "... but A and B".
	importsNothing = regexp.MustCompile(`([\w/()]+) imports nothing of the project(?: but ([^.;:]+))?`)
	// "It imports A only".
	importsOnly = regexp.MustCompile(`([\w/()]+) imports ([\w/, ]+?) only\b`)
	// "Only A, B and C import L."
	onlyImport = regexp.MustCompile(`Only ([\w/,() ]+?) imports? ([\w/, ]+?)[.;:]`)
	aside      = regexp.MustCompile(`\([^)]*\)`)
	listSep    = regexp.MustCompile(`\s*(?:,|\bor\b|\bnor\b|\band\b)\s*`)
)

// libraries are the outside libraries a doc.go may name, by the name it
// uses, and the import path prefix of each in the external block.
var libraries = map[string]string{
	"NATS":       "github.com/nats-io/nats.go",
	"net/http":   "net/http",
	"HTTP":       "net/http",
	"Prometheus": "github.com/prometheus/client_golang",
	"pgx":        "github.com/jackc/pgx",
}

// guarded are the libraries every "must not import" list names when the
// rules deny them: the transports and the metrics, which only the front
// door and a few rooms may touch.
var guarded = []string{"NATS", "net/http", "Prometheus"}

// checkDocImports lists every doc.go statement about imports that the
// rules or the imports contradict, and every rule a doc omits.
func checkDocImports(docs map[string]string, imports, allowed, external map[string][]string) []string {
	var errs []string
	fail := func(pkg, format string, args ...any) {
		errs = append(errs, pkg+": "+fmt.Sprintf(format, args...))
	}
	imported := func(pkg, prefix string) bool {
		for _, imp := range imports[pkg] {
			if imp == prefix || strings.HasPrefix(imp, prefix+"/") {
				return true
			}
		}
		return false
	}
	for pkg, text := range docs {
		said := text
		text = aside.ReplaceAllString(text, "") // "(why)" may hold a dot
		self := func(subject string) bool {
			subject = strings.Trim(subject, "()")
			return subject == "It" || subject == "it" || subject == pkg || subject == filepath.Base(pkg)
		}
		stated := false
		var denied []string // terms of "must not import" lists
		for _, m := range mustNotImport.FindAllStringSubmatch(text, -1) {
			if !self(m[1]) {
				continue
			}
			stated = true
			denied = append(denied, splitList(m[2])...)
		}
		var only []string // "imports nothing of the project (but ...)"
		onlyStated := false
		for _, m := range importsNothing.FindAllStringSubmatch(text, -1) {
			if self(m[1]) {
				stated, onlyStated = true, true
				only = append(only, splitList(m[2])...)
			}
		}
		for _, m := range importsOnly.FindAllStringSubmatch(text, -1) {
			if self(m[1]) {
				stated, onlyStated = true, true
				only = append(only, splitList(m[2])...)
			}
		}
		if !stated {
			fail(pkg, "its doc.go does not say what it must not import (docs/architecture.md: each room's doc.go says so)")
		}
		deniedSet := map[string]bool{}
		for _, term := range denied {
			switch {
			case term == "any other package of the project" || term == "any package of the project":
				for dep := range allowed {
					deniedSet[dep] = true
				}
			case libraries[term] != "":
				deniedSet[libraries[term]] = true
			case hasKey(allowed, term):
				deniedSet[term] = true
			default:
				fail(pkg, "names %q, which is neither a package of docs/architecture.md nor one of the libraries NATS, net/http, Prometheus, pgx", term)
			}
		}
		for dep := range deniedSet {
			if strings.Contains(dep, ".") || dep == "net/http" { // a library
				if contains(external[dep], pkg) {
					fail(pkg, "says it must not import %s, but docs/architecture.md allows it", dep)
				}
				if imported(pkg, dep) {
					fail(pkg, "says it must not import %s, but it does", dep)
				}
				continue
			}
			if contains(allowed[pkg], dep) {
				fail(pkg, "says it must not import %s, but docs/architecture.md allows it", dep)
			}
			if imported(pkg, module+"/"+dep) {
				fail(pkg, "says it must not import %s, but it does", dep)
			}
		}
		if onlyStated {
			for _, dep := range allowed[pkg] {
				if !contains(only, dep) {
					fail(pkg, "says it imports nothing of the project but %v, but docs/architecture.md allows it %s", only, dep)
				}
			}
			for _, term := range only {
				if !hasKey(allowed, term) {
					fail(pkg, "names %q, which is not a package of docs/architecture.md", term)
				}
			}
		}
		// What a "must not import" list omits: the front door, and the
		// guarded libraries the rules deny the package.
		if len(denied) > 0 {
			if pkg != "bridge" && !deniedSet["bridge"] && !(onlyStated && !contains(only, "bridge")) {
				fail(pkg, "must not import bridge (a room never imports the front door), but its doc does not say so")
			}
			for _, lib := range guarded {
				prefix := libraries[lib]
				if !contains(external[prefix], pkg) && !deniedSet[prefix] {
					fail(pkg, "must not import %s, but the rules deny it and its doc does not say so", lib)
				}
			}
		}
		for _, m := range onlyImport.FindAllStringSubmatch(said, -1) {
			names := splitList(strings.NewReplacer("(", " and ", ")", "").Replace(m[1]))
			sort.Strings(names)
			for _, lib := range splitList(m[2]) {
				prefix := libraries[lib]
				if prefix == "" {
					fail(pkg, "%q names %q, which is not one of the libraries NATS, net/http, Prometheus, pgx", m[0], lib)
					continue
				}
				users := map[string]bool{}
				for _, u := range external[prefix] {
					if strings.HasPrefix(u, "cmd/") {
						u = "cmd"
					}
					users[u] = true
				}
				var want []string
				for u := range users {
					want = append(want, u)
				}
				sort.Strings(want)
				if strings.Join(want, ",") != strings.Join(names, ",") {
					fail(pkg, "%q, but docs/architecture.md allows %s to %s",
						"only "+strings.Join(names, ", ")+" import "+lib, lib, strings.Join(want, ", "))
				}
			}
		}
	}
	sort.Strings(errs)
	return errs
}

// splitList splits "A, B (why) or C, nor D" into its terms, leaving out
// what is said in parentheses.
func splitList(s string) []string {
	var out []string
	for _, term := range listSep.Split(aside.ReplaceAllString(s, ""), -1) {
		term = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(term), "either "))
		if term != "" {
			out = append(out, term)
		}
	}
	return out
}

func hasKey(m map[string][]string, k string) bool {
	_, ok := m[k]
	return ok
}
