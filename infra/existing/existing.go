// Package existing is the target of platform existing: a Kafka cluster
// someone else runs, reached through the endpoints of its TARGET.yaml with
// the client configs its users already have (librdkafka's or the Java
// client's). xp provisions and installs nothing there: before the first
// row it reaches every endpoint the rows use and verifies its security,
// reads the cluster's brokers and version, and refuses rows it cannot run;
// it creates, uses and deletes only topics under the file's topic_prefix
// and the loads' consumer groups, recorded in the campaign db before they
// are made; with telemetry: it
// samples the cluster's machines over SSH with its agent, uploaded for the
// campaign and removed at its end.
package existing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xp-bench/xp/infra/endpoint"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/procstat"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// Options are what Opener needs from the process around it.
type Options struct {
	// Log is the campaign log; nil discards.
	Log io.Writer
	// Getenv expands ~ in the file's paths and finds the agent binary to
	// upload (remote.BinaryEnv).
	Getenv func(string) string
}

// What the runner may ask of an existing cluster.
var (
	_ target.Target            = (*Target)(nil)
	_ target.RowChecker        = (*Target)(nil)
	_ target.Preflighter       = (*Target)(nil)
	_ target.LoadRunner        = (*Target)(nil)
	_ target.EventRecorder     = (*Target)(nil)
	_ target.Finisher          = (*Target)(nil)
	_ target.HostDescriber     = (*Target)(nil)
	_ target.TelemetrySource   = (*Target)(nil)
	_ target.BudgetKeeper      = (*Target)(nil)
	_ target.BrokerReporter    = (*Target)(nil)
	_ target.Pricer            = (*Target)(nil)
	_ target.ModeHostDescriber = (*Target)(nil)
	_ target.Attached          = (*Target)(nil)
)

// Target is an existing cluster.
type Target struct {
	cfg    target.Config
	file   *targetfile.File
	log    io.Writer
	getenv func(string) string
	// clients are the endpoints' client configs by mode key, read and
	// checked when the target opened.
	clients map[string]*kafkaconf.ClientFile

	mu     sync.Mutex
	events target.InfraEvents
	// cluster is what Preflight found.
	cluster *Cluster
	// up and upSince say whether a group is up and since when (for the
	// budget).
	up      bool
	upSince time.Time
	// swept is set once the topics and groups an earlier run left were
	// deleted.
	swept bool
	tel   *telemetry
}

// Opener opens TARGET.yaml files of platform existing.
func Opener(o Options) target.Opener {
	return func(cfg target.Config) (target.Target, error) { return Open(cfg, o) }
}

