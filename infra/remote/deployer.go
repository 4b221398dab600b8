package remote

import (
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/xp-bench/xp/infra/endpoint"
	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/infra/tf"
	"github.com/xp-bench/xp/planner"
)

// DeployerOptions configure a Deployer.
type DeployerOptions struct {
	// Campaign names the directory on every host.
	Campaign string
	// SSH and Kafka are the TARGET.yaml's sections.
	SSH   targetfile.SSH
	Kafka targetfile.Kafka
	// Gateway is the TARGET.yaml's gateway: section; TargetPath the
	// file, named in errors about it.
	Gateway    targetfile.Gateway
	TargetPath string
	// KnownHosts is the campaign's known_hosts file (by convention the
	// campaign db's path + ".known_hosts"): the keys known_hosts: strict
	// accepts, and the file of machines whose inventory has no working
	// directory (tf.Inventory.Dir). Under accept-new a group's keys are
	// kept in its working directory (known_hosts) and go with the group,
	// so a later group on a recycled address starts afresh while a key
	// changed within a group is refused.
	KnownHosts string
	// Binary is the xp binary to upload; default this one.
	Binary string
	// Log is the campaign log; nil discards.
	Log io.Writer
	// WorkDir is the run's work directory (Options.WorkDir).
	WorkDir string
}

// Deployer configures the machines Terraform made (tf.Deployer): xp on
// every host, the cluster on the brokers, client files on the clients.
type Deployer struct {
	o DeployerOptions

	mu   sync.Mutex
	pool *ssh.Pool
	// user the pool logs in as, knownHosts the file it checks keys in,
	// retries its dial retries (0: the default).
	user, knownHosts string
	retries          int
	dep              *Deployment
	// last is the latest deployment, kept after Undeploy for Remove.
	last *Deployment
	// tel streams every host's counters while a deployment is up.
	tel *Telemetry
}

var (
	_ tf.Deployer = (*Deployer)(nil)
	_ tf.Remover  = (*Deployer)(nil)
)

