package remote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xp-bench/xp/infra/endpoint"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/planner"
)

// KafkaRelease is Apache Kafka installed from a release tarball
// (TARGET.yaml kafka.distribution a URL or a file, with kafka.version and
// kafka.sha512).
type KafkaRelease struct {
	Version string
	// URL is the tarball the hosts download, or File the tarball on this
	// machine uploaded to them; one of the two.
	URL, File string
	SHA512    string
	// Heap is kafka.heap (e.g. 384m): every node's -Xmx and -Xms; empty:
	// a quarter of its host's memory (heapOpts).
	Heap string
	// JVMFlags is kafka.jvm_flags; empty: Kafka's own
	// (kafkaconf.DefaultJVMFlags).
	JVMFlags string
	// InstallTimeout bounds the install and start of every node (the
	// download included); default 5 minutes.
	InstallTimeout time.Duration
	// ReadyTimeout bounds the SCRAM user and readiness together; default
	// 5 minutes.
	ReadyTimeout time.Duration
}

// kafkaService is the agent's service name of a KRaft node.
const kafkaService = "kafka"

// Files of a KRaft node in its host's campaign directory.
const (
	kafkaProps   = "server.properties"
	kafkaScript  = "install-kafka.sh"
	kafkaPKI     = "kafka-pki"
	kafkaData    = "data"
	kafkaClients = "kafka-client"
)

// kafkaNode is one KRaft process and the host it runs on.
type kafkaNode struct {
	h     *deployed
	node  kafkaconf.Node
	props []byte
	// keystore is the PEM key store of a broker (nil for a dedicated
	// controller, which has no TLS listener).
	keystore []byte
}

// kafkaPlan is everything StartKafka renders on this machine before it
// touches a host: the nodes' files, the client files and the modes.
type kafkaPlan struct {
	nodes []*kafkaNode
	// ca is the cluster's CA certificate (PEM); authority its CA, whose
	// key stays on this machine, in caDir.
	ca        []byte
	authority *pki.Authority
	caDir     string
	clusterID string
	// clientFiles are the files every client host gets, by path.
	clientFiles map[string][]byte
	modes       map[string]endpoint.Endpoint
	// brokerIDs, readyModes (MODE=FILE), the SCRAM files, and with an
	// authorizer the run's principals and the count of other ACLs, are
	// the arguments of `xp agent kafka-ready`.
	brokerIDs             string
	readyModes            []string
	scramAdmin, scramFrom string
	aclPrincipals         []string
	acls                  int
	// kerberos is the realm's files with GSSAPI rows (addKerberos).
	kerberos *kerberos
	// oauthJWKS is the identity provider's key set URL with OAUTHBEARER
	// rows, which the brokers' JVMs allow.
	oauthJWKS string
}

// planKafka lays the cluster out on the broker and controller hosts (node
// ids 1.. for brokers in name order, 101.. for dedicated controllers;
// without controller hosts the first brokers are also controllers), makes
// its PKI in a temporary directory (a CA, a certificate per broker for its
// private address, a client certificate, each with sec's key), a random
// SASL password, and renders every file with the cluster part of the
// group's security surface, sec (surfaceServer). clientDir is where the
// client files go on every client host.
func (d *Deployment) planKafka(clientDir string, sec KafkaSecurity) (*kafkaPlan, error) {
	srv, hostOf, err := d.kafkaServer()
	if err != nil {
		return nil, err
	}

	// The CA lives on this machine only (signing happens here; hosts get
	// certificates and their own keys), in a directory the deployment's
	// teardown removes.
	tmp, err := d.keyDir("xp-kafka-pki-")
	if err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	ca, err := pki.New(tmp)
	if err != nil {
		return nil, err
	}
	ca.LeafKey = sec.TLSKey
	pw := make([]byte, 16)
	rand.Read(pw)
	srv.SASLUser, srv.SASLPassword = local.SASLUser, hex.EncodeToString(pw)
	surfaceServer(srv, sec.ClusterSecurity, hostOf)
	if sec.GSSAPI {
		srv.Kerberos = kerberosServer()
	}
	if sec.OAuthIssuer != "" {
		srv.OAuth = oauthServer(sec.OAuthIssuer)
	}

	p := &kafkaPlan{clusterID: kafkaconf.NewClusterID(), clientFiles: map[string][]byte{}, modes: map[string]endpoint.Endpoint{},
		authority: ca, caDir: tmp}
	if srv.OAuth != nil {
		p.oauthJWKS = srv.OAuth.JWKSURL
	}
	if p.ca, err = os.ReadFile(ca.CAPath()); err != nil {
		return nil, err
	}
	for i, node := range srv.Nodes {
		kn, err := planNode(srv, ca, d.hosts[hostOf[i]], node)
		if err != nil {
			return nil, err
		}
		p.nodes = append(p.nodes, kn)
	}
	if err := p.planClients(srv, clientDir); err != nil {
		return nil, err
	}
	if len(srv.SuperUsers) > 0 {
		p.aclPrincipals = []string{kafkaconf.CertPrincipal(clientCertName), "User:" + srv.SASLUser}
		p.acls = sec.ACLs
	}
	ok = true
	return p, nil
}

