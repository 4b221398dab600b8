package loadgen

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/procstat"
	"github.com/xp-bench/xp/planner"
)

// Rate is a target publish rate in msg/s; 0 is max (closed loop), written
// "max" in JSON.
type Rate int64

// MarshalJSON writes "max" or the integer rate.
func (r Rate) MarshalJSON() ([]byte, error) {
	if r == 0 {
		return []byte(`"max"`), nil
	}
	return strconv.AppendInt(nil, int64(r), 10), nil
}

// UnmarshalJSON reads "max" or an integer rate.
func (r *Rate) UnmarshalJSON(b []byte) error {
	if string(b) == `"max"` {
		*r = 0
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf(`rate: want an integer or "max", got %s`, b)
	}
	*r = Rate(n)
	return nil
}

// Result is one load run, as `xp loadgen --json` prints it.
type Result struct {
	Healthy bool `json:"healthy"`
	// Reasons holds one sentence per failed health rule.
	Reasons []string `json:"reasons"`
	// TargetRate is the configured total rate ("max" for closed loop).
	TargetRate Rate `json:"target_rate"`
	// PublishRate is acknowledged records whose intended send time lies in
	// the measurement window, per second of the window.
	PublishRate float64 `json:"publish_rate"`
	// ConsumeRate is measured records consumed, summed over every group,
	// per second of the window.
	ConsumeRate float64 `json:"consume_rate"`
	Published   int64   `json:"published"`
	Consumed    int64   `json:"consumed"`
	// Errors counts failed produces, fetch errors and records failing the
	// digest check, in any phase.
	Errors int64 `json:"errors"`
	// Duplicates counts records a group received again after a rebalance
	// (same partition and offset); they are counted once.
	Duplicates int64 `json:"duplicates"`
	// BacklogMax is the largest number of acknowledged records not yet
	// consumed (summed over groups) seen from the start of measurement to
	// the end of the drain.
	BacklogMax int64 `json:"backlog_max"`
	// DrainS is the time from the end of measurement until every
	// acknowledged record was consumed by every group.
	DrainS           float64     `json:"drain_s"`
	PublishLatencyMs Percentiles `json:"publish_latency_ms"`
	E2ELatencyMs     Percentiles `json:"e2e_latency_ms"`
	SendDelayMs      Percentiles `json:"send_delay_ms"`
	Histograms       Histograms  `json:"histograms"`
	Series           []Second    `json:"series"`
	// ClientCPUS is the user+system CPU time of this process during the
	// measurement window (includes an embedded cluster in the same
	// process).
	ClientCPUS float64 `json:"client_cpu_s"`
	// ClientRSSMaxMiB is the process's peak resident set size.
	ClientRSSMaxMiB float64 `json:"client_rss_max_mib"`
	// Warmup counts traffic of the warm-up, excluded from everything else.
	Warmup WarmupCounts `json:"warmup"`
	// ErrorSamples are the first distinct error messages.
	ErrorSamples []string `json:"error_samples,omitempty"`
	// Warnings are problems that do not affect the measurement (e.g. the
	// topic could not be deleted).
	Warnings []string `json:"warnings,omitempty"`
	// Topics holds each topic's share of the measured records.
	Topics []TopicCount `json:"topics"`
	// Scheduling is what the machine did to the pacers in the window
	// (Linux).
	Scheduling *Scheduling `json:"scheduling,omitempty"`
	// Connections is what the clients negotiated and, with churn, the
	// producers' reconnects.
	Connections *Connections `json:"connections,omitempty"`
	Config      ConfigEcho   `json:"config"`
	// Client is the Kafka client that ran the load: its name, version and
	// runtime.
	Client ClientInfo `json:"client"`
	// Intervals are per-second histograms for the evidence store.
	Intervals []Interval `json:"-"`
	// Start and End bound the measurement window.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// ClientInfo names the client that ran a load, as every attempt records
// it.
type ClientInfo struct {
	// Name is a level of the row field client: franz-go or java.
	Name string `json:"name"`
	// Version is the client library's, e.g. "franz-go v1.20.5" or
	// "kafka-clients 4.4.0 (1156b2752aaa28ea)".
	Version string `json:"version"`
	// Runtime is the Go release and GOMAXPROCS and GOGC, or the JVM, its
	// flags, collectors and heap bound.
	Runtime string `json:"runtime"`
}

// franzGoModule is the module of the Go client.
const franzGoModule = "github.com/twmb/franz-go"

// franzGoVersion is go.mod's version of franzGoModule, for binaries whose
// build information lists no modules (test binaries); TestFranzGoInfo
// keeps it equal to go.mod's.
const franzGoVersion = "v1.22.3"

// franzGoInfo is this process's ClientInfo: franz-go's module version from
// the build (go.mod's when the binary lists no modules), the Go release,
// GOMAXPROCS and GOGC.
func franzGoInfo() ClientInfo {
	v := franzGoVersion
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == franzGoModule {
				v = d.Version
				if d.Replace != nil && d.Replace.Version != "" {
					v = d.Replace.Version
				}
			}
		}
	}
	gogc := os.Getenv("GOGC")
	if gogc == "" {
		gogc = "200 while loading (default)"
	}
	return ClientInfo{Name: planner.ClientFranzGo, Version: "franz-go " + v,
		Runtime: fmt.Sprintf("%s %s/%s; GOMAXPROCS %d; GOGC %s", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), gogc)}
}

