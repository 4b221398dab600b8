package remote

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xp-bench/xp/infra/endpoint"
	"github.com/xp-bench/xp/infra/hoststat"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
	"github.com/xp-bench/xp/runner/loadgen"
)

// Host is one machine of a group.
type Host struct {
	// Name is unique in the group, e.g. broker-0; telemetry and logs are
	// stored under it.
	Name string
	Role string
	// SSH is host:port where xp reaches the machine.
	SSH string
	// Private is the address the group's machines reach each other on;
	// brokers listen on and advertise it.
	Private string
	// InstanceType is recorded with each attempt ("" when unknown).
	InstanceType string
}

// Options configure Deploy.
type Options struct {
	// Campaign names the directory on every host: $HOME/xp/CAMPAIGN/HOST.
	Campaign string
	Hosts    []Host
	Pool     *ssh.Pool
	// Binary is the xp binary uploaded to the hosts; default this one. It
	// must be built for the hosts' OS and architecture.
	Binary string
	// Log receives progress (the campaign log); nil discards.
	Log io.Writer
	// Wait, when positive, is how long Deploy waits for every host to
	// answer over SSH first (ssh.Pool.Wait): machines just created are
	// still booting.
	Wait time.Duration
	// Leftovers makes Deploy reach only what an earlier xp left (xp infra
	// down): it uploads nothing, a host without xp's binary in the
	// campaign's directory has nothing of the campaign running and is left
	// alone, and a host it cannot reach is listed by Unreachable instead
	// of failing the deployment. Only stopping and removing make sense on
	// such a deployment.
	Leftovers bool
	// WorkDir is where the cluster's authority lives on this machine
	// while the deployment does (the run's work directory, which the next
	// run empties: a killed xp leaves no key elsewhere); default the
	// system's temporary directory.
	WorkDir string
}

// Deployment is xp installed on a group's hosts.
type Deployment struct {
	o     Options
	hosts map[string]*deployed
	// modes are the embedded cluster's modes; their files live at the same
	// paths on the broker host and on every client host.
	modes map[string]endpoint.Endpoint
	// kafka is "apache VERSION" once StartKafka ran, security the
	// cluster part of the security surface it applied.
	kafka    string
	security planner.ClusterSecurity
	// brokers is the number of brokers of the cluster started, their node
	// ids firstNodeID, firstNodeID+1, ... (0.. for the embedded cluster,
	// whose kfake brokers count from 0).
	brokers, firstNodeID int
	// gwMetrics are the metrics endpoints of the gateways on gateway
	// hosts, per mode key (TLSKept).
	gwMetrics map[string][]hostMetrics
	// ca is the cluster's certificate authority when this machine made it
	// (Apache Kafka), nil for the embedded cluster, which makes its own;
	// its key stays in caDir on this machine, removed by Teardown.
	ca    *pki.Authority
	caDir string
}

// keyDir makes a directory (0700) for the cluster's authority in the work
// directory.
func (d *Deployment) keyDir(prefix string) (string, error) {
	if d.o.WorkDir != "" {
		if err := os.MkdirAll(d.o.WorkDir, 0o700); err != nil {
			return "", err
		}
	}
	return os.MkdirTemp(d.o.WorkDir, prefix)
}

// setAuthority makes ca, rooted in dir, the cluster's authority, removing
// the directory of the one before.
func (d *Deployment) setAuthority(ca *pki.Authority, dir string) {
	if d.caDir != "" && d.caDir != dir {
		os.RemoveAll(d.caDir)
	}
	d.ca, d.caDir = ca, dir
}

type deployed struct {
	Host
	c *ssh.Client
	// cmu guards c where it may be replaced while other goroutines use
	// the host (client: loads, telemetry, logs).
	cmu sync.Mutex
	dir string
	xp  string
	// info is what `xp agent info` says of the machine (agent.Info,
	// whose fields target.HostInfo has under the same JSON names).
	info target.HostInfo
	// jvm is the heap and JVM flags of the Kafka node StartKafka started
	// on the host ("" for none).
	jvm string
	// unreachable is why a Leftovers deployment could not reach the host.
	unreachable error
}

var campaignRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// goArch maps `uname -m` to GOARCH.
var goArch = map[string]string{"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64", "armv7l": "arm", "i686": "386", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}

// Deploy connects to every host, checks that its OS and architecture can
// run the binary, uploads it (skipped when the host already has the same
// bytes) and reads what the host is. Hosts are handled concurrently.
func Deploy(ctx context.Context, o Options) (*Deployment, error) {
	if !campaignRE.MatchString(o.Campaign) {
		return nil, fmt.Errorf("remote: campaign name %q: letters, digits, '.', '_' and '-'", o.Campaign)
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("remote: the xp binary to upload: %w", err)
		}
		o.Binary = exe
	}
	d := &Deployment{o: o, hosts: map[string]*deployed{}}
	for _, h := range o.Hosts {
		if !campaignRE.MatchString(h.Name) {
			return nil, fmt.Errorf("remote: host name %q: letters, digits, '.', '_' and '-'", h.Name)
		}
		if d.hosts[h.Name] != nil {
			return nil, fmt.Errorf("remote: host name %q used twice", h.Name)
		}
		d.hosts[h.Name] = &deployed{Host: h}
	}
	if o.Wait > 0 {
		addrs := map[string]string{}
		for _, h := range o.Hosts {
			addrs[h.Name] = h.SSH
		}
		if err := o.Pool.Wait(ctx, addrs, o.Wait, o.Log); err != nil {
			return nil, fmt.Errorf("remote: %w", err)
		}
	}
	err := d.each(ctx, d.names(""), func(ctx context.Context, h *deployed) error { return d.prepare(ctx, h) })
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Deployment) prepare(ctx context.Context, h *deployed) error {
	c, err := d.o.Pool.Client(ctx, h.SSH)
	if err != nil && d.o.Leftovers && ctx.Err() == nil {
		h.unreachable = err
		return nil
	}
	if err != nil {
		return err
	}
	h.c = c
	if d.o.Leftovers {
		return d.findLeftovers(ctx, h)
	}
	out, err := c.Output(ctx, `uname -s; uname -m; printf '%s\n' "$HOME"`)
	if err != nil {
		return err
	}
	f := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(f) != 3 || !strings.HasPrefix(f[2], "/") {
		return fmt.Errorf("unexpected answer to uname and $HOME: %q", out)
	}
	goos, arch := strings.ToLower(f[0]), goArch[f[1]]
	if goos != runtime.GOOS || arch != runtime.GOARCH {
		if arch == "" {
			arch = f[1]
		}
		return fmt.Errorf("the host is %s/%s but this xp is built for %s/%s: build one for it with "+
			"`GOOS=%s GOARCH=%s go build -o xp-%s-%s ./cmd/xp` and give it as the binary to upload",
			goos, arch, runtime.GOOS, runtime.GOARCH, goos, arch, goos, arch)
	}
	h.dir = path.Join(f[2], "xp", d.o.Campaign, h.Name)
	h.xp = path.Join(h.dir, "bin", "xp")
	start := time.Now()
	copied, err := c.Upload(ctx, d.o.Binary, h.xp, 0o755)
	if err != nil {
		return err
	}
	if copied {
		fmt.Fprintf(d.o.Log, "remote: %s: xp uploaded in %.1fs\n", h.Name, time.Since(start).Seconds())
	}
	out, err = c.Output(ctx, ssh.Quote(h.xp)+" agent info")
	if err != nil {
		return err
	}
	if err := json.Unmarshal(out, &h.info); err != nil {
		return fmt.Errorf("xp agent info: %w", err)
	}
	// Services an xp killed before its teardown left running (a SIGKILL,
	// a crash) would hold the campaign's ports: this deployment owns the
	// host's campaign directory, so it stops them.
	if _, err := c.Output(ctx, fmt.Sprintf("%s agent stop --dir %s --grace 10s", ssh.Quote(h.xp), ssh.Quote(h.dir))); err != nil {
		return fmt.Errorf("stopping the services a previous xp left: %w", err)
	}
	return nil
}

