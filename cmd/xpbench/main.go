// Command xpbench turns `go test -bench` output into BENCHMARKS.md: the
// machine, date, Go version and commit of the run, every performance
// target of the issues with its verdict, and one table of every benchmark
// of every package with its custom metrics side by side.
//
//	xpbench -header > bench.out            where and when, before the benchmarks
//	go test -bench ... >> bench.out
//	xpbench -o BENCHMARKS.md < bench.out   the document (stdout without -o)
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, time.Now); err != nil {
		fmt.Fprintln(os.Stderr, "xpbench:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer, now func() time.Time) error {
	fs := flag.NewFlagSet("xpbench", flag.ContinueOnError)
	printHeader := fs.Bool("header", false, "print this machine's header lines for bench.out and exit")
	out := fs.String("o", "", "write the document to `FILE` (replaced only when complete) instead of stdout")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: bench output is read from stdin", fs.Arg(0))
	}
	if *printHeader {
		h := hostHeader(now())
		return h.write(stdout)
	}
	rows, h, err := parse(stdin)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return fmt.Errorf("no benchmark results on stdin; %s left as it was", orStdout(*out))
	}
	// A bench.out without header lines (go test run by hand) is described
	// by this machine, now.
	h.fillFrom(hostHeader(now()))
	var doc bytes.Buffer
	if err := writeDocument(&doc, h, rows); err != nil {
		return err
	}
	if *out == "" {
		_, err := stdout.Write(doc.Bytes())
		return err
	}
	return writeFileAtomic(*out, doc.Bytes())
}

func orStdout(path string) string {
	if path == "" {
		return "stdout"
	}
	return path
}

// writeFileAtomic replaces path with data, or leaves it untouched.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
