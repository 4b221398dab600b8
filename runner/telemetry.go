package runner

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/results"
)

// Telemetry: once a second while an attempt runs, and when its measurement
// window opens and closes, every host the target samples
// (target.TelemetrySource; on the local target "cluster", the embedded
// broker and its fronts, "gateway", every gateway of the group, and
// "client", xp itself), plus this process as host target.HostClient when the load
// runs here (the target is not a target.LoadRunner). Values are what
// changed since the attempt's first sample, except memory.
const (
	// MetricCPU is cumulative CPU seconds since the attempt began.
	MetricCPU = "cpu_s"
	// MetricRSS is resident memory in MiB.
	MetricRSS = "rss_mib"
	// MetricNetIn and MetricNetOut are network bytes received and sent
	// since the attempt began, where the target measures them.
	MetricNetIn  = "net_in_bytes"
	MetricNetOut = "net_out_bytes"
	// MetricDiskRead and MetricDiskWrite are block device bytes read and
	// written since the attempt began, where the target measures them.
	MetricDiskRead  = "disk_read_bytes"
	MetricDiskWrite = "disk_write_bytes"
)

// sampleTimeout bounds one reading of the target's hosts.
const sampleTimeout = 5 * time.Second

// selfSource samples this process as the client host.
type selfSource struct{}

func (selfSource) Sample(context.Context) ([]target.HostSample, error) {
	return []target.HostSample{target.ProcessSample()}, nil
}

// telemetrySources are what samples an attempt's hosts on t.
func telemetrySources(t target.Target) []target.TelemetrySource {
	var out []target.TelemetrySource
	if ts, ok := t.(target.TelemetrySource); ok {
		out = append(out, ts)
	}
	if _, ok := t.(target.LoadRunner); !ok {
		out = append(out, selfSource{})
	}
	return out
}

type telemetry struct {
	ctx     context.Context
	now     func() time.Time
	sources []target.TelemetrySource
	done    chan struct{}
	wg      sync.WaitGroup

	mu    sync.Mutex
	out   []results.Sample
	base  map[string]target.HostSample
	roles map[string]string
	// marks are the hosts' CPU times read when a phase began (measure,
	// drain), markAt when.
	marks  map[string]map[string]time.Duration
	markAt map[string]time.Time
	// seen is when each host was sampled.
	seen map[string][]time.Time
	errs []string
}

// startTelemetry takes the first sample and then one a second until stop.
// ctx must outlive the attempt's cancellation (the last sample is taken
// after it).
func startTelemetry(ctx context.Context, now func() time.Time, sources []target.TelemetrySource) *telemetry {
	t := &telemetry{ctx: ctx, now: now, sources: sources, done: make(chan struct{}),
		base: map[string]target.HostSample{}, roles: map[string]string{}, marks: map[string]map[string]time.Duration{},
		markAt: map[string]time.Time{}, seen: map[string][]time.Time{}}
	t.sample()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-t.done:
				return
			case <-tick.C:
				t.sample()
			}
		}
	}()
	return t
}

// read samples every source once.
func (t *telemetry) read() ([]target.HostSample, time.Time) {
	var all []target.HostSample
	ts := t.now()
	for _, src := range t.sources {
		ctx, cancel := context.WithTimeout(t.ctx, sampleTimeout)
		hs, err := src.Sample(ctx)
		cancel()
		if err != nil {
			t.mu.Lock()
			if len(t.errs) < 5 {
				t.errs = append(t.errs, err.Error())
			}
			t.mu.Unlock()
		}
		all = append(all, hs...)
	}
	return all, ts
}

