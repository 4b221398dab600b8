// Command xp measures what Kafka security costs, with factorial, matched,
// randomized and checkpointed experiments. See README.md.
package main

import (
	"os"
)

func main() {
	st := newState()
	os.Exit(execute(st, os.Args[1:]))
}
