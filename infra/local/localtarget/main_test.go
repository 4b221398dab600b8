package localtarget

import (
	"os"
	"testing"
)

// TestMain lets this test binary serve as the local target's cluster and
// gateway processes, as the xp binary does.
func TestMain(m *testing.M) {
	RunChildIfAsked()
	os.Exit(m.Run())
}
