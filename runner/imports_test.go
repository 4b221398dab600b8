package runner

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// xpModule starts the import path of every package of xp.
const xpModule = "github.com/xp-bench/xp/"

// TestImportsRunOneWay holds the module's dependencies to the direction of
// the design map (docs/design.md): cmd → runner → infra, and the planner
// beneath them all. Test files are left out: a test may drive the runner
// against a target.
func TestImportsRunOneWay(t *testing.T) {
	pkgs, err := moduleImports("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"runner", "planner", "infra/target", "runner/loadgen"} {
		if _, ok := pkgs[p]; !ok {
			t.Fatalf("package %s not found: the walk of the module is broken", p)
		}
	}
	for _, v := range importViolations(pkgs) {
		t.Error(v)
	}
}

// TestImportViolations: each rule of TestImportsRunOneWay names the
// package and the import that breaks it, and leaves the allowed ones be.
func TestImportViolations(t *testing.T) {
	tests := []struct {
		name string
		pkgs map[string][]string
		want []string // substrings, one a violation
	}{
		{name: "the allowed imports", pkgs: map[string][]string{
			"infra/remote":    {xpModule + "runner/loadgen", xpModule + "infra/target", "fmt"},
			"infra/target":    {xpModule + "runner/loadgen", xpModule + "planner"},
			"runner":          {xpModule + "infra/target", xpModule + "runner/loadgen", xpModule + "results", xpModule + "planner"},
			"planner":         {xpModule + "internal/leaf", "go.yaml.in/yaml/v3"},
			"internal/leaf":   {"go.yaml.in/yaml/v3"},
			"runner/loadgen":  {xpModule + "infra/kafkaconf"},
			"infra/kafkaconf": nil,
		}},
		{name: "infra imports the runner", pkgs: map[string][]string{
			"infra/tf": {xpModule + "runner"},
			"runner":   nil,
		}, want: []string{"infra/tf imports runner"}},
		{name: "infra imports a runner package other than loadgen", pkgs: map[string][]string{
			"infra/local/localtarget": {xpModule + "runner/progress"},
		}, want: []string{"infra/local/localtarget imports runner/progress"}},
		{name: "the runner imports infrastructure", pkgs: map[string][]string{
			"runner": {xpModule + "infra/target", xpModule + "infra/gateway", xpModule + "infra/procstat"},
		}, want: []string{"runner imports infra/gateway", "runner imports infra/procstat"}},
		{name: "the explorer imports beyond analysis and results", pkgs: map[string][]string{
			"analysis/explore": {xpModule + "analysis", xpModule + "results", xpModule + "analysis/export"},
		}, want: []string{"analysis/explore imports analysis/export"}},
		{name: "a package other than cmd imports the explorer", pkgs: map[string][]string{
			"cmd/xp":          {xpModule + "analysis/explore"},
			"analysis/export": {xpModule + "analysis/explore"},
		}, want: []string{"analysis/export imports analysis/explore"}},
		{name: "the planner imports xp", pkgs: map[string][]string{
			"planner": {xpModule + "infra/target"},
		}, want: []string{"planner imports infra/target"}},
		{name: "the planner imports an internal package that is no leaf", pkgs: map[string][]string{
			"planner":          {xpModule + "internal/notleaf"},
			"internal/notleaf": {xpModule + "results"},
		}, want: []string{"planner imports internal/notleaf"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := importViolations(tc.pkgs)
			if len(got) != len(tc.want) {
				t.Fatalf("violations %q, want %d: %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("violation %q, want one containing %q", got[i], w)
				}
			}
		})
	}
}

// importViolations checks the import graph pkgs (a package's directory
// relative to the module root → its imports) and says, in package order,
// each import that runs the wrong way.
func importViolations(pkgs map[string][]string) []string {
	under := func(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	// leaf says whether p imports nothing of xp.
	leaf := func(p string) bool {
		return !slices.ContainsFunc(pkgs[p], func(imp string) bool { return strings.HasPrefix(imp, xpModule) })
	}
	var out []string
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	slices.Sort(names)
	for _, p := range names {
		for _, imp := range pkgs[p] {
			dep, ok := strings.CutPrefix(imp, xpModule)
			if !ok {
				continue
			}
			var why string
			switch {
			case under(p, "infra") && under(dep, "runner") && dep != "runner/loadgen":
				why = "infrastructure serves the runner; of the runner it may use only runner/loadgen, the load generator targets run"
			case p == "runner" && under(dep, "infra") && dep != "infra/target":
				why = "the runner reaches infrastructure through infra/target alone (declare there what it needs)"
			case under(p, "planner") && !(under(dep, "internal") && leaf(dep)):
				why = "the planner depends on nothing of xp but leaf packages under internal/"
			case p == "analysis/explore" && dep != "analysis" && dep != "results":
				why = "the explorer reads campaigns through analysis and the evidence store alone"
			case dep == "analysis/explore" && !under(p, "cmd"):
				why = "the explorer is a leaf that only cmd wires"
			default:
				continue
			}
			out = append(out, fmt.Sprintf("%s imports %s: %s", p, dep, why))
		}
	}
	return out
}

// moduleImports reads the imports of every package under root from its
// source (test files left out), keyed by the package's directory relative
// to root with slashes.
func moduleImports(root string) (map[string][]string, error) {
	pkgs := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		for _, is := range f.Imports {
			imp, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if !slices.Contains(pkgs[rel], imp) {
				pkgs[rel] = append(pkgs[rel], imp)
			}
		}
		if _, ok := pkgs[rel]; !ok {
			pkgs[rel] = nil
		}
		return nil
	})
	return pkgs, err
}