// sample reads every host and records what changed since its first
// reading; it returns the hosts' CPU times.
func (t *telemetry) sample() map[string]time.Duration {
	hs, ts := t.read()
	t.mu.Lock()
	defer t.mu.Unlock()
	cpu := map[string]time.Duration{}
	for _, h := range hs {
		b, seen := t.base[h.Host]
		if !seen {
			b = h
			t.base[h.Host], t.roles[h.Host] = h, h.Role
		}
		cpu[h.Host] = h.CPU
		t.seen[h.Host] = append(t.seen[h.Host], ts)
		add := func(metric string, v float64) {
			t.out = append(t.out, results.Sample{Host: h.Host, TS: ts, Metric: metric, Value: v})
		}
		add(MetricCPU, (h.CPU - b.CPU).Seconds())
		if h.MemMiB >= 0 {
			add(MetricRSS, h.MemMiB)
		}
		if h.Net != nil && b.Net != nil {
			add(MetricNetIn, float64(h.Net.In-b.Net.In))
			add(MetricNetOut, float64(h.Net.Out-b.Net.Out))
		}
		if h.Disk != nil && b.Disk != nil {
			add(MetricDiskRead, float64(h.Disk.In-b.Disk.In))
			add(MetricDiskWrite, float64(h.Disk.Out-b.Disk.Out))
		}
	}
	return cpu
}

// phase samples when the load generator reports the measurement window
// opening (measure) or closing (drain), for cpu.
func (t *telemetry) phase(p string) {
	if p != "measure" && p != "drain" {
		return
	}
	at := t.now()
	cpu := t.sample()
	t.mu.Lock()
	t.marks[p], t.markAt[p] = cpu, at
	t.mu.Unlock()
}

// telemetryGapAfter is how long a host may go without a sample (one a
// second) before the stretch counts as missing.
const telemetryGapAfter = 2 * time.Second

// telemetryGap is a host whose telemetry covers less than the attempt's
// measured window (its stream or link was down): recorded in the
// attempt's environment, so that its CPU and network figures are not
// read as the whole window's.
type telemetryGap struct {
	Host     string  `json:"host"`
	MissingS float64 `json:"missing_s"`
	WindowS  float64 `json:"window_s"`
}

// gaps lists, by host, what of the measured window (measure to drain) no
// sample covers: every stretch longer than telemetryGapAfter between
// samples, or between a window's end and the nearest sample. Nil when the
// window was not measured or every host covers it.
func (t *telemetry) gaps() []telemetryGap {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok1 := t.markAt["measure"]
	b, ok2 := t.markAt["drain"]
	if !ok1 || !ok2 || !b.After(a) {
		return nil
	}
	var out []telemetryGap
	for _, host := range slices.Sorted(maps.Keys(t.roles)) {
		var missing time.Duration
		cursor, inWindow := a, false
		for _, ts := range t.seen[host] {
			if ts.Before(a) || ts.After(b) {
				continue
			}
			inWindow = true
			if d := ts.Sub(cursor); d > telemetryGapAfter {
				missing += d
			}
			if ts.After(cursor) {
				cursor = ts
			}
		}
		if d := b.Sub(cursor); d > telemetryGapAfter || !inWindow {
			missing += d
		}
		if missing > 0 {
			out = append(out, telemetryGap{Host: host, MissingS: round1(missing.Seconds()), WindowS: round1(b.Sub(a).Seconds())})
		}
	}
	return out
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

// cpu is host's CPU time over the measurement window, when both ends were
// read.
func (t *telemetry) cpu(host string) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok1 := t.marks["measure"][host]
	b, ok2 := t.marks["drain"][host]
	return b - a, ok1 && ok2
}

// hostsOf lists the hosts sampled in role, sorted.
func (t *telemetry) hostsOf(role string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for h, r := range t.roles {
		if r == role {
			out = append(out, h)
		}
	}
	sort.Strings(out)
	return out
}

// describe names the sampled hosts with their roles, and the sampling
// errors, for the attempt's log.
func (t *telemetry) describe() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var hosts []string
	for h, r := range t.roles {
		hosts = append(hosts, fmt.Sprintf("%s (%s)", h, r))
	}
	slices.Sort(hosts)
	s := "telemetry hosts: " + strings.Join(hosts, ", ")
	if len(t.errs) > 0 {
		s += "; sampling errors: " + strings.Join(t.errs, "; ")
	}
	return s
}

// stop takes a last sample and returns them all.
func (t *telemetry) stop() []results.Sample {
	close(t.done)
	t.wg.Wait()
	t.sample()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.out
}

// maxOf returns the largest value of host's metric among samples.
func maxOf(samples []results.Sample, host, metric string) (float64, bool) {
	var m float64
	found := false
	for _, s := range samples {
		if s.Host == host && s.Metric == metric && (!found || s.Value > m) {
			m, found = s.Value, true
		}
	}
	return m, found
}
