package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// testState returns a state whose streams are buffers and which handles no
// signals, for driving subcommands in-process.
func testState() (st *state, stdout, stderr *bytes.Buffer) {
	stdout, stderr = new(bytes.Buffer), new(bytes.Buffer)
	st = &state{
		stdin:  strings.NewReader(""),
		stdout: stdout,
		stderr: stderr,
		getenv: func(string) string { return "" },
		now:    time.Now,
	}
	return st, stdout, stderr
}

// runXP runs the CLI in-process and returns its exit code and output.
func runXP(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	st, out, errb := testState()
	code = execute(st, args)
	return code, out.String(), errb.String()
}

func TestUnknownCommandIsUsageError(t *testing.T) {
	code, _, stderr := runXP(t, "frobnicate")
	if code != exitUsage {
		t.Fatalf("exit %d, want %d", code, exitUsage)
	}
	if !strings.Contains(stderr, "frobnicate") {
		t.Fatalf("stderr %q does not name the unknown command", stderr)
	}
}
