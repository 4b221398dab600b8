package localtarget

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	"github.com/xp-bench/xp/infra/endpoint"
	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/gateway/encrypt"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/infra/local/kafkaproc"
	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// Target is the local target: a cluster on loopback with every direct
// security mode, and xp's own gateway in front of it for the rows that
// need one (proxy, encrypt, field_encrypt), one gateway set per distinct
// target.ModeKey of the group. The cluster is the embedded one (kfake, in a
// child process, see childEnv) unless TARGET.yaml names Apache Kafka
// releases: then each group runs its kafka_version's brokers as JVMs
// (infra/local/kafkaproc). The gateways run in a child process of their
// own, so the load generator's CPU and memory are its own and telemetry
// measures the gateways apart from the brokers.
type Target struct {
	// dir holds each group's certificates and client configs; "" = a fresh
	// temporary directory per group.
	dir string
	// apache, when set, runs Apache Kafka instead of the embedded cluster.
	apache *apache
	// kroxy, when set, runs rows of gateway_kind kroxylicious.
	kroxy *kroxy

	mu       sync.Mutex
	cluster  *childProc         // the embedded cluster's child
	kafka    *kafkaproc.Cluster // Apache Kafka's brokers
	ident    *identity          // the OAUTHBEARER identity provider and GSSAPI KDC of Apache Kafka's group
	gateways *childProc
	kroxies  []*kroxyProc  // the running group's Kroxylicious
	broker   target.Broker // of the running group
	groupDir string        // the running group's files, removed by Down
	groups   int
	modes    []string // cached by Modes
	// metrics lists, per gateway ModeKey of the running group, its
	// gateways' metrics endpoints (TLSKept).
	metrics map[string][]string
}

var (
	_ target.Target          = (*Target)(nil)
	_ target.ModeLister      = (*Target)(nil)
	_ target.RowChecker      = (*Target)(nil)
	_ target.TelemetrySource = (*Target)(nil)
	_ target.LoadRunner      = (*Target)(nil)
	_ target.LogCollector    = (*Target)(nil)
	_ target.Restarter       = (*Target)(nil)
	_ target.TLSKeptReader   = (*Target)(nil)
	_ target.BrokerReporter  = (*Target)(nil)
	_ target.BrokerPlanner   = (*Target)(nil)
)

// New returns the local target with the embedded cluster; it keeps each
// group's certificates and client configs under dir ("" = a fresh
// temporary directory per group).
func New(dir string) *Target { return &Target{dir: dir} }

// Telemetry host names of the local target's processes: the embedded
// cluster's child and the gateways child; xp's own process, where the
// load runs, is target.HostClient. Apache Kafka's brokers are broker-1,
// broker-2, ... (node ids).
const (
	HostCluster = "cluster"
	HostGateway = "gateway"
)

// Up starts the group's cluster (the embedded one, or Apache Kafka of its
// kafka_version) with its broker count, and the gateways its rows need.
func (t *Target) Up(ctx context.Context, g target.Group) (target.Endpoints, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.startLocked(ctx, g)
}

// Restart stops the group's cluster and gateways and starts them again,
// in a fresh directory with new certificates and ports. On this target
// provisioning is nothing more than starting processes, so Restart and Up
// do the same.
func (t *Target) Restart(ctx context.Context, g target.Group) (target.Endpoints, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.startLocked(ctx, g)
}

// Broker says which broker software the running group runs: Apache Kafka
// with its release, Java and JVM flags, or kfake with its module version.
func (t *Target) Broker() target.Broker {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.broker
}

// PlannedBroker is the broker software a group of key k will run: Apache
// Kafka of its kafka_version when TARGET.yaml names releases, else the
// embedded cluster, whatever kafka_version the rows name.
func (t *Target) PlannedBroker(k planner.InfraKey) target.Broker {
	if t.apache == nil {
		return target.KfakeBroker()
	}
	rel, ok := t.apache.releases[k.KafkaVersion]
	if !ok {
		return target.Broker{}
	}
	return target.Broker{Kind: target.BrokerApache, Version: rel.Version}
}

