package localtarget

import (
	"context"
	"os"
	"time"

	"github.com/xp-bench/xp/infra/procstat"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/runner/loadgen"
)

// Sample reads the CPU time and resident memory of the cluster process,
// the gateways process (when the group has gateways) and xp's own process,
// where RunLoad runs the load generator. The cluster is in memory and on
// loopback, so there are no disk or network counters.
func (t *Target) Sample(context.Context) ([]target.HostSample, error) {
	t.mu.Lock()
	procs := []struct {
		host, role string
		p          *childProc
	}{{HostCluster, target.RoleCluster, t.cluster}, {HostGateway, target.RoleGateway, t.gateways}}
	t.mu.Unlock()
	var out []target.HostSample
	for _, pr := range procs {
		if pr.p == nil {
			continue
		}
		cpu, err := procstat.CPU(pr.p.pid())
		if err != nil {
			continue // ended: nothing to sample
		}
		out = append(out, target.HostSample{Host: pr.host, Role: pr.role, CPU: cpu, MemMiB: procstat.RSS(pr.p.pid())})
	}
	out = append(out, target.HostSample{Host: HostClient, Role: target.RoleClient, CPU: procstat.SelfCPU(),
		MemMiB: procstat.RSS(os.Getpid())})
	return out, nil
}

// RunLoad runs the load generator in xp's process, on this machine.
func (t *Target) RunLoad(ctx context.Context, l target.Load) (*loadgen.Result, error) {
	return target.RunLoadHere(ctx, l)
}

// CollectLogs returns the tail of what the running cluster and gateway
// processes wrote to stderr (their start-up lines and the gateways' log),
// since they started: the processes keep no timestamps, so since is not
// used.
func (t *Target) CollectLogs(_ context.Context, _ time.Time) ([]target.Log, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []target.Log
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