// kafkaServer is the configuration of the cluster's nodes on the broker
// and controller hosts' private addresses, and the host of each of its
// nodes, by index.
func (d *Deployment) kafkaServer() (*kafkaconf.Server, []string, error) {
	bs, cs := d.names(planner.RoleBroker), d.names(planner.RoleController)
	if len(bs) == 0 {
		return nil, nil, errors.New("remote: no broker host")
	}
	var baddr, caddr []string
	for _, n := range append(append([]string{}, bs...), cs...) {
		h := d.hosts[n]
		if net.ParseIP(h.Private) == nil {
			return nil, nil, fmt.Errorf("remote: host %s: private address %q is not an IP address (Kafka's listeners bind to it)", n, h.Private)
		}
		if h.Role == planner.RoleBroker {
			baddr = append(baddr, h.Private)
		} else {
			caddr = append(caddr, h.Private)
		}
	}
	return kafkaconf.NewServer(baddr, caddr), append(append([]string{}, bs...), cs...), nil
}

// planNode renders node's server.properties for host h and, for a broker,
// its key store with a certificate from ca for h's private address.
func planNode(srv *kafkaconf.Server, ca *pki.Authority, h *deployed, node kafkaconf.Node) (*kafkaNode, error) {
	kn := &kafkaNode{h: h, node: node}
	s := *srv
	s.LogDirs = path.Join(h.dir, kafkaData)
	s.Keystore = path.Join(h.dir, kafkaPKI, "keystore.pem")
	s.Truststore = path.Join(h.dir, kafkaPKI, pki.CACertFile)
	if s.Kerberos != nil {
		k := *s.Kerberos
		k.Keytab = path.Join(h.dir, kafkaPKI, brokerKeytab)
		s.Kerberos = &k
	}
	if s.OAuth != nil {
		o := *s.OAuth
		o.Truststore = s.Truststore
		s.OAuth = &o
	}
	var err error
	if kn.props, err = s.Properties(node.ID); err != nil {
		return nil, err
	}
	if h.Role == planner.RoleBroker {
		issue := ca.Server
		if srv.InterBroker == planner.SecurityMTLS {
			// The broker presents its certificate to leaders as a client.
			issue = ca.Gateway
		}
		if _, _, err := issue(h.Name, h.Private); err != nil {
			return nil, err
		}
		ks, err := ca.Keystore(h.Name)
		if err != nil {
			return nil, err
		}
		if kn.keystore, err = os.ReadFile(ks); err != nil {
			return nil, err
		}
	}
	return kn, nil
}

// planClients renders the client hosts' files into clientDir: the CA's
// certificate, a client certificate and key from p's authority, a client
// config per direct mode and one for sasl_ssl with PLAIN; and the
// arguments of `xp agent kafka-ready`.
func (p *kafkaPlan) planClients(srv *kafkaconf.Server, clientDir string) error {
	cert, key, err := p.authority.Client(clientCertName)
	if err != nil {
		return err
	}
	caPath, certPath, keyPath := path.Join(clientDir, pki.CACertFile), path.Join(clientDir, "client.pem"), path.Join(clientDir, "client-key.pem")
	p.clientFiles[caPath] = p.ca
	for f, src := range map[string]string{certPath: cert, keyPath: key} {
		if p.clientFiles[f], err = os.ReadFile(src); err != nil {
			return err
		}
	}
	configs := map[string]string{}
	for _, mode := range planner.DirectModes() {
		props, err := srv.ClientProps(mode, caPath, certPath, keyPath, "")
		if err != nil {
			return err
		}
		f := path.Join(clientDir, mode+".properties")
		p.clientFiles[f] = kafkaconf.FormatClientConfig(props)
		p.modes[mode] = endpoint.Endpoint{Bootstrap: kafkaconf.Bootstrap(props), ClientConfig: f}
		configs[mode] = f
	}
	plain, err := srv.ClientProps(planner.SecuritySASLSSL, caPath, certPath, keyPath, local.MechPlain)
	if err != nil {
		return err
	}
	configs[kafkaconf.SASLPlainConfig] = path.Join(clientDir, kafkaconf.SASLPlainConfigFile)
	p.clientFiles[configs[kafkaconf.SASLPlainConfig]] = kafkaconf.FormatClientConfig(plain)

	var ids []string
	for _, n := range srv.Brokers() {
		ids = append(ids, strconv.Itoa(n.ID))
	}
	p.brokerIDs = strings.Join(ids, ",")
	for _, m := range sortedKeys(configs) {
		p.readyModes = append(p.readyModes, m+"="+configs[m])
	}
	// The SCRAM user is created over TLS: its password never crosses the
	// network in the clear.
	p.scramAdmin, p.scramFrom = configs[planner.SecurityTLS], configs[planner.SecuritySASLSSL]
	return nil
}