// upstream is the cluster a group's gateways stand in front of: its
// directory (with the certificate authority in pki/, which gateways issue
// their certificates from), its direct modes (bootstrap servers and
// client config of each), and its brokers' node ids, FirstNodeID to
// FirstNodeID+Brokers-1.
type upstream struct {
	Dir                  string
	Modes                map[string]endpoint.Endpoint
	Brokers, FirstNodeID int
}

// CA is the path of the cluster's CA certificate.
func (u upstream) CA() string { return filepath.Join(u.Dir, local.PKIDir, pki.CACertFile) }

func (t *Target) startLocked(ctx context.Context, g target.Group) (target.Endpoints, error) {
	t.downLocked()
	t.groups++
	if t.dir != "" {
		dir, err := filepath.Abs(filepath.Join(t.dir, fmt.Sprintf("group-%d", t.groups)))
		if err != nil {
			return target.Endpoints{}, err
		}
		t.groupDir = dir
	}
	up, err := t.startCluster(ctx, g)
	if err != nil {
		t.downLocked()
		return target.Endpoints{}, err
	}
	ep := target.Endpoints{Modes: map[string]endpoint.Endpoint{}}
	maps.Copy(ep.Modes, up.Modes)
	if err := t.startGateways(ctx, g, up, ep); err != nil {
		t.downLocked()
		return target.Endpoints{}, err
	}
	return ep, nil
}

// startCluster starts the group's cluster and records which broker it is.
func (t *Target) startCluster(ctx context.Context, g target.Group) (upstream, error) {
	if t.apache != nil {
		if t.groupDir == "" {
			d, err := os.MkdirTemp("", "xp-kafka-")
			if err != nil {
				return upstream{}, err
			}
			t.groupDir = d
		}
		id, err := startIdentity(ctx, g.Rows, t.groupDir)
		if err != nil {
			return upstream{}, err
		}
		t.ident = id
		kc, err := t.apache.start(ctx, g, t.dir, t.groupDir, id)
		if err != nil {
			return upstream{}, err
		}
		t.kafka = kc
		t.broker = t.apache.broker(t.apache.releases[g.Key.KafkaVersion], kc, g.Key.Security.ACLs)
		return upstream{Dir: kc.Dir(), Modes: kc.Modes(), Brokers: len(kc.Brokers()), FirstNodeID: kc.Brokers()[0].ID}, nil
	}
	cl, rep, err := startChild(ctx, childSpec{Role: roleCluster, Brokers: g.Key.Brokers, Dir: t.groupDir})
	if err != nil {
		return upstream{}, err
	}
	t.cluster = cl
	t.broker = target.KfakeBroker()
	// kfake numbers its brokers from 0.
	return upstream{Dir: rep.Dir, Modes: rep.Modes, Brokers: max(g.Key.Brokers, 1)}, nil
}

// startGateways starts the gateways of the group's gateway_kind in front
// of up and adds their modes to ep: one function per kind, each given the
// group's rows, the cluster and the endpoints to fill in.
func (t *Target) startGateways(ctx context.Context, g target.Group, up upstream, ep target.Endpoints) error {
	switch kind := g.Key.GatewayKind; kind {
	case "", planner.DefaultGatewayKind:
		return t.startBuiltinGateways(ctx, g.Rows, up, ep)
	case planner.GatewayKindKroxylicious:
		return t.startKroxyliciousGateways(ctx, g.Rows, up, ep)
	default:
		return fmt.Errorf("local target: gateway_kind %s: the local target runs the builtin and kroxylicious gateways", kind)
	}
}

