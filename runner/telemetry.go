package runner

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xp-bench/xp/results"
)

// Client telemetry: this process's CPU time and resident memory, once a
// second while an attempt runs. On the local target the embedded cluster
// lives in this process, so its work is counted too.
const (
	telemetryHost = "client"
	// MetricCPU is cumulative process CPU seconds since the attempt began.
	MetricCPU = "cpu_s"
	// MetricRSS is resident memory in MiB.
	MetricRSS = "rss_mib"
)

type telemetry struct {
	now  func() time.Time
	done chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	out  []results.Sample
	cpu0 time.Duration
}

func startTelemetry(now func() time.Time) *telemetry {
	t := &telemetry{now: now, done: make(chan struct{}), cpu0: processCPU()}
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
	cpu := (processCPU() - t.cpu0).Seconds()
	rss := processRSS()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.out = append(t.out, results.Sample{Host: telemetryHost, TS: ts, Metric: MetricCPU, Value: cpu})
	if rss >= 0 {
		t.out = append(t.out, results.Sample{Host: telemetryHost, TS: ts, Metric: MetricRSS, Value: rss})
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

// processCPU is user + system CPU time of this process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processRSS reads resident memory from /proc/self/statm, in MiB; -1 when
// unavailable.
func processRSS() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return -1
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return -1
	}
	return float64(pages*int64(os.Getpagesize())) / (1 << 20)
}

// maxOf returns the largest value of metric among samples.
func maxOf(samples []results.Sample, metric string) (float64, bool) {
	var m float64
	found := false
	for _, s := range samples {
		if s.Metric == metric && (!found || s.Value > m) {
			m, found = s.Value, true
		}
	}
	return m, found
}
