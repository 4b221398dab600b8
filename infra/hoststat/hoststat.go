// Package hoststat samples a Linux host's CPU, memory, network and disk
// counters from /proc (stat, meminfo, net/dev, diskstats) and turns two
// samples into rates: the host telemetry xp's agent streams from every
// remote machine once a second.
package hoststat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Counters are a host's cumulative counters at one instant.
type Counters struct {
	Time time.Time
	// CPU jiffies summed over every CPU (the "cpu" line of /proc/stat).
	CPUUser, CPUNice, CPUSystem, CPUIdle, CPUIOWait, CPUIRQ, CPUSoftIRQ, CPUSteal uint64
	// Memory in bytes (/proc/meminfo MemTotal and MemAvailable).
	MemTotal, MemAvailable uint64
	// Network bytes over every interface but lo (/proc/net/dev).
	NetRx, NetTx uint64
	// Disk bytes read and written over whole disks (/proc/diskstats
	// sectors × 512, devices listed in /sys/block, no loop or ram devices).
	DiskRead, DiskWrite uint64
}

// Reader reads Counters from a proc and a sys/block directory.
type Reader struct {
	// Proc is the proc file system; default /proc.
	Proc string
	// SysBlock lists whole disks; default /sys/block.
	SysBlock string
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Read returns the counters now.
func (r Reader) Read() (Counters, error) {
	proc, sys := r.Proc, r.SysBlock
	if proc == "" {
		proc = "/proc"
	}
	if sys == "" {
		sys = "/sys/block"
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	c := Counters{Time: now()}
	if err := readStat(filepath.Join(proc, "stat"), &c); err != nil {
		return c, err
	}
	if err := readMeminfo(filepath.Join(proc, "meminfo"), &c); err != nil {
		return c, err
	}
	if err := readNetDev(filepath.Join(proc, "net", "dev"), &c); err != nil {
		return c, err
	}
	if err := readDiskstats(filepath.Join(proc, "diskstats"), sys, &c); err != nil {
		return c, err
	}
	return c, nil
}

// CPU reads only the CPU counters of /proc/stat (the "cpu" line), into
// Counters' CPU fields: what a load run reads at its window's ends to
// know the host's steal.
func CPU() (Counters, error) {
	c := Counters{Time: time.Now()}
	err := readStat("/proc/stat", &c)
	return c, err
}

// CPUTotal is the sum of c's CPU counters (guest time is inside user).
func (c Counters) CPUTotal() uint64 {
	return c.CPUUser + c.CPUNice + c.CPUSystem + c.CPUIdle + c.CPUIOWait + c.CPUIRQ + c.CPUSoftIRQ + c.CPUSteal
}

func readStat(path string, c *Counters) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("hoststat: %w", err)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return fmt.Errorf("hoststat: %s: first line %q is not the cpu total", path, line)
	}
	dst := []*uint64{&c.CPUUser, &c.CPUNice, &c.CPUSystem, &c.CPUIdle, &c.CPUIOWait, &c.CPUIRQ, &c.CPUSoftIRQ, &c.CPUSteal}
	for i, p := range dst {
		v, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil {
			return fmt.Errorf("hoststat: %s: cpu field %d: %w", path, i+1, err)
		}
		*p = v
	}
	return nil
}

func readMeminfo(path string, c *Counters) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("hoststat: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	found := 0
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *uint64
		switch k {
		case "MemTotal":
			dst = &c.MemTotal
		case "MemAvailable":
			dst = &c.MemAvailable
		default:
			continue
		}
		fs := strings.Fields(v)
		if len(fs) == 0 {
			return fmt.Errorf("hoststat: %s: %s has no value", path, k)
		}
		n, err := strconv.ParseUint(fs[0], 10, 64)
		if err != nil {
			return fmt.Errorf("hoststat: %s: %s: %w", path, k, err)
		}
		*dst = n * 1024 // kB
		found++
	}
	if found < 2 {
		return fmt.Errorf("hoststat: %s: MemTotal or MemAvailable missing", path)
	}
	return sc.Err()
}

func readNetDev(path string, c *Counters) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("hoststat: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || n <= 2 {
			continue // the two header lines
		}
		if strings.TrimSpace(name) == "lo" {
			continue
		}
		fs := strings.Fields(rest)
		if len(fs) < 9 {
			return fmt.Errorf("hoststat: %s:%d: %d fields, want 16", path, n, len(fs))
		}
		rx, err1 := strconv.ParseUint(fs[0], 10, 64)
		tx, err2 := strconv.ParseUint(fs[8], 10, 64)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("hoststat: %s:%d: byte counters not numbers", path, n)
		}
		c.NetRx += rx
		c.NetTx += tx
	}
	return sc.Err()
}

func readDiskstats(path, sysBlock string, c *Counters) error {
	ents, err := os.ReadDir(sysBlock)
	if err != nil {
		return fmt.Errorf("hoststat: %w", err)
	}
	disks := map[string]bool{}
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, "loop") || strings.HasPrefix(n, "ram") {
			continue
		}
		disks[n] = true
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("hoststat: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || !disks[fs[2]] {
			continue
		}
		rd, err1 := strconv.ParseUint(fs[5], 10, 64)
		wr, err2 := strconv.ParseUint(fs[9], 10, 64)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("hoststat: %s:%d: sector counters not numbers", path, n)
		}
		c.DiskRead += rd * 512
		c.DiskWrite += wr * 512
	}
	return sc.Err()
}

