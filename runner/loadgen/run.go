package loadgen

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/planner"
)

// Header keys every produced record carries.
const (
	// HeaderTime is the intended send time, int64 Unix nanoseconds,
	// big-endian.
	HeaderTime = "xp-t"
	// HeaderDigest is Digest(key, value), uint64 big-endian.
	HeaderDigest = "xp-d"
)

const (
	connectTimeout = 8 * time.Second
	closeTimeout   = 5 * time.Second
	maxErrSamples  = 5
)

// run is the state of one load run.
type run struct {
	cfg Config
	// name is the topic, or with several the prefix of topics (name-0,
	// name-1, ...); it also names the consumer groups.
	name      string
	topics    []string
	parts     []int          // partitions per topic
	first     []int          // per topic: index of its partition 0 in seen[g]
	index     map[string]int // topic → index in topics
	created   []string       // topics this run created (deleted after)
	groups    []string       // consumer groups this run joined (deleted after)
	counts    []topicCounts  // per topic
	bootstrap []string
	base      []kgo.Opt
	conns     *connWatch
	saslMech  string // the SASL mechanism of the clients, Kafka's name
	pay       *payloads

	t0, warmEnd, measEnd int64     // Unix ns, on the run's clock (now)
	clock0               time.Time // the run clock's origin (with its monotonic reading)
	wall0                int64     // clock0 in Unix ns
	nsec                 int

	pub, e2e, sendDelay *recorder

	ackedAll, consumedAll  atomic.Int64
	pubMeasured, pubWarm   atomic.Int64
	consMeasured, consWarm atomic.Int64
	errs                   atomic.Int64
	unsent                 atomic.Int64
	duplicates             atomic.Int64
	seen                   [][]atomic.Int64 // per group, per topic partition: highest offset consumed
	errMu                  sync.Mutex
	phaseMu                sync.Mutex
	errSamples             []string
	backlogMax             atomic.Int64
	pacerPriority          atomic.Pointer[string] // what the first pacer got (hintLatency)
	sched                  schedWatch
}

// topicCounts are one topic's records with t_i in the window.
type topicCounts struct {
	published, consumed atomic.Int64
	_                   [48]byte // own cache line: producers and consumers of other topics count too
}

// Run executes one load run. It returns a usage error wrapping ErrConfig
// for bad configuration, an error naming the mode and cause when the
// cluster cannot be reached, and otherwise a Result whose Healthy and
// Reasons judge the run. When ctx is cancelled the partial Result is
// returned with ctx's error.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, clock0: time.Now()}
	r.wall0 = r.clock0.UnixNano()
	props := map[string]string{}
	for k, v := range cfg.ClientConfig {
		props[k] = v
	}
	if len(cfg.Bootstrap) > 0 {
		props[kafkaconf.BootstrapServers] = strings.Join(cfg.Bootstrap, ",")
	}
	r.bootstrap = kafkaconf.Bootstrap(props)
	choice := kafkaconf.TLSChoice{Version: cfg.TLSVersion, Cipher: cfg.TLSCipher}
	base, err := kafkaconf.ClientOptsChoosing(props, choice, planner.KafkaSASLMechanism(cfg.SASLMechanism))
	if err != nil {
		return nil, fmt.Errorf("%w: --client-config: %v", ErrConfig, err)
	}
	r.conns = newConnWatch(r, choice)
	r.base = append(base, kgo.WithHooks(clientHook{r.conns}))
	if kafkaconf.Protocol(props) == "sasl_ssl" {
		r.saslMech = props[kafkaconf.SASLMechanism]
		if m := planner.KafkaSASLMechanism(cfg.SASLMechanism); m != "" {
			r.saslMech = m
		}
	}
	r.pay, _ = newEncoder(cfg.Encoding, cfg.MessageSize)
	r.pay.fill(cfg.Seed)
	switch cfg.Client {
	case planner.ClientJava:
		return r.executeExternal(ctx, javaExternal)
	case planner.ClientLibrdkafka:
		return r.executeExternal(ctx, rdkafkaExternal)
	}
	defer tuneGC()()
	res, err := r.execute(ctx)
	if res != nil {
		res.Client = franzGoInfo()
	}
	return res, err
}

// now is the run's clock in Unix nanoseconds: the wall time at the start
// of the run plus monotonic time since, so an NTP step mid-run cannot
// bend a latency, and reading it costs one clock call where time.Now
// makes two (a third of the closed loop's clock time per record).
func (r *run) now() int64 {
	return r.wall0 + int64(time.Since(r.clock0))
}

// at is the time.Time (with a monotonic reading) of run-clock time ns.
func (r *run) at(ns int64) time.Time {
	return r.clock0.Add(time.Duration(ns - r.wall0))
}

// fail is an error of the run naming its security mode and bootstrap
// servers, which is what a reader needs to find the failing listener.
func (r *run) fail(format string, a ...any) error {
	return fmt.Errorf("loadgen: mode %s (%s): %s", r.cfg.Mode, strings.Join(r.bootstrap, ","), fmt.Sprintf(format, a...))
}

// noteErr counts an error of the run and keeps its message among the
// first maxErrSamples distinct ones.
func (r *run) noteErr(err error) {
	r.errs.Add(1)
	msg := err.Error()
	r.errMu.Lock()
	defer r.errMu.Unlock()
	if len(r.errSamples) >= maxErrSamples {
		return
	}
	for _, s := range r.errSamples {
		if s == msg {
			return
		}
	}
	r.errSamples = append(r.errSamples, msg)
}

