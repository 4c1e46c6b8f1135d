package importrules

import (
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// fileScan is what one source file imports and how it starts processes.
type fileScan struct {
	imports []string
	starts  []string // "12: os.StartProcess"
}

// startImports start processes by being imported at all.
var startImports = map[string]bool{"os/exec": true, "golang.org/x/sys/execabs": true}

// startFuncs are the functions that start (or replace the image of) a
// process, by package path. Any reference counts, not only a call: a
// function value taken here could be called anywhere.
var startFuncs = map[string][]string{
	"os":                    {"StartProcess"},
	"syscall":               {"ForkExec", "Exec", "StartProcess"},
	"golang.org/x/sys/unix": {"Exec"},
}

// rawCalls make a system call by number; startSyscalls are the numbers that
// start a process or replace its image. Only a call of a raw function with
// one of these constants among its arguments counts, so a seccomp filter
// that names them is not taken for a process starter. A number computed at
// run time cannot be seen here; the kernel features packages that do that
// (seccomp's probes) are not starters by the table.
var (
	rawCalls      = []string{"Syscall", "Syscall6", "RawSyscall", "RawSyscall6", "RawSyscallNoError"}
	startSyscalls = []string{"SYS_EXECVE", "SYS_EXECVEAT", "SYS_FORK", "SYS_VFORK", "SYS_CLONE", "SYS_CLONE3"}
)

// scanFile parses one file (src, when not nil, instead of reading path) and
// returns its imports and process starts; nil for a file built only with
// the ignore tag (a program of its own).
func scanFile(path string, src any) (*fileScan, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ImportsOnly|parser.ParseComments)
	if err != nil {
		return nil, err
	}
	if onlyIgnore(f) {
		return nil, nil
	}
	// Parse again in full: ImportsOnly stops before the declarations.
	f, err = parser.ParseFile(fset, path, src, 0)
	if err != nil {
		return nil, err
	}
	out := &fileScan{}
	local := map[string]string{} // local name -> path, for the packages that can start processes
	for _, spec := range f.Imports {
		p, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: import %s: %w", path, spec.Path.Value, err)
		}
		out.imports = append(out.imports, p)
		line := fset.Position(spec.Pos()).Line
		if startImports[p] {
			out.starts = append(out.starts, fmt.Sprintf("%d: imports %s", line, p))
		}
		if _, ok := startFuncs[p]; !ok {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if spec.Name != nil {
			name = spec.Name.Name
		}
		if name == "." {
			// Unqualified names would hide StartProcess from the look below.
			out.starts = append(out.starts, fmt.Sprintf("%d: dot import of %s hides its process starts", line, p))
			continue
		}
		local[name] = p
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if p, ok := pkgRef(n, local); ok && contains(startFuncs[p], n.Sel.Name) {
				out.starts = append(out.starts, fmt.Sprintf("%d: %s.%s", fset.Position(n.Pos()).Line, p, n.Sel.Name))
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if p, ok := pkgRef(sel, local); ok && p != "os" && contains(rawCalls, sel.Sel.Name) {
				for _, a := range n.Args {
					if nr := startSyscall(a, local); nr != "" {
						out.starts = append(out.starts, fmt.Sprintf("%d: %s.%s(%s)", fset.Position(n.Pos()).Line, p, sel.Sel.Name, nr))
					}
				}
			}
		}
		return true
	})
	return out, nil
}

// pkgRef reports the import path when sel is pkg.Name for one of the
// packages in local. An identifier the parser resolved to a declaration of
// the file (a variable named os) is not the package.
func pkgRef(sel *ast.SelectorExpr, local map[string]string) (string, bool) {
	id, ok := sel.X.(*ast.Ident)
	if !ok || id.Obj != nil {
		return "", false
	}
	p, ok := local[id.Name]
	return p, ok
}

// startSyscall returns the SYS_ constant that e names (through conversions
// such as uintptr(...)) when it is one that starts a process.
func startSyscall(e ast.Expr, local map[string]string) string {
	found := ""
	ast.Inspect(e, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if p, ok := pkgRef(sel, local); ok && contains(startSyscalls, sel.Sel.Name) {
				found = p + "." + sel.Sel.Name
			}
		}
		return found == ""
	})
	return found
}

// onlyIgnore reports whether the file's build constraint is the ignore tag
// alone.
func onlyIgnore(f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() > f.Package {
			break
		}
		for _, c := range g.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			x, err := constraint.Parse(c.Text)
			if err != nil {
				return false
			}
			tag, ok := x.(*constraint.TagExpr)
			return ok && tag.Tag == "ignore"
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
