package target

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/xp-bench/xp/infra/endpoint"
	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// What a target may do beyond Up and Down, each an interface of its own the
// runner finds by type assertion. A remote target (aws, azure, hosts)
// should implement all of them; the local target does.

// TelemetrySource is a Target that samples the hosts of the group that is
// up. The runner calls Sample once a second while an attempt runs, and
// when the measurement window opens and closes, and stores what changed
// since the attempt began.
type TelemetrySource interface {
	Sample(ctx context.Context) ([]HostSample, error)
}

// TLSKeptReader is a Target whose gateways can count the TLS legs that
// crypto/tls carried instead of tlsrec (gateway_crypto fast: a TLS 1.2
// peer, an untested Go release, tlsrec's guard firing). The runner reads
// the counters of a gateway row's mode key before and after each attempt
// and records the legs kept in between with the attempt.
type TLSKeptReader interface {
	// TLSKept sums xp_gateway_tls_kept_total over the gateways serving
	// modeKey (ModeKey) since they started.
	TLSKept(ctx context.Context, modeKey string) (gateway.TLSKept, error)
}

// HostClient is the Host of xp's own process in a HostSample: the runner
// samples it under this name when the load runs in it, and a target that
// samples it itself (the local target, existing) names it so too, which is
// how the runner finds the load generator's memory among the samples.
const HostClient = "client"

// HostSample is one reading of one host. Counters are cumulative from an
// origin of the target's choosing; the runner stores differences from the
// attempt's first sample.
type HostSample struct {
	// Host names the host within the group (e.g. "broker-1"; the local
	// target's processes are "cluster", "gateway" and HostClient).
	Host string
	// Role is one of the planner's host roles (planner.RoleBroker, ...).
	Role string
	// CPU is the CPU time spent by what the host runs for the group: the
	// process on the local target, the whole machine on a remote one.
	CPU time.Duration
	// MemMiB is resident memory in MiB (local: the process's; remote: the
	// machine's used memory); negative when unknown.
	MemMiB float64
	// Net counts network bytes (In received, Out sent); nil when the
	// target does not measure it.
	Net *Counters
	// Disk counts block device bytes (In read, Out written); nil when the
	// target does not measure it.
	Disk *Counters
}

// Counters are a pair of cumulative byte counters.
type Counters struct {
	In, Out uint64
}

// LoadRunner is a Target that runs a row's load itself, on its own client
// machines, against an endpoint of the group that is up. A Target that is
// not one gets its loads run in xp's process (RunLoadHere).
type LoadRunner interface {
	RunLoad(ctx context.Context, l Load) (*loadgen.Result, error)
}

// Load is one load run.
type Load struct {
	Row      *planner.Row
	Endpoint endpoint.Endpoint
	// Config is the load generator's configuration for the row, with
	// Bootstrap set from Endpoint and ClientConfig nil: whoever runs the
	// load reads Endpoint.ClientConfig on the machine where its clients
	// run. Config.OnPhase, when set, must be called as the load generator
	// reports phases (warmup, measure, drain, done), as they happen: the
	// runner reads the measurement window's CPU time when they arrive.
	Config loadgen.Config
	// Warmup marks the discarded warm-up load the runner runs after a
	// group comes up or restarts (Row is the row whose load it borrows),
	// not a row's run.
	Warmup bool
}

// Attached is a Target whose Up attaches to a cluster that was running
// before xp came (platform: existing) instead of starting brokers: no
// broker started, so the runner runs no warm-up load after its Up.
type Attached interface {
	Attached()
}

// RunLoadHere runs l with the built-in load generator in this process,
// reading the client config from this machine.
func RunLoadHere(ctx context.Context, l Load) (*loadgen.Result, error) {
	props, err := kafkaconf.ReadClientConfig(l.Endpoint.ClientConfig)
	if err != nil {
		return nil, fmt.Errorf("security mode %s: %w", l.Row.Security, err)
	}
	cfg := l.Config
	cfg.Bootstrap = l.Endpoint.Bootstrap
	cfg.ClientConfig = props
	return loadgen.Run(ctx, cfg)
}

// LogCollector is a Target that can fetch the logs of the group's services
// (brokers, controllers, gateways). The runner calls it after a failed
// attempt, with a time bound, and keeps what it returns with the attempt.
type LogCollector interface {
	// CollectLogs returns the logs written since since, best effort: what
	// it could fetch, with an error naming what it could not.
	CollectLogs(ctx context.Context, since time.Time) ([]Log, error)
}

// Log is one named log of a service.
type Log struct {
	// Name says whose log it is, e.g. "broker-1/server.log".
	Name string
	Text []byte
}

// Restarter is a Target that can restart the services of the group that
// is up without provisioning it again. Between the attempts of a failed
// row the runner restarts instead of taking the group down and up again,
// which on a cloud would destroy and re-create machines.
type Restarter interface {
	// Restart restarts every service of g and says how to reach them
	// (addresses may change).
	Restart(ctx context.Context, g Group) (Endpoints, error)
}

// ErrTransient marks an error of Up or Restart that may go away when the
// call is repeated (a cloud API's rate limit, capacity briefly short, a
// host not yet reachable): the runner retries those with backoff, and
// fails the group's rows at once on any other.
var ErrTransient = errors.New("transient")

// Transient marks err as transient (ErrTransient); nil stays nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &transientError{err}
}

type transientError struct{ err error }

func (e *transientError) Error() string   { return e.err.Error() }
func (e *transientError) Unwrap() []error { return []error{ErrTransient, e.err} }

// IsTransient reports whether err is transient: it wraps ErrTransient, or
// an error in its chain has a method Transient() bool that says so.
func IsTransient(err error) bool {
	if errors.Is(err, ErrTransient) {
		return true
	}
	var t interface{ Transient() bool }
	return errors.As(err, &t) && t.Transient()
}

// HostDescriber is a Target that can describe the machines of the group
// that is up. The runner records the description with every attempt.
type HostDescriber interface {
	DescribeHosts() []HostInfo
}

// ModeHostDescriber is a HostDescriber whose machines are reached at
// another address in each security mode (a cluster someone else runs has
// a listener per mode, a gateway addresses of its own). The runner records
// with an attempt the description of its mode (a mode key, ModeKey).
type ModeHostDescriber interface {
	DescribeModeHosts(mode string) []HostInfo
}

// HostInfo describes one machine of a group.
type HostInfo struct {
	Name         string `json:"name"`
	Role         string `json:"role"`
	Address      string `json:"address"`
	InstanceType string `json:"instance_type,omitempty"`
	OS           string `json:"os,omitempty"`
	Arch         string `json:"arch,omitempty"`
	Kernel       string `json:"kernel,omitempty"`
	Distro       string `json:"distro,omitempty"`
	CPUs         int    `json:"cpus,omitempty"`
	MemoryMiB    int64  `json:"memory_mib,omitempty"`
	// Java is the first line of `java -version` on the machine.
	Java string `json:"java,omitempty"`
	// Kafka is the broker software the machine runs, as Broker.String
	// writes it: "apache 4.1.0", "kfake v1.2.3".
	Kafka string `json:"kafka,omitempty"`
	// JVMFlags are the heap and JVM flags Apache Kafka runs with on the
	// machine (Java is the runtime).
	JVMFlags string `json:"jvm_flags,omitempty"`
}
