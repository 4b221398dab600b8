package localtarget

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xp-bench/xp/infra/endpoint"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/kroxylicious"
	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/infra/local/kafkaproc"
	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/infra/tf"
	"github.com/xp-bench/xp/planner"
)

// kroxy is what the local target needs to run rows of gateway_kind
// kroxylicious: the TARGET.yaml's gateway.kroxylicious, its release
// unpacked in xp's cache and the Java it runs on, all checked when the
// target opens.
type kroxy struct {
	// file is the TARGET.yaml's path, for messages.
	file string
	k    targetfile.Kroxylicious
	rel  kroxylicious.Release
	java kafkaproc.Java
	// javaHome is java's JAVA_HOME (the start script runs
	// $JAVA_HOME/bin/java).
	javaHome string
}

// kroxyHeap is each local Kroxylicious JVM's heap (-Xms and -Xmx): fixed,
// so that its memory does not depend on this machine's, and small beside
// the brokers it shares the machine with.
const kroxyHeap = "512m"

// kroxyJVMFlags are the JAVA_OPTIONS every local Kroxylicious runs with.
var kroxyJVMFlags = kafkaproc.HeapFlags(kroxyHeap)

// kroxyStartTimeout bounds one Kroxylicious's start, until its bootstrap
// answers ApiVersions.
const kroxyStartTimeout = 2 * time.Minute

// openKroxylicious checks what gateway_kind kroxylicious rows will need,
// each error naming the file, the line and the fix: the release (a file or
// a URL downloaded once) matches its sha512, holds Kroxylicious of the
// version named and, for kms inmemory, the in-memory KMS, and is unpacked
// once into xp's cache; java (the brokers' Java: kafka.java, else
// JAVA_HOME, else PATH) is new enough for it.
func openKroxylicious(ctx context.Context, file string, k targetfile.Kroxylicious, java kafkaproc.Java, getenv func(string) string) (*kroxy, error) {
	rel, err := kroxylicious.Prepare(ctx, tf.CacheDir(getenv), k.URL, k.SHA512)
	if err != nil {
		return nil, fmt.Errorf("%s: gateway.kroxylicious: %w", k.Where(file, "url"), err)
	}
	if rel.Version != k.Version {
		return nil, fmt.Errorf("%s: gateway.kroxylicious.version %s, but %s holds Kroxylicious %s: correct version",
			k.Where(file, "version"), k.Version, k.URL, rel.Version)
	}
	if k.KMS == targetfile.KMSInMemory && !rel.InMemoryKMS {
		return nil, fmt.Errorf("%s: gateway.kroxylicious: kms inmemory, but %s has no libs/kroxylicious-kms-provider-kroxylicious-inmemory-*.jar (make kroxylicious-dist assembles a release with it)",
			k.Where(file, "kms"), k.URL)
	}
	if need := rel.MinJava(); java.Major < need {
		return nil, fmt.Errorf("%s: gateway.kroxylicious: Kroxylicious %s needs Java %d or later, but %s is Java %d (%s): install Java %d or later (Debian: apt-get install openjdk-%d-jre-headless) and name it with kafka.java or JAVA_HOME",
			k.Where(file, "url"), rel.Version, need, java.Path, java.Major, java.Version, need, need)
	}
	real, err := filepath.EvalSymlinks(java.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: gateway.kroxylicious: java %s: %w", k.Where(file, "url"), java.Path, err)
	}
	return &kroxy{file: file, k: k, rel: rel, java: java, javaHome: filepath.Dir(filepath.Dir(real))}, nil
}

