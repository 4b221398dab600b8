package localtarget

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/xp-bench/xp/infra/procstat"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// Sample reads the CPU time and resident memory of the cluster's
// processes (the embedded cluster's child, host cluster; or each Apache
// Kafka broker's JVM, hosts broker-1, broker-2, ...), the gateways process
// (when the group has builtin gateways) or each Kroxylicious JVM (hosts
// kroxylicious-NAME, role gateway) and xp's own process, where RunLoad
// runs the load generator. Everything is on loopback on one machine, so there
// are no disk or network counters.
func (t *Target) Sample(context.Context) ([]target.HostSample, error) {
	type proc struct {
		host, role string
		pid        int
	}
	var procs []proc
	t.mu.Lock()
	if t.cluster != nil {
		procs = append(procs, proc{HostCluster, planner.RoleCluster, t.cluster.pid()})
	}
	if t.kafka != nil {
		for _, b := range t.kafka.Brokers() {
			procs = append(procs, proc{b.Name, planner.RoleBroker, b.Pid})
		}
	}
	if t.gateways != nil {
		procs = append(procs, proc{HostGateway, planner.RoleGateway, t.gateways.pid()})
	}
	for _, k := range t.kroxies {
		procs = append(procs, proc{k.host, planner.RoleGateway, k.proc.Pid()})
	}
	t.mu.Unlock()
	var out []target.HostSample
	for _, pr := range procs {
		cpu, err := procstat.CPU(pr.pid)
		if err != nil {
			continue // ended: nothing to sample
		}
		out = append(out, target.HostSample{Host: pr.host, Role: pr.role, CPU: cpu, MemMiB: procstat.RSS(pr.pid)})
	}
	out = append(out, target.HostSample{Host: target.HostClient, Role: planner.RoleClient, CPU: procstat.SelfCPU(),
		MemMiB: procstat.RSS(os.Getpid())})
	return out, nil
}

// RunLoad runs the load generator in xp's process, on this machine.
func (t *Target) RunLoad(ctx context.Context, l target.Load) (*loadgen.Result, error) {
	return target.RunLoadHere(ctx, l)
}

// brokerLogTail is how much of each Apache Kafka broker log and
// Kroxylicious log CollectLogs returns: its end, where a failure shows.
const brokerLogTail = 256 << 10

// CollectLogs returns the tail of what the running cluster and gateway
// processes wrote to stderr (their start-up lines and the gateways' log);
// for Apache Kafka, of each broker's server.log and kafka.out (the JVM's
// stdout and stderr) as broker-N/server.log and broker-N/kafka.out; for
// Kroxylicious, of each one's output as kroxylicious-NAME.log; since
// they started: since is not used.
func (t *Target) CollectLogs(_ context.Context, _ time.Time) ([]target.Log, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []target.Log
	if t.kafka != nil {
		for _, b := range t.kafka.Brokers() {
			for _, f := range []string{"server.log", "kafka.out"} {
				text, err := tail(filepath.Join(b.Dir, "logs", f), brokerLogTail)
				if err != nil {
					continue
				}
				out = append(out, target.Log{Name: b.Name + "/" + f, Text: text})
			}
		}
	}
	for _, k := range t.kroxies {
		if text, err := tail(k.log, brokerLogTail); err == nil {
			out = append(out, target.Log{Name: k.host + ".log", Text: text})
		}
	}
	for _, pr := range []struct {
		name string
		p    *childProc
	}{{HostCluster + ".log", t.cluster}, {HostGateway + ".log", t.gateways}} {
		if pr.p == nil {
			continue
		}
		out = append(out, target.Log{Name: pr.name, Text: pr.p.stderr.bytes()})
	}
	return out, nil
}

// tail is the last limit bytes of the file at path.
func tail(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if off := fi.Size() - limit; off > 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, limit))
}
