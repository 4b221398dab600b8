// Package kroxylicious runs Kroxylicious, the Kafka proxy of the
// Kroxylicious project, as xp's gateway_kind kroxylicious: its proxy config
// rendered from what xp knows of a gateway (one virtual cluster in front of
// one direct mode of the cluster; for encrypt its Record Encryption filter
// on a KMS), and a release run as a local process, ready when its
// bootstrap port answers Kafka's ApiVersions.
//
// The config follows Kroxylicious's config model as its source defines it
// (the Jackson records of kroxylicious-runtime, -api, the record
// encryption filter and the KMS providers; testdata/config-model.txt lists
// those of 0.23.0 and a test checks every rendered key against it). Every
// key xp renders has the same name and meaning in every release from
// 0.11.0 on, except that 0.22.0 deprecated a virtual cluster's inline
// targetCluster for a named entry of clusterDefinitions (rendered for
// 0.22.0 and later). Release 0.12.0, the newest Maven Central serves, is
// started by the tests.
package kroxylicious

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/planner"
)

// Setup is one Kroxylicious gateway: one virtual cluster in front of one
// direct mode of the cluster.
type Setup struct {
	// Version is the Kroxylicious release (release.KroxyliciousMinVersion
	// or later): from 0.22.0 on the upstream is a clusterDefinitions entry
	// the virtual cluster names as its target, before that the virtual
	// cluster's inline targetCluster (deprecated by 0.22.0).
	Version string
	// Name names the virtual cluster (made a DNS label, as Kroxylicious
	// requires: ClusterName).
	Name string
	// Host is the address clients reach the gateway on (and that is
	// advertised); Port the bootstrap port. Brokers get the ports from
	// Port+1 on (portIdentifiesNode), node ids FirstNodeID to
	// FirstNodeID+Brokers-1.
	Host        string
	Port        int
	Brokers     int
	FirstNodeID int
	// Upstream is the fronted direct mode's bootstrap list, Transport its
	// transport (plaintext, tls, mtls, sasl_ssl), which is also the client
	// leg's.
	Upstream  []string
	Transport string
	// CA, Cert and Key are PEM files: the cluster's CA, and the gateway's
	// certificate for Host (server, and client for mtls) and its key.
	CA, Cert, Key string
	// TLS narrows the client leg's TLS to a row's tls_version and
	// tls_cipher (the virtual cluster gateway's tls protocols and
	// cipherSuites, allowed lists, which Kroxylicious reads from
	// tlsChoiceVersion on); zero leaves both open. The key of Cert is the
	// row's tls_key.
	TLS kafkaconf.TLSChoice
	// Mode is proxy (passthrough) or encrypt (Record Encryption, on KMS).
	Mode string
	// ManagementPort serves Prometheus text at /metrics on loopback.
	ManagementPort int
	// KMS holds the record encryption keys of the encrypt mode.
	KMS KMS
}

// KMS is where Kroxylicious's Record Encryption filter finds its
// key-encryption keys (KEKs): exactly one of Vault and InMemory.
type KMS struct {
	Vault    *Vault
	InMemory *InMemory
}

// Vault is HashiCorp Vault's transit engine (VaultKmsService).
type Vault struct {
	// URL is Vault's address (http://HOST:PORT); Key the transit key every
	// topic's records are encrypted under; TokenFile a file (0600) holding
	// the token.
	URL, Key, TokenFile string
}

// InMemory is Kroxylicious's in-memory KMS (UnitTestingKmsService of
// kroxylicious-kms-provider-kroxylicious-inmemory) holding KEKs given in
// the config. Each Kroxylicious process holds its own copy, so gateways
// given the same KEKs decrypt what any of them encrypted. The keys are in
// the config file, which must stay 0600.
type InMemory struct {
	KEKs []KEK
	// Alias is the KEK alias every topic's records are encrypted under.
	Alias string
}

// KEK is a key-encryption key of the in-memory KMS: an AES key, its UUID
// (the KMS's key id, which each encrypted record names) and the alias
// Kroxylicious's KEK selector resolves.
type KEK struct {
	Alias, UUID string
	Key         []byte
}

// DefaultKEK is the alias of the one KEK every topic's records are
// encrypted under (TemplateKekSelector with a constant template: xp's
// topics are named afresh for every run, so no per-topic key can be made
// before a run starts). Its KEK- prefix is the naming convention of
// Kroxylicious's Vault guide, whose least-privilege token policy grants
// transit/keys/KEK-*.
const DefaultKEK = "KEK-xp"