// startBuiltinGateways starts xp's gateway, in one child process, per
// distinct gateway ModeKey of rows, row.Gateways gateways (each with its
// own data keys, as separate gateway machines would have), and adds the
// key to ep with every gateway's bootstrap address.
func (t *Target) startBuiltinGateways(ctx context.Context, rows []planner.Row, up upstream, ep target.Endpoints) error {
	var specs []childGateway
	names := map[string][]string{} // ModeKey → gateway mode names
	cryptos := map[string]string{} // ModeKey → the rows' gateway_crypto
	var keys []string
	for _, r := range rows {
		if !r.NeedsGateway() {
			continue
		}
		key := target.ModeKey(&r)
		if _, done := names[key]; done {
			continue
		}
		keys = append(keys, key)
		cryptos[key] = r.GatewayCrypto
		if cryptos[key] == "" {
			cryptos[key] = planner.GatewayCryptoStd
		}
		n := max(r.Gateways, 1)
		for i := 1; i <= n; i++ {
			name := key
			if n > 1 {
				name = fmt.Sprintf("%s-%d", name, i)
			}
			o := childGateway{Name: name, Security: r.Security, Transport: r.GatewayTransport,
				Encoding: r.Encoding, Fields: r.EncryptFields, Cipher: r.FieldCipher, Crypto: r.GatewayCrypto, TLS: gatewayTLS(&r)}
			if r.Security == planner.SecurityFieldEncrypt {
				o.SchemaDir = filepath.Join(up.Dir, "schema")
				if err := writeSchemas(o.SchemaDir); err != nil {
					return fmt.Errorf("local target: %s gateway: %w", key, err)
				}
			}
			specs = append(specs, o)
			names[key] = append(names[key], name)
		}
	}
	if len(specs) == 0 {
		return nil
	}
	gp, rep, err := startChild(ctx, childSpec{Role: roleGateways, Dir: up.Dir, Modes: up.Modes, Gateways: specs})
	if err != nil {
		return err
	}
	t.gateways = gp
	t.metrics = map[string][]string{}
	for _, key := range keys {
		e := endpoint.Endpoint{Gateway: &endpoint.GatewayInfo{Kind: planner.GatewayKindBuiltin, Crypto: cryptos[key]}}
		for _, name := range names[key] {
			m, ok := rep.Modes[name]
			if !ok {
				return fmt.Errorf("local target: the gateway child did not start %s", name)
			}
			t.metrics[key] = append(t.metrics[key], m.Metrics)
			e.Bootstrap = append(e.Bootstrap, m.Bootstrap...)
			if e.Crypto == nil {
				e.Crypto = m.Crypto // every gateway of a key runs the same binary and CPU
			}
			if e.ClientConfig == "" {
				// Every gateway of a key takes the same client settings;
				// the bootstrap list above names them all.
				e.ClientConfig = m.ClientConfig
			}
		}
		ep.Modes[key] = e
	}
	return nil
}

// gatewayTLS is the client-leg TLS a gateway row asks for: its
// tls_version and tls_cipher, and its tls_key for the certificate the
// gateway serves with ("" for each default). A plaintext client leg has
// no TLS to narrow.
func gatewayTLS(r *planner.Row) local.GatewayTLS {
	if r.ClientTransport() == planner.SecurityPlaintext {
		return local.GatewayTLS{}
	}
	c := r.ClusterSecurity()
	return local.GatewayTLS{Version: c.TLSVersion, Cipher: c.TLSCipher, Key: c.TLSKey}
}

// TLSKept sums the tls_kept counters of the gateways serving modeKey,
// read from their metrics endpoints on loopback.
func (t *Target) TLSKept(ctx context.Context, modeKey string) (gateway.TLSKept, error) {
	t.mu.Lock()
	urls := slices.Clone(t.metrics[modeKey])
	t.mu.Unlock()
	if len(urls) == 0 {
		return nil, fmt.Errorf("local target: no gateway serves %s", modeKey)
	}
	sum := gateway.TLSKept{}
	for _, u := range urls {
		if u == "" {
			return nil, fmt.Errorf("local target: a gateway of %s serves no metrics", modeKey)
		}
		k, err := gateway.ReadTLSKept(ctx, u)
		if err != nil {
			return nil, fmt.Errorf("local target: %s gateway: %w", modeKey, err)
		}
		sum.Add(k)
	}
	return sum, nil
}

