package main

import (
	"os"
	"testing"

	"github.com/xp-bench/xp/infra/local/localtarget"
)

// TestMain lets this test binary serve as the local target's cluster and
// gateway processes, as the xp binary does, for the tests that run `xp run`
// in-process.
func TestMain(m *testing.M) {
	localtarget.RunChildIfAsked()
	os.Exit(m.Run())
}