// heapOpts is KAFKA_HEAP_OPTS for a host with memMiB of memory: a quarter
// of it, between 512 MiB and 6 GiB (the rest is the page cache Kafka reads
// and writes through).
func heapOpts(memMiB int64) string {
	heap := min(max(memMiB/4, 512), 6144)
	return fmt.Sprintf("-Xmx%dm -Xms%dm", heap, heap)
}

// StartKafka deploys Apache Kafka in KRaft mode from rel on the broker
// hosts and, when there are any, the controller hosts (dedicated
// controllers; else the first brokers are also controllers): it renders
// the PKI, server.properties and client configs here, uploads them 0600
// with the install script, runs the script (download checked against its
// SHA-512, Java, storage formatted), starts each node under the agent as
// service kafka, creates the SCRAM-SHA-512 user over the TLS listener,
// and waits until every mode sees every broker from every client
// host. Every call starts a fresh cluster: a node's data of an earlier
// deployment is removed first. The modes' client files live at the same
// paths on every client host.
func (d *Deployment) StartKafka(ctx context.Context, rel KafkaRelease, sec KafkaSecurity) (map[string]endpoint.Endpoint, error) {
	installTimeout, timeout := rel.InstallTimeout, rel.ReadyTimeout
	if installTimeout <= 0 {
		installTimeout = 5 * time.Minute
	}
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	checkers := d.names(planner.RoleClient)
	if len(checkers) == 0 {
		checkers = d.names(planner.RoleBroker)[:min(1, len(d.names(planner.RoleBroker)))]
	}
	if len(checkers) == 0 {
		return nil, errors.New("remote: no broker host")
	}
	clientDir := path.Join(path.Dir(d.hosts[checkers[0]].dir), kafkaClients)
	if sec.OAuth {
		sec.OAuthIssuer = idpIssuer(d.hosts[checkers[0]].Private)
	}
	p, err := d.planKafka(clientDir, sec)
	if err != nil {
		return nil, err
	}
	d.setAuthority(p.authority, p.caDir)
	if sec.GSSAPI {
		var addrs []string
		for _, n := range p.nodes {
			if n.keystore != nil {
				addrs = append(addrs, n.node.Address)
			}
		}
		k, err := d.startKDC(ctx, d.hosts[checkers[0]], addrs)
		if err != nil {
			return nil, err
		}
		if err := p.addKerberos(k, clientDir); err != nil {
			return nil, err
		}
	}
	if sec.OAuthIssuer != "" {
		// Before the brokers, whose validators fetch its key set.
		secret := newIDPSecret()
		if err := d.startIDP(ctx, d.hosts[checkers[0]], p.authority, secret); err != nil {
			return nil, err
		}
		if err := p.addOAuth(sec.OAuthIssuer, secret); err != nil {
			return nil, err
		}
	}
	var names []string
	byName := map[string]*kafkaNode{}
	for _, n := range p.nodes {
		names = append(names, n.h.Name)
		byName[n.h.Name] = n
		if err := heapFits(rel.Heap, n.h); err != nil {
			return nil, err
		}
	}
	ictx, cancel := context.WithTimeout(ctx, installTimeout)
	defer cancel()
	err = d.each(ictx, names, func(ctx context.Context, h *deployed) error {
		return d.startNode(ctx, byName[h.Name], rel, p)
	})
	if err != nil {
		return nil, err
	}
	d.kafka, d.security = KafkaApache+" "+rel.Version, sec.ClusterSecurity

	// The client files go to every client host; the first broker host
	// gets them too, where gateways started in front of the cluster read
	// the client config of the mode they front.
	b0 := d.hosts[d.names(planner.RoleBroker)[0]]
	targets := slices.Clone(checkers)
	if !slices.Contains(targets, b0.Name) {
		targets = append(targets, b0.Name)
	}
	err = d.each(ctx, targets, func(ctx context.Context, h *deployed) error {
		return h.writeFiles(ctx, p.clientFiles)
	})
	if err != nil {
		return nil, err
	}
	// The SCRAM user once, from the first checker; then readiness from
	// every client host, where the load will come from.
	ready := func(h *deployed, scram bool) error {
		args := []string{ssh.Quote(h.xp), "agent", "kafka-ready", "--timeout", timeout.String(), "--brokers", p.brokerIDs}
		if scram {
			args = append(args, "--scram-admin", ssh.Quote(p.scramAdmin), "--scram-user-from", ssh.Quote(p.scramFrom))
			for _, pr := range p.aclPrincipals {
				args = append(args, "--acl-principal", ssh.Quote(pr))
			}
			if p.acls > 0 {
				args = append(args, "--acls", strconv.Itoa(p.acls))
			}
		}
		for _, m := range p.readyModes {
			args = append(args, ssh.Quote(m))
		}
		// The agent's own budget ends first, so its message is what
		// comes back, not a killed command.
		rctx, cancel := context.WithTimeout(ctx, timeout+time.Minute)
		defer cancel()
		if _, err := h.c.Output(rctx, strings.Join(args, " ")); err != nil {
			return fmt.Errorf("remote: kafka from %s: %w", h.Name, err)
		}
		return nil
	}
	if err := ready(d.hosts[checkers[0]], true); err != nil {
		return nil, err
	}
	if err := d.each(ctx, checkers[1:], func(ctx context.Context, h *deployed) error { return ready(h, false) }); err != nil {
		return nil, err
	}
	d.modes, d.brokers, d.firstNodeID = p.modes, len(d.names(planner.RoleBroker)), 1
	return p.modes, nil
}

