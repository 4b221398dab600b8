package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/xp-bench/xp/infra/endpoint"
	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/gateway/encrypt"
	"github.com/xp-bench/xp/infra/gateway/envelope"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// GatewayReady is what `xp gateway --ready-file` writes once it serves.
type GatewayReady struct {
	Bootstrap string             `json:"bootstrap"`
	Metrics   string             `json:"metrics"`
	Crypto    gateway.CryptoInfo `json:"crypto"`
}

// GatewaySpec is one gateway mode served from the gateway hosts.
type GatewaySpec struct {
	// Key is the mode key (target.ModeKey) it is served under.
	Key string
	// Security is proxy, encrypt or field_encrypt; Transport the direct
	// mode fronted (both legs); Encoding field_encrypt's record encoding
	// (json, avro or protobuf); Fields the fields it encrypts (default
	// ssn); Cipher aead (or "") or fpe; Crypto std or fast.
	Security, Transport, Encoding string
	Fields                        []string
	Cipher                        string
	Crypto                        string
	// TLSVersion, TLSCipher and TLSKey are the client leg's TLS, the
	// rows' tls_version, tls_cipher and tls_key ("" for each default, and
	// for a plaintext client leg): the gateway's listener is narrowed to
	// them and its certificate has that key, as on the local target.
	TLSVersion, TLSCipher, TLSKey string
}

// GatewaySpecs returns the gateway modes rows run through, one per mode
// key, sorted by key.
func GatewaySpecs(rows []planner.Row, modeKey func(*planner.Row) string) []GatewaySpec {
	seen := map[string]bool{}
	var out []GatewaySpec
	for i := range rows {
		r := &rows[i]
		if !r.NeedsGateway() {
			continue
		}
		enc := r.Encoding
		if enc == "" {
			enc = planner.DefaultFieldEncoding
		}
		k := modeKey(r)
		if seen[k] {
			continue
		}
		seen[k] = true
		tr := r.GatewayTransport
		if tr == "" {
			tr = planner.DefaultGatewayTransport
		}
		s := GatewaySpec{Key: k, Security: r.Security, Transport: tr, Encoding: enc,
			Fields: r.EncryptFields, Cipher: r.FieldCipher, Crypto: r.GatewayCrypto}
		if tr != planner.SecurityPlaintext {
			c := r.ClusterSecurity()
			s.TLSVersion, s.TLSCipher, s.TLSKey = c.TLSVersion, c.TLSCipher, c.TLSKey
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b GatewaySpec) int { return strings.Compare(a.Key, b.Key) })
	return out
}

var serviceUnsafe = regexp.MustCompile(`[^a-z0-9._-]`)

// gatewayService is the agent's service name for gateway i of mode key.
func gatewayService(key string, i int) string {
	return fmt.Sprintf("gateway-%s-%d", serviceUnsafe.ReplaceAllString(strings.ToLower(key), "-"), i)
}

// StartGateways runs xp's gateway (`xp gateway --config FILE`, supervised
// by the agent) on the gateway hosts for every spec, count gateways per
// mode spread round-robin over the gateway hosts (startGateways). Each
// listens on and advertises its host's private address; one key vault
// shared by every gateway host is uploaded 0600, so that any gateway
// decrypts what another encrypted. Without gateway hosts it does nothing
// (the embedded cluster serves the gateway modes). Call after
// StartEmbedded.
func (d *Deployment) StartGateways(ctx context.Context, specs []GatewaySpec, count int) (map[string]endpoint.Endpoint, error) {
	if len(d.names(planner.RoleGateway)) == 0 {
		return nil, nil
	}
	tmp, err := os.MkdirTemp("", "xp-gwvault-")
	if err != nil {
		return nil, fmt.Errorf("remote: gateways: %w", err)
	}
	defer os.RemoveAll(tmp)
	vaultPath := filepath.Join(tmp, "vault.keys")
	if err := envelope.AddKey(vaultPath, "k1"); err != nil {
		return nil, fmt.Errorf("remote: gateways: key vault: %w", err)
	}
	vault, err := os.ReadFile(vaultPath)
	if err != nil {
		return nil, err
	}
	return d.startGateways(ctx, specs, count, func(ctx context.Context, h *deployed, in gatewayInstance) (gatewayStarted, error) {
		s := in.Spec
		rvault := path.Join(in.Dir, "vault.keys")
		if err := h.c.WriteFile(ctx, rvault, vault, 0o600); err != nil {
			return gatewayStarted{}, err
		}
		rschema := path.Join(in.Dir, "schema")
		if needsSchema(s) {
			if err := uploadSchemas(ctx, h, rschema); err != nil {
				return gatewayStarted{}, err
			}
		}
		cfg, err := GatewayConfigYAML(local.GatewaySetup{Host: h.Private, Transport: s.Transport,
			Upstream: in.Upstream, CA: in.TLS.CA, Cert: in.TLS.Cert, Key: in.TLS.Key, Crypto: s.Crypto}, s, rvault, rschema)
		if err != nil {
			return gatewayStarted{}, fmt.Errorf("gateway mode %s: %w", s.Key, err)
		}
		cfgPath, ready := path.Join(in.Dir, in.Service+".yaml"), path.Join(in.Dir, in.Service+".json")
		if err := h.c.WriteFile(ctx, cfgPath, cfg, 0o600); err != nil {
			return gatewayStarted{}, err
		}
		cmd := fmt.Sprintf("rm -f %s && %s agent start --dir %s --name %s --wait-file %s --timeout 30s -- %s gateway --config %s --ready-file %s",
			ssh.Quote(ready), ssh.Quote(h.xp), ssh.Quote(h.dir), in.Service, ssh.Quote(ready), ssh.Quote(h.xp), ssh.Quote(cfgPath), ssh.Quote(ready))
		if _, err := h.c.Output(ctx, cmd); err != nil {
			return gatewayStarted{}, fmt.Errorf("gateway %s: %w", in.Service, err)
		}
		out, err := h.c.Output(ctx, "cat "+ssh.Quote(ready))
		if err != nil {
			return gatewayStarted{}, err
		}
		var r GatewayReady
		if err := json.Unmarshal(out, &r); err != nil {
			return gatewayStarted{}, fmt.Errorf("gateway %s: %s: %w", in.Service, ready, err)
		}
		return gatewayStarted{Bootstrap: r.Bootstrap, Crypto: &r.Crypto, Metrics: r.Metrics}, nil
	})
}

