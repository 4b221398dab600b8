// Command xp measures what Kafka security costs, with factorial, matched,
// randomized and checkpointed experiments. See README.md.
package main

import (
	"os"

	"github.com/xp-bench/xp/infra/local/localtarget"
)

func main() {
	// The local target runs its cluster and gateways as children of this
	// executable; in one of those, serve and exit.
	localtarget.RunChildIfAsked()
	st := newState()
	os.Exit(execute(st, os.Args[1:]))
}