// NewKEK makes a random AES-256 KEK with a random (version 4) UUID.
func NewKEK(alias string) (KEK, error) {
	k := KEK{Alias: alias, Key: make([]byte, 32)}
	var u [16]byte
	if _, err := rand.Read(k.Key); err != nil {
		return KEK{}, err
	}
	if _, err := rand.Read(u[:]); err != nil {
		return KEK{}, err
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	k.UUID = fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
	return k, nil
}

// tlsChoiceVersion is the first release xp knows to read a gateway's tls
// protocols and cipherSuites (AllowDeny in kroxylicious-api 0.12.0).
const tlsChoiceVersion = "0.12.0"

// clusterDefinitions is the release that deprecated a virtual cluster's
// inline targetCluster for clusterDefinitions and target.cluster.
const clusterDefinitions = "0.22.0"

var (
	notDNSLabel   = regexp.MustCompile(`[^a-z0-9-]+`)
	versionWordRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+[A-Za-z0-9.-]*$`)
)

// ClusterName makes name a DNS label (at most 63 of a-z, 0-9 and -,
// starting and ending with a letter or digit): Kroxylicious refuses any
// other virtual cluster name, and service names may hold . and _
// (gateway-encrypt.fast-0).
func ClusterName(name string) string {
	l := strings.Trim(notDNSLabel.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(l) > 63 {
		l = strings.TrimRight(l[:63], "-")
	}
	if l == "" {
		l = "xp"
	}
	return l
}

// Config renders the proxy config of s (YAML).
func Config(s Setup) ([]byte, error) {
	if s.Brokers < 1 || s.Port < 1 || s.Port+s.Brokers > 65535 {
		return nil, fmt.Errorf("kroxylicious %s: port %d with %d brokers", s.Name, s.Port, s.Brokers)
	}
	if !versionWordRE.MatchString(s.Version) || !release.AtLeast(s.Version, release.KroxyliciousMinVersion) {
		return nil, fmt.Errorf("kroxylicious %s: version %q: xp renders the config of Kroxylicious %s or later", s.Name, s.Version, release.KroxyliciousMinVersion)
	}
	type m = map[string]any
	pemTrust := func() m { return m{"storeFile": s.CA, "storeType": "PEM"} }
	pemKey := func() m { return m{"privateKeyFile": s.Key, "certificateFile": s.Cert} }
	gw := m{
		"name": "xp",
		"portIdentifiesNode": m{
			"bootstrapAddress":               net.JoinHostPort(s.Host, strconv.Itoa(s.Port)),
			"advertisedBrokerAddressPattern": s.Host,
			"nodeIdRanges":                   []m{{"name": "brokers", "start": s.FirstNodeID, "end": s.FirstNodeID + s.Brokers - 1}},
		},
	}
	target := m{"bootstrapServers": strings.Join(s.Upstream, ",")}
	switch s.Transport {
	case planner.SecurityPlaintext:
	case planner.SecurityTLS, planner.SecuritySASLSSL:
		// sasl_ssl: the clients' SASL exchange passes through to the
		// brokers' SASL_SSL listener.
		gw["tls"] = m{"key": pemKey()}
		target["tls"] = m{"trust": pemTrust()}
	case planner.SecurityMTLS:
		trust := pemTrust()
		trust["trustOptions"] = m{"clientAuth": "REQUIRED"}
		gw["tls"] = m{"key": pemKey(), "trust": trust}
		target["tls"] = m{"key": pemKey(), "trust": pemTrust()}
	default:
		return nil, fmt.Errorf("kroxylicious %s: transport %q is not one of plaintext, tls, mtls, sasl_ssl", s.Name, s.Transport)
	}
	if gwTLS, ok := gw["tls"].(m); ok {
		// The JDK's names, which are Kafka's (ssl.enabled.protocols,
		// ssl.cipher.suites) and IANA's.
		if p := s.TLS.Protocols(); p != "" {
			gwTLS["protocols"] = m{"allowed": []string{p}}
		}
		if suites := s.TLS.CipherSuites(); suites != nil {
			gwTLS["cipherSuites"] = m{"allowed": suites}
		}
	} else if s.TLS.Protocols() != "" || s.TLS.CipherSuites() != nil {
		return nil, fmt.Errorf("kroxylicious %s: tls_version or tls_cipher on a plaintext client leg", s.Name)
	}
	if (s.TLS.Protocols() != "" || s.TLS.CipherSuites() != nil) && !release.AtLeast(s.Version, tlsChoiceVersion) {
		return nil, fmt.Errorf("kroxylicious %s: tls_version and tls_cipher need Kroxylicious %s or later (tls protocols and cipherSuites), not %s", s.Name, tlsChoiceVersion, s.Version)
	}
	name := ClusterName(s.Name)
	vc := m{"name": name, "gateways": []m{gw}}
	cfg := m{
		// Prometheus text at /metrics of this port, on loopback only.
		"management":      m{"bindAddress": "127.0.0.1", "port": s.ManagementPort, "endpoints": m{"prometheus": m{}}},
		"virtualClusters": []m{vc},
	}
	if release.AtLeast(s.Version, clusterDefinitions) {
		target["name"] = name
		cfg["clusterDefinitions"] = []m{target}
		vc["target"] = m{"cluster": name}
	} else {
		vc["targetCluster"] = target
	}
	switch s.Mode {
	case planner.SecurityProxy:
	case planner.SecurityEncrypt:
		enc, err := encryption(s)
		if err != nil {
			return nil, err
		}
		cfg["filterDefinitions"] = []m{{"name": "encrypt", "type": "RecordEncryption", "config": enc}}
		cfg["defaultFilters"] = []string{"encrypt"}
	default:
		return nil, fmt.Errorf("kroxylicious %s: mode %q: Kroxylicious runs proxy and encrypt", s.Name, s.Mode)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# written by xp: Kroxylicious %s %s gateway %s\n", s.Version, s.Mode, s.Name)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(cfg); err != nil {
		return nil, err
	}
	enc.Close()
	return b.Bytes(), nil
}

// encryption is the RecordEncryption filter's config: the KMS, one KEK for
// every topic (TemplateKekSelector with a constant template), and records
// whose key cannot be found refused (unresolvedKeyPolicy REJECT) rather
// than passed unencrypted: an encrypt row never measures plaintext.
func encryption(s Setup) (map[string]any, error) {
	type m = map[string]any
	cfg := m{"selector": "TemplateKekSelector", "unresolvedKeyPolicy": "REJECT"}
	switch k := s.KMS; {
	case k.Vault != nil && k.InMemory != nil:
		return nil, fmt.Errorf("kroxylicious %s: encrypt with two KMSes; give Vault or InMemory", s.Name)
	case k.Vault != nil:
		if k.Vault.URL == "" || k.Vault.TokenFile == "" || k.Vault.Key == "" {
			return nil, fmt.Errorf("kroxylicious %s: encrypt on Vault needs its URL, token file and key", s.Name)
		}
		cfg["kms"] = "VaultKmsService"
		cfg["kmsConfig"] = m{
			"vaultTransitEngineUrl": strings.TrimSuffix(k.Vault.URL, "/") + "/v1/transit",
			"vaultToken":            m{"passwordFile": k.Vault.TokenFile},
		}
		cfg["selectorConfig"] = m{"template": k.Vault.Key}
	case k.InMemory != nil:
		if err := k.InMemory.check(); err != nil {
			return nil, fmt.Errorf("kroxylicious %s: %w", s.Name, err)
		}
		keks := make([]m, len(k.InMemory.KEKs))
		for i, kek := range k.InMemory.KEKs {
			// key: a byte[], which Jackson reads from a base64 string.
			keks[i] = m{"uuid": kek.UUID, "key": base64.StdEncoding.EncodeToString(kek.Key), "algorithm": "AES", "alias": kek.Alias}
		}
		cfg["kms"] = "UnitTestingKmsService"
		// numIvBytes and numAuthBits: the AES-GCM the KMS wraps data keys
		// with (its own defaults, which a config must state).
		cfg["kmsConfig"] = m{"numIvBytes": 12, "numAuthBits": 128, "existingKeks": keks}
		cfg["selectorConfig"] = m{"template": k.InMemory.Alias}
	default:
		return nil, fmt.Errorf("kroxylicious %s: encrypt needs a KMS (Vault, or the in-memory KMS with its KEKs)", s.Name)
	}
	return cfg, nil
}

func (k *InMemory) check() error {
	if len(k.KEKs) == 0 {
		return errors.New("the in-memory KMS has no KEK")
	}
	found := false
	for _, kek := range k.KEKs {
		if len(kek.Key) != 16 && len(kek.Key) != 32 || kek.UUID == "" || kek.Alias == "" {
			return fmt.Errorf("in-memory KEK %q: want an alias, a UUID and an AES-128 or AES-256 key", kek.Alias)
		}
		found = found || kek.Alias == k.Alias
	}
	if !found {
		return fmt.Errorf("the in-memory KMS has no KEK aliased %q", k.Alias)
	}
	return nil
}
