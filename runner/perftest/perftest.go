// Package perftest runs Kafka's own load tool, ProducerPerformance
// (kafka-producer-perf-test), from a Kafka release's libs/, and reads its
// summary: the reference xp's load generator is compared with, on the same
// broker, security mode, record size, acks, batch and linger.
package perftest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/release"
)

// Options is one ProducerPerformance run.
type Options struct {
	// Release is the unpacked release's directory (the one holding libs/).
	Release string
	// Java is the java binary; default "java".
	Java string
	// JVMOpts are passed to java before the class, e.g. -Xmx512m.
	JVMOpts []string
	// ClientConfig is the connection in xp's client-config properties
	// (librdkafka names); bootstrap.servers gives the brokers.
	ClientConfig map[string]string
	// Dir holds the Java client configuration written for the run.
	Dir   string
	Topic string
	// Records is --num-records; Warmup of them are --warmup-records (Kafka
	// 4.0 and later), left out of the steady-state summary.
	Records, Warmup int64
	// RecordSize is --record-size in bytes.
	RecordSize int
	// PayloadFile, when set, is --payload-file in place of --record-size:
	// records are the file's lines, chosen at random, so the tool does not
	// refill random bytes per record (its own CPU, not the client's).
	PayloadFile string
	// Throughput is --throughput in records/s; 0 or less: -1, unthrottled.
	Throughput int64
	// Acks, LingerMs and BatchBytes are the producer's acks, linger.ms and
	// batch.size.
	Acks       string
	LingerMs   int
	BatchBytes int
}

// Result is ProducerPerformance's summary line: the steady-state one when
// the run had warm-up records, else the whole run's.
type Result struct {
	Records       int64
	RecordsPerSec float64
	MBPerSec      float64
	AvgLatencyMs  float64
	MaxLatencyMs  float64
	P50Ms, P95Ms  float64
	P99Ms, P999Ms float64
	// SteadyState says the summary excludes the warm-up records.
	SteadyState bool
}

// Run runs ProducerPerformance and returns its summary. The error of a
// failed run carries the tool's last lines.
func Run(ctx context.Context, o Options) (Result, error) {
	java := o.Java
	if java == "" {
		java = "java"
	}
	boot := kafkaconf.Bootstrap(o.ClientConfig)
	if len(boot) == 0 {
		return Result{}, errors.New("perftest: the client config names no bootstrap.servers")
	}
	props := map[string]string{}
	for k, v := range o.ClientConfig {
		if k != kafkaconf.BootstrapServers {
			props[k] = v
		}
	}
	conf := filepath.Join(o.Dir, "producer-perf.properties")
	if err := kafkaconf.WriteJavaClientConfig(conf, props); err != nil {
		return Result{}, fmt.Errorf("perftest: %w", err)
	}
	throughput := o.Throughput
	if throughput <= 0 {
		throughput = -1
	}
	args := append(append([]string{}, o.JVMOpts...),
		"-cp", filepath.Join(o.Release, "libs")+"/*",
		release.ProducerPerformanceClass,
		"--topic", o.Topic,
		"--num-records", strconv.FormatInt(o.Records, 10),
		"--throughput", strconv.FormatInt(throughput, 10),
		"--producer.config", conf,
		"--producer-props", "bootstrap.servers="+strings.Join(boot, ","),
		"acks="+o.Acks, "linger.ms="+strconv.Itoa(o.LingerMs), "batch.size="+strconv.Itoa(o.BatchBytes))
	if o.PayloadFile != "" {
		args = append(args, "--payload-file", o.PayloadFile)
	} else {
		args = append(args, "--record-size", strconv.Itoa(o.RecordSize))
	}
	if o.Warmup > 0 {
		args = append(args, "--warmup-records", strconv.FormatInt(o.Warmup, 10))
	}
	cmd := exec.CommandContext(ctx, java, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return Result{}, fmt.Errorf("perftest: %s: %w\n%s", release.ProducerPerformanceClass, err, tail(out.String(), 10))
	}
	r, err := Parse(out.Bytes())
	if err != nil {
		return Result{}, fmt.Errorf("perftest: %w\n%s", err, tail(out.String(), 10))
	}
	if r.Records != o.Records-o.Warmup && r.Records != o.Records {
		return r, fmt.Errorf("perftest: %d records in the summary, %d asked for", r.Records, o.Records)
	}
	return r, nil
}

// summaryRE matches the final summary line (ProducerPerformance prints it
// once for the whole run and, with --warmup-records, once more for the
// steady state).
var summaryRE = regexp.MustCompile(`^(\d+) (steady state )?records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.$`)

// Parse reads ProducerPerformance's output and returns the steady-state
// summary if there is one, else the whole run's.
func Parse(out []byte) (Result, error) {
	var res Result
	found := false
	for _, line := range strings.Split(string(out), "\n") {
		m := summaryRE.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		steady := m[2] != ""
		if found && res.SteadyState && !steady {
			continue
		}
		f := func(i int) float64 { v, _ := strconv.ParseFloat(m[i], 64); return v }
		n, _ := strconv.ParseInt(m[1], 10, 64)
		res = Result{Records: n, RecordsPerSec: f(3), MBPerSec: f(4), AvgLatencyMs: f(5), MaxLatencyMs: f(6),
			P50Ms: f(7), P95Ms: f(8), P99Ms: f(9), P999Ms: f(10), SteadyState: steady}
		found = true
	}
	if !found {
		return Result{}, errors.New("no summary line (N records sent, ... ms 99.9th.) in ProducerPerformance's output")
	}
	return res, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