// Histograms are whole-run histograms, V2-compressed HDR in base64.
type Histograms struct {
	Publish   string `json:"publish"`
	E2E       string `json:"e2e"`
	SendDelay string `json:"send_delay"`
}

// Interval holds one second's histograms (EncodeHistogram form: base64
// text of the V2-compressed encoding, decodable by hdrhistogram.Decode).
type Interval struct {
	Second    int
	Publish   []byte
	E2E       []byte
	SendDelay []byte
}

// Second is one second of the series, counted from the start of
// measurement; seconds past the duration belong to the drain.
type Second struct {
	Second    int   `json:"second"`
	Published int64 `json:"published"`
	Consumed  int64 `json:"consumed"`
	Backlog   int64 `json:"backlog"`
}

// TopicCount is one topic's records with t_i in the measurement window:
// acknowledged, and consumed summed over every group.
type TopicCount struct {
	Topic      string `json:"topic"`
	Partitions int    `json:"partitions"`
	Published  int64  `json:"published"`
	Consumed   int64  `json:"consumed"`
}

// WarmupCounts are the warm-up's records.
type WarmupCounts struct {
	Seconds   float64 `json:"seconds"`
	Published int64   `json:"published"`
	Consumed  int64   `json:"consumed"`
}

// ConfigEcho is every setting used, secrets redacted.
type ConfigEcho struct {
	Mode              string            `json:"mode"`
	Bootstrap         []string          `json:"bootstrap"`
	ClientConfig      map[string]string `json:"client_config"`
	Topic             string            `json:"topic"`
	Topics            int               `json:"topics"`
	KeepTopic         bool              `json:"keep_topic"`
	Partitions        int               `json:"partitions"`
	ReplicationFactor int               `json:"replication_factor"`
	MinInsyncReplicas int               `json:"min_insync_replicas"`
	MessageSize       int               `json:"message_size"`
	Rate              Rate              `json:"rate"`
	Concurrency       int               `json:"concurrency"`
	// InFlight is the records each producer kept in flight with rate max
	// (Concurrency, or what the producer buffer holds); 0 at a fixed rate.
	InFlight          int     `json:"in_flight,omitempty"`
	Producers         int     `json:"producers"`
	ConsumerGroups    int     `json:"consumer_groups"`
	ConsumersPerGroup int     `json:"consumers_per_group"`
	Acks              string  `json:"acks"`
	LingerMs          int     `json:"linger_ms"`
	BatchBytes        int     `json:"batch_bytes"`
	Compression       string  `json:"compression"`
	Encoding          string  `json:"encoding"`
	WarmupS           float64 `json:"warmup_s"`
	DurationS         float64 `json:"duration_s"`
	DrainTimeoutS     float64 `json:"drain_timeout_s"`
	Seed              int64   `json:"seed"`
	// Client is the Kafka client (franz-go or java); JVMOpts the Java
	// client's JVM flags.
	Client  string   `json:"client"`
	JVMOpts []string `json:"jvm_opts,omitempty"`
	// PacerPriority is the scheduling the open loop's pacer threads got,
	// whichever the client: PacerNiceSlice, PacerSlice or PacerDefault,
	// then the timer slack the pacer reported ("; timer slack 1 ns", or
	// "unknown"); empty in closed loop.
	PacerPriority string `json:"pacer_priority,omitempty"`
}

