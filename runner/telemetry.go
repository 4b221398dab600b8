package runner

import (
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/xp-bench/xp/infra/procstat"
	"github.com/xp-bench/xp/results"
)

// Telemetry: CPU time and resident memory, once a second while an attempt
// runs, of this process (host "client": the load generator and the runner)
// and of every process the target names (ProcessLister; on the local
// target "cluster", the embedded broker and its fronts, and "gateway",
// every gateway of the group).
const (
	telemetryHost = "client"
	// MetricCPU is cumulative process CPU seconds since the attempt began.
	MetricCPU = "cpu_s"
	// MetricRSS is resident memory in MiB.
	MetricRSS = "rss_mib"
)

type telemetry struct {
	now   func() time.Time
	done  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	out   []results.Sample
	cpu0  time.Duration
	procs []watched
}

// watched is a target process telemetry samples.
type watched struct {
	host string
	pid  int
	cpu0 time.Duration
}

func startTelemetry(now func() time.Time, procs map[string]int) *telemetry {
	t := &telemetry{now: now, done: make(chan struct{}), cpu0: procstat.SelfCPU()}
	for _, host := range slices.Sorted(maps.Keys(procs)) {
		cpu, err := procstat.CPU(procs[host])
		if err != nil {
			continue // gone: nothing to sample
		}
		t.procs = append(t.procs, watched{host: host, pid: procs[host], cpu0: cpu})
	}
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

func (t *telemetry) sample() {
	ts := t.now()
	cpu := (procstat.SelfCPU() - t.cpu0).Seconds()
	rss := processRSS()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.out = append(t.out, results.Sample{Host: telemetryHost, TS: ts, Metric: MetricCPU, Value: cpu})
	if rss >= 0 {
		t.out = append(t.out, results.Sample{Host: telemetryHost, TS: ts, Metric: MetricRSS, Value: rss})
	}
	for _, p := range t.procs {
		if cpu, err := procstat.CPU(p.pid); err == nil {
			t.out = append(t.out, results.Sample{Host: p.host, TS: ts, Metric: MetricCPU, Value: (cpu - p.cpu0).Seconds()})
		}
		if rss := procstat.RSS(p.pid); rss >= 0 {
			t.out = append(t.out, results.Sample{Host: p.host, TS: ts, Metric: MetricRSS, Value: rss})
		}
	}
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

// processRSS is this process's resident memory in MiB; -1 when
// unavailable.
func processRSS() float64 { return procstat.RSS(os.Getpid()) }

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
