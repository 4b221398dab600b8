package main

import (
	"os"
	"testing"

	"github.com/xp-bench/xp/infra/local/localtarget"
)

// TestMain lets this test binary serve as the local target's cluster and
// gateway processes, as the xp binary does, for the tests that run `xp run`
// in-process.
//
// With XP_TEST_AS_XP=1 it is xp itself, for tests that kill a real xp
// process.
func TestMain(m *testing.M) {
	localtarget.RunChildIfAsked()
	if os.Getenv("XP_TEST_AS_XP") == "1" {
		os.Exit(execute(newState(), os.Args[1:]))
	}
	os.Exit(m.Run())
}
