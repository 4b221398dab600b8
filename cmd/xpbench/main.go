// Command xpbench reads `go test -bench` output on stdin and prints one
// Markdown table: every benchmark of every package, its custom metrics side
// by side, so that `make bench` shows each comparison in one place.
package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	rows, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "xpbench:", err)
		os.Exit(1)
	}
	if len(rows) == 0 {
		fmt.Fprintln(os.Stderr, "xpbench: no benchmark results on stdin")
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	render(w, rows)
	w.Flush()
}
