package remote

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// What the runner asks of a remote target beyond Up and Down; tf.Target
// forwards each to its Deployer.
var (
	_ target.LoadRunner      = (*Deployer)(nil)
	_ target.TelemetrySource = (*Deployer)(nil)
	_ target.LogCollector    = (*Deployer)(nil)
	_ target.HostDescriber   = (*Deployer)(nil)
)

// DescribeHosts describes every machine of the deployment
// (target.HostDescriber).
func (d *Deployer) DescribeHosts() []target.HostInfo {
	dep := d.Deployment()
	if dep == nil {
		return nil
	}
	return dep.Hosts()
}

// logBound is how much of the end of each service log CollectLogs fetches.
const logBound = 1 << 20

// RunLoad runs a row's load on the client hosts (target.LoadRunner): the
// rate split over them, each `xp loadgen` with the row's settings and a
// seed of its own, the results merged. Every service of the cluster and
// its gateways must run before the load and still run after it: a run
// during which a broker was gone is a failed attempt (its row is retried
// on restarted services), not a measurement.
func (d *Deployer) RunLoad(ctx context.Context, l target.Load) (*loadgen.Result, error) {
	dep := d.Deployment()
	if dep == nil {
		return nil, errors.New("remote: nothing deployed")
	}
	if err := dep.CheckServices(ctx); err != nil {
		return nil, err
	}
	c := l.Config
	timeout := c.Warmup + c.Duration + c.DrainTimeout + 2*time.Minute
	load := Load{ClientConfig: l.Endpoint.ClientConfig, Rate: c.Rate, Flags: LoadFlags(c, l.Endpoint.Bootstrap),
		Seed: c.Seed, Timeout: timeout}
	if c.OnPhase != nil {
		// The phase's end, as the runner wants it, from this machine's
		// clock when the first client reports it.
		lengths := map[string]time.Duration{"warmup": c.Warmup, "measure": c.Duration, "drain": c.DrainTimeout}
		load.OnPhase = func(phase string) { c.OnPhase(phase, time.Now().Add(lengths[phase])) }
	}
	if load.ClientConfig == "" {
		load.Mode = target.ModeKey(l.Row)
	}
	if c.Client == planner.ClientJava {
		name, err := dep.PrepareJavaClient(ctx, c.JavaClient)
		if err != nil {
			return nil, err
		}
		load.JavaClient = name
	}
	if c.Client == planner.ClientLibrdkafka {
		name, err := dep.PrepareRdkafkaClient(ctx, c.RdkafkaClient)
		if err != nil {
			return nil, err
		}
		load.RdkafkaClient = name
	}
	res, _, err := dep.RunLoad(ctx, load)
	if ctx.Err() != nil {
		return nil, err
	}
	if serr := dep.CheckServices(ctx); serr != nil {
		return nil, errors.Join(serr, err)
	}
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// LoadFlags are the `xp loadgen` flags of c (every setting but the rate,
// the seed and the client config, which RunLoad sets per client), so that
// the remote load generator runs with c exactly: what c leaves zero takes
// the flag's default, which is Config's, except where zero is a value
// (warm-up, consumer groups, linger).
func LoadFlags(c loadgen.Config, bootstrap []string) []string {
	var f []string
	add := func(name, v string) { f = append(f, "--"+name, v) }
	if len(bootstrap) > 0 {
		add("bootstrap", strings.Join(bootstrap, ","))
	}
	if c.Topic != "" {
		add("topic", c.Topic)
	}
	if c.KeepTopic {
		f = append(f, "--keep-topic")
	}
	for _, kv := range []struct {
		name string
		v    int
	}{{"topics", c.Topics}, {"partitions", c.Partitions}, {"replication-factor", c.ReplicationFactor},
		{"min-insync-replicas", c.MinInsyncReplicas}, {"message-size", c.MessageSize}, {"concurrency", c.Concurrency},
		{"producers", c.Producers}, {"consumers-per-group", c.ConsumersPerGroup}, {"batch-bytes", c.BatchBytes}} {
		if kv.v != 0 {
			add(kv.name, strconv.Itoa(kv.v))
		}
	}
	if c.ConnectionChurn != 0 {
		add("connection-churn", strconv.Itoa(c.ConnectionChurn))
	}
	// Zero is a value of these (no consumer group, no linger), not their
	// flags' default (1): they are always given.
	add("consumer-groups", strconv.Itoa(c.ConsumerGroups))
	add("linger-ms", strconv.Itoa(c.LingerMs))
	for _, kv := range []struct{ name, v string }{{"acks", c.Acks}, {"compression", c.Compression}, {"encoding", c.Encoding},
		{"tls-version", c.TLSVersion}, {"tls-cipher", c.TLSCipher}, {"sasl-mechanism", c.SASLMechanism}} {
		if kv.v != "" {
			add(kv.name, kv.v)
		}
	}
	// The client, and the Java client's JVM flags (its release is given
	// per host: RunLoad's Load.JavaClient).
	if c.Client != "" && c.Client != planner.ClientFranzGo {
		add("client", c.Client)
	}
	if len(c.JVMOpts) > 0 {
		add("jvm-opts", strings.Join(c.JVMOpts, " "))
	}
	// A zero warm-up is none (a row's warmup_s: 0), not the flag's 10s.
	add("warmup", c.Warmup.String())
	for _, kv := range []struct {
		name string
		v    time.Duration
	}{{"duration", c.Duration}, {"drain-timeout", c.DrainTimeout}} {
		if kv.v != 0 {
			add(kv.name, kv.v.String())
		}
	}
	return f
}

// Sample returns every host's latest cumulative counters
// (target.TelemetrySource): busy CPU time of the whole machine, used
// memory, network and disk bytes.
func (d *Deployer) Sample(ctx context.Context) ([]target.HostSample, error) {
	d.mu.Lock()
	tel, dep := d.tel, d.dep
	d.mu.Unlock()
	if tel == nil || dep == nil {
		return nil, nil
	}
	var out []target.HostSample
	latest := tel.Latest()
	for _, n := range dep.names("") {
		r, ok := latest[n]
		if !ok {
			continue
		}
		out = append(out, target.HostSample{Host: n, Role: dep.hosts[n].Role,
			CPU:    time.Duration(r.Total.CPUBusyS * float64(time.Second)),
			MemMiB: r.MemUsedMiB,
			Net:    &target.Counters{In: r.Total.NetRxBytes, Out: r.Total.NetTxBytes},
			Disk:   &target.Counters{In: r.Total.DiskReadBytes, Out: r.Total.DiskWriteBytes}})
	}
	return out, tel.Err()
}

// CollectLogs fetches the end of every broker and gateway service log
// (target.LogCollector), at most 1 MiB each.
func (d *Deployer) CollectLogs(ctx context.Context, since time.Time) ([]target.Log, error) {
	dep := d.Deployment()
	if dep == nil {
		return nil, nil
	}
	tails, err := dep.logTails(ctx, logBound)
	var out []target.Log
	for _, name := range sortedKeys(tails) {
		out = append(out, target.Log{Name: name, Text: tails[name]})
	}
	if err != nil {
		return out, fmt.Errorf("remote: logs: %w", err)
	}
	return out, nil
}