// gatewayTLS is the TLS material of a gateway host, as paths on it: the
// cluster's CA and a certificate (server and client use) for the host's
// private address, issued from that CA.
type gatewayTLS struct {
	CA, Cert, Key string
}

// gatewayInstance is gateway Index of a mode, the Slot-th gateway of its
// host.
type gatewayInstance struct {
	Spec        GatewaySpec
	Index, Slot int
	// Service is its agent service name; Dir the host's gateway directory.
	Service, Dir string
	// Upstream is the bootstrap of the direct mode it fronts.
	Upstream []string
	TLS      gatewayTLS
}

// gatewayStarted is a gateway that serves: its bootstrap address and, when
// it says, the crypto it runs.
type gatewayStarted struct {
	Bootstrap string
	Crypto    *gateway.CryptoInfo
	// Metrics is xp's gateway's Prometheus endpoint on its host (see
	// Deployment.TLSKept); "" for other gateways.
	Metrics string
}

// gatewayStarter starts one gateway instance on host h and returns once it
// serves.
type gatewayStarter func(ctx context.Context, h *deployed, in gatewayInstance) (gatewayStarted, error)

// startGateways is what every gateway kind shares: count gateways per spec
// spread round-robin over the gateway hosts, each host's TLS material
// uploaded 0600 (the CA's key never leaves this machine's temporary
// directory, which is removed), every instance started by start; then each
// mode's client config, the fronted direct mode's with the gateways as
// bootstrap, goes to every client host, and the modes replace those of
// the same keys the embedded cluster serves.
func (d *Deployment) startGateways(ctx context.Context, specs []GatewaySpec, count int, start gatewayStarter) (map[string]endpoint.Endpoint, error) {
	gws := d.names(planner.RoleGateway)
	if len(specs) == 0 {
		return nil, nil
	}
	if len(gws) == 0 {
		return nil, errors.New("remote: gateways: the group has no gateway host")
	}
	if d.modes == nil {
		return nil, errors.New("remote: gateways: no cluster to front (start it first)")
	}
	if count < 1 {
		count = 1
	}
	for _, s := range specs {
		if m, ok := d.modes[s.Transport]; !ok || m.Upstream != nil {
			return nil, fmt.Errorf("remote: gateway mode %s: transport %q is not a direct mode of the cluster", s.Key, s.Transport)
		}
	}
	b := d.hosts[d.names(planner.RoleBroker)[0]]

	// The cluster's CA, to issue each gateway host a certificate its
	// clients trust.
	ca, err := d.gatewayAuthority()
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(ca.CAPath())
	if err != nil {
		return nil, err
	}
	perHost := placeGateways(specs, count, gws, d.modes)
	hosts := sortedKeys(perHost)
	started := &startedGateways{bootstraps: map[string][]string{}, cryptos: map[string]*gateway.CryptoInfo{}, metrics: map[string][]hostMetrics{}}
	key := gatewayKey(specs)
	err = d.each(ctx, hosts, func(ctx context.Context, h *deployed) error {
		tls, err := uploadGatewayTLS(ctx, h, ca, caPEM, key)
		if err != nil {
			return err
		}
		for _, in := range perHost[h.Name] {
			in.Dir, in.TLS = path.Join(h.dir, "gateway"), tls
			r, err := start(ctx, h, in)
			if err != nil {
				return err
			}
			started.add(h.Name, in.Spec.Key, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	modes, contents, err := d.gatewayModes(ctx, b, specs, started)
	if err != nil {
		return nil, err
	}
	if err := d.writeAll(ctx, d.names(planner.RoleClient), contents); err != nil {
		return nil, err
	}
	for k, m := range modes {
		d.modes[k] = m
		d.setGatewayMetrics(k, started.metrics[k])
	}
	fmt.Fprintf(d.o.Log, "remote: %d gateway mode(s) on %s\n", len(specs), strings.Join(hosts, ", "))
	return modes, nil
}

// placeGateways places count gateways of every spec on the gateway hosts
// gws, by host: gateway i of every mode runs on gateway host i mod
// len(gws), each fronting the bootstrap of its transport's mode among
// modes.
func placeGateways(specs []GatewaySpec, count int, gws []string, modes map[string]endpoint.Endpoint) map[string][]gatewayInstance {
	perHost := map[string][]gatewayInstance{}
	for _, s := range specs {
		for i := 0; i < count; i++ {
			h := gws[i%len(gws)]
			perHost[h] = append(perHost[h], gatewayInstance{Spec: s, Index: i, Slot: len(perHost[h]),
				Service: gatewayService(s.Key, i), Upstream: modes[s.Transport].Bootstrap})
		}
	}
	return perHost
}

// gatewayKey is the key kind of the gateway hosts' certificate for specs:
// their tls_key ("" for ecdsa-p256). The specs of one group share it (the
// group's key holds the rows' tls_key); a spec with a plaintext client
// leg names none.
func gatewayKey(specs []GatewaySpec) string {
	for _, s := range specs {
		if s.TLSKey != "" {
			return s.TLSKey
		}
	}
	return ""
}

// uploadGatewayTLS issues gateway host h a certificate from ca with a key
// of kind key (pki.Authority.GatewayWithKey) and uploads it, its key and
// the CA's certificate caPEM, 0600, into its gateway directory.
func uploadGatewayTLS(ctx context.Context, h *deployed, ca *pki.Authority, caPEM []byte, key string) (gatewayTLS, error) {
	gdir := path.Join(h.dir, "gateway")
	certPath, keyPath, err := ca.GatewayWithKey("gateway-"+h.Name, key, h.Private)
	if err != nil {
		return gatewayTLS{}, err
	}
	tls := gatewayTLS{CA: path.Join(gdir, "pki", pki.CACertFile), Cert: path.Join(gdir, "pki", "gateway.pem"), Key: path.Join(gdir, "pki", "gateway-key.pem")}
	for src, dst := range map[string]string{certPath: tls.Cert, keyPath: tls.Key} {
		data, err := os.ReadFile(src)
		if err != nil {
			return gatewayTLS{}, err
		}
		if err := h.c.WriteFile(ctx, dst, data, 0o600); err != nil {
			return gatewayTLS{}, err
		}
	}
	if err := h.c.WriteFile(ctx, tls.CA, caPEM, 0o600); err != nil {
		return gatewayTLS{}, err
	}
	return tls, nil
}

// startedGateways collects, by mode key, what the gateways started on the
// gateway hosts report.
type startedGateways struct {
	mu         sync.Mutex
	bootstraps map[string][]string
	cryptos    map[string]*gateway.CryptoInfo
	metrics    map[string][]hostMetrics
}

// add records gateway r of mode key, started on host.
func (g *startedGateways) add(host, key string, r gatewayStarted) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.bootstraps[key] = append(g.bootstraps[key], r.Bootstrap)
	g.cryptos[key] = r.Crypto
	if r.Metrics != "" {
		g.metrics[key] = append(g.metrics[key], hostMetrics{Host: host, URL: r.Metrics})
	}
}

// gatewayModes are the gateway modes of specs and their client configs,
// by path on the client hosts: the fronted direct mode's, read from
// broker host b, bootstrapping from the gateways; the CA and client
// certificate they name are already on the client hosts (StartEmbedded).
func (d *Deployment) gatewayModes(ctx context.Context, b *deployed, specs []GatewaySpec, started *startedGateways) (map[string]endpoint.Endpoint, map[string][]byte, error) {
	cdir := path.Join(b.dir, embeddedDir)
	modes := map[string]endpoint.Endpoint{}
	contents := map[string][]byte{}
	for _, s := range specs {
		direct := d.modes[s.Transport]
		text, err := b.c.Output(ctx, "cat "+ssh.Quote(direct.ClientConfig))
		if err != nil {
			return nil, nil, err
		}
		props, err := kafkaconf.ParseClientConfig(text)
		if err != nil {
			return nil, nil, fmt.Errorf("remote: %s:%s:%w", b.Name, direct.ClientConfig, err)
		}
		bs := started.bootstraps[s.Key]
		slices.Sort(bs)
		props[kafkaconf.BootstrapServers] = strings.Join(bs, ",")
		p := path.Join(cdir, "gateways", serviceUnsafe.ReplaceAllString(strings.ToLower(s.Key), "-")+".properties")
		contents[p] = kafkaconf.FormatClientConfig(props)
		up := direct
		modes[s.Key] = endpoint.Endpoint{Bootstrap: kafkaconf.Bootstrap(props), ClientConfig: p, Upstream: &up, Crypto: started.cryptos[s.Key]}
	}
	return modes, contents, nil
}

// gatewayAuthority is the authority gateway hosts' certificates come
// from: the one this machine made for the cluster (for Apache Kafka, and
// for the embedded cluster when gateways run on gateway hosts), whose key
// never leaves it.
func (d *Deployment) gatewayAuthority() (*pki.Authority, error) {
	if d.ca == nil || !d.ca.CanSign() {
		return nil, errors.New("remote: gateways: the cluster's certificate authority was not made on this machine")
	}
	return d.ca, nil
}

// needsSchema says whether the gateway of s reads the load generator's
// schemas: field_encrypt of avro or protobuf records.
func needsSchema(s GatewaySpec) bool {
	return s.Security == planner.SecurityFieldEncrypt && s.Encoding != "" && s.Encoding != encrypt.EncodingJSON
}

// uploadSchemas writes the load generator's record schemas (record.avsc,
// the descriptor set record.pb, record.proto) into dir on h, 0600: the
// avro and protobuf field_encrypt gateways parse records with them.
func uploadSchemas(ctx context.Context, h *deployed, dir string) error {
	entries, err := fs.ReadDir(loadgen.Schema, "schema")
	if err != nil {
		return err
	}
	for _, e := range entries {
		data, err := loadgen.Schema.ReadFile("schema/" + e.Name())
		if err != nil {
			return err
		}
		if err := h.c.WriteFile(ctx, path.Join(dir, e.Name()), data, 0o600); err != nil {
			return fmt.Errorf("schema %s: %w", e.Name(), err)
		}
	}
	return nil
}

// GatewayConfigYAML renders the config file of `xp gateway` for spec on a
// remote host: local.GatewayConfig for setup, its client leg narrowed to
// spec's tls_version and tls_cipher, and, for encrypt and
// field_encrypt, the encrypt section on the key vault at vault (created
// beforehand, never by the gateway); avro and protobuf field_encrypt read
// the load generator's schemas from schemaDir (uploadSchemas).
func GatewayConfigYAML(setup local.GatewaySetup, spec GatewaySpec, vault, schemaDir string) ([]byte, error) {
	file := struct {
		*gateway.Config `yaml:",inline"`
		Encrypt         *encrypt.Config `yaml:"encrypt,omitempty"`
	}{}
	setup.TLSVersion, setup.TLSCipher = spec.TLSVersion, spec.TLSCipher
	file.Config = local.GatewayConfig(setup)
	switch spec.Security {
	case planner.SecurityProxy:
	case planner.SecurityEncrypt, planner.SecurityFieldEncrypt:
		var cfg encrypt.Config
		var err error
		if spec.Security == planner.SecurityFieldEncrypt {
			enc := spec.Encoding
			if enc == "" {
				enc = planner.DefaultFieldEncoding
			}
			cfg, err = encrypt.FieldPreset(enc, vault, schemaDir)
		} else {
			cfg, err = encrypt.Preset(planner.SecurityEncrypt, vault)
		}
		if err != nil {
			return nil, err
		}
		cfg.CreateVault = false
		if spec.Security == planner.SecurityFieldEncrypt && len(spec.Fields) > 0 {
			cfg.Topics[0].Fields = spec.Fields
		}
		if spec.Security == planner.SecurityFieldEncrypt && spec.Cipher == planner.FieldCipherFPE {
			cfg.Topics[0].Cipher = encrypt.CipherFPE
		}
		file.Encrypt = &cfg
	default:
		return nil, fmt.Errorf("%q is not a gateway mode (want one of %v)", spec.Security, planner.GatewayModes())
	}
	return yaml.Marshal(file)
}