// writeSchemas puts the load generator's payload schemas where the
// field_encrypt presets read them.
func writeSchemas(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return fs.WalkDir(loadgen.Schema, "schema", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := loadgen.Schema.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, filepath.Base(path)), b, 0o600)
	})
}

// Down stops the gateways and the cluster and removes the group's files.
func (t *Target) Down(context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.downLocked()
}

func (t *Target) downLocked() error {
	var errs []error
	if t.gateways != nil {
		errs = append(errs, t.gateways.stop())
		t.gateways = nil
	}
	t.metrics = nil
	if len(t.kroxies) > 0 {
		var wg sync.WaitGroup
		for _, k := range t.kroxies {
			wg.Add(1)
			go func() { defer wg.Done(); k.proc.Stop() }()
		}
		wg.Wait()
		t.kroxies = nil
	}
	if t.cluster != nil {
		errs = append(errs, t.cluster.stop())
		t.cluster = nil
	}
	t.ident.close()
	t.ident = nil
	if t.kafka != nil {
		errs = append(errs, t.kafka.Close())
		t.kafka = nil
	}
	t.broker = target.Broker{}
	if t.groupDir != "" {
		errs = append(errs, os.RemoveAll(t.groupDir))
		t.groupDir = ""
	}
	return errors.Join(errs...)
}

// Modes starts a one-broker embedded cluster once to learn which direct
// modes it serves (so that modes added to it later are picked up without
// changes here), and adds the gateway modes Up can start. Apache Kafka's
// brokers serve the direct modes of infra/kafkaconf, a listener each.
func (t *Target) Modes(ctx context.Context) ([]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.modes != nil {
		return t.modes, nil
	}
	have := map[string]bool{}
	for _, m := range planner.GatewayModes() {
		have[m] = true
	}
	if t.apache != nil {
		for name := range kafkaconf.ModeListeners {
			have[name] = true
		}
	} else {
		c, err := local.Start(ctx, local.Options{Brokers: 1})
		if err != nil {
			return nil, fmt.Errorf("local target: %w", err)
		}
		defer c.Close()
		for name := range c.Modes() {
			have[name] = true
		}
	}
	for name := range have {
		t.modes = append(t.modes, name)
	}
	sort.Strings(t.modes)
	return t.modes, nil
}

// CheckRow refuses rows the local target cannot serve: with Apache Kafka,
// a kafka_version without a release or more brokers than this machine's
// memory holds; gateway rows of gateway_kind command, of kroxylicious
// without a gateway.kroxylicious section or in a mode it cannot run, and
// field_encrypt without structured records.
func (t *Target) CheckRow(r *planner.Row) error {
	if t.apache != nil {
		if err := t.apache.checkRow(r); err != nil {
			return err
		}
	}
	if !r.NeedsGateway() {
		return nil
	}
	switch r.GatewayKind {
	case "", planner.DefaultGatewayKind:
	case planner.GatewayKindKroxylicious:
		if t.kroxy == nil {
			return errors.New("gateway_kind kroxylicious: the local target runs Kroxylicious from a TARGET.yaml (platform: local) with a gateway.kroxylicious section (url, sha512, kms; see docs/targets.md); give one with --target")
		}
		return t.kroxy.checkRow(r)
	default:
		return fmt.Errorf("gateway_kind %s: the local target runs the builtin and kroxylicious gateways", r.GatewayKind)
	}
	if r.Security == planner.SecurityFieldEncrypt {
		if _, err := encrypt.FieldPreset(r.Encoding, "vault", "schema"); err != nil {
			return fmt.Errorf("field_encrypt with encoding %s: %v", r.Encoding, err)
		}
	}
	return nil
}
