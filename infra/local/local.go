// Package local runs the embedded cluster: one in-memory kfake cluster on
// loopback and, in front of each of its brokers, one small front listener
// per security mode (plaintext, tls, mtls, sasl_ssl). Every direct mode
// takes the same extra hop through a front and differs only in its
// security layer, so modes compare like for like. Numbers measured here are
// the client, TLS and front path against an in-memory broker without
// replication, not Apache Kafka's broker.
package local

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"

	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/xp-bench/xp/infra/endpoint"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/planner"
)

// Names of the certificates the cluster's authority holds (pki: NAME.pem
// and NAME-key.pem): the brokers' fronts present BrokerCertName, clients
// of mtls present ClientCertName. Whoever issues them in the cluster's
// place (the remote target, which keeps the CA's key) uses these names.
const (
	BrokerCertName = "broker"
	ClientCertName = "client"
)

// Files of a cluster's directory (Cluster.Dir) that other packages read.
const (
	// ClusterFile is the file `xp cluster local --dir` writes once the
	// cluster serves: the JSON line its --json prints (a remote broker
	// host's agent waits for it, then the deployer reads it).
	ClusterFile = "cluster.json"
	// PKIDir is the directory of the cluster's certificate authority
	// (pki.New), which gateways issue their certificates from.
	PKIDir = "pki"
)

// SASLUser is the user the sasl_ssl fronts know; its password is random
// per cluster and lives only in the 0600 client config files.
const SASLUser = "xp"

// Options configure Start.
type Options struct {
	// Brokers is the number of kfake brokers; default 1.
	Brokers int
	// Dir receives certificates and client config files (0600); default a
	// fresh temporary directory removed by Close.
	Dir string
	// Retention, when set, drops every topic's records older than it
	// (checked once a second). The in-memory broker otherwise keeps every
	// record until its topic is deleted: a minute at 100k msg/s of 1 KiB
	// is 6 GiB. Records dropped before a consumer read them are missing
	// records to the load generator (an unhealthy run), never silent.
	Retention time.Duration
	// Host is the address the fronts listen on and advertise, and that the
	// broker certificate names; default 127.0.0.1. A remote broker host
	// sets its private address so clients on other hosts reach it.
	Host string
}

// Cluster is a running embedded cluster.
type Cluster struct {
	dir     string
	host    string
	tempDir bool
	kf      *kfake.Cluster
	// stopRetention ends the retention ticker (Options.Retention).
	stopRetention, retentionDone chan struct{}
	ca                           *pki.Authority
	fronts                       []*front
	// plainSASL is a second sasl_ssl client config using PLAIN.
	plainSASL string
	password  string

	mu    sync.Mutex
	modes map[string]endpoint.Endpoint
	once  sync.Once
}

// Start brings up kfake and every direct mode's fronts, and writes one
// client config file per mode into Dir.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: o.Dir, host: o.Host, modes: map[string]endpoint.Endpoint{}}
	if err := c.makeDir(); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			c.Close()
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	specs, err := c.directSpecs()
	if err != nil {
		return nil, err
	}
	if err := c.startKfake(o.Brokers, o.Retention); err != nil {
		return nil, err
	}
	upstreams := c.kf.ListenAddrs()
	for _, name := range planner.DirectModes() {
		if err := c.startMode(name, specs[name], upstreams); err != nil {
			return nil, err
		}
	}
	ok = true
	return c, nil
}

// withDefaults is o with its defaults filled in, or why it cannot be
// served.
func (o Options) withDefaults() (Options, error) {
	if o.Brokers == 0 {
		o.Brokers = 1
	}
	if o.Brokers < 1 || o.Brokers > 9 {
		return o, fmt.Errorf("local: brokers %d: want 1..9", o.Brokers)
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if net.ParseIP(o.Host) == nil {
		return o, fmt.Errorf("local: host %q: want an IP address of this machine", o.Host)
	}
	return o, nil
}

// makeDir creates c's directory, a fresh temporary one when none is set,
// and makes its path absolute.
func (c *Cluster) makeDir() error {
	if c.dir == "" {
		d, err := os.MkdirTemp("", "xp-cluster-")
		if err != nil {
			return fmt.Errorf("local: %w", err)
		}
		c.dir, c.tempDir = d, true
	} else if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return fmt.Errorf("local: %w", err)
	} else if c.dir, err = filepath.Abs(c.dir); err != nil {
		// Absolute, so that paths derived from it (client configs, key
		// vaults resolved against it) mean the same from anywhere.
		return fmt.Errorf("local: %w", err)
	}
	return nil
}