// findLeftovers sets h's campaign directory and binary when an earlier
// xp left them there, uploading nothing; a host without them keeps none
// (every later step skips it).
func (d *Deployment) findLeftovers(ctx context.Context, h *deployed) error {
	dir := `"$HOME"/xp/` + ssh.Quote(d.o.Campaign) + "/" + ssh.Quote(h.Name)
	out, err := h.c.Output(ctx, fmt.Sprintf(`if [ -x %[1]s/bin/xp ]; then printf '%%s\n' %[1]s; fi`, dir))
	if err != nil {
		return err
	}
	if found := strings.TrimSpace(string(out)); strings.HasPrefix(found, "/") {
		h.dir = found
		h.xp = path.Join(found, "bin", "xp")
	}
	return nil
}

// Unreachable lists the hosts a Leftovers deployment could not reach, as
// "NAME (ADDR): why", in name order.
func (d *Deployment) Unreachable() []string {
	var out []string
	for _, n := range d.names("") {
		if h := d.hosts[n]; h.unreachable != nil {
			out = append(out, fmt.Sprintf("%s (%s): %v", n, h.SSH, h.unreachable))
		}
	}
	return out
}

// Reconnect makes sure every host has a live connection, dialling again
// where one broke (a host that dropped off the network and came back).
func (d *Deployment) Reconnect(ctx context.Context) error {
	return d.each(ctx, d.names(""), func(ctx context.Context, h *deployed) error {
		_, err := d.client(ctx, h)
		return err
	})
}

// client returns a live connection to h, dialling again when the one it
// had broke (the pool closes a connection whose keepalives go unanswered).
func (d *Deployment) client(ctx context.Context, h *deployed) (*ssh.Client, error) {
	c, err := d.o.Pool.Client(ctx, h.SSH)
	if err != nil {
		return nil, err
	}
	h.cmu.Lock()
	h.c = c
	h.cmu.Unlock()
	return c, nil
}