// KafkaApache is the word an attempt's host records start their Kafka
// with when Apache Kafka ran there ("apache 4.4.0").
const KafkaApache = target.BrokerApache

// jvmOverheadMiB is what a JVM takes beyond its heap (metaspace, threads,
// code cache, direct buffers) that a host must have besides.
const jvmOverheadMiB = 256

// heapFits says why kafka.heap cannot run on h, nil when it can (or when
// it is not set: heapOpts then takes a quarter of the host's memory).
func heapFits(heap string, h *deployed) error {
	mib := targetfile.Kafka{Heap: heap}.HeapMiB()
	if mib == 0 || h.info.MemoryMiB == 0 || mib+jvmOverheadMiB <= h.info.MemoryMiB {
		return nil
	}
	return fmt.Errorf("remote: kafka.heap %s does not fit host %s: %d MiB of heap and about %d MiB the JVM needs besides, but the host has %d MiB of memory; "+
		"give a smaller kafka.heap, or leave it out for a quarter of each host's memory", heap, h.Name, mib, jvmOverheadMiB, h.info.MemoryMiB)
}

// nodeInstall is how node n gets rel: the release from its URL, or from
// the file uploaded beside its directory.
func nodeInstall(h *deployed, rel KafkaRelease, clusterID string) kafkaconf.Install {
	in := kafkaconf.Install{Version: rel.Version, URL: rel.URL, SHA512: rel.SHA512, Dir: h.dir,
		LogDirs: path.Join(h.dir, kafkaData), ClusterID: clusterID, HeapOpts: heapOpts(h.info.MemoryMiB), JVMFlags: rel.JVMFlags}
	if rel.Heap != "" {
		in.HeapOpts = "-Xmx" + rel.Heap + " -Xms" + rel.Heap
	}
	if rel.File != "" {
		in.URL, in.File = "", path.Join(h.dir, release.KafkaArchiveName(rel.Version))
	}
	return in
}

