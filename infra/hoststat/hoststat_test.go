package hoststat

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeProc writes a proc and a sys/block tree with the given counters.
func fakeProc(t *testing.T, cpu, mem, netdev, disk string) Reader {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"proc/stat":      cpu + "\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 1\n",
		"proc/meminfo":   mem,
		"proc/net/dev":   "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n" + netdev,
		"proc/diskstats": disk,
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"sda", "nvme0n1", "loop0"} {
		os.MkdirAll(filepath.Join(dir, "sys/block", d), 0o755)
	}
	return Reader{Proc: filepath.Join(dir, "proc"), SysBlock: filepath.Join(dir, "sys/block")}
}

const meminfo = "MemTotal:       16384000 kB\nMemFree:         1000 kB\nMemAvailable:   12288000 kB\n"

func TestBetween(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r1 := fakeProc(t,
		"cpu  100 0 50 800 20 0 0 30 0 0", meminfo,
		"    lo: 999 1 0 0 0 0 0 0 999 1 0 0 0 0 0 0\n  eth0: 1000 1 0 0 0 0 0 0 2000 1 0 0 0 0 0 0\n",
		"   8       0 sda 10 0 100 0 10 0 200 0 0 0 0\n   8       1 sda1 10 0 100 0 10 0 200 0 0 0 0\n   7       0 loop0 1 0 5000 0 1 0 5000 0 0 0 0\n")
	r1.Now = func() time.Time { return t0 }
	r2 := fakeProc(t,
		"cpu  500 0 150 1100 120 0 0 130 0 0", meminfo,
		"    lo: 99999 1 0 0 0 0 0 0 99999 1 0 0 0 0 0 0\n  eth0: 2098152 1 0 0 0 0 0 0 4196304 1 0 0 0 0 0 0\n",
		"   8       0 sda 10 0 4196 0 10 0 8392 0 0 0 0\n   8       1 sda1 10 0 9999 0 10 0 9999 0 0 0 0\n   7       0 loop0 1 0 99999 0 1 0 99999 0 0 0 0\n")
	r2.Now = func() time.Time { return t0.Add(2 * time.Second) }
	a, err := r1.Read()
	if err != nil {
		t.Fatal(err)
	}
	b, err := r2.Read()
	if err != nil {
		t.Fatal(err)
	}
	got := Between(a, b)
	// CPU: total went 1000 -> 2000; idle +300, iowait +100, steal +100.
	// Net: eth0 only, +2 MiB rx and +4 MiB tx over 2 s. Disk: sda only,
	// +4096 sectors read (2 MiB), +8192 written (4 MiB) over 2 s.
	want := Rates{Time: t0.Add(2 * time.Second), CPUBusy: 0.5, CPUIOWait: 0.1, CPUSteal: 0.1,
		MemUsedMiB: 4000, NetRxMiBs: 1, NetTxMiBs: 2, DiskReadMiBs: 1, DiskWriteMiBs: 2}
	for k, w := range want.Metrics() {
		if g := got.Metrics()[k]; math.Abs(g-w) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, g, w)
		}
	}
	// user 500 + system 150 jiffies at 100 Hz; eth0 only; sda only.
	if want := (Totals{CPUBusyS: 6.5, NetRxBytes: 2098152, NetTxBytes: 4196304, DiskReadBytes: 4196 * 512, DiskWriteBytes: 8392 * 512}); got.Total != want {
		t.Errorf("totals %+v, want %+v", got.Total, want)
	}
	// A counter that went back (a vanished interface) gives 0, not a huge rate.
	if r := Between(b, a); r.NetRxMiBs != 0 || r.CPUBusy != 0 {
		t.Errorf("backwards counters: %+v", r)
	}
}

func TestReadRejects(t *testing.T) {
	cases := []struct{ name, cpu, mem, want string }{
		{"no cpu line", "intr 1 2", meminfo, "is not the cpu total"},
		{"bad jiffies", "cpu  x 0 0 0 0 0 0 0", meminfo, "cpu field 1"},
		{"no MemAvailable", "cpu  1 2 3 4 5 6 7 8", "MemTotal: 1 kB\n", "MemAvailable missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fakeProc(t, tc.cpu, tc.mem, "", "").Read()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestStreamThisHost reads this machine's real /proc.
func TestStreamThisHost(t *testing.T) {
	c, err := Reader{}.Read()
	if err != nil {
		t.Fatal(err)
	}
	if c.MemTotal == 0 || c.CPUUser+c.CPUSystem+c.CPUIdle == 0 {
		t.Fatalf("implausible counters %+v", c)
	}
	var out bytes.Buffer
	if err := Stream(context.Background(), Reader{}, 20*time.Millisecond, 3, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), out.String())
	}
	for _, l := range lines {
		var r Rates
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.CPUBusy < 0 || r.CPUBusy > 1 || r.MemUsedMiB <= 0 || r.Time.IsZero() {
			t.Errorf("implausible rates %s", l)
		}
	}
}

// TestCPU: the cpu line's counters of a guest with steal add up to its
// total (guest time left out: user already counts it), and this host's
// read alone.
func TestCPU(t *testing.T) {
	p := filepath.Join(t.TempDir(), "stat")
	if err := os.WriteFile(p, []byte("cpu  100 5 40 800 10 1 4 40 7 0\ncpu0 50 2 20 400 5 0 2 20 7 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var c Counters
	if err := readStat(p, &c); err != nil || c.CPUTotal() != 1000 || c.CPUSteal != 40 {
		t.Errorf("readStat: total %d, steal %d, %v; want 1000, 40", c.CPUTotal(), c.CPUSteal, err)
	}
	if c, err := CPU(); err != nil || c.CPUTotal() == 0 || c.CPUSteal > c.CPUTotal() {
		t.Errorf("CPU of this host: %+v, %v", c, err)
	}
}