// NewDeployer checks the options; it connects to nothing.
func NewDeployer(o DeployerOptions) (*Deployer, error) {
	if err := checkKafka(o.Kafka); err != nil {
		return nil, err
	}
	if o.KnownHosts == "" {
		return nil, errors.New("remote: no known_hosts file for the campaign")
	}
	if c := o.Gateway.Command; c != nil {
		if err := CheckCommand(c, o.TargetPath); err != nil {
			return nil, err
		}
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return &Deployer{o: o}, nil
}

// Hosts turns an inventory into the hosts to deploy to, every role in
// tf.Roles order.
func Hosts(inv *tf.Inventory) []Host {
	var out []Host
	for _, role := range tf.Roles {
		for _, h := range inv.Hosts.Role(role) {
			port := h.SSHPort
			if port == 0 {
				port = 22
			}
			priv := h.PrivateAddress
			if priv == "" {
				priv = h.PublicAddress
			}
			out = append(out, Host{Name: h.Name, Role: role, SSH: net.JoinHostPort(h.PublicAddress, strconv.Itoa(port)),
				Private: priv, InstanceType: inv.InstanceTypes[role]})
		}
	}
	return out
}

// Deploy installs xp on every machine of inv, starts the cluster the rows
// of g need and returns its modes as endpoints; client configs are paths
// on the client hosts.
func (d *Deployer) Deploy(ctx context.Context, g target.Group, inv *tf.Inventory) (target.Endpoints, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	hosts := Hosts(inv)
	wait := d.o.SSH.Wait
	if wait <= 0 {
		wait = DefaultSSHWait
	}
	dep, err := d.install(ctx, inv, wait)
	if err != nil {
		return target.Endpoints{}, err
	}
	if d.tel != nil {
		d.tel.Stop()
		d.tel = nil
	}
	if d.last != nil && d.last != dep {
		// Its authority's key, on this machine, goes with it.
		d.last.setAuthority(nil, "")
	}
	d.dep, d.last = dep, dep
	sec := KafkaSecurity{ClusterSecurity: g.Key.Security}
	for _, r := range g.Rows {
		sec.GSSAPI = sec.GSSAPI || r.SASLMechanism == planner.SASLGSSAPI
		sec.OAuth = sec.OAuth || r.SASLMechanism == planner.SASLOAuthBearer
	}
	modes, err := d.startCluster(ctx, dep, g.Key.Brokers, g.Key.KafkaVersion, sec)
	if err != nil {
		return target.Endpoints{}, err
	}
	// With gateway hosts, the rows' gateway modes run there, in front of
	// the cluster, instead of inside the cluster's process.
	specs := GatewaySpecs(g.Rows, target.ModeKey)
	var gws map[string]endpoint.Endpoint
	switch g.Key.GatewayKind {
	case planner.GatewayKindCommand:
		gws, err = dep.StartCommandGateways(ctx, d.o.Gateway.Command, d.o.TargetPath, specs, g.Key.Gateways)
	case planner.GatewayKindKroxylicious:
		gws, err = dep.StartKroxylicious(ctx, d.o.Gateway.Kroxylicious, d.o.TargetPath, specs, g.Key.Gateways)
	default:
		gws, err = dep.StartGateways(ctx, specs, g.Key.Gateways)
	}
	if err != nil {
		return target.Endpoints{}, err
	}
	for k, m := range gws {
		modes[k] = m
	}
	d.tel = dep.StartTelemetry(context.WithoutCancel(ctx))
	ep := target.Endpoints{Modes: map[string]endpoint.Endpoint{}}
	maps.Copy(ep.Modes, modes)
	for _, s := range specs {
		if e, ok := ep.Modes[s.Key]; ok {
			e.Gateway = d.gatewayInfo(g.Key.GatewayKind, s)
			ep.Modes[s.Key] = e
		}
	}
	for _, h := range hosts {
		ep.Hosts = append(ep.Hosts, h.Name)
	}
	return ep, nil
}

// gatewayInfo names the gateway of kind that serves spec's mode (the
// embedded cluster's own gateway modes, without gateway hosts, are xp's).
func (d *Deployer) gatewayInfo(kind string, s GatewaySpec) *endpoint.GatewayInfo {
	switch kind {
	case planner.GatewayKindKroxylicious:
		k := d.o.Gateway.Kroxylicious
		info := &endpoint.GatewayInfo{Kind: planner.GatewayKindKroxylicious, Version: k.Version}
		if s.Security == planner.SecurityEncrypt {
			info.KMS = k.KMS
		}
		return info
	case planner.GatewayKindCommand:
		return &endpoint.GatewayInfo{Kind: planner.GatewayKindCommand, Start: d.o.Gateway.Command.Start}
	}
	crypto := s.Crypto
	if crypto == "" {
		crypto = planner.GatewayCryptoStd
	}
	return &endpoint.GatewayInfo{Kind: planner.GatewayKindBuiltin, Crypto: crypto}
}

// DefaultSSHWait is how long Deploy waits for a group's machines to answer
// over SSH when the target file's ssh.wait does not say.
const DefaultSSHWait = 5 * time.Minute

// install connects to every machine of inv (waiting up to wait for them
// when positive), installs xp and stops the services an earlier xp left
// running there. d.mu is held (as for leftovers and connect).
func (d *Deployer) install(ctx context.Context, inv *tf.Inventory, wait time.Duration) (*Deployment, error) {
	return d.connect(ctx, inv, wait, false)
}

// leftovers reaches what an earlier xp left on inv's machines (Options.Leftovers).
func (d *Deployer) leftovers(ctx context.Context, inv *tf.Inventory) (*Deployment, error) {
	return d.connect(ctx, inv, 0, true)
}

// connect is install, or leftovers when leftovers is set.
func (d *Deployer) connect(ctx context.Context, inv *tf.Inventory, wait time.Duration, leftovers bool) (*Deployment, error) {
	user := d.o.SSH.User
	if user == "" {
		user = inv.SSHUser
	}
	// accept-new learns a group's keys in its own file; strict checks
	// them against the keys the operator put in the campaign's file.
	knownHosts := d.o.KnownHosts
	if inv.Dir != "" && d.o.SSH.KnownHosts != targetfile.KnownHostsStrict {
		knownHosts = filepath.Join(inv.Dir, "known_hosts")
	}
	// Leftovers are looked for with fewer tries: a host that does not
	// answer is only a warning of xp infra down, not worth minutes.
	retries := 0 // the pool's default
	if leftovers {
		retries = 2
	}
	if d.pool == nil || d.user != user || d.knownHosts != knownHosts || d.retries != retries {
		if d.pool != nil {
			d.pool.Close()
		}
		pol, err := ssh.ParsePolicy(d.o.SSH.KnownHosts)
		if err != nil {
			return nil, err
		}
		p, err := ssh.NewPool(ssh.Config{User: user, PrivateKey: d.o.SSH.PrivateKey, KnownHosts: knownHosts,
			Policy: pol, KeepaliveInterval: d.o.SSH.Keepalive, Log: d.o.Log, Retries: retries})
		if err != nil {
			return nil, err
		}
		d.pool, d.user, d.knownHosts, d.retries = p, user, knownHosts, retries
	}
	return Deploy(ctx, Options{Campaign: d.o.Campaign, Hosts: Hosts(inv), Pool: d.pool, Binary: d.o.Binary, Log: d.o.Log, Wait: wait, WorkDir: d.o.WorkDir,
		Leftovers: leftovers})
}

// StopLeftovers stops every service xp left running on the machines of
// inv (an xp run killed before its teardown), starting and uploading
// nothing: xp infra down calls it before destroying the machines. Only
// hosts that hold xp's binary in the campaign's directory are touched;
// unreachable lists the hosts it could not reach ("NAME (ADDR): why"),
// which are no error: the destroy takes them down all the same.
func (d *Deployer) StopLeftovers(ctx context.Context, inv *tf.Inventory) (unreachable []string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dep, err := d.leftovers(ctx, inv)
	if err != nil {
		return nil, err
	}
	return dep.Unreachable(), dep.stopAgents(ctx)
}

// Remove stops every service of the latest deployment, also one
// undeployed, and removes the campaign's directory from its machines
// (tf.Remover): machines that outlive their group (the hosts platform)
// keep no key, password or binary of the campaign.
func (d *Deployer) Remove(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tel != nil {
		d.tel.Stop()
		d.tel = nil
	}
	if d.last == nil {
		return nil
	}
	err := d.last.Remove(ctx)
	d.dep, d.last = nil, nil
	return err
}

// RemoveLeftovers is Remove for the machines of inv, which another xp
// deployed (xp infra down on the hosts platform), with StopLeftovers'
// rules: nothing uploaded, hosts without the campaign's binary left
// alone, unreachable hosts listed rather than failing.
func (d *Deployer) RemoveLeftovers(ctx context.Context, inv *tf.Inventory) (unreachable []string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dep, err := d.leftovers(ctx, inv)
	if err != nil {
		return nil, err
	}
	return dep.Unreachable(), dep.Remove(ctx)
}

// Deployment is the deployment of the last Deploy, nil before one.
func (d *Deployer) Deployment() *Deployment {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dep
}

// Modes lists the modes the embedded cluster serves.
func (d *Deployer) Modes() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dep == nil {
		return nil
	}
	var out []string
	for k := range d.dep.modes {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Undeploy stops every service xp started on the hosts; the machines and
// the uploaded binary stay (the next Deploy reuses them).
func (d *Deployer) Undeploy(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tel != nil {
		d.tel.Stop()
		d.tel = nil
	}
	if d.dep == nil {
		return nil
	}
	err := d.dep.Teardown(ctx)
	d.dep = nil
	return err
}

// Close closes the SSH connections.
func (d *Deployer) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pool == nil {
		return nil
	}
	err := d.pool.Close()
	d.pool = nil
	return err
}
