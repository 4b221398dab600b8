// Package kafkaproc runs Apache Kafka brokers as processes on this
// machine: a release (an official Apache tarball or one `make kafka-dist`
// assembled) unpacked once into xp's cache, a KRaft cluster of combined
// broker-controllers on loopback, one JVM per node started with `java -cp
// 'libs/*'` and Kafka's main class, with a listener per direct security
// mode (plaintext, tls, mtls, sasl_ssl with SCRAM-SHA-512 and PLAIN)
// rendered by infra/kafkaconf and certificates from infra/pki. The local
// target runs it when TARGET.yaml names a Kafka release.
package kafkaproc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xp-bench/xp/infra/agent"
	"github.com/xp-bench/xp/infra/endpoint"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/kdc"
	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/internal/childproc"
	"github.com/xp-bench/xp/planner"
)

// Options configure Start.
type Options struct {
	// Release is the unpacked release the brokers run (Prepare).
	Release Release
	// Java runs them (FindJava); it must be new enough for the release
	// (release.KafkaRelease.MinJava).
	Java Java
	// Brokers is the number of nodes, each a broker and, for the first 1,
	// 3 or 5 of them, a KRaft controller; default 1.
	Brokers int
	// Dir receives the cluster's files: pki/ (CA, broker and client
	// certificates, keys and key stores, 0600), a client config per
	// direct mode (<mode>.properties and sasl_ssl-plain.properties, 0600)
	// and per node broker-<id>/ (server.properties, log configuration,
	// data/, logs/). Required; made 0700.
	Dir string
	// Heap is each broker's -Xmx and -Xms; default DefaultHeap.
	Heap string
	// JVMFlags are the brokers' other JVM flags; nil: DefaultJVMFlags.
	JVMFlags []string
	// Keep starts the brokers detached from this process: they outlive
	// it (xp run --keep). Otherwise they get SIGKILL when it dies.
	Keep bool
	// ReadyTimeout bounds formatting, start, the SCRAM user and
	// readiness through every mode; default 5 minutes.
	ReadyTimeout time.Duration
	// TLS narrows every TLS listener to a row's tls_version and
	// tls_cipher (kafkaconf.Server.TLS); the zero value leaves Kafka's
	// defaults.
	TLS kafkaconf.TLSChoice
	// TLSKey is the key of the brokers' and clients' certificates, a
	// row's tls_key (pki.Authority.LeafKey); "" is ECDSA P-256.
	TLSKey string
	// OAuth, when set, adds OAUTHBEARER to the SASL_SSL listener,
	// validated against its key set (kafkaconf.OAuthServer); the brokers'
	// JVMs may fetch its URL (kafkaconf.AllowedURLsFlag).
	OAuth *kafkaconf.OAuthServer
	// KDC, when set, adds GSSAPI to the SASL_SSL listener: each broker's
	// principal kafka/<address> is made in it, with a keytab in pki/
	// (0600), and the JVMs read its krb5.conf.
	KDC *kdc.KDC
	// ReauthMs is the SASL_SSL listener's connections.max.reauth.ms with
	// OAuth or KDC; default kafkaconf.ReauthMs.
	ReauthMs int
	// InterBroker is what the brokers replicate over, a row's
	// inter_broker_security (kafkaconf.Server.InterBroker): plaintext
	// ("" too), tls or mtls, for which each broker's certificate is good
	// as a client's too.
	InterBroker string
	// Authorizer runs KRaft's StandardAuthorizer, with xp's admin
	// (PrincipalAnonymous) and, with inter-broker mtls, the brokers'
	// certificates as super users; CreateACLs adds the ACLs.
	Authorizer bool
}

// Broker is one node of a running cluster.
type Broker struct {
	// Name is broker-<ID>.
	Name string
	// ID is node.id.
	ID int
	// Address is the loopback address the node's listeners bind to.
	Address string
	// Pid is the JVM's process id.
	Pid int
	// Dir is the node's directory; its logs are in Dir/logs (server.log,
	// and kafka.out: the JVM's stdout and stderr).
	Dir string
}