// checkRow refuses a kroxylicious row the local target cannot run: a mode
// Kroxylicious has no filter for, encrypt without a KMS or on Vault (which
// the local target does not run), gateway_crypto fast (xp's gateway's).
func (x *kroxy) checkRow(r *planner.Row) error {
	if why := (targetfile.Gateway{Kroxylicious: &x.k}).CheckGatewayKind(r.GatewayKind, r.Security); why != "" {
		return fmt.Errorf("%s: %s", x.k.Where(x.file, ""), why)
	}
	if r.Security == planner.SecurityEncrypt && x.k.KMS != targetfile.KMSInMemory {
		key := "kms"
		if x.k.Lines[key] == 0 {
			key = "vault" // implies kms vault
		}
		return fmt.Errorf("%s: gateway_kind kroxylicious with security encrypt: the local target runs Kroxylicious's in-memory KMS only; set kms: inmemory (kms vault runs on gateway hosts)",
			x.k.Where(x.file, key))
	}
	if r.GatewayCrypto == planner.GatewayCryptoFast {
		return errors.New("gateway_crypto fast is xp's builtin gateway's record layer; Kroxylicious runs the JDK's TLS and AES-GCM: remove gateway_crypto from kroxylicious rows")
	}
	return nil
}

// info is the provenance of a gateway of mode security.
func (x *kroxy) info(security string) *endpoint.GatewayInfo {
	g := &endpoint.GatewayInfo{Kind: planner.GatewayKindKroxylicious, Version: x.rel.Version, Java: x.java.String(), JVMFlags: kroxyJVMFlags}
	if security == planner.SecurityEncrypt {
		g.KMS = x.k.KMS
	}
	return g
}

// kroxyProc is one running Kroxylicious of the group.
type kroxyProc struct {
	// name is the gateway's name (its ModeKey, with -I for the I-th of
	// several); host its telemetry host, kroxylicious-NAME.
	name, host string
	proc       *kroxylicious.Process
	// log is the file its output goes to.
	log string
}

// kroxyInstance is one Kroxylicious to start: a gateway of mode key.
type kroxyInstance struct {
	key, name string
	row       planner.Row
}

// startKroxyliciousGateways starts Kroxylicious, one process per distinct
// gateway ModeKey of rows, row.Gateways of them (each a JVM of its own,
// as separate gateway machines would be), every one in front of the
// direct mode of the row's gateway_transport, its client leg on loopback
// with that mode's TLS and SASL, and adds the key to ep with every
// gateway's bootstrap address. Encrypt gateways run the Record
// Encryption filter on the in-memory KMS with one KEK made for the group
// (every gateway holds it, so any of them decrypts what another
// encrypted). A Kroxylicious that exits at start-up, or is not ready in
// time, fails the start with the end of its log; the others are stopped.
func (t *Target) startKroxyliciousGateways(ctx context.Context, rows []planner.Row, up upstream, ep target.Endpoints) error {
	x := t.kroxy
	if x == nil {
		return errors.New("local target: gateway_kind kroxylicious: the target has no gateway.kroxylicious section")
	}
	for _, r := range rows {
		if !r.NeedsGateway() {
			continue
		}
		if err := x.checkRow(&r); err != nil {
			return fmt.Errorf("local target: %w", err)
		}
	}
	insts, keys, encrypts := kroxyInstances(rows)
	if len(insts) == 0 {
		return nil
	}
	ca, err := pki.New(filepath.Join(up.Dir, local.PKIDir))
	if err != nil {
		return fmt.Errorf("local target: kroxylicious: %w", err)
	}
	var kms kroxylicious.KMS
	if encrypts {
		kek, err := kroxylicious.NewKEK(kroxylicious.DefaultKEK)
		if err != nil {
			return err
		}
		kms.InMemory = &kroxylicious.InMemory{Alias: kek.Alias, KEKs: []kroxylicious.KEK{kek}}
	}
	bootstraps, err := t.startKroxies(ctx, insts, up, ca, kms)
	if err != nil {
		return err
	}
	for _, key := range keys {
		e, err := x.modeEndpoint(key, insts, bootstraps, up)
		if err != nil {
			return err
		}
		ep.Modes[key] = e
	}
	return nil
}