// Open reads the TARGET.yaml and every endpoint's client config: a
// property xp would not honour, a store that does not open, or a config
// that does not match its mode's name is an error naming the file and
// line (bad input). It connects to nothing.
func Open(cfg target.Config, o Options) (*Target, error) {
	get := o.Getenv
	if get == nil {
		get = func(string) string { return "" }
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	f, err := targetfile.Parse(cfg.Path, cfg.Text, get)
	if err != nil {
		return nil, err
	}
	if f.Existing == nil {
		return nil, fmt.Errorf("%s: platform %s is not existing", cfg.Path, f.Platform)
	}
	t := &Target{cfg: cfg, file: f, log: o.Log, getenv: get, clients: map[string]*kafkaconf.ClientFile{}}
	var errs []error
	for _, mode := range slices.Sorted(maps.Keys(f.Existing.Endpoints)) {
		ep := f.Existing.Endpoints[mode]
		cf, err := kafkaconf.LoadClientConfig(ep.ClientConfig)
		if err == nil {
			err = cf.Check()
		}
		if err == nil {
			err = matchMode(mode, cf)
		}
		if err == nil {
			err = passwordSASL(cf)
		}
		if err == nil {
			err = matchBootstrap(ep, cf)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: endpoints.%s: %w", cfg.Path, ep.Line, mode, err))
			continue
		}
		t.clients[mode] = cf
	}
	if tel := f.Existing.Telemetry; tel != nil && tel.SSH.User == "" {
		errs = append(errs, fmt.Errorf("%s: telemetry.ssh.user: who xp logs in as on the cluster's machines is required", cfg.Path))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

// passwordSASL refuses a client config that logs in with Kerberos
// (GSSAPI) or OAUTHBEARER: on a cluster someone else runs xp takes only
// PLAIN and SCRAM logins so far (its KDC and identity provider serve the
// local target's own brokers).
func passwordSASL(cf *kafkaconf.ClientFile) error {
	props := cf.Map()
	mech := strings.ToUpper(props[kafkaconf.SASLMechanism] + props[kafkaconf.SASLMechanisms])
	if mech == "GSSAPI" || mech == "OAUTHBEARER" {
		return fmt.Errorf("client config %s logs in with %s, which platform: existing does not take yet: use PLAIN or SCRAM", cf.Path, mech)
	}
	return nil
}

// matchMode refuses a client config that does not speak its mode: the
// transport of a direct mode, or a gateway mode's client transport.
func matchMode(mode string, cf *kafkaconf.ClientFile) error {
	props := cf.Map()
	proto := kafkaconf.Protocol(props)
	clientCert := props[kafkaconf.SSLCertificate] != "" || props[kafkaconf.SSLKeystoreLocation] != "" || props[kafkaconf.SSLKeystoreKey] != ""
	want := targetfile.ModeTransport(mode)
	var ok bool
	switch want {
	case planner.SecurityPlaintext:
		ok = proto == "plaintext"
	case planner.SecurityTLS:
		ok = proto == "ssl" && !clientCert
	case planner.SecurityMTLS:
		ok = proto == "ssl" && clientCert
	case planner.SecuritySASLSSL:
		ok = proto == "sasl_ssl"
	}
	if ok {
		return nil
	}
	got := "security.protocol=" + strings.ToUpper(proto)
	if proto == "ssl" {
		if clientCert {
			got += " with a client certificate"
		} else {
			got += " without a client certificate"
		}
	}
	wants := map[string]string{
		planner.SecurityPlaintext: "security.protocol=PLAINTEXT",
		planner.SecurityTLS:       "security.protocol=SSL without a client certificate",
		planner.SecurityMTLS:      "security.protocol=SSL with a client certificate (ssl.keystore.location, or ssl.certificate.location and ssl.key.location)",
		planner.SecuritySASLSSL:   "security.protocol=SASL_SSL",
	}
	what := "mode " + mode
	if want != mode {
		what += " (clients speak " + want + " to the gateway)"
	}
	return fmt.Errorf("client config %s says %s, which is not %s: want %s", cf.Path, got, what, wants[want])
}

// matchBootstrap refuses a client config whose bootstrap.servers names
// other servers than the endpoint.
func matchBootstrap(ep targetfile.Endpoint, cf *kafkaconf.ClientFile) error {
	given := kafkaconf.Bootstrap(cf.Map())
	if len(given) == 0 {
		return nil
	}
	a, b := slices.Sorted(slices.Values(given)), slices.Sorted(slices.Values(ep.Bootstrap))
	if !slices.Equal(a, b) {
		return fmt.Errorf("client config %s:%d: bootstrap.servers %s differs from the endpoint's bootstrap %s: give the servers in one place",
			cf.Path, cf.Line(kafkaconf.BootstrapServers), strings.Join(given, ","), strings.Join(ep.Bootstrap, ","))
	}
	return nil
}

// File is the TARGET.yaml read.
func (t *Target) File() *targetfile.File { return t.file }

// CheckRow refuses a row whose mode has no endpoint (target.RowChecker),
// naming the mode and the file.
func (t *Target) CheckRow(r *planner.Row) error {
	if r.GatewayCrypto == planner.GatewayCryptoFast {
		return errors.New("gateway_crypto fast is the crypto of xp's own gateway; on an existing cluster the gateway is yours: use std")
	}
	key := target.ModeKey(r)
	if _, ok := t.file.Existing.Endpoints[key]; ok {
		return nil
	}
	where := t.cfg.Path
	if l := t.file.Existing.EndpointsLine; l > 0 {
		where = fmt.Sprintf("%s:%d", where, l)
	}
	return fmt.Errorf("security mode %s has no endpoint in %s (it has %s): add endpoints.%s: {bootstrap: [HOST:PORT], client_config: FILE}",
		key, where, strings.Join(slices.Sorted(maps.Keys(t.file.Existing.Endpoints)), ", "), key)
}

// RecordEvents hands the target the campaign db (target.EventRecorder):
// the topics and consumer groups it creates are recorded there before they
// exist.
func (t *Target) RecordEvents(e target.InfraEvents) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events = e
}

// Attached says the cluster was running before xp: the runner runs no
// warm-up load after Up.
func (t *Target) Attached() {}

// Up makes nothing exist: the cluster is up already. The first Up deletes
// the topics and consumer groups an earlier run of the campaign left
// (unless --keep) and, with
// telemetry:, uploads the agent to the cluster's machines and starts
// sampling them.
func (t *Target) Up(ctx context.Context, g target.Group) (target.Endpoints, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cluster == nil {
		return target.Endpoints{}, errors.New("existing: the endpoints were not verified (Preflight) before the first group")
	}
	if !t.swept && !t.cfg.Keep {
		if err := t.sweep(ctx); err != nil {
			return target.Endpoints{}, target.Transient(err)
		}
		t.swept = true
	}
	if tel := t.file.Existing.Telemetry; tel != nil && t.tel == nil {
		tm, err := startTelemetry(ctx, t.cfg, tel, t.getenv, t.log)
		if err != nil {
			return target.Endpoints{}, target.Transient(err)
		}
		t.tel = tm
	}
	ep := target.Endpoints{Modes: map[string]endpoint.Endpoint{}}
	for mode, e := range t.file.Existing.Endpoints {
		ep.Modes[mode] = endpoint.Endpoint{Bootstrap: e.Bootstrap, ClientConfig: e.ClientConfig}
	}
	for _, b := range t.cluster.Brokers {
		ep.Hosts = append(ep.Hosts, b.Name)
	}
	if t.tel != nil {
		ep.Hosts = append(ep.Hosts, t.tel.names()...)
	}
	t.up, t.upSince = true, time.Now()
	return ep, nil
}

// Down takes nothing down (the cluster is someone else's). The group's
// "up" and "down" events are the runner's, with its price and cost
// (HourlyUSD): the target records none of its own.
func (t *Target) Down(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.up = false
	return nil
}

// HourlyUSD is the file's hourly_price_usd (target.Pricer).
func (t *Target) HourlyUSD() float64 { return t.file.Existing.HourlyPriceUSD }

// Broker is the cluster the checks before the first row found
// (target.BrokerReporter): its id, its brokers' ids and the release its
// API versions match, marked as a guess; the zero Broker before them.
func (t *Target) Broker() target.Broker {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cluster == nil {
		return target.Broker{}
	}
	return t.cluster.broker()
}

// Finish deletes what the campaign left on the cluster (target.Finisher;
// never called with --keep): every topic and consumer group it recorded
// that still exists, and the agent on the telemetry hosts.
func (t *Target) Finish(ctx context.Context, ok bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	if t.cluster != nil {
		errs = append(errs, t.sweep(ctx))
	}
	if t.tel != nil {
		errs = append(errs, t.tel.remove(ctx))
		t.tel = nil
	}
	return errors.Join(errs...)
}

// OverBudget stops the campaign once its cost reaches budget_usd
// (target.BudgetKeeper): the cost recorded, and the group's since it came
// up.
func (t *Target) OverBudget(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.file.BudgetUSD <= 0 || t.events == nil {
		return nil
	}
	evs, err := t.events.InfraEvents(ctx)
	if err != nil {
		return err
	}
	spent := 0.0
	for _, e := range evs {
		spent += e.Cost
	}
	if t.up {
		spent += t.file.Existing.HourlyPriceUSD * time.Since(t.upSince).Hours()
	}
	if spent >= t.file.BudgetUSD {
		return fmt.Errorf("spent $%.2f reaches budget_usd $%.2f of %s", spent, t.file.BudgetUSD, t.cfg.Path)
	}
	return nil
}

// RunLoad runs a row's load here (target.LoadRunner) on topics of its own
// under topic_prefix, recorded in the campaign db with its consumer groups
// before they are made; the load generator deletes both when the load
// ends (unless --keep).
func (t *Target) RunLoad(ctx context.Context, l target.Load) (*loadgen.Result, error) {
	name, err := t.newTopic(ctx, l.Row, l.Config.Topics, l.Config.ConsumerGroups)
	if err != nil {
		return nil, err
	}
	l.Config.Topic, l.Config.KeepTopic = name, t.cfg.Keep
	return target.RunLoadHere(ctx, l)
}

// DescribeHosts describes the cluster's brokers as its metadata gives them
// through the endpoint the cluster was read through, and the telemetry
// hosts as their agents do (target.HostDescriber).
func (t *Target) DescribeHosts() []target.HostInfo {
	t.mu.Lock()
	from := ""
	if t.cluster != nil {
		from = t.cluster.From
	}
	t.mu.Unlock()
	return t.DescribeModeHosts(from)
}

// DescribeModeHosts is DescribeHosts with each broker's address the one
// mode's endpoint advertises (its listener, or the gateway in front of it)
// (target.ModeHostDescriber).
func (t *Target) DescribeModeHosts(mode string) []target.HostInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []target.HostInfo
	if c := t.cluster; c != nil {
		kafka := c.broker().String()
		for _, b := range c.Brokers {
			addr := b.Address
			if a, ok := c.Endpoints[mode].Addresses[b.ID]; ok {
				addr = a
			}
			out = append(out, target.HostInfo{Name: b.Name, Role: planner.RoleBroker, Address: addr, Kafka: kafka})
		}
	}
	if t.tel != nil {
		out = append(out, t.tel.describe()...)
	}
	return out
}

// Sample is xp's own process, where the load runs (host client), and,
// with telemetry:, the cluster's machines' latest counters
// (target.TelemetrySource).
func (t *Target) Sample(ctx context.Context) ([]target.HostSample, error) {
	t.mu.Lock()
	tel := t.tel
	t.mu.Unlock()
	out := []target.HostSample{{Host: target.HostClient, Role: planner.RoleClient, CPU: procstat.SelfCPU(), MemMiB: procstat.RSS(os.Getpid())}}
	if tel == nil {
		return out, nil
	}
	return append(out, tel.sample()...), tel.err()
}