// Cluster is a running Apache Kafka cluster of local processes.
type Cluster struct {
	dir      string
	release  Release
	jvmFlags []string
	// identityFlags locate the identity provider and KDC (identitySASL):
	// the brokers get them, but they are no tuning, so JVMFlags (the
	// attempts' provenance) leaves them out.
	identityFlags []string
	ca            *pki.Authority
	modes         map[string]endpoint.Endpoint
	plain         string
	brokers       []Broker
	saslUser      string
	interBroker   string
	authorizer    bool
	procs         []*childproc.Proc
	once          sync.Once
}

// Start formats and starts the cluster and returns once every broker
// answers through every direct mode (TLS, client certificate, SASL PLAIN
// and SCRAM-SHA-512 included). Listeners bind to addresses of 127.0.0.0/8
// picked at random, one per node, on ports free on all of them; a start
// that loses a port to another process is tried again on others. A broker
// that exits or a cluster not ready in time is an error quoting the end of
// the brokers' logs; nothing is left running.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Brokers == 0 {
		o.Brokers = 1
	}
	if o.Brokers < 1 || o.Brokers > 9 {
		return nil, fmt.Errorf("kafkaproc: brokers %d: want 1..9", o.Brokers)
	}
	if o.Dir == "" {
		return nil, errors.New("kafkaproc: no directory for the cluster's files")
	}
	if o.Release.Dir == "" || o.Release.Version == "" {
		return nil, errors.New("kafkaproc: no release (Prepare one)")
	}
	if o.Java.Path == "" {
		return nil, errors.New("kafkaproc: no java (FindJava)")
	}
	if err := o.Java.Suits(o.Release.KafkaRelease); err != nil {
		return nil, fmt.Errorf("kafkaproc: %w", err)
	}
	if o.Heap == "" {
		o.Heap = DefaultHeap
	}
	if _, err := ParseHeap(o.Heap); err != nil {
		return nil, fmt.Errorf("kafkaproc: heap %w", err)
	}
	if o.JVMFlags == nil {
		o.JVMFlags = DefaultJVMFlags
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 5 * time.Minute
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("kafkaproc: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.ReadyTimeout)
	defer cancel()
	const tries = 3
	for try := 1; ; try++ {
		c, err := start(ctx, o, dir)
		if err == nil {
			return c, nil
		}
		var pt *portTakenError
		if !errors.As(err, &pt) || try == tries || ctx.Err() != nil {
			return nil, err
		}
	}
}

// QuorumTimeouts are the failure-detection timeouts of the local
// brokers, longer than Kafka's defaults (2 s, 1 s, 2 s and 9 s): every
// node shares this machine's CPUs with the load generator, so a node
// starved for a few seconds is slow, not dead, and a new election or a
// fenced broker in the middle of a run would be an artefact of the
// machine. controller.quorum.request.timeout.ms also bounds a broker's
// heartbeats to the active controller. They change no steady-state path.
var QuorumTimeouts = map[string]string{
	"controller.quorum.fetch.timeout.ms":    "10000",
	"controller.quorum.election.timeout.ms": "5000",
	"controller.quorum.request.timeout.ms":  "10000",
	"broker.session.timeout.ms":             "30000",
}

// portTakenError is a broker that could not bind a listener: another
// process took the port after it was found free.
type portTakenError struct{ err error }

func (e *portTakenError) Error() string { return e.err.Error() }
func (e *portTakenError) Unwrap() error { return e.err }

// writeLoopbackHosts writes dir/jvm-hosts, the brokers' own hosts file
// (jdk.net.hosts.file), naming localhost only, and returns its path.
// Kafka creates a PLAIN, SCRAM or OAUTHBEARER SASL server with the host
// name of the listener's address, a reverse lookup of the 127.x address
// the broker listens on; the JVM caches a failed lookup for 10 s only, so
// where the resolver takes its timeout to answer for loopback addresses,
// a client that reconnects (connection_churn) would wait that long for
// SaslAuthenticate every few seconds, a stall of the machine's resolver
// that would pass for the mechanism's cost. With the file the lookup of a
// broker's address fails at once, as a resolver that answers does; the
// brokers listen on addresses and need no name.
func writeLoopbackHosts(dir string) (string, error) {
	p := filepath.Join(dir, "jvm-hosts")
	return p, os.WriteFile(p, []byte("127.0.0.1 localhost\n::1 localhost\n"), 0o600)
}

// HeapFlags are the JVM flags of a heap size.
func HeapFlags(heap string) []string { return []string{"-Xmx" + heap, "-Xms" + heap} }

func start(ctx context.Context, o Options, dir string) (_ *Cluster, err error) {
	c := &Cluster{dir: dir, release: o.Release, modes: map[string]endpoint.Endpoint{},
		interBroker: o.InterBroker, authorizer: o.Authorizer}
	if c.interBroker == "" {
		c.interBroker = planner.SecurityPlaintext
	}
	c.jvmFlags = append(HeapFlags(o.Heap), o.JVMFlags...)
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	hosts, err := writeLoopbackHosts(dir)
	if err != nil {
		return nil, fmt.Errorf("kafkaproc: %w", err)
	}
	c.jvmFlags = append(c.jvmFlags, "-Djdk.net.hosts.file="+hosts)
	// A fresh layout each try: earlier files, data included, go.
	os.RemoveAll(filepath.Join(dir, local.PKIDir))
	olds, _ := filepath.Glob(filepath.Join(dir, "broker-*"))
	for _, d := range olds {
		os.RemoveAll(d)
	}
	srv, err := c.newServer(o.Brokers)
	if srv != nil {
		srv.TLS = o.TLS
		c.ca.LeafKey = o.TLSKey
		srv.InterBroker = o.InterBroker
		c.saslUser = srv.SASLUser
		if o.Authorizer {
			srv.SuperUsers = []string{PrincipalAnonymous}
			for _, n := range srv.Nodes {
				if o.InterBroker == planner.SecurityMTLS {
					srv.SuperUsers = append(srv.SuperUsers, brokerPrincipal("broker-"+strconv.Itoa(n.ID)))
				}
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if err := c.identitySASL(ctx, o, srv); err != nil {
		return nil, err
	}
	clusterID := kafkaconf.NewClusterID()
	logName, logConf := release.LogConfig(o.Release.Version)
	for _, n := range srv.Nodes {
		if err := c.writeBroker(srv, n, logName, logConf); err != nil {
			return nil, err
		}
	}
	if err := c.writeClientConfigs(srv); err != nil {
		return nil, err
	}
	if err := c.formatAll(ctx, o.Java, clusterID); err != nil {
		return nil, err
	}
	if err := c.launch(ctx, o, srv); err != nil {
		return nil, err
	}
	return c, nil
}

// newServer is the configuration of brokers nodes on loopback addresses
// and free ports, with the SASL user's password and c's authority, made
// in c.dir/pki.
func (c *Cluster) newServer(brokers int) (*kafkaconf.Server, error) {
	addrs, err := loopbackAddresses(brokers)
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(addrs)
	if err != nil {
		return nil, err
	}
	srv := kafkaconf.NewServer(addrs, nil)
	srv.Ports = ports
	srv.Extra = QuorumTimeouts
	if c.ca, err = pki.New(filepath.Join(c.dir, local.PKIDir)); err != nil {
		return nil, err
	}
	pw := make([]byte, 16)
	rand.Read(pw)
	srv.SASLUser, srv.SASLPassword = local.SASLUser, hex.EncodeToString(pw)
	return srv, nil
}

// writeBroker lays out node n's directory: its certificate and key store,
// server.properties and the log configuration logConf named logName; it
// adds the node to c's brokers.
func (c *Cluster) writeBroker(srv *kafkaconf.Server, n kafkaconf.Node, logName string, logConf []byte) error {
	b := Broker{Name: "broker-" + strconv.Itoa(n.ID), ID: n.ID, Address: n.Address}
	b.Dir = filepath.Join(c.dir, b.Name)
	for _, d := range []string{b.Dir, filepath.Join(b.Dir, "logs")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	issue := c.ca.Server
	if srv.InterBroker == planner.SecurityMTLS {
		// The broker presents its certificate to leaders as a client.
		issue = c.ca.Gateway
	}
	if _, _, err := issue(b.Name, n.Address); err != nil {
		return err
	}
	ks, err := c.ca.Keystore(b.Name)
	if err != nil {
		return err
	}
	s := *srv
	s.LogDirs = filepath.Join(b.Dir, "data")
	s.Keystore, s.Truststore = ks, c.ca.CAPath()
	props, err := s.Properties(n.ID)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(b.Dir, "server.properties"), props, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(b.Dir, logName), logConf, 0o600); err != nil {
		return err
	}
	c.brokers = append(c.brokers, b)
	return nil
}

// formatAll formats the storage of every node at once.
func (c *Cluster) formatAll(ctx context.Context, java Java, clusterID string) error {
	errs := make([]error, len(c.brokers))
	var wg sync.WaitGroup
	for i, b := range c.brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.format(ctx, java, b, clusterID)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// launch starts the brokers and waits until they are ready; readiness
// ends early when one of them exits.
func (c *Cluster) launch(ctx context.Context, o Options, srv *kafkaconf.Server) error {
	rctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	for i, b := range c.brokers {
		argv := c.javaArgs(b, release.KafkaServerClass, append(slices.Clone(c.jvmFlags), c.identityFlags...)...)
		argv = append(argv, filepath.Join(b.Dir, "server.properties"))
		out, err := os.OpenFile(filepath.Join(b.Dir, "logs", "kafka.out"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		cmd := exec.Command(o.Java.Path, argv...)
		cmd.Dir = b.Dir
		cmd.Stdout, cmd.Stderr = out, out
		p, err := childproc.Start(cmd, o.Keep)
		out.Close()
		if err != nil {
			return fmt.Errorf("kafkaproc: start %s: %w", b.Name, err)
		}
		c.procs = append(c.procs, p)
		c.brokers[i].Pid = p.Pid()
		go func() {
			select {
			case <-p.Done():
				stop(fmt.Errorf("%s (pid %d) exited: %v", b.Name, p.Pid(), p.Err()))
			case <-rctx.Done():
			}
		}()
	}
	if err := c.ready(rctx, srv); err != nil {
		if cause := context.Cause(rctx); cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
			err = cause
		}
		err = fmt.Errorf("kafkaproc: Kafka %s did not start: %w%s", o.Release.Version, err, c.logTails())
		if c.portTaken() {
			return &portTakenError{err}
		}
		return err
	}
	return nil
}

// javaArgs are the java arguments running class of the release for
// broker b: flags, the node marker, the log configuration, the class path.
func (c *Cluster) javaArgs(b Broker, class string, flags ...string) []string {
	logName, _ := release.LogConfig(c.release.Version)
	logConf := filepath.Join(b.Dir, logName)
	logProp := "-Dlog4j2.configurationFile=" + logConf
	if strings.HasPrefix(logName, "log4j.") {
		logProp = "-Dlog4j.configuration=file:" + logConf
	}
	args := append([]string{}, flags...)
	return append(args, nodeMarker+b.Dir, logProp, "-Dkafka.logs.dir="+filepath.Join(b.Dir, "logs"),
		"-cp", filepath.Join(c.release.Dir, "libs", "*"), class)
}

// format runs Kafka's StorageTool for b's server.properties.
func (c *Cluster) format(ctx context.Context, java Java, b Broker, clusterID string) error {
	// A short-lived JVM: the first compiler tier starts it fastest.
	args := c.javaArgs(b, release.KafkaStorageClass, "-Xmx256m", "-XX:TieredStopAtLevel=1")
	args = append(args, "format", "--ignore-formatted", "-t", clusterID, "-c", filepath.Join(b.Dir, "server.properties"))
	cmd := exec.CommandContext(ctx, java.Path, args...)
	cmd.Dir = b.Dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kafkaproc: format the storage of %s (%s %s): %v: %s", b.Name, release.KafkaStorageClass, "format", err, firstLines(out, 5))
	}
	return nil
}

// writeClientConfigs writes a client config per direct mode, and the
// sasl_ssl one with PLAIN, against srv.
func (c *Cluster) writeClientConfigs(srv *kafkaconf.Server) error {
	cert, key, err := c.ca.Client(clientCertName)
	if err != nil {
		return err
	}
	for _, mode := range planner.DirectModes() {
		props, err := srv.ClientProps(mode, c.ca.CAPath(), cert, key, "")
		if err != nil {
			return err
		}
		path := filepath.Join(c.dir, mode+".properties")
		if err := kafkaconf.WriteClientConfig(path, props); err != nil {
			return err
		}
		c.modes[mode] = endpoint.Endpoint{Bootstrap: kafkaconf.Bootstrap(props), ClientConfig: path}
	}
	plain, err := srv.ClientProps(planner.SecuritySASLSSL, c.ca.CAPath(), cert, key, local.MechPlain)
	if err != nil {
		return err
	}
	c.plain = filepath.Join(c.dir, kafkaconf.SASLPlainConfigFile)
	return kafkaconf.WriteClientConfig(c.plain, plain)
}

// ready creates the SCRAM-SHA-512 user over the TLS listener (its salted
// credential, enough to log in, never crosses a socket in clear, as on
// remote hosts), then waits until every mode, SASL PLAIN included, sees
// every broker.
func (c *Cluster) ready(ctx context.Context, srv *kafkaconf.Server) error {
	read := func(path string) (map[string]string, error) { return kafkaconf.ReadClientConfig(path) }
	admin, err := read(c.modes[planner.SecurityTLS].ClientConfig)
	if err != nil {
		return err
	}
	if err := agent.UpsertSCRAM(ctx, admin, srv.SASLUser, srv.SASLPassword); err != nil {
		return err
	}
	if c.authorizer {
		if err := c.runACLs(ctx); err != nil {
			return err
		}
	}
	var modes []agent.KafkaMode
	for _, name := range planner.DirectModes() {
		props, err := read(c.modes[name].ClientConfig)
		if err != nil {
			return err
		}
		modes = append(modes, agent.KafkaMode{Name: name, Props: props})
	}
	plain, err := read(c.plain)
	if err != nil {
		return err
	}
	modes = append(modes, agent.KafkaMode{Name: kafkaconf.SASLPlainConfig, Props: plain})
	var ids []int32
	for _, b := range c.brokers {
		ids = append(ids, int32(b.ID))
	}
	deadline, _ := ctx.Deadline()
	return agent.WaitKafka(ctx, modes, ids, time.Until(deadline))
}

// portTaken reports whether a broker's log says a listener's port was
// taken.
func (c *Cluster) portTaken() bool {
	for _, b := range c.brokers {
		for _, f := range []string{"kafka.out", "server.log"} {
			t, _ := os.ReadFile(filepath.Join(b.Dir, "logs", f))
			if bytes.Contains(t, []byte("Address already in use")) {
				return true
			}
		}
	}
	return false
}

// errorLogTail is how much of each broker's logs an error quotes.
const errorLogTail = 1500

// logTails is the end of each broker's logs, for an error message.
func (c *Cluster) logTails() string {
	var b strings.Builder
	for _, br := range c.brokers {
		for _, f := range []string{"kafka.out", "server.log"} {
			t := tailOf(filepath.Join(br.Dir, "logs", f), errorLogTail)
			if len(bytes.TrimSpace(t)) == 0 {
				continue
			}
			fmt.Fprintf(&b, "\n--- %s/%s (end):\n%s", br.Name, f, bytes.TrimSpace(t))
		}
	}
	return b.String()
}

// tailOf is the last max bytes of the file at path (nil when unreadable).
func tailOf(path string, limit int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	off := max(0, fi.Size()-limit)
	b := make([]byte, fi.Size()-off)
	n, _ := f.ReadAt(b, off)
	return bytes.ToValidUTF8(b[:n], nil)
}

// loopbackAddresses picks n consecutive addresses in a random /24 of
// 127.0.0.0/8 other than 127.0.0.0/24 (where most local services listen).
func loopbackAddresses(n int) ([]string, error) {
	r, err := rand.Int(rand.Reader, big.NewInt(254*256))
	if err != nil {
		return nil, err
	}
	a, b := 1+r.Int64()/256, r.Int64()%256
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("127.%d.%d.%d", a, b, 1+i))
	}
	return out, nil
}

// freePorts finds the six listener ports, each free on every address:
// the kernel picks each on the first address, and it is kept only when it
// binds on the others too. The sockets are closed before Kafka binds, so
// another process may take one in between; Start tries again then.
func freePorts(addrs []string) (kafkaconf.Ports, error) {
	var got []int
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for tries := 0; len(got) < 6; tries++ {
		if tries > 100 {
			return kafkaconf.Ports{}, errors.New("kafkaproc: no free ports on the loopback addresses")
		}
		l, err := net.Listen("tcp", net.JoinHostPort(addrs[0], "0"))
		if err != nil {
			return kafkaconf.Ports{}, fmt.Errorf("kafkaproc: %w (the local target needs the loopback addresses 127.0.0.0/8)", err)
		}
		held = append(held, l)
		port := l.Addr().(*net.TCPAddr).Port
		ok := true
		for _, a := range addrs[1:] {
			o, err := net.Listen("tcp", net.JoinHostPort(a, strconv.Itoa(port)))
			if err != nil {
				ok = false
				break
			}
			held = append(held, o)
		}
		if ok && !slices.Contains(got, port) {
			got = append(got, port)
		}
	}
	return kafkaconf.Ports{Plaintext: got[0], SSL: got[1], MTLS: got[2], SASLSSL: got[3], Internal: got[4], Controller: got[5]}, nil
}

// Dir is where the cluster's files are.
func (c *Cluster) Dir() string { return c.dir }

// Version is the Kafka release the brokers run.
func (c *Cluster) Version() string { return c.release.Version }

// Release is the release the brokers run (its libs/ also hold Kafka's
// tools, ProducerPerformance among them).
func (c *Cluster) Release() Release { return c.release }

// JVMFlags are the brokers' JVM flags, heap included.
func (c *Cluster) JVMFlags() []string { return slices.Clone(c.jvmFlags) }

// Authority is the cluster's certificate authority (dir/pki): gateways in
// front of the cluster issue their certificates from it.
func (c *Cluster) Authority() *pki.Authority { return c.ca }

// InterBroker is what the brokers replicate over: plaintext, tls or
// mtls.
func (c *Cluster) InterBroker() string { return c.interBroker }

// Authorizer reports whether the brokers run KRaft's StandardAuthorizer.
func (c *Cluster) Authorizer() bool { return c.authorizer }

// Modes are the direct modes: each one's bootstrap servers and client
// config file.
func (c *Cluster) Modes() map[string]endpoint.Endpoint {
	out := make(map[string]endpoint.Endpoint, len(c.modes))
	for k, v := range c.modes {
		out[k] = v
	}
	return out
}

// SASLPlainConfig is a sasl_ssl client config using SASL PLAIN instead of
// the mode's default SCRAM-SHA-512.
func (c *Cluster) SASLPlainConfig() string { return c.plain }

// Brokers are the cluster's nodes, in node id order.
func (c *Cluster) Brokers() []Broker { return slices.Clone(c.brokers) }

// Exited names the brokers whose JVM has ended.
func (c *Cluster) Exited() []string {
	var out []string
	for i, p := range c.procs {
		if p.Exited() {
			out = append(out, c.brokers[i].Name)
		}
	}
	return out
}

// Close kills every broker JVM and waits for them; the files stay (the
// caller owns Dir). Safe to call more than once.
func (c *Cluster) Close() error {
	c.once.Do(func() {
		var wg sync.WaitGroup
		for _, p := range c.procs {
			wg.Add(1)
			go func() { defer wg.Done(); p.Kill() }()
		}
		wg.Wait()
	})
	return nil
}
