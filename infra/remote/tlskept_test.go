package remote

import (
	"context"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/internal/netnstest"
	"github.com/xp-bench/xp/planner"
)

// opensslTLS12 holds OpenSSL's clients (kcat's librdkafka) to TLS 1.2.
const opensslTLS12 = `openssl_conf = xp_conf
[xp_conf]
ssl_conf = xp_ssl
[xp_ssl]
system_default = xp_tls12
[xp_tls12]
MaxProtocol = TLSv1.2
`

// Deployment.TLSKept counts, through each host's SSH connection (the
// gateways' metrics listen on their hosts' loopback), the TLS legs
// crypto/tls kept in crypto fast gateways: in the embedded cluster on the
// broker host of a group without gateway hosts, then on the gateway host
// of one with a gateway host. kcat on the client host, held to TLS 1.2,
// asks the gateway for metadata in between two readings.
func TestTLSKeptOnNamespaceHosts(t *testing.T) {
	bin := buildXP(t)
	n := netnstest.New(t, 3)
	log := &syncBuf{}
	pool := sshPool(t, n, log)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	host := func(i int, role string) Host {
		h := n.Hosts[i]
		return Host{Name: fmt.Sprintf("%s-%d", role, i), Role: role, SSH: h.SSHAddr(), Private: h.Addr}
	}
	deploy := func(t *testing.T, campaign string, hosts ...Host) *Deployment {
		d, err := Deploy(ctx, Options{Campaign: campaign, Hosts: hosts, Pool: pool, Binary: bin, Log: log})
		if err != nil {
			t.Fatalf("%v\nlog:\n%s", err, log.String())
		}
		t.Cleanup(func() { d.Teardown(context.Background()) })
		if _, err := d.StartEmbedded(ctx, 1); err != nil {
			t.Fatalf("%v\nlog:\n%s", err, log.String())
		}
		return d
	}
	// kept runs kcat held to TLS 1.2 against key's gateway between two
	// readings of its counters and checks what they counted.
	kept := func(t *testing.T, d *Deployment, key string) {
		client := d.hosts["client-2"]
		conf := path.Join(client.dir, "openssl-tls12.cnf")
		if err := client.c.WriteFile(ctx, conf, []byte(opensslTLS12), 0o600); err != nil {
			t.Fatal(err)
		}
		before, err := d.TLSKept(ctx, key)
		if err != nil {
			t.Fatalf("%v\nlog:\n%s", err, log.String())
		}
		out, err := client.c.Output(ctx, fmt.Sprintf("OPENSSL_CONF=%s /usr/bin/kcat -F %s -L -m 10",
			ssh.Quote(conf), ssh.Quote(d.modes[key].ClientConfig)))
		if err != nil {
			t.Fatalf("kcat on the client host: %v\n%s", err, out)
		}
		after, err := d.TLSKept(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		k := after.Since(before)
		if n := k[gateway.LegClient]["not_tls13_aesgcm"]; n < 1 || k.Total() != n {
			t.Errorf("%s: legs kept %v (before %v, after %v), want client:not_tls13_aesgcm >= 1 and nothing else", key, k, before, after)
		}
	}

	t.Run("embedded cluster on the broker host", func(t *testing.T) {
		d := deploy(t, "c1", host(0, planner.RoleBroker), host(2, planner.RoleClient))
		kept(t, d, "encrypt.fast")
		if _, err := d.TLSKept(ctx, "proxy"); err != nil {
			t.Errorf("proxy (std): %v", err)
		}
		if _, err := d.TLSKept(ctx, "nope"); err == nil || !strings.Contains(err.Error(), "no xp gateway with metrics serves nope") {
			t.Errorf("an unknown mode key: %v", err)
		}
	})
	t.Run("gateway host", func(t *testing.T) {
		d := deploy(t, "c2", host(0, planner.RoleBroker), host(1, planner.RoleGateway), host(2, planner.RoleClient))
		modes, err := d.StartGateways(ctx, []GatewaySpec{{Key: "proxy.fast", Security: "proxy", Transport: "tls", Crypto: "fast"}}, 1)
		if err != nil {
			t.Fatalf("%v\nlog:\n%s", err, log.String())
		}
		if m := modes["proxy.fast"]; !strings.HasPrefix(strings.Join(m.Bootstrap, ","), n.Hosts[1].Addr+":") || m.Crypto == nil || m.Crypto.RecordLayer != gateway.RecordLayerTLSRec {
			t.Fatalf("proxy.fast: %+v, want tlsrec on the gateway host", m)
		}
		kept(t, d, "proxy.fast")
		// The broker host serves only the direct modes here.
		if _, err := d.TLSKept(ctx, "encrypt.fast"); err == nil {
			t.Error("encrypt.fast, served nowhere in this group, was read")
		}
		// The CA is this machine's: hosts get certificates and their own
		// keys, never the CA's, and the ones the broker host was given
		// serve mutual TLS.
		for _, h := range d.hosts {
			out, err := h.c.Output(ctx, "find "+ssh.Quote(path.Dir(h.dir))+" -name "+pki.CAKeyFile)
			if err != nil || strings.TrimSpace(string(out)) != "" {
				t.Errorf("%s: the CA's key: %q (%v)", h.Name, out, err)
			}
		}
		if d.ca == nil || !d.ca.CanSign() {
			t.Error("no authority that can sign on this machine")
		}
		client := d.hosts["client-2"]
		if out, err := client.c.Output(ctx, "/usr/bin/kcat -F "+ssh.Quote(d.modes["mtls"].ClientConfig)+" -L -m 10"); err != nil || !strings.Contains(string(out), "broker") {
			t.Errorf("kcat over mtls with the certificates made on this machine: %v\n%s", err, out)
		}
	})
}
