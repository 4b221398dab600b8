package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// result is one benchmark line: its package, name and metrics in the order
// they were printed.
type result struct {
	pkg     string
	name    string
	metrics []metric
}

type metric struct {
	value float64
	unit  string
}

// modulePrefix is dropped from package paths in the table.
const modulePrefix = "github.com/xp-bench/xp/"

// parse reads `go test -bench` output and the header lines xpbench -header
// put before it. Go test's "cpu:" line fills the header's CPU when it has
// none. Other lines are ignored.
func parse(r io.Reader) ([]result, header, error) {
	var out []result
	var h header
	pkg, cpu := "", ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if ok, err := h.parseLine(line); ok {
			if err != nil {
				return nil, h, err
			}
			continue
		}
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		if c, ok := strings.CutPrefix(line, "cpu: "); ok && cpu == "" {
			cpu = strings.TrimSpace(c)
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || len(f)%2 != 0 {
			continue // a benchmark that logged on its result line, or failed
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		res := result{pkg: pkg, name: trimProcs(f[0])}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, h, fmt.Errorf("line %q: metric %q is not a number", line, f[i])
			}
			res.metrics = append(res.metrics, metric{value: v, unit: f[i+1]})
		}
		out = append(out, res)
	}
	if h.CPU == "" {
		h.CPU = cpu
	}
	return out, h, sc.Err()
}

// trimProcs drops the -GOMAXPROCS suffix go test adds to a name.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}

// render prints one table; custom metrics come first, then the standard
// ns/op, B/op and allocs/op.
func render(w io.Writer, rows []result) {
	fmt.Fprintln(w, "| package | benchmark | metrics | ns/op | B/op | allocs/op |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|")
	for _, r := range rows {
		var custom []string
		std := map[string]string{}
		for _, m := range r.metrics {
			switch m.unit {
			case "ns/op", "B/op", "allocs/op":
				std[m.unit] = format(m.value)
			default:
				custom = append(custom, format(m.value)+" "+m.unit)
			}
		}
		pkg := strings.TrimPrefix(r.pkg, modulePrefix)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", pkg,
			strings.TrimPrefix(r.name, "Benchmark"), strings.Join(custom, ", "),
			orDash(std["ns/op"]), orDash(std["B/op"]), orDash(std["allocs/op"]))
	}
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// format prints up to four significant digits without exponent noise.
func format(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1000 || v <= -1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
}
