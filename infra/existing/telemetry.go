package existing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/xp-bench/xp/infra/remote"
	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/infra/targetfile"
)

// telemetry samples the machines of an existing cluster: xp's agent
// uploaded to each over SSH (infra/remote), `xp agent telemetry` streaming
// once a second, everything removed at the end.
type telemetry struct {
	pool *ssh.Pool
	dep  *remote.Deployment
	tel  *remote.Telemetry
	stop context.CancelFunc

	mu   sync.Mutex
	done bool
}

// startTelemetry connects to every telemetry host (host keys in the
// campaign's known_hosts, beside the db), uploads the agent and starts
// sampling.
func startTelemetry(ctx context.Context, cfg target.Config, tel *targetfile.Telemetry, getenv func(string) string, log io.Writer) (*telemetry, error) {
	pol, err := ssh.ParsePolicy(tel.SSH.KnownHosts)
	if err != nil {
		return nil, err
	}
	pool, err := ssh.NewPool(ssh.Config{User: tel.SSH.User, PrivateKey: tel.SSH.PrivateKey, KnownHosts: cfg.DB + ".known_hosts",
		Policy: pol, KeepaliveInterval: tel.SSH.Keepalive, Log: log})
	if err != nil {
		return nil, err
	}
	var hosts []remote.Host
	for _, h := range tel.Hosts {
		port := h.SSHPort
		if port == 0 {
			port = 22
		}
		hosts = append(hosts, remote.Host{Name: h.Name, Role: h.Role, SSH: net.JoinHostPort(h.Address, strconv.Itoa(port)), Private: h.Address})
	}
	dep, err := remote.Deploy(ctx, remote.Options{Campaign: cfg.Campaign, Hosts: hosts, Pool: pool, Binary: getenv(remote.BinaryEnv), Log: log})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("existing: telemetry: %w", err)
	}
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	m := &telemetry{pool: pool, dep: dep, tel: dep.StartTelemetry(sctx), stop: stop}
	// The first row's measurement needs a reading of every host at its
	// start: wait for the first line of each (the agent's first comes
	// after one interval).
	deadline := time.Now().Add(firstSampleTimeout)
	for len(m.tel.Latest()) < len(hosts) {
		if err := m.tel.Err(); err != nil || time.Now().After(deadline) || ctx.Err() != nil {
			if err == nil {
				err = fmt.Errorf("not every host sampled within %s", firstSampleTimeout)
			}
			m.remove(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("existing: telemetry: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return m, nil
}

// firstSampleTimeout bounds the wait for every telemetry host's first
// reading.
const firstSampleTimeout = 20 * time.Second

// names are the telemetry hosts.
func (m *telemetry) names() []string {
	var out []string
	for _, h := range m.dep.Hosts() {
		out = append(out, h.Name)
	}
	return out
}

// describe describes the telemetry hosts as their agents do.
func (m *telemetry) describe() []target.HostInfo { return m.dep.Hosts() }

// sample is every host's latest cumulative counters.
func (m *telemetry) sample() []target.HostSample {
	var out []target.HostSample
	latest := m.tel.Latest()
	for _, h := range m.dep.Hosts() {
		r, ok := latest[h.Name]
		if !ok {
			continue
		}
		out = append(out, target.HostSample{Host: h.Name, Role: h.Role,
			CPU:    time.Duration(r.Total.CPUBusyS * float64(time.Second)),
			MemMiB: r.MemUsedMiB,
			Net:    &target.Counters{In: r.Total.NetRxBytes, Out: r.Total.NetTxBytes},
			Disk:   &target.Counters{In: r.Total.DiskReadBytes, Out: r.Total.DiskWriteBytes}})
	}
	return out
}

func (m *telemetry) err() error { return m.tel.Err() }

// remove stops sampling and takes the agent off every host.
func (m *telemetry) remove(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done {
		return nil
	}
	m.done = true
	m.stop()
	m.tel.Stop()
	err := m.dep.Remove(ctx)
	return errors.Join(err, m.pool.Close())
}