func echo(c Config, topic string, bootstrap []string) ConfigEcho {
	props := kafkaconf.Redacted(c.ClientConfig)
	inFlight := 0
	if c.Rate == 0 {
		inFlight = c.InFlight()
	}
	return ConfigEcho{
		InFlight: inFlight, Mode: c.Mode, Bootstrap: bootstrap, ClientConfig: props, Topic: topic, Topics: c.Topics, KeepTopic: c.KeepTopic,
		Partitions: c.Partitions, ReplicationFactor: c.ReplicationFactor, MinInsyncReplicas: c.MinInsyncReplicas,
		MessageSize: c.MessageSize, Rate: Rate(c.Rate), Concurrency: c.Concurrency, Producers: c.Producers,
		ConsumerGroups: c.ConsumerGroups, ConsumersPerGroup: c.ConsumersPerGroup, Acks: c.Acks,
		LingerMs: c.LingerMs, BatchBytes: c.BatchBytes, Compression: c.Compression, Encoding: c.Encoding,
		WarmupS: c.Warmup.Seconds(), DurationS: c.Duration.Seconds(), DrainTimeoutS: c.DrainTimeout.Seconds(),
		Seed: c.Seed, Client: c.Client, JVMOpts: c.JVMOpts,
	}
}

// result builds a run's Result, all but its health and warnings, from the
// run's counters, recorders and series once every client has stopped.
// warmEnd and measEnd bound the measurement window.
func (r *run) result(warmEnd, measEnd time.Time, smp *sampler, dr drainOutcome) (*Result, error) {
	cfg := r.cfg
	d := cfg.Duration.Seconds()
	res := &Result{TargetRate: Rate(cfg.Rate), Start: warmEnd, End: measEnd}
	res.Published = r.pubMeasured.Load()
	res.Consumed = r.consMeasured.Load()
	res.PublishRate = float64(res.Published) / d
	res.ConsumeRate = float64(res.Consumed) / d
	res.Errors = r.errs.Load()
	res.Duplicates = r.duplicates.Load()
	res.BacklogMax = r.backlogMax.Load()
	res.Series = smp.series
	if dr.drained {
		res.DrainS = max(0, dr.at.Sub(measEnd).Seconds())
	} else {
		res.DrainS = cfg.DrainTimeout.Seconds()
	}
	res.ClientCPUS = smp.cpu()
	res.ClientRSSMaxMiB = procstat.SelfMaxRSS()
	res.Warmup = WarmupCounts{Seconds: cfg.Warmup.Seconds(), Published: r.pubWarm.Load(), Consumed: r.consWarm.Load()}
	res.ErrorSamples = r.errSamples
	res.Config = echo(cfg, r.name, r.bootstrap)
	if p := r.pacerPriority.Load(); p != nil {
		res.Config.PacerPriority = *p
	}
	res.Scheduling = r.sched.result()
	res.Topics = make([]TopicCount, len(r.topics))
	for i, t := range r.topics {
		res.Topics[i] = TopicCount{Topic: t, Partitions: r.parts[i], Published: r.counts[i].published.Load(), Consumed: r.counts[i].consumed.Load()}
	}
	if err := r.encodeHistograms(res); err != nil {
		return nil, err
	}
	if r.conns != nil {
		c, err := r.conns.result(r.saslMech, cfg.ConnectionChurn, cfg.Duration)
		if err != nil {
			return nil, fmt.Errorf("loadgen: encode histogram: %w", err)
		}
		res.Connections = c
	}
	return res, nil
}

// encodeHistograms fills res's latency percentiles and whole-run
// histograms, and its Intervals with each second's histograms.
func (r *run) encodeHistograms(res *Result) error {
	pubH, e2eH, sdH := r.pub.total(), r.e2e.total(), r.sendDelay.total()
	res.PublishLatencyMs, res.E2ELatencyMs, res.SendDelayMs = Summarize(pubH), Summarize(e2eH), Summarize(sdH)
	for _, h := range []struct {
		dst *string
		h   *hdrhistogram.Histogram
	}{{&res.Histograms.Publish, pubH}, {&res.Histograms.E2E, e2eH}, {&res.Histograms.SendDelay, sdH}} {
		b, err := EncodeHistogram(h.h)
		if err != nil {
			return fmt.Errorf("loadgen: encode histogram: %w", err)
		}
		*h.dst = string(b)
	}
	for s := range r.nsec {
		iv := Interval{Second: s}
		var err error
		if iv.Publish, err = r.pub.encodeSecond(s); err != nil {
			return err
		}
		if iv.E2E, err = r.e2e.encodeSecond(s); err != nil {
			return err
		}
		if iv.SendDelay, err = r.sendDelay.encodeSecond(s); err != nil {
			return err
		}
		res.Intervals = append(res.Intervals, iv)
	}
	return nil
}