// modeSpec is what the fronts of a direct mode require of a client, and
// the client properties that meet it.
type modeSpec struct {
	tls   *tls.Config
	users map[string]*credential
	props map[string]string
}

// directSpecs creates c's authority in dir/pki with the broker and client
// certificates, and the SASL user's password, and returns the spec of
// every direct mode.
func (c *Cluster) directSpecs() (map[string]modeSpec, error) {
	var err error
	if c.ca, err = pki.New(filepath.Join(c.dir, PKIDir)); err != nil {
		return nil, err
	}
	scert, skey, err := c.ca.Server(BrokerCertName, c.host)
	if err != nil {
		return nil, err
	}
	ccert, ckey, err := c.ca.Client(ClientCertName)
	if err != nil {
		return nil, err
	}
	serverTLS, err := c.ca.ServerTLS(scert, skey, false)
	if err != nil {
		return nil, err
	}
	mtlsTLS, err := c.ca.ServerTLS(scert, skey, true)
	if err != nil {
		return nil, err
	}
	pw := make([]byte, 16)
	rand.Read(pw)
	c.password = hex.EncodeToString(pw)
	cred, err := newCredential(c.password)
	if err != nil {
		return nil, err
	}
	users := map[string]*credential{SASLUser: cred}
	return map[string]modeSpec{
		planner.SecurityPlaintext: {props: map[string]string{kafkaconf.SecurityProtocol: "plaintext"}},
		planner.SecurityTLS: {tls: serverTLS, props: map[string]string{
			kafkaconf.SecurityProtocol: "ssl", kafkaconf.SSLCALocation: c.ca.CAPath()}},
		planner.SecurityMTLS: {tls: mtlsTLS, props: map[string]string{
			kafkaconf.SecurityProtocol: "ssl", kafkaconf.SSLCALocation: c.ca.CAPath(),
			kafkaconf.SSLCertificate: ccert, kafkaconf.SSLKey: ckey}},
		planner.SecuritySASLSSL: {tls: serverTLS, users: users, props: map[string]string{
			kafkaconf.SecurityProtocol: "sasl_ssl", kafkaconf.SSLCALocation: c.ca.CAPath(),
			kafkaconf.SASLMechanism: MechScramSHA512, kafkaconf.SASLUsername: SASLUser,
			kafkaconf.SASLPassword: c.password}},
	}, nil
}

// brokerConfigs are the kfake brokers' configs: small segments and, when
// set, retention.
func brokerConfigs(retention time.Duration) map[string]string {
	// Small segments: kfake keeps segments in memory and grows each by
	// doubling, so its default 100 MiB segments mean copies of up to 64 MiB
	// that stall every produce for tens of milliseconds.
	bcfg := map[string]string{"log.segment.bytes": strconv.Itoa(8 << 20)}
	if retention > 0 {
		bcfg["log.retention.ms"] = strconv.FormatInt(max(1, retention.Milliseconds()), 10)
	}
	return bcfg
}

// startKfake starts the kfake cluster of c and, with retention, the
// ticker that applies it.
func (c *Cluster) startKfake(brokers int, retention time.Duration) error {
	var err error
	c.kf, err = kfake.NewCluster(kfake.NumBrokers(brokers), kfake.AllowAutoTopicCreation(),
		kfake.BrokerConfigs(brokerConfigs(retention)))
	if err != nil {
		return fmt.Errorf("local: kfake: %w", err)
	}
	if retention > 0 {
		// kfake applies retention on its own only to topics that carry a
		// retention config; the load generator's topics do not.
		c.stopRetention = make(chan struct{})
		c.retentionDone = make(chan struct{})
		go func() {
			defer close(c.retentionDone)
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					c.kf.ApplyRetention()
				case <-c.stopRetention:
					return
				}
			}
		}()
	}
	return nil
}