// kroxyInstances are the Kroxylicious gateways of rows: for each distinct
// gateway ModeKey, in order of first appearance (keys), row.Gateways of
// them, named as the key, or KEY-I for the I-th of several; encrypts
// when a key is of the encrypt mode.
func kroxyInstances(rows []planner.Row) (insts []kroxyInstance, keys []string, encrypts bool) {
	seen := map[string]bool{}
	for _, r := range rows {
		if !r.NeedsGateway() {
			continue
		}
		key := target.ModeKey(&r)
		if seen[key] {
			continue
		}
		seen[key] = true
		keys = append(keys, key)
		encrypts = encrypts || r.Security == planner.SecurityEncrypt
		n := max(r.Gateways, 1)
		for i := 1; i <= n; i++ {
			name := key
			if n > 1 {
				name = fmt.Sprintf("%s-%d", key, i)
			}
			insts = append(insts, kroxyInstance{key: key, name: name, row: r})
		}
	}
	return insts, keys, encrypts
}

// startKroxies starts every instance at once and returns their bootstrap
// addresses by name. Every one that started joins t's gateways, to be
// stopped with them, even when others failed.
func (t *Target) startKroxies(ctx context.Context, insts []kroxyInstance, up upstream, ca *pki.Authority, kms kroxylicious.KMS) (map[string]string, error) {
	type started struct {
		p         *kroxyProc
		bootstrap string
		err       error
	}
	res := make([]started, len(insts))
	var wg sync.WaitGroup
	for i, in := range insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i].p, res[i].bootstrap, res[i].err = t.kroxy.start(ctx, in, up, ca, kms)
		}()
	}
	wg.Wait()
	var errs []error
	bootstraps := map[string]string{}
	for i, r := range res {
		if r.err != nil {
			errs = append(errs, fmt.Errorf("local target: kroxylicious gateway %s: %w", insts[i].name, r.err))
			continue
		}
		t.kroxies = append(t.kroxies, r.p)
		bootstraps[insts[i].name] = r.bootstrap
	}
	return bootstraps, errors.Join(errs...)
}

// modeEndpoint is the endpoint of gateway mode key: every one of its
// gateways' bootstraps, and a client config, written into up.Dir, that is
// the fronted direct mode's with those bootstraps.
func (x *kroxy) modeEndpoint(key string, insts []kroxyInstance, bootstraps map[string]string, up upstream) (endpoint.Endpoint, error) {
	var r planner.Row
	e := endpoint.Endpoint{}
	for _, in := range insts {
		if in.key == key {
			r = in.row
			e.Bootstrap = append(e.Bootstrap, bootstraps[in.name])
		}
	}
	direct := up.Modes[transport(&r)]
	props, err := kafkaconf.ReadClientConfig(direct.ClientConfig)
	if err != nil {
		return endpoint.Endpoint{}, err
	}
	// Every gateway of a key takes the same client settings; the
	// bootstrap list names them all.
	props[kafkaconf.BootstrapServers] = strings.Join(e.Bootstrap, ",")
	e.ClientConfig = filepath.Join(up.Dir, "kroxylicious-"+key+".properties")
	if err := kafkaconf.WriteClientConfig(e.ClientConfig, props); err != nil {
		return endpoint.Endpoint{}, err
	}
	e.Gateway = x.info(r.Security)
	return e, nil
}

// transport is the direct mode a gateway row fronts (its
// gateway_transport, tls by default).
func transport(r *planner.Row) string {
	if r.GatewayTransport == "" {
		return planner.DefaultGatewayTransport
	}
	return r.GatewayTransport
}

// kroxyPortTries is how often a Kroxylicious that lost one of its ports
// to another process (between xp finding them free and the JVM binding
// them) is started again on others.
const kroxyPortTries = 3

