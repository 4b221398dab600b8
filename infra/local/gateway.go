package local

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/xp-bench/xp/infra/endpoint"
	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/planner"
)

// GatewayOptions configure StartGateway.
type GatewayOptions struct {
	// Name is the mode registered in Modes(); default "proxy".
	Name string
	// Transport is the security of both legs, a direct mode name:
	// plaintext, tls (default), mtls or sasl_ssl (the plan row's
	// gateway_transport). The gateway fronts that direct mode: clients
	// connect to it as they would to the direct mode (same CA, client
	// certificate, SASL user) and, for sasl_ssl, their SASL is relayed to
	// the cluster.
	Transport string
	// Filters change records (the encrypting modes); none for proxy.
	Filters []gateway.RecordFilter
	// Crypto is the gateway's crypto: std (default) or fast (the plan
	// row's gateway_crypto).
	Crypto string
	// TLS is the client leg's TLS: a plan row's tls_version, tls_cipher
	// (narrowing the gateway's listener) and tls_key (its certificate's
	// key); zero for the defaults.
	TLS GatewayTLS
	// Logger receives the gateway's log; default discard.
	Logger *slog.Logger
}

// GatewayTLS is a gateway's client-leg TLS, by a plan row's names:
// Version (tls_version), Cipher (tls_cipher) and Key (tls_key, the key
// of the certificate the gateway serves with); "" for each default.
type GatewayTLS struct {
	Version string `json:"version,omitempty"`
	Cipher  string `json:"cipher,omitempty"`
	Key     string `json:"key,omitempty"`
}

// StartGateway starts xp's gateway in front of c and registers it as a
// mode: Bootstrap is the gateway, ClientConfig a client config file for it
// (<dir>/<name>.properties, 0600), Upstream the direct mode behind it. The
// gateway serves until ctx is done or the caller closes it; close it before
// the cluster.
func StartGateway(ctx context.Context, c *Cluster, o GatewayOptions) (*gateway.Gateway, error) {
	if o.Name == "" {
		o.Name = planner.SecurityProxy
	}
	if o.Transport == "" {
		o.Transport = planner.SecurityTLS
	}
	direct, ok := c.Modes()[o.Transport]
	if !ok || direct.Upstream != nil {
		return nil, fmt.Errorf("local: gateway transport %q: want one of %s", o.Transport, strings.Join(planner.DirectModes(), ", "))
	}
	props, err := kafkaconf.ReadClientConfig(direct.ClientConfig)
	if err != nil {
		return nil, err
	}
	host := c.Host()
	cert, key, err := c.Authority().GatewayWithKey(GatewayCertName(o.Name), o.TLS.Key, host)
	if err != nil {
		return nil, err
	}
	cfg := GatewayConfig(GatewaySetup{Host: host, Transport: o.Transport, Upstream: direct.Bootstrap,
		CA: c.Authority().CAPath(), Cert: cert, Key: key, Crypto: o.Crypto, TLSVersion: o.TLS.Version, TLSCipher: o.TLS.Cipher})
	cfg.Filters = o.Filters
	var opts []gateway.Option
	if o.Logger != nil {
		opts = append(opts, gateway.WithLogger(o.Logger))
	}
	g, err := gateway.Start(ctx, cfg, opts...)
	if err != nil {
		return nil, fmt.Errorf("local: %s gateway: %w", o.Name, err)
	}
	props[kafkaconf.BootstrapServers] = g.Bootstrap()
	path := filepath.Join(c.Dir(), o.Name+".properties")
	if err := kafkaconf.WriteClientConfig(path, props); err != nil {
		g.Close()
		return nil, err
	}
	up := direct
	info := g.Crypto()
	if err := c.AddMode(o.Name, endpoint.Endpoint{Bootstrap: []string{g.Bootstrap()}, ClientConfig: path, Upstream: &up, Crypto: &info,
		Metrics: g.MetricsURL()}); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// GatewaySetup is what a gateway in front of a cluster's direct mode needs:
// the local target and remote gateway hosts render their configs from it.
type GatewaySetup struct {
	// Host is the address the gateway listens on and advertises.
	Host string
	// Transport is the direct mode fronted (both legs): plaintext, tls,
	// mtls or sasl_ssl.
	Transport string
	// Upstream is that direct mode's bootstrap (the brokers' listener).
	Upstream []string
	// CA, Cert and Key: the cluster's CA and the gateway's certificate
	// (pki.Authority.Gateway), paths as the gateway sees them.
	CA, Cert, Key string
	// Crypto is std (default) or fast.
	Crypto string
	// TLSVersion and TLSCipher narrow the client leg (gateway.Client's
	// tls_version and tls_cipher); "" for the defaults.
	TLSVersion, TLSCipher string
}

// GatewayConfig renders the gateway config for s: ports picked free, the
// client leg as the direct mode's (its certificate, and the CA verifying
// client certificates for mtls) narrowed to s's TLS version and cipher,
// the broker leg over TLS verified by the CA unless plaintext
// (presenting the gateway's certificate for mtls), metrics on a free
// loopback port.
func GatewayConfig(s GatewaySetup) *gateway.Config {
	zero := 0
	cfg := &gateway.Config{
		Listen:  gateway.Listen{Host: s.Host, BootstrapPort: &zero, NodePortBase: &zero},
		Client:  gateway.Client{Transport: s.Transport},
		Metrics: gateway.Metrics{Listen: "127.0.0.1:0"},
		Upstream: gateway.Upstream{
			Bootstrap: s.Upstream,
			Transport: planner.SecurityPlaintext,
		},
		Crypto: s.Crypto,
	}
	if s.Transport != planner.SecurityPlaintext {
		cfg.Client.Cert, cfg.Client.Key = s.Cert, s.Key
		cfg.Client.TLSVersion, cfg.Client.TLSCipher = s.TLSVersion, s.TLSCipher
		cfg.Upstream.Transport, cfg.Upstream.CA = planner.SecurityTLS, s.CA
	}
	if s.Transport == planner.SecurityMTLS {
		cfg.Client.CA = s.CA
		cfg.Upstream.Transport, cfg.Upstream.Cert, cfg.Upstream.Key = planner.SecurityMTLS, s.Cert, s.Key
	}
	return cfg
}