// startNode uploads one node's files (and the release, when it is a file
// and the host has not unpacked it yet), runs its install script and
// starts it under the agent, returning once a broker answers Kafka
// requests on its plaintext listener (a dedicated controller: once its
// controller listener accepts connections).
func (d *Deployment) startNode(ctx context.Context, n *kafkaNode, rel KafkaRelease, p *kafkaPlan) error {
	h := n.h
	in := nodeInstall(h, rel, p.clusterID)
	script, err := in.Script()
	if err != nil {
		return err
	}
	argv, err := in.ServerCommand()
	if err != nil {
		return err
	}
	if in.File != "" {
		// The release is a file here: streamed to the host unless it has
		// it unpacked (the script checks it against its SHA-512 again and
		// removes it once unpacked).
		out, err := h.c.Output(ctx, fmt.Sprintf("if [ -d %s ]; then echo unpacked; fi", ssh.Quote(path.Join(h.dir, "kafka-"+rel.Version))))
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(out)) != "unpacked" {
			start := time.Now()
			if _, err := h.c.Upload(ctx, rel.File, in.File, 0o644); err != nil {
				return fmt.Errorf("kafka release %s: %w", rel.File, err)
			}
			fmt.Fprintf(d.o.Log, "remote: %s: %s uploaded in %.1fs\n", h.Name, path.Base(rel.File), time.Since(start).Seconds())
		}
	}
	files := map[string][]byte{
		path.Join(h.dir, kafkaProps):  n.props,
		path.Join(h.dir, kafkaScript): script,
	}
	if n.keystore != nil {
		files[path.Join(h.dir, kafkaPKI, "keystore.pem")] = n.keystore
		files[path.Join(h.dir, kafkaPKI, pki.CACertFile)] = p.ca
		if p.kerberos != nil {
			files[path.Join(h.dir, kafkaPKI, brokerKeytab)] = p.kerberos.brokers
			files[path.Join(h.dir, kafkaPKI, krb5Conf)] = p.kerberos.krb5Conf
			// The JVM finds the KDC through it; not one of the recorded
			// JVM flags (h.jvm), which say how the broker was tuned.
			argv = append([]string{argv[0], "-Djava.security.krb5.conf=" + path.Join(h.dir, kafkaPKI, krb5Conf)}, argv[1:]...)
		}
		if p.oauthJWKS != "" {
			// Kafka 4 fetches only the URLs this allows; not a recorded
			// JVM flag either.
			argv = append([]string{argv[0], kafkaconf.AllowedURLsFlag(p.oauthJWKS)}, argv[1:]...)
		}
	}
	if err := h.writeFiles(ctx, files); err != nil {
		return err
	}
	out, err := h.c.Output(ctx, fmt.Sprintf("rm -rf %s && sh %s", ssh.Quote(in.LogDirs), ssh.Quote(path.Join(h.dir, kafkaScript))))
	fmt.Fprintf(d.o.Log, "remote: %s: %s", h.Name, out)
	if err != nil {
		return fmt.Errorf("kafka install script: %w", err)
	}
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = ssh.Quote(a)
	}
	wait := "--wait-kafka " + ssh.Quote(net.JoinHostPort(h.Private, strconv.Itoa(kafkaconf.DefaultPorts.Plaintext)))
	if !slices.Contains(n.node.Roles, planner.RoleBroker) {
		wait = "--wait-tcp " + ssh.Quote(net.JoinHostPort(h.Private, strconv.Itoa(kafkaconf.DefaultPorts.Controller)))
	}
	cmd := fmt.Sprintf("%s agent start --dir %s --name %s %s --timeout %s -- %s", ssh.Quote(h.xp), ssh.Quote(h.dir), kafkaService,
		wait, nodeStartTimeout, strings.Join(q, " "))
	if _, err := h.c.Output(ctx, cmd); err != nil {
		// Kafka logs to server.log, not to its standard output.
		tail, _ := h.c.Output(ctx, "tail -c 3000 "+ssh.Quote(path.Join(h.dir, "logs", "server.log"))+" 2>/dev/null || true")
		return fmt.Errorf("starting kafka node %d: %w\nend of server.log:\n%s", n.node.ID, err, tail)
	}
	// Java may have come with the install script.
	info, err := h.c.Output(ctx, ssh.Quote(h.xp)+" agent info")
	if err == nil {
		json.Unmarshal(info, &h.info)
	}
	h.jvm = in.JVMOptions()
	return nil
}

// nodeStartTimeout bounds a node's start, from its JVM's launch until it
// serves (a broker waits for the quorum of controllers, started beside it).
const nodeStartTimeout = 3 * time.Minute

