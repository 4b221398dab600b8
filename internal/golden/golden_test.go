package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFirstDiff(t *testing.T) {
	tests := []struct {
		name, got, want, diff string
	}{
		{name: "equal", got: "a\nb\n", want: "a\nb\n", diff: "no difference"},
		{name: "a line differs", got: "a\nb\nc\n", want: "a\nx\nc\n", diff: "line 2 is\n\t\"b\\n\"\nwhere the file has\n\t\"x\\n\""},
		{name: "got is longer", got: "a\nb\n", want: "a\n", diff: "line 2 is\n\t\"b\\n\"\nwhere the file has\n\t\"\""},
		{name: "want is longer", got: "a", want: "a\n", diff: "line 1 is\n\t\"a\"\nwhere the file has\n\t\"a\\n\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := firstDiff([]byte(tc.got), []byte(tc.want)); got != tc.diff {
				t.Fatalf("firstDiff = %q, want %q", got, tc.diff)
			}
		})
	}
}

// failures is a testing.TB that records its failures instead of failing.
type failures struct {
	testing.TB
	msgs []string
}

func (f *failures) Errorf(format string, a ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, a...))
}
func (f *failures) Fatalf(format string, a ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, a...))
}

// TestCheckFile: -update writes the file (and its directory), a run
// without it passes on the same bytes and fails, naming the file and the
// line, on others.
func TestCheckFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "out.txt")
	*update = true
	CheckFile(t, path, []byte("one\ntwo\n"))
	*update = false
	if b, err := os.ReadFile(path); err != nil || string(b) != "one\ntwo\n" {
		t.Fatalf("-update wrote %q, %v", b, err)
	}
	f := &failures{TB: t}
	CheckFile(f, path, []byte("one\ntwo\n"))
	if len(f.msgs) != 0 {
		t.Fatalf("same bytes failed: %q", f.msgs)
	}
	CheckFile(f, path, []byte("one\n2\n"))
	if len(f.msgs) != 1 || !strings.Contains(f.msgs[0], path+" differs") || !strings.Contains(f.msgs[0], "line 2") {
		t.Fatalf("other bytes: %q", f.msgs)
	}
	f.msgs = nil
	CheckFile(f, filepath.Join(t.TempDir(), "absent"), nil)
	if len(f.msgs) != 1 || !strings.Contains(f.msgs[0], "go test -update") {
		t.Fatalf("no file: %q", f.msgs)
	}
}