// startMode starts direct mode name's fronts, one in front of each
// upstream broker, and writes its client config (and, for sasl_ssl, a
// second one using PLAIN).
func (c *Cluster) startMode(name string, sp modeSpec, upstreams []string) error {
	addrs := map[string]hostPort{}
	var fs []*front
	for _, upAddr := range upstreams {
		ln, err := net.Listen("tcp", net.JoinHostPort(c.host, "0"))
		if err != nil {
			// The mode's fronts are not serving nor known to Close yet:
			// close the listeners opened before this one.
			for _, f := range fs {
				f.ln.Close()
			}
			return fmt.Errorf("local: %s front: %w", name, err)
		}
		f := &front{mode: name, ln: ln, upstream: upAddr, tls: sp.tls, users: sp.users,
			addrs: addrs, conns: map[net.Conn]struct{}{}}
		h, p, _ := net.SplitHostPort(ln.Addr().String())
		port, _ := strconv.Atoi(p)
		addrs[upAddr] = hostPort{host: h, port: int32(port)}
		fs = append(fs, f)
	}
	var boot []string
	for _, f := range fs {
		boot = append(boot, f.addr())
		f.wg.Add(1)
		go f.serve()
	}
	c.fronts = append(c.fronts, fs...)
	props := sp.props
	props[kafkaconf.BootstrapServers] = strings.Join(boot, ",")
	path := filepath.Join(c.dir, name+".properties")
	if err := kafkaconf.WriteClientConfig(path, props); err != nil {
		return err
	}
	c.modes[name] = endpoint.Endpoint{Bootstrap: kafkaconf.Bootstrap(props), ClientConfig: path}
	if name == planner.SecuritySASLSSL {
		plain := map[string]string{}
		for k, v := range props {
			plain[k] = v
		}
		plain[kafkaconf.SASLMechanism] = MechPlain
		c.plainSASL = filepath.Join(c.dir, kafkaconf.SASLPlainConfigFile)
		if err := kafkaconf.WriteClientConfig(c.plainSASL, plain); err != nil {
			return err
		}
	}
	return nil
}

// Attach returns a Cluster standing for one that another process serves
// from dir with modes (its Modes map): enough to start gateways in front
// of it (StartGateway, StartGatewayMode), which issue their certificates
// from the authority in dir/pki and register their modes here. Close
// stops nothing of the cluster and removes nothing.
func Attach(dir string, modes map[string]endpoint.Endpoint) (*Cluster, error) {
	if _, err := os.Stat(filepath.Join(dir, PKIDir)); err != nil {
		return nil, fmt.Errorf("local: attach: %s is not an embedded cluster's directory: %w", dir, err)
	}
	ca, err := pki.New(filepath.Join(dir, PKIDir))
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, host: "127.0.0.1", ca: ca, modes: make(map[string]endpoint.Endpoint, len(modes))}
	for k, v := range modes {
		c.modes[k] = v
	}
	return c, nil
}

// Host is the address the cluster's fronts listen on (Options.Host).
func (c *Cluster) Host() string { return c.host }

// Dir is where certificates and client configs live.
func (c *Cluster) Dir() string { return c.dir }

// Authority is the cluster's certificate authority (gateways issue their
// certificates from it).
func (c *Cluster) Authority() *pki.Authority { return c.ca }

// Kfake is the in-memory cluster behind the fronts, for calibration hooks
// (ControlKey, SleepControl) and direct inspection.
func (c *Cluster) Kfake() *kfake.Cluster { return c.kf }

// SASLPlainConfig is a sasl_ssl client config using SASL PLAIN instead of
// the mode's default SCRAM-SHA-512.
func (c *Cluster) SASLPlainConfig() string { return c.plainSASL }

// Modes returns a copy of every mode, direct and added.
func (c *Cluster) Modes() Modes {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(Modes, len(c.modes))
	for k, v := range c.modes {
		out[k] = v
	}
	return out
}

// ModeNames returns the mode names, sorted.
func (c *Cluster) ModeNames() []string {
	m := c.Modes()
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// AddMode registers a further mode (a gateway in front of a direct mode).
// Adding a name twice is an error.
func (c *Cluster) AddMode(name string, m endpoint.Endpoint) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.modes[name]; dup {
		return fmt.Errorf("local: mode %q already exists", name)
	}
	c.modes[name] = m
	return nil
}

// Close stops every front and the kfake cluster, and removes the directory
// when Start created it. Safe to call more than once.
func (c *Cluster) Close() error {
	var err error
	c.once.Do(func() {
		if c.stopRetention != nil {
			close(c.stopRetention)
			<-c.retentionDone
		}
		for _, f := range c.fronts {
			f.close()
		}
		if c.kf != nil {
			c.kf.Close()
		}
		if c.tempDir {
			err = os.RemoveAll(c.dir)
		}
	})
	return err
}