// Rates is what a host did between two Counters. Field names are the
// telemetry metric names.
type Rates struct {
	Time time.Time `json:"t"`
	// CPUBusy is the fraction of CPU time not idle, iowait or steal
	// (0..1, over every CPU); CPUIOWait and CPUSteal likewise.
	CPUBusy   float64 `json:"cpu_busy"`
	CPUIOWait float64 `json:"cpu_iowait"`
	CPUSteal  float64 `json:"cpu_steal"`
	// MemUsedMiB is MemTotal − MemAvailable at the later sample.
	MemUsedMiB float64 `json:"mem_used_mib"`
	// Network and disk throughput in MiB/s.
	NetRxMiBs     float64 `json:"net_rx_mib_s"`
	NetTxMiBs     float64 `json:"net_tx_mib_s"`
	DiskReadMiBs  float64 `json:"disk_read_mib_s"`
	DiskWriteMiBs float64 `json:"disk_write_mib_s"`
	// Total are the cumulative counters at the later sample, for readers
	// that take their own differences.
	Total Totals `json:"total"`
}

// Totals are cumulative counters since boot.
type Totals struct {
	// CPUBusyS is CPU time not idle, iowait or steal, in seconds over
	// every CPU.
	CPUBusyS       float64 `json:"cpu_busy_s"`
	NetRxBytes     uint64  `json:"net_rx_bytes"`
	NetTxBytes     uint64  `json:"net_tx_bytes"`
	DiskReadBytes  uint64  `json:"disk_read_bytes"`
	DiskWriteBytes uint64  `json:"disk_write_bytes"`
}

// userHZ is the unit of /proc/stat's CPU times: USER_HZ, 100 on every
// Linux architecture's user-space ABI.
const userHZ = 100

// TotalsOf returns the cumulative counters of c.
func TotalsOf(c Counters) Totals {
	busy := c.CPUUser + c.CPUNice + c.CPUSystem + c.CPUIRQ + c.CPUSoftIRQ
	return Totals{CPUBusyS: float64(busy) / userHZ, NetRxBytes: c.NetRx, NetTxBytes: c.NetTx,
		DiskReadBytes: c.DiskRead, DiskWriteBytes: c.DiskWrite}
}

// Metrics returns the rates as metric name → value, in the names of the
// JSON fields.
func (r Rates) Metrics() map[string]float64 {
	return map[string]float64{
		"cpu_busy": r.CPUBusy, "cpu_iowait": r.CPUIOWait, "cpu_steal": r.CPUSteal,
		"mem_used_mib": r.MemUsedMiB, "net_rx_mib_s": r.NetRxMiBs, "net_tx_mib_s": r.NetTxMiBs,
		"disk_read_mib_s": r.DiskReadMiBs, "disk_write_mib_s": r.DiskWriteMiBs,
	}
}

const mib = 1 << 20

// Between returns the rates from a to b (b later).
func Between(a, b Counters) Rates {
	r := Rates{Time: b.Time, MemUsedMiB: float64(b.MemTotal-min(b.MemAvailable, b.MemTotal)) / mib, Total: TotalsOf(b)}
	total := func(c Counters) uint64 {
		return c.CPUUser + c.CPUNice + c.CPUSystem + c.CPUIdle + c.CPUIOWait + c.CPUIRQ + c.CPUSoftIRQ + c.CPUSteal
	}
	if dt := sub(total(b), total(a)); dt > 0 {
		idle := sub(b.CPUIdle, a.CPUIdle)
		iow := sub(b.CPUIOWait, a.CPUIOWait)
		steal := sub(b.CPUSteal, a.CPUSteal)
		r.CPUBusy = 1 - float64(idle+iow+steal)/float64(dt)
		r.CPUIOWait = float64(iow) / float64(dt)
		r.CPUSteal = float64(steal) / float64(dt)
	}
	if secs := b.Time.Sub(a.Time).Seconds(); secs > 0 {
		r.NetRxMiBs = float64(sub(b.NetRx, a.NetRx)) / mib / secs
		r.NetTxMiBs = float64(sub(b.NetTx, a.NetTx)) / mib / secs
		r.DiskReadMiBs = float64(sub(b.DiskRead, a.DiskRead)) / mib / secs
		r.DiskWriteMiBs = float64(sub(b.DiskWrite, a.DiskWrite)) / mib / secs
	}
	return r
}

// sub is b − a, 0 when a counter went back (an interface or disk vanished).
func sub(b, a uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}

// Stream writes one JSON line of Rates to w every interval until ctx ends
// or, when count > 0, count lines are written.
func Stream(ctx context.Context, r Reader, interval time.Duration, count int, w io.Writer) error {
	prev, err := r.Read()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	t := time.NewTicker(interval)
	defer t.Stop()
	for n := 0; count <= 0 || n < count; n++ {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		cur, err := r.Read()
		if err != nil {
			return err
		}
		if err := enc.Encode(Between(prev, cur)); err != nil {
			return err
		}
		prev = cur
	}
	return nil
}