// start renders in's config into up.Dir/kroxylicious/NAME/ (0600, with
// the gateway's certificate from ca for 127.0.0.1, of the row's tls_key,
// and its client leg narrowed to the row's tls_version and tls_cipher)
// and starts it, its
// output in kroxylicious.log there; it returns once the bootstrap answers
// ApiVersions over the client leg's TLS.
func (x *kroxy) start(ctx context.Context, in kroxyInstance, up upstream, ca *pki.Authority, kms kroxylicious.KMS) (*kroxyProc, string, error) {
	tr := transport(&in.row)
	direct, ok := up.Modes[tr]
	if !ok || direct.Upstream != nil {
		return nil, "", fmt.Errorf("gateway_transport %q is not a direct mode of the cluster", tr)
	}
	props, err := kafkaconf.ReadClientConfig(direct.ClientConfig)
	if err != nil {
		return nil, "", err
	}
	readyTLS, err := kafkaconf.TLSConfig(props)
	if err != nil {
		return nil, "", err
	}
	dir := filepath.Join(up.Dir, "kroxylicious", in.name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	const host = "127.0.0.1"
	gt := gatewayTLS(&in.row)
	cert, key, err := ca.GatewayWithKey("kroxylicious-"+in.name, gt.Key, host)
	if err != nil {
		return nil, "", err
	}
	s := kroxylicious.Setup{Version: x.rel.Version, Name: in.name, Host: host, Brokers: up.Brokers, FirstNodeID: up.FirstNodeID,
		Upstream: direct.Bootstrap, Transport: tr, CA: ca.CAPath(), Cert: cert, Key: key, Mode: in.row.Security,
		TLS: kafkaconf.TLSChoice{Version: gt.Version, Cipher: gt.Cipher}}
	if s.Mode == planner.SecurityEncrypt {
		s.KMS = kms
	}
	cfgPath, logPath := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "kroxylicious.log")
	for try := 1; ; try++ {
		// The bootstrap port and one per broker, consecutive
		// (portIdentifiesNode), then the management port.
		base, err := freePortRun(host, up.Brokers+2)
		if err != nil {
			return nil, "", err
		}
		s.Port, s.ManagementPort = base, base+up.Brokers+1
		cfg, err := kroxylicious.Config(s)
		if err != nil {
			return nil, "", err
		}
		if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
			return nil, "", err
		}
		log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, "", err
		}
		bootstrap := net.JoinHostPort(host, strconv.Itoa(s.Port))
		p, err := kroxylicious.Start(ctx, kroxylicious.Options{Home: x.rel.Home, Config: cfgPath, JavaHome: x.javaHome,
			JavaOptions: strings.Join(kroxyJVMFlags, " "), Log: log, Ready: bootstrap, ReadyTLS: readyTLS, Timeout: kroxyStartTimeout})
		if err == nil {
			// The JVM holds its own descriptor of the log.
			log.Close()
			return &kroxyProc{name: in.name, host: "kroxylicious-" + in.name, proc: p, log: logPath}, bootstrap, nil
		}
		log.Close()
		var se *kroxylicious.StartError
		if try < kroxyPortTries && errors.As(err, &se) && se.Exited && strings.Contains(se.Log, "Address already in use") && ctx.Err() == nil {
			continue
		}
		return nil, "", err
	}
}

// freePortRun finds n consecutive ports free on host: the first picked by
// the kernel, kept when the n-1 after it bind too. The sockets are closed
// before Kroxylicious binds, so another process may take one in between;
// start tries again then.
func freePortRun(host string, n int) (int, error) {
	for try := 0; try < 100; try++ {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return 0, err
		}
		held := []net.Listener{ln}
		base := ln.Addr().(*net.TCPAddr).Port
		ok := base+n <= 65535
		for p := base + 1; ok && p < base+n; p++ {
			l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
			if err != nil {
				ok = false
				break
			}
			held = append(held, l)
		}
		for _, l := range held {
			l.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, fmt.Errorf("local target: no %d consecutive free ports on %s", n, host)
}