// phase reports a phase; calls come from more than one goroutine, one at a
// time and in order.
func (r *run) phase(name string, ends time.Time) {
	switch name {
	case "measure":
		r.sched.host(0)
	case "drain":
		r.sched.host(1)
	}
	if r.cfg.OnPhase != nil {
		r.phaseMu.Lock()
		defer r.phaseMu.Unlock()
		r.cfg.OnPhase(name, ends)
	}
}

// execute is one load run, step by step: the topics, the consumers (every
// group holding its partitions before the first record is sent), the
// producers on the run's timeline with the sampler beside them, the drain,
// then the Result from what was counted and its health judged.
func (r *run) execute(ctx context.Context) (*Result, error) {
	cfg := r.cfg
	topics, existed, err := r.openTopics(ctx)
	if err != nil {
		return nil, err
	}
	defer topics.close()
	nparts := r.indexTopics()

	consumers, assigned, err := r.newConsumers(existed, nparts)
	defer func() { closeAll(consumers) }()
	if err != nil {
		return nil, err
	}
	runCtx, stopAll := context.WithCancel(ctx)
	defer stopAll()
	consWG := r.startConsumers(runCtx, consumers)
	if err := r.awaitAssignment(ctx, assigned, nparts); err != nil {
		stopAll()
		consWG.Wait()
		return nil, err
	}

	producers, err := r.newProducers()
	defer func() { closeAll(producers) }()
	if err != nil {
		return nil, err
	}

	r.planTimeline()
	warmEnd, measEnd := r.at(r.warmEnd), r.at(r.measEnd)
	drainEnd := measEnd.Add(cfg.DrainTimeout)

	prodWG := r.startProducers(runCtx, producers)
	if cfg.Warmup > 0 {
		r.phase("warmup", warmEnd)
	}
	smp := r.startSampler(ctx, warmEnd, measEnd)

	prodWG.Wait()
	if ctx.Err() == nil {
		r.phase("drain", drainEnd)
	}
	dr := r.drain(ctx, producers, drainEnd)
	smp.stop()
	// Every client stops before anything is read, so the counts are final.
	stopAll()
	consWG.Wait()
	closeAll(producers)
	producers = nil
	closeAll(consumers)
	consumers = nil

	warnings := topics.remove()
	res, err := r.result(warmEnd, measEnd, smp, dr)
	if err != nil {
		return nil, err
	}
	res.Warnings = warnings
	res.Healthy, res.Reasons = judgeHealth(cfg, measurement{
		Published: res.Published, Consumed: res.Consumed,
		PublishRate: res.PublishRate, ConsumeRate: res.ConsumeRate,
		Unsent: r.unsent.Load(), Drained: dr.drained, Backlog: r.backlog(), Unacked: dr.unacked,
		Errors: res.Errors, ErrorSamples: r.errSamples,
	})
	if err := ctx.Err(); err != nil {
		return res, err
	}
	r.phase("done", time.Now())
	return res, nil
}

// planTimeline fixes the run's timeline on its clock: the first record is
// due 100 ms from now (time for the producers to start), the warm-up
// follows, then Duration of measurement; and it makes the per-second
// recorders for the measurement.
func (r *run) planTimeline() {
	r.nsec = int(math.Ceil(r.cfg.Duration.Seconds()))
	r.pub, r.e2e, r.sendDelay = newRecorder(r.nsec), newRecorder(r.nsec), newRecorder(r.nsec)
	r.t0 = r.now() + int64(100*time.Millisecond)
	r.warmEnd = r.t0 + int64(r.cfg.Warmup)
	r.measEnd = r.warmEnd + int64(r.cfg.Duration)
}

// drainOutcome is how a run's drain ended.
type drainOutcome struct {
	// drained is whether every record was acknowledged and consumed by
	// every group before the deadline.
	drained bool
	at      time.Time // when the drain ended
	unacked int64     // records left in the producers' buffers
}

// drain waits, once the producers have stopped sending, until every
// buffered record is acknowledged and every acknowledged record consumed by
// every group, or until deadline (the end of measurement plus the drain
// timeout) or ctx ends.
func (r *run) drain(ctx context.Context, producers []*kgo.Client, deadline time.Time) drainOutcome {
	dctx, dcancel := context.WithDeadline(ctx, deadline)
	for _, cl := range producers {
		if err := cl.Flush(dctx); err != nil && ctx.Err() == nil {
			break
		}
	}
	drained := false
	for dctx.Err() == nil {
		r.sampleBacklog()
		if r.backlog() == 0 && r.pendingProduce(producers) == 0 {
			drained = true
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	dcancel()
	return drainOutcome{drained: drained, at: time.Now(), unacked: r.pendingProduce(producers)}
}

// pendingProduce is the records buffered in producers, not yet acknowledged
// or failed.
func (r *run) pendingProduce(producers []*kgo.Client) int64 {
	var n int64
	for _, cl := range producers {
		n += cl.BufferedProduceRecords()
	}
	return n
}

// second maps an intended send time to its second of measurement, or -1.
func (r *run) second(ti int64) int {
	if ti < r.warmEnd || ti >= r.measEnd {
		return -1
	}
	return int((ti - r.warmEnd) / int64(time.Second))
}

// closeAll closes clients concurrently, giving up on any that take longer
// than closeTimeout (a dead broker must not hang the run).
func closeAll(cls []*kgo.Client) {
	if len(cls) == 0 {
		return
	}
	var wg sync.WaitGroup
	for _, cl := range cls {
		wg.Add(1)
		go func() { defer wg.Done(); cl.Close() }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeTimeout):
	}
}
