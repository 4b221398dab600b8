package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// header says where and when a bench.out was measured. `make bench` writes
// it into bench.out before the benchmarks start (xpbench -header), so the
// file describes itself and BENCHMARKS.md can be rebuilt from it alone.
type header struct {
	Date     string // UTC, "2006-01-02 15:04"
	Commit   string // short hash, "+dirty" when the tree had changes
	Go       string // e.g. go1.26.8
	CPU      string // model name
	Cores    int    // logical CPUs
	Features string // CPU features the kernels of internal/ branch on
	Memory   string // e.g. 24 GiB
	OS       string // e.g. linux 6.18.44 amd64
}

// headerPrefix starts every header line in bench.out; go test prints
// nothing that starts with it.
const headerPrefix = "xpbench-"

// fields lists the header's lines in order, as key and pointer to value.
func (h *header) fields() []struct {
	key string
	val *string
} {
	return []struct {
		key string
		val *string
	}{
		{"date", &h.Date}, {"commit", &h.Commit}, {"go", &h.Go}, {"cpu", &h.CPU},
		{"features", &h.Features}, {"memory", &h.Memory}, {"os", &h.OS},
	}
}

// write prints the header as bench.out lines: "xpbench-KEY: VALUE".
func (h *header) write(w io.Writer) error {
	for _, f := range h.fields() {
		if _, err := fmt.Fprintf(w, "%s%s: %s\n", headerPrefix, f.key, *f.val); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%scores: %d\n", headerPrefix, h.Cores)
	return err
}

// parseLine takes one bench.out line into the header; it reports whether
// the line was a header line.
func (h *header) parseLine(line string) (bool, error) {
	rest, ok := strings.CutPrefix(line, headerPrefix)
	if !ok {
		return false, nil
	}
	key, val, ok := strings.Cut(rest, ":")
	if !ok {
		return true, fmt.Errorf("header line %q: want %sKEY: VALUE", line, headerPrefix)
	}
	val = strings.TrimSpace(val)
	if key == "cores" {
		n, err := strconv.Atoi(val)
		if err != nil {
			return true, fmt.Errorf("header line %q: cores is not a number", line)
		}
		h.Cores = n
		return true, nil
	}
	for _, f := range h.fields() {
		if f.key == key {
			*f.val = val
			return true, nil
		}
	}
	return true, fmt.Errorf("header line %q: unknown key %q", line, key)
}

// fillFrom sets every empty field of h from o.
func (h *header) fillFrom(o header) {
	mine, theirs := h.fields(), o.fields()
	for i := range mine {
		if *mine[i].val == "" {
			*mine[i].val = *theirs[i].val
		}
	}
	if h.Cores == 0 {
		h.Cores = o.Cores
	}
}

// hostHeader describes this machine, this toolchain and the git checkout in
// the current directory, now. Parts it cannot learn are "unknown".
func hostHeader(now time.Time) header {
	h := header{
		Date:  now.UTC().Format("2006-01-02 15:04") + " UTC",
		Go:    goVersion(),
		Cores: runtime.NumCPU(),
		OS:    runtime.GOOS + " " + runtime.GOARCH,
	}
	h.Commit = gitCommit()
	cpuinfo := procFields("/proc/cpuinfo")
	h.CPU = cpuinfo["model name"]
	h.Features = cpuFeatures(cpuinfo["flags"])
	if kb, err := strconv.ParseFloat(strings.TrimSuffix(procFields("/proc/meminfo")["MemTotal"], " kB"), 64); err == nil {
		h.Memory = fmt.Sprintf("%.0f GiB", kb/(1<<20))
	}
	if rel, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.OS = runtime.GOOS + " " + strings.TrimSpace(string(rel)) + " " + runtime.GOARCH
	}
	for _, f := range h.fields() {
		if *f.val == "" {
			*f.val = "unknown"
		}
	}
	return h
}

// goVersion is the version of the go command that runs the benchmarks,
// which is also the one `go run` built xpbench with.
func goVersion() string {
	if out, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil {
		if v := strings.TrimSpace(string(out)); v != "" {
			return v
		}
	}
	return runtime.Version()
}

func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += "+dirty"
	}
	return c
}

// procFields reads "key : value" lines of a /proc file; the first of each
// key wins (cpuinfo repeats them per CPU).
func procFields(path string) map[string]string {
	m := map[string]string{}
	f, err := os.Open(path)
	if err != nil {
		return m
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		if _, seen := m[k]; !seen {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// cpuFeatures keeps the flags that decide which AES-GCM and CRC-32C code
// runs (internal/aesgcm, internal/crc32c), in this order.
func cpuFeatures(flags string) string {
	have := map[string]bool{}
	for _, f := range strings.Fields(flags) {
		have[f] = true
	}
	var out []string
	for _, f := range []string{"aes", "pclmulqdq", "avx2", "avx512f", "vaes", "vpclmulqdq", "sse4_2"} {
		if have[f] {
			out = append(out, f)
		}
	}
	return strings.Join(out, " ")
}
