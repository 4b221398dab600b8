package tf

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// A Terraform-backed target runs loads, samples hosts and collects logs
// through its Deployer, where the Deployer can (the remote one can).
var (
	_ target.LoadRunner      = (*Target)(nil)
	_ target.TelemetrySource = (*Target)(nil)
	_ target.LogCollector    = (*Target)(nil)
	_ target.Restarter       = (*Target)(nil)
	_ target.HostDescriber   = (*Target)(nil)
	_ target.TLSKeptReader   = (*Target)(nil)
)

// TLSKept reads the gateways' tls_kept counters through the Deployer
// (target.TLSKeptReader); an error when it cannot, so the attempt records
// its legs as not counted.
func (t *Target) TLSKept(ctx context.Context, modeKey string) (gateway.TLSKept, error) {
	if kr, ok := t.deployer.(target.TLSKeptReader); ok {
		return kr.TLSKept(ctx, modeKey)
	}
	return nil, fmt.Errorf("%T cannot count the gateway TLS legs crypto/tls kept", t.deployer)
}

// DescribeHosts describes the group's machines through the Deployer
// (target.HostDescriber); nothing when it cannot.
func (t *Target) DescribeHosts() []target.HostInfo {
	if hd, ok := t.deployer.(target.HostDescriber); ok {
		return hd.DescribeHosts()
	}
	return nil
}

// RunLoad runs the load on the group's client machines through the
// Deployer (target.LoadRunner); a Deployer that cannot gets it run in this
// process.
func (t *Target) RunLoad(ctx context.Context, l target.Load) (*loadgen.Result, error) {
	if lr, ok := t.deployer.(target.LoadRunner); ok {
		return lr.RunLoad(ctx, l)
	}
	return target.RunLoadHere(ctx, l)
}

// Sample reads the group's hosts through the Deployer
// (target.TelemetrySource); nothing when it cannot.
func (t *Target) Sample(ctx context.Context) ([]target.HostSample, error) {
	if ts, ok := t.deployer.(target.TelemetrySource); ok {
		return ts.Sample(ctx)
	}
	return nil, nil
}

// CollectLogs fetches the services' logs through the Deployer
// (target.LogCollector); nothing when it cannot.
func (t *Target) CollectLogs(ctx context.Context, since time.Time) ([]target.Log, error) {
	if lc, ok := t.deployer.(target.LogCollector); ok {
		return lc.CollectLogs(ctx, since)
	}
	return nil, nil
}

var _ target.RowChecker = (*Target)(nil)

// CheckRow refuses, before anything is provisioned, rows the target file
// cannot run (target.RowChecker): a kafka_version the kafka: section has
// no release of, and gateway rows whose gateway_kind the gateway: section
// cannot run.
func (t *Target) CheckRow(r *planner.Row) error {
	tf := t.prov.Target
	if why := tf.Kafka.CheckVersion(tf.Path, r.KafkaVersion); why != "" {
		return errors.New(why)
	}
	if !r.NeedsGateway() {
		return nil
	}
	if why := tf.Gateway.CheckGatewayKind(r.GatewayKind, r.Security); why != "" {
		return fmt.Errorf("%s: %s", tf.Path, why)
	}
	return nil
}

var (
	_ target.SurfaceServer  = (*Target)(nil)
	_ target.BrokerReporter = (*Target)(nil)
)

// Broker is the broker software of the group that is up, as the Deployer
// reports it (target.BrokerReporter); the zero Broker when it cannot, and
// the runner then reads it from the machines' descriptions.
func (t *Target) Broker() target.Broker {
	if br, ok := t.deployer.(target.BrokerReporter); ok {
		return br.Broker()
	}
	return target.Broker{}
}

// ServesSurface refuses, through the Deployer, the security surface
// settings the group's machines will not serve (target.SurfaceServer); a
// Deployer that is no target.SurfaceServer serves each at its default
// only.
func (t *Target) ServesSurface(r *planner.Row) error {
	if ss, ok := t.deployer.(target.SurfaceServer); ok {
		return ss.ServesSurface(r)
	}
	if s := target.SurfaceSettings(r); len(s) > 0 {
		return fmt.Errorf("%s: %T does not set it up on the machines; it serves every security surface field at its default only", s[0], t.deployer)
	}
	return nil
}
