package main

import (
	"bufio"
	"fmt"
	"io"
)

// writeDocument writes BENCHMARKS.md: where and when the run was measured,
// every target with its verdict, and the full table.
func writeDocument(w io.Writer, h header, rows []result) error {
	b := bufio.NewWriter(w)
	fmt.Fprint(b, "# Benchmarks\n\n")
	fmt.Fprint(b, "Written by `make bench` (`cmd/xpbench`) from one run of every benchmark\n"+
		"of the project, one package at a time (`go test -run '^$' -bench .\n"+
		"-benchmem -p 1 ./...`); do not edit it by hand. Comparisons the issues\n"+
		"ask for are sub-benchmarks of one benchmark, measured side by side in\n"+
		"one run. Speed and memory targets are checked here, never by timed\n"+
		"tests; the gateway has no CPU target, its cost is shown beside\n"+
		"Kroxylicious's. Notes on a run go in the commit message that records\n"+
		"it; earlier runs are in git history.\n\n"+
		"Gateway rows run the gateway's default crypto, `std` (crypto/tls and\n"+
		"crypto/cipher), unless their name says `_fast`: those run `crypto: fast`\n"+
		"(xp's TLS 1.3 record layer and VAES AES-GCM; docs/gateway.md).\n"+
		"field_encrypt rows seal the field in an AES-GCM envelope (field_cipher\n"+
		"aead) unless their name says `_fpe`: those encrypt it format-preserving\n"+
		"(field_cipher fpe: FF1 over AES-256), side by side in the same run.\n\n")
	fmt.Fprint(b, "| | |\n|---|---|\n")
	machine := fmt.Sprintf("%s, %d cores", h.CPU, h.Cores)
	if h.Features != "" {
		machine += " (" + h.Features + ")"
	}
	fmt.Fprintf(b, "| machine | %s, %s, %s |\n", machine, h.Memory, h.OS)
	fmt.Fprintf(b, "| date | %s |\n", h.Date)
	fmt.Fprintf(b, "| Go | %s |\n", h.Go)
	fmt.Fprintf(b, "| commit | %s |\n\n", h.Commit)

	fmt.Fprint(b, "## Against the targets\n\n")
	fmt.Fprint(b, "| issue | target | measured | verdict |\n|---|---|---|---|\n")
	for _, t := range targets {
		measured, verdict := t.verdict(rows)
		fmt.Fprintf(b, "| #%d | %s | %s | %s |\n", t.issue, t.what, measured, verdict)
	}
	fmt.Fprint(b, "\n")
	writeSideBySide(b, rows)
	writeClientModes(b, rows)
	writeSurface(b, rows)
	writeGatewayPeers(b, rows)
	fmt.Fprint(b, "## Table\n\n")
	render(b, rows)
	return b.Flush()
}
