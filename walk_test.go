package queenbridge

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadSideNeverCallsBack holds the walk of a pop to one direction
// (docs/architecture.md, "Consumer state has a room of its own"): consume
// calls readside to park a pop and to announce, and readside never runs
// its callers' code. The imports block keeps readside from importing
// consume or cursors; this keeps it from taking their code as a func: no
// exported function or method of readside has a func parameter, and no
// exported struct field of it is a func. What it hands on it hands through
// an interface that the room below implements (Listener: cursors.Marks).
func TestReadSideNeverCallsBack(t *testing.T) {
	errs, err := funcsTaken("readside")
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) > 0 {
		t.Fatalf("readside takes code from its callers, so a pop's walk goes back up into consume:\n%s", strings.Join(errs, "\n"))
	}
}

// The checker itself must catch a func parameter, a func field, and a
// method's; it passes over unexported names and test files.
func TestFuncsTakenCatchesCallbacks(t *testing.T) {
	src := `package p
type Config struct { Hook func(int); quiet func() }
type R struct{}
func Park[T any](r *R, look func() (T, bool, error)) {}
func (r *R) Each(fn func(string)) {}
func (r *R) Fine(n int) {}
func hidden(fn func()) {}
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(funcsTakenIn(f), "\n")
	for _, want := range []string{"field Config.Hook", "Park takes look", "R.Each takes fn"} {
		if !strings.Contains(got, want) {
			t.Errorf("missed %q; said:\n%s", want, got)
		}
	}
	for _, not := range []string{"quiet", "Fine", "hidden"} {
		if strings.Contains(got, not) {
			t.Errorf("flagged %q; said:\n%s", not, got)
		}
	}
}

// funcsTaken lists the exported funcs, methods and struct fields of the
// package in dir (non-test files) that take or hold a func.
func funcsTaken(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, e := range funcsTakenIn(f) {
			out = append(out, filepath.Base(name)+": "+e)
		}
	}
	return out, nil
}

func funcsTakenIn(f *ast.File) []string {
	var out []string
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			name := d.Name.Name
			if d.Recv != nil && len(d.Recv.List) == 1 {
				name = receiverName(d.Recv.List[0].Type) + "." + name
			}
			for _, p := range d.Type.Params.List {
				if _, ok := p.Type.(*ast.FuncType); ok {
					for _, n := range p.Names {
						out = append(out, fmt.Sprintf("%s takes %s, a func", name, n.Name))
					}
				}
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok || !ts.Name.IsExported() {
					continue
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, field := range st.Fields.List {
					if _, ok := field.Type.(*ast.FuncType); !ok {
						continue
					}
					for _, n := range field.Names {
						if n.IsExported() {
							out = append(out, fmt.Sprintf("field %s.%s is a func", ts.Name.Name, n.Name))
						}
					}
				}
			}
		}
	}
	return out
}

// receiverName is the type a method is declared on (without * or type
// parameters).
func receiverName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return receiverName(x.X)
	case *ast.IndexExpr:
		return receiverName(x.X)
	case *ast.IndexListExpr:
		return receiverName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}
