// Package golden compares what a test renders with the file it must
// equal, a golden file; `go test -update` rewrites the files instead. It
// defines the module's one -update flag: tests whose expected output is
// not a whole file (a fuzz seed corpus, a table inside a document) ask
// Update.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files (and the other expected outputs) the tests compare with")

// Update reports whether the tests were run with -update: rewrite what
// they compare with rather than compare.
func Update() bool { return *update }

// Check compares got with testdata/name, or writes it there with -update.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	CheckFile(t, filepath.Join("testdata", name), got)
}

// CheckFile compares got with the file at path (relative to the test's
// package directory), or writes it there with -update.
func CheckFile(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it): %s", path, firstDiff(got, want))
	}
}

// firstDiff says where got first departs from want: the line, and what
// each has there.
func firstDiff(got, want []byte) string {
	g, w := strings.SplitAfter(string(got), "\n"), strings.SplitAfter(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d is\n\t%q\nwhere the file has\n\t%q", i+1, gl, wl)
		}
	}
	return "no difference"
}