// checkKafka checks TARGET.yaml's kafka section: embedded, or release
// URLs each with its version and SHA-512.
func checkKafka(k targetfile.Kafka) error {
	if k.Embedded() {
		return nil
	}
	rels := k.Releases
	if len(rels) == 0 {
		// Options built by hand rather than read from a file.
		if k.Distribution == "" {
			return errors.New("kafka.distribution is missing: want embedded or the URL of an Apache Kafka release tarball")
		}
		rels = []targetfile.KafkaRelease{{Version: k.Version, Distribution: k.Distribution, SHA512: k.SHA512}}
	}
	for _, r := range rels {
		if err := checkRelease(r); err != nil {
			return err
		}
	}
	return nil
}

func checkRelease(r targetfile.KafkaRelease) error {
	if r.SHA512 == "" {
		return fmt.Errorf("kafka.distribution %q: a release needs kafka.sha512 (the tarball's SHA-512, from the release's .sha512 file)", r.Distribution)
	}
	if r.Version == "" {
		return fmt.Errorf("kafka.distribution %q: a release needs kafka.version (e.g. 3.9.1)", r.Distribution)
	}
	// SCRAM credentials in KRaft mode came with Kafka 3.5; the
	// sasl_ssl listener needs them.
	var major, minor int
	if _, err := fmt.Sscanf(r.Version, "%d.%d", &major, &minor); err == nil && (major < 3 || major == 3 && minor < 5) {
		return fmt.Errorf("kafka.version %s: xp runs Kafka in KRaft mode with SCRAM-SHA-512 on the sasl_ssl listener, which needs Kafka 3.5 or later", r.Version)
	}
	// The install script's own checks, on placeholder paths.
	in := kafkaconf.Install{Version: r.Version, URL: r.Distribution, SHA512: r.SHA512, Dir: "/xp", LogDirs: "/xp/data",
		ClusterID: kafkaconf.NewClusterID()}
	if r.Local() {
		// A file on this machine (targetfile checked it when it read the target
		// file); the hosts get it as a file in their directory.
		if !filepath.IsAbs(r.Distribution) {
			return fmt.Errorf("kafka.distribution %q: want an http(s) URL or the absolute path of a release file", r.Distribution)
		}
		in.URL, in.File = "", "/xp/"+release.KafkaArchiveName(r.Version)
	}
	_, err := in.Script()
	return err
}

// kafkaRelease is the release a group's kafka_version asks for. Rows the
// target file has no release of are refused before provisioning
// (tf.Target.CheckRow); this is the Deployer's own guard, so no group ever
// runs a version other than its rows'.
func kafkaRelease(k targetfile.Kafka, target, version string) (KafkaRelease, error) {
	if len(k.Releases) == 0 && k.Distribution != "" {
		k.Releases = []targetfile.KafkaRelease{{Version: k.Version, Distribution: k.Distribution, SHA512: k.SHA512}}
	}
	jvm := KafkaRelease{Heap: k.Heap, JVMFlags: k.JVMFlags}
	if version == "" {
		return KafkaRelease{}, errors.New("remote: the group names no kafka_version")
	}
	r, ok := k.Release(version)
	if !ok {
		if why := k.CheckVersion(target, version); why != "" {
			return KafkaRelease{}, errors.New(why)
		}
		return KafkaRelease{}, fmt.Errorf("remote: no Apache Kafka release of version %s in the target file", version)
	}
	rel := KafkaRelease{Version: r.Version, URL: r.Distribution, SHA512: r.SHA512, Heap: jvm.Heap, JVMFlags: jvm.JVMFlags}
	if r.Local() {
		rel.URL, rel.File = "", r.Distribution
	}
	return rel, nil
}

// startCluster starts the cluster of kafka.distribution: the embedded one,
// or Apache Kafka of the group's kafka_version with one broker per broker
// host and the cluster part of its security surface, sec (which the
// embedded cluster's rows leave at its defaults: ServesSurface).
func (d *Deployer) startCluster(ctx context.Context, dep *Deployment, brokers int, version string, sec KafkaSecurity) (map[string]endpoint.Endpoint, error) {
	k := d.o.Kafka
	if k.Embedded() {
		return dep.StartEmbedded(ctx, brokers)
	}
	rel, err := kafkaRelease(k, d.o.TargetPath, version)
	if err != nil {
		return nil, err
	}
	if n := len(dep.names(planner.RoleBroker)); n != brokers {
		return nil, fmt.Errorf("remote: the rows ask for %d brokers but the machines have %d broker hosts; Apache Kafka runs one broker per broker host", brokers, n)
	}
	return dep.StartKafka(ctx, rel, sec)
}