// names returns the names of the hosts of role ("" for all), sorted.
func (d *Deployment) names(role string) []string {
	var out []string
	for n, h := range d.hosts {
		if role == "" || h.Role == role {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// each runs fn on the named hosts concurrently; errors name their host.
func (d *Deployment) each(ctx context.Context, names []string, fn func(context.Context, *deployed) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx, d.hosts[n]); err != nil {
				errs[i] = fmt.Errorf("remote: host %s: %w", n, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// writeAll writes every file of contents (path on the host → bytes), 0600,
// to each named host, the hosts concurrently.
func (d *Deployment) writeAll(ctx context.Context, names []string, contents map[string][]byte) error {
	return d.each(ctx, names, func(ctx context.Context, h *deployed) error { return h.writeFiles(ctx, contents) })
}

// writeFiles writes every file of files (path on the host → bytes), 0600,
// in path order.
func (h *deployed) writeFiles(ctx context.Context, files map[string][]byte) error {
	for _, f := range sortedKeys(files) {
		if err := h.c.WriteFile(ctx, f, files[f], 0o600); err != nil {
			return err
		}
	}
	return nil
}

// Hosts describes every host, sorted by name: what an attempt records
// about it. Kafka is the broker software, as target.Broker.String writes
// it: "kfake VERSION" or "apache VERSION" (on broker and controller
// hosts), and for Apache Kafka JVMFlags the heap and JVM flags it ran with
// (Java the runtime).
func (d *Deployment) Hosts() []target.HostInfo {
	var out []target.HostInfo
	for _, n := range d.names("") {
		h := d.hosts[n]
		r := h.info
		r.Name, r.Role, r.Address, r.InstanceType = n, h.Role, h.Private, h.InstanceType
		switch {
		case d.kafka != "" && (h.Role == planner.RoleBroker || h.Role == planner.RoleController):
			r.Kafka, r.JVMFlags = d.kafka, h.jvm
		case h.Role == planner.RoleBroker && d.modes != nil:
			r.Kafka = target.KfakeBroker().String()
		}
		out = append(out, r)
	}
	return out
}

// embeddedAuthority makes, on this machine, the authority of an embedded
// cluster, and gives the broker host what the cluster's pki directory
// needs: the CA certificate, the broker's certificate and the client's,
// and, when gateways run beside the cluster (no gateway hosts, so `xp
// cluster local` serves the gateway modes, local.ClusterLocalGatewayModes),
// each of those gateways' certificates, all with their keys but not the
// CA's key, which stays here: the cluster opens the directory as an
// authority that cannot sign (pki.Authority), so no CA key ever lives on
// a host. The gateway hosts' certificates are signed here too
// (gatewayAuthority).
func (d *Deployment) embeddedAuthority(ctx context.Context, b *deployed, dir string) error {
	tmp, err := d.keyDir("xp-pki-")
	if err != nil {
		return fmt.Errorf("remote: embedded cluster: %w", err)
	}
	ca, err := pki.New(tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return err
	}
	d.setAuthority(ca, tmp)
	files := map[string]string{pki.CACertFile: ca.CAPath()}
	issues := []func() (string, string, error){
		func() (string, string, error) { return ca.Server(local.BrokerCertName, b.Private) },
		func() (string, string, error) { return ca.Client(local.ClientCertName) },
	}
	if len(d.names(planner.RoleGateway)) == 0 {
		for _, o := range local.ClusterLocalGatewayModes() {
			issues = append(issues, func() (string, string, error) { return ca.Gateway(local.GatewayCertName(o.ModeName()), b.Private) })
		}
	}
	for _, issue := range issues {
		cert, key, err := issue()
		if err != nil {
			return err
		}
		files[filepath.Base(cert)], files[filepath.Base(key)] = cert, key
	}
	contents := map[string][]byte{}
	for name, src := range files {
		if contents[path.Join(dir, name)], err = os.ReadFile(src); err != nil {
			return err
		}
	}
	// A directory left by an earlier start holds another CA, perhaps with
	// its key: start from an empty one.
	if _, err := b.c.Output(ctx, "rm -rf -- "+ssh.Quote(dir)+" && mkdir -p -m 0700 -- "+ssh.Quote(dir)); err != nil {
		return fmt.Errorf("remote: embedded cluster on %s: %w", b.Name, err)
	}
	if err := b.writeFiles(ctx, contents); err != nil {
		return fmt.Errorf("remote: embedded cluster on %s: %w", b.Name, err)
	}
	return nil
}

// The embedded cluster's service name, and its directory in the broker
// host's directory (its --dir).
const (
	embeddedService = "cluster"
	embeddedDir     = "cluster"
)

// StartEmbedded runs xp's embedded cluster (kafka.distribution: embedded)
// with brokers brokers on the first broker host, listening on and
// advertising its private address, with every direct mode and, when the
// group has no gateway host, the gateway modes of `xp cluster local` (with
// gateway hosts those run there, StartGateways, and the broker host serves
// only the direct modes: `--direct-only`); then copies each mode's client
// config and the certificates it names to every client host, at the same
// paths.
func (d *Deployment) StartEmbedded(ctx context.Context, brokers int) (map[string]endpoint.Endpoint, error) {
	bs := d.names(planner.RoleBroker)
	if len(bs) == 0 {
		return nil, errors.New("remote: no broker host")
	}
	b := d.hosts[bs[0]]
	cdir := path.Join(b.dir, embeddedDir)
	cmd := fmt.Sprintf("%s agent start --dir %s --name %s --wait-file %s --timeout 60s -- %s cluster local --host %s --brokers %d --dir %s --retention 60s",
		ssh.Quote(b.xp), ssh.Quote(b.dir), embeddedService, ssh.Quote(path.Join(cdir, local.ClusterFile)),
		ssh.Quote(b.xp), ssh.Quote(b.Private), brokers, ssh.Quote(cdir))
	if len(d.names(planner.RoleGateway)) > 0 {
		cmd += " --direct-only"
	}
	if err := d.embeddedAuthority(ctx, b, path.Join(cdir, local.PKIDir)); err != nil {
		return nil, err
	}
	if _, err := b.c.Output(ctx, cmd); err != nil {
		return nil, fmt.Errorf("remote: embedded cluster on %s: %w", b.Name, err)
	}
	out, err := b.c.Output(ctx, "cat "+ssh.Quote(path.Join(cdir, local.ClusterFile)))
	if err != nil {
		return nil, err
	}
	var cl struct {
		Modes local.Modes `json:"modes"`
	}
	if err := json.Unmarshal(out, &cl); err != nil {
		return nil, fmt.Errorf("remote: %s "+local.ClusterFile+": %w", b.Name, err)
	}
	contents, err := clientFiles(path.Dir(b.dir), cl.Modes, func(f string) ([]byte, error) {
		return b.c.Output(ctx, "cat "+ssh.Quote(f))
	})
	if err != nil {
		return nil, fmt.Errorf("remote: %s "+local.ClusterFile+": %w", b.Name, err)
	}
	if err := d.writeAll(ctx, d.names(planner.RoleClient), contents); err != nil {
		return nil, err
	}
	d.modes, d.brokers = cl.Modes, brokers
	return cl.Modes, nil
}

// clientFiles reads, with read, every file a client of modes needs (the
// client configs and the certificates and keys they name), by path. They
// are written at the same paths on the client hosts, so only paths under
// campaignDir (the campaign's directory on the hosts) are taken: a
// cluster.json naming /etc/... or ~/.ssh/... is refused.
func clientFiles(campaignDir string, modes map[string]endpoint.Endpoint, read func(string) ([]byte, error)) (map[string][]byte, error) {
	under := func(what, p string) error {
		if c := path.Clean(p); c != p || !strings.HasPrefix(p, campaignDir+"/") {
			return fmt.Errorf("%s %q is not under the campaign directory %s", what, p, campaignDir)
		}
		return nil
	}
	out := map[string][]byte{}
	for _, name := range sortedKeys(modes) {
		m := modes[name]
		if err := under("mode "+name+": client config", m.ClientConfig); err != nil {
			return nil, err
		}
		text, err := read(m.ClientConfig)
		if err != nil {
			return nil, err
		}
		out[m.ClientConfig] = text
		props, err := kafkaconf.ParseClientConfig(text)
		if err != nil {
			return nil, fmt.Errorf("%s:%w", m.ClientConfig, err)
		}
		for _, k := range []string{kafkaconf.SSLCALocation, kafkaconf.SSLCertificate, kafkaconf.SSLKey} {
			p := props[k]
			if p == "" || out[p] != nil {
				continue
			}
			if err := under(m.ClientConfig+": "+k, p); err != nil {
				return nil, err
			}
			if out[p], err = read(p); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Load is one run's load, split over the client hosts.
type Load struct {
	// Mode is the mode key (target.ModeKey) to run against, unless
	// ClientConfig names the client config file on the client hosts.
	Mode         string
	ClientConfig string
	// Seed, when not 0, gives client i the payload seed Seed+i.
	Seed int64
	// OnPhase, when set, is called as the first client host reports a
	// phase (warmup, measure, drain), and with "done" at the end.
	OnPhase func(phase string)
	// Rate is the total target rate in msg/s; 0 is max (closed loop, every
	// client saturating).
	Rate int64
	// Flags are further `xp loadgen` flags every client gets as they are
	// (--message-size, --warmup, --duration, --drain-timeout, ...).
	Flags []string
	// Timeout bounds each client's run; default 5 minutes.
	Timeout time.Duration
	// JavaClient, for client java, is the file name of the Java client
	// release PrepareJavaClient put in every client host's campaign
	// directory, given to each as --java-client.
	JavaClient string
	// RdkafkaClient, for client librdkafka, is the file name of the
	// librdkafka client release PrepareRdkafkaClient put in every client
	// host's campaign directory, given to each as --rdkafka-client.
	RdkafkaClient string
}

// ClientError is a client host whose load run failed; Output keeps what it
// printed.
type ClientError struct {
	Host   string
	Err    error
	Output string
}

// Error names the host and the failure, and ends with the last line the
// load generator wrote (why it stopped, usually), at most 500 bytes.
func (e *ClientError) Error() string {
	msg := fmt.Sprintf("remote: load on %s: %v", e.Host, e.Err)
	lines := strings.Split(strings.TrimSpace(e.Output), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		if len(last) > 500 {
			last = last[:500] + "..."
		}
		msg += ": " + last
	}
	return msg
}

func (e *ClientError) Unwrap() error { return e.Err }

// Shares splits rate over n clients: equal shares, the remainder one
// message each to the first clients. A rate of 0 (max) stays 0 everywhere.
func Shares(rate int64, n int) []int64 {
	out := make([]int64, n)
	if rate == 0 {
		return out
	}
	for i := range out {
		out[i] = rate / int64(n)
		if int64(i) < rate%int64(n) {
			out[i]++
		}
	}
	return out
}

// RunLoad runs `xp loadgen --json` on every client host at once, each with
// its share of the rate and its producers and consumers on the same host
// (so end-to-end latency is measured on one clock), and merges their
// results. A client that fails or times out fails the run.
func (d *Deployment) RunLoad(ctx context.Context, l Load) (loadgen.Result, []Part, error) {
	cfgPath := l.ClientConfig
	if cfgPath == "" {
		m, ok := d.modes[l.Mode]
		if !ok {
			return loadgen.Result{}, nil, fmt.Errorf("remote: mode %q is not served (have %s)", l.Mode, strings.Join(d.modeNames(), ", "))
		}
		cfgPath = m.ClientConfig
	}
	if l.OnPhase != nil {
		defer l.OnPhase("done")
	}
	clients := d.names(planner.RoleClient)
	if len(clients) == 0 {
		return loadgen.Result{}, nil, errors.New("remote: no client host")
	}
	shares := Shares(l.Rate, len(clients))
	if l.Rate > 0 && l.Rate < int64(len(clients)) {
		return loadgen.Result{}, nil, fmt.Errorf("remote: rate %d msg/s is less than one per client host (%d hosts)", l.Rate, len(clients))
	}
	timeout := l.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	parts := make([]Part, len(clients))
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for i, n := range clients {
		h := d.hosts[n]
		rate := "max"
		if shares[i] > 0 {
			rate = strconv.FormatInt(shares[i], 10)
		}
		args := []string{ssh.Quote(h.xp), "loadgen", "--json", "--client-config", ssh.Quote(cfgPath), "--rate", rate}
		if l.Seed != 0 {
			args = append(args, "--seed", strconv.FormatInt(l.Seed+int64(i), 10))
		}
		for _, f := range l.Flags {
			args = append(args, ssh.Quote(f))
		}
		if l.JavaClient != "" {
			args = append(args, "--java-client", ssh.Quote(path.Join(h.dir, l.JavaClient)))
		}
		if l.RdkafkaClient != "" {
			args = append(args, "--rdkafka-client", ssh.Quote(path.Join(h.dir, l.RdkafkaClient)))
		}
		var phases io.Writer = io.Discard
		if i == 0 && l.OnPhase != nil {
			phases = &phaseWriter{on: l.OnPhase}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			var stdout bytes.Buffer
			stderr := &limited{max: 64 << 10}
			// A connection that broke since the last run (the pool closes
			// one whose keepalives go unanswered) is dialled again,
			// within the pool's bounded retries.
			c, err := d.client(cctx, h)
			if err == nil {
				err = c.Run(cctx, strings.Join(args, " "), ssh.RunOpts{Stdout: &stdout, Stderr: io.MultiWriter(stderr, phases)})
			}
			// Exit 3 is a run that finished unhealthy: its result says why.
			var r loadgen.Result
			if err == nil || isExit3(err) {
				if jerr := json.Unmarshal(stdout.Bytes(), &r); jerr != nil {
					err = fmt.Errorf("its output is not a loadgen result: %w", jerr)
				} else {
					err = nil
				}
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, &ClientError{Host: n, Err: err, Output: stdout.String() + stderr.String()})
				mu.Unlock()
				return
			}
			parts[i] = Part{Host: n, Result: r}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return loadgen.Result{}, nil, errors.Join(errs...)
	}
	merged, err := Merge(parts)
	return merged, parts, err
}

func isExit3(err error) bool {
	var ee *ssh.ExitError
	return errors.As(err, &ee) && ee.Status == 3
}

func (d *Deployment) modeNames() []string {
	var out []string
	for k := range d.modes {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Telemetry samples every host once a second until Stop: one `xp agent
// telemetry` stream per host, which lives as long as the deployment (no
// command timeout) and is started again, on a new connection where the
// old one broke, whenever it ends.
type Telemetry struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	out    []results.Sample
	latest map[string]hoststat.Rates
	// at is when each host's latest line arrived, on this machine's
	// clock; lastErr why its stream last ended.
	at      map[string]time.Time
	lastErr map[string]error
	errs    []error
	now     func() time.Time
}

// TelemetryStale is how old a host's latest line may be and still count
// as its current reading: older, the host is in a gap (its stream ended or
// its link is down), and Latest leaves it out rather than pass its last
// values off as current.
const TelemetryStale = 3 * time.Second

// telemetryRestart bounds the wait before a stream that ended is started
// again (doubling from one second).
const telemetryRestart = 30 * time.Second

// Latest returns each host's latest line, of the hosts whose stream is
// current (a line within TelemetryStale).
func (t *Telemetry) Latest() map[string]hoststat.Rates {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	out := make(map[string]hoststat.Rates, len(t.latest))
	for k, v := range t.latest {
		if now.Sub(t.at[k]) <= TelemetryStale {
			out[k] = v
		}
	}
	return out
}

// Err says, for every host in a gap now, since when and why.
func (t *Telemetry) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	var errs []error
	for _, n := range sortedKeys(t.at) {
		if age := now.Sub(t.at[n]); age > TelemetryStale {
			err := fmt.Errorf("remote: telemetry of %s: no sample for %v", n, age.Round(time.Second))
			if t.lastErr[n] != nil {
				err = fmt.Errorf("%w (its stream ended: %v)", err, t.lastErr[n])
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// StartTelemetry starts `xp agent telemetry` on every host; each line it
// streams back becomes samples (host, time, metric, value).
func (d *Deployment) StartTelemetry(ctx context.Context) *Telemetry {
	ctx, cancel := context.WithCancel(ctx)
	t := &Telemetry{cancel: cancel, latest: map[string]hoststat.Rates{}, at: map[string]time.Time{},
		lastErr: map[string]error{}, now: time.Now}
	start := t.now()
	for _, n := range d.names("") {
		h := d.hosts[n]
		t.mu.Lock()
		t.at[n] = start // no gap until the first line is due
		t.mu.Unlock()
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			wait := time.Second
			for {
				began := t.now()
				err := d.streamTelemetry(ctx, h, t)
				if ctx.Err() != nil {
					return
				}
				if err == nil {
					err = errors.New("the stream ended")
				}
				t.mu.Lock()
				t.lastErr[n] = err
				if len(t.errs) < 20 {
					t.errs = append(t.errs, fmt.Errorf("remote: telemetry of %s: %w", n, err))
				}
				t.mu.Unlock()
				if t.now().Sub(began) > telemetryRestart {
					wait = time.Second // it ran a while: a new failure
				}
				fmt.Fprintf(d.o.Log, "remote: telemetry of %s ended (%v); starting it again in %v\n", n, err, wait)
				timer := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					timer.Stop()
					return
				case <-timer.C:
				}
				wait = min(2*wait, telemetryRestart)
			}
		}()
	}
	return t
}

// streamTelemetry runs one `xp agent telemetry` stream on h, on a live
// connection, until it ends, recording its lines in t.
func (d *Deployment) streamTelemetry(ctx context.Context, h *deployed, t *Telemetry) error {
	c, err := d.client(ctx, h)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var r hoststat.Rates
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				continue
			}
			t.mu.Lock()
			t.latest[h.Name], t.at[h.Name] = r, t.now()
			for metric, v := range r.Metrics() {
				t.out = append(t.out, results.Sample{Host: h.Name, TS: r.Time, Metric: metric, Value: v})
			}
			t.mu.Unlock()
		}
		io.Copy(io.Discard, pr)
	}()
	err = c.Run(ctx, ssh.Quote(h.xp)+" agent telemetry --interval 1s", ssh.RunOpts{Stdout: pw, Stderr: io.Discard, Quiet: true, Stream: true})
	pw.Close()
	<-read
	return err
}

// Stop ends sampling and returns the samples in time order, and every
// time a host's stream ended, if any did.
func (t *Telemetry) Stop() ([]results.Sample, error) {
	t.cancel()
	t.wg.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	sort.SliceStable(t.out, func(i, j int) bool {
		if !t.out[i].TS.Equal(t.out[j].TS) {
			return t.out[i].TS.Before(t.out[j].TS)
		}
		if t.out[i].Host != t.out[j].Host {
			return t.out[i].Host < t.out[j].Host
		}
		return t.out[i].Metric < t.out[j].Metric
	})
	return t.out, errors.Join(t.errs...)
}

// Logs fetches the end (at most maxBytes each) of every service log on the
// broker and gateway hosts, gzip-compressed, keyed "HOST/SERVICE.log". It is
// best-effort: a host that does not answer within the context is skipped.
func (d *Deployment) Logs(ctx context.Context, maxBytes int64) map[string][]byte {
	tails, _ := d.logTails(ctx, maxBytes)
	out := map[string][]byte{}
	for name, text := range tails {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(text)
		zw.Close()
		out[name] = buf.Bytes()
	}
	return out
}

// logTails returns the end of every service log on the broker, controller
// and gateway hosts, keyed HOST/SERVICE.log, and which hosts it could not
// read. Apache Kafka's log4j files (server.log, controller.log, ...) are
// there too: its LOG_DIR is the same directory.
func (d *Deployment) logTails(ctx context.Context, maxBytes int64) (map[string][]byte, error) {
	out := map[string][]byte{}
	var mu sync.Mutex
	names := append(append(d.names(planner.RoleBroker), d.names(planner.RoleController)...), d.names(planner.RoleGateway)...)
	err := d.each(ctx, names, func(ctx context.Context, h *deployed) error {
		c, err := d.client(ctx, h)
		if err != nil {
			return err
		}
		// A host that started no service has no logs directory.
		list, err := c.Output(ctx, fmt.Sprintf("if [ -d %[1]s ]; then ls %[1]s; fi", ssh.Quote(path.Join(h.dir, "logs"))))
		if err != nil {
			return err
		}
		var errs []error
		for _, f := range strings.Fields(string(list)) {
			if !strings.HasSuffix(f, ".log") {
				continue
			}
			text, err := c.Output(ctx, fmt.Sprintf("tail -c %d %s", maxBytes, ssh.Quote(path.Join(h.dir, "logs", f))))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			mu.Lock()
			out[h.Name+"/"+f] = text
			mu.Unlock()
		}
		return errors.Join(errs...)
	})
	return out, err
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// phaseWriter calls on with each phase an `xp loadgen` run reports on its
// standard error ("xp loadgen: measure until 15:04:05").
type phaseWriter struct {
	on  func(string)
	buf []byte
}

func (p *phaseWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		line := string(p.buf[:i])
		p.buf = p.buf[i+1:]
		if rest, ok := strings.CutPrefix(line, "xp loadgen: "); ok {
			if phase, _, ok := strings.Cut(rest, " until "); ok {
				p.on(phase)
			}
		}
	}
	if len(p.buf) > 4096 {
		p.buf = p.buf[len(p.buf)-4096:]
	}
	return len(b), nil
}

// Teardown stops every service xp started on every host, on a new
// connection where the last one broke (a host that dropped off the
// network during a run and came back), and removes the cluster's
// authority from this machine.
func (d *Deployment) Teardown(ctx context.Context) error {
	d.setAuthority(nil, "")
	return d.each(ctx, d.names(""), func(ctx context.Context, h *deployed) error {
		if h.c == nil {
			return nil
		}
		c, err := d.client(ctx, h)
		if err != nil {
			return err
		}
		_, err = c.Output(ctx, fmt.Sprintf("%s agent stop --dir %s --grace 10s", ssh.Quote(h.xp), ssh.Quote(h.dir)))
		return err
	})
}

// limited keeps the first max bytes written to it.
type limited struct {
	max int
	b   []byte
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.max - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limited) String() string { return string(l.b) }
