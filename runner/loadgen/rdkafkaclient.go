package loadgen

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/planner"
)

// The librdkafka client (Config.Client planner.ClientLibrdkafka) is the
// load generator of xp's librdkafka client release
// (infra/release/rdkafka/loadgen.c, `make rdkafka-client`) on librdkafka,
// run as the Java client is (javaclient.go): the same job, payloads and
// report. Its client properties are the run's own, since xp's client
// configs are librdkafka's (kcat's) properties.

// rdkafkaExternal is the librdkafka client.
var rdkafkaExternal = external{
	name:        "librdkafka client",
	home:        rdkafkaClientHome,
	writeConfig: writeRdkafkaConfig,
	command: func(_ Config, home, job string) *exec.Cmd {
		return exec.Command(filepath.Join(home, release.RdkafkaClientBinary), job)
	},
}

// rdkafkaClientHome is the unpacked librdkafka client release
// cfg.RdkafkaClient names: a directory holding bin/xp-rdkafka-loadgen, or
// a release archive, checked and unpacked once into the cache.
func rdkafkaClientHome(ctx context.Context, cfg Config) (string, error) {
	p := cfg.RdkafkaClient
	if fi, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w: --rdkafka-client %s: %v (make rdkafka-client writes out/dist/xp-rdkafka-client-VERSION.tgz)", ErrConfig, p, err)
	} else if fi.IsDir() {
		if _, err := os.Stat(filepath.Join(p, release.RdkafkaClientBinary)); err != nil {
			return "", fmt.Errorf("%w: --rdkafka-client %s: no %s: not an unpacked librdkafka client release (make rdkafka-client)", ErrConfig, p, release.RdkafkaClientBinary)
		}
		return p, nil
	}
	sum, err := release.SHA512File(p)
	if err != nil {
		return "", fmt.Errorf("%w: --rdkafka-client: %v", ErrConfig, err)
	}
	c, err := release.Cache(ctx, cfg.CacheDir, release.Fetch{Kind: "rdkafka-client", Distribution: p, SHA512: sum, SHA512Key: "--rdkafka-client",
		Inspect: func(archive string) (string, string, error) {
			rel, err := release.InspectRdkafkaClient(archive)
			return rel.Top, "lib", err
		}})
	if err != nil {
		return "", fmt.Errorf("%w: --rdkafka-client: %v", ErrConfig, err)
	}
	return c.Dir, nil
}

// rdkafkaHTTPSCALocation is librdkafka's CA file for its own HTTPS
// requests (the OIDC token endpoint).
const rdkafkaHTTPSCALocation = "https.ca.location"

// writeRdkafkaConfig writes props (librdkafka's names; no
// bootstrap.servers, which the job carries) as the librdkafka client
// reads them, 0600: on SASL the row's sasl_mechanism in place of the
// config's (as the Go client applies it), an empty
// ssl.endpoint.identification.algorithm (the Java client's way to turn it
// off) as librdkafka's none, and an https token endpoint's CA
// (kafkaconf.OAuthTokenCA) as https.ca.location.
func writeRdkafkaConfig(cfg Config, path string, props map[string]string) error {
	out := maps.Clone(props)
	if m := planner.KafkaSASLMechanism(cfg.SASLMechanism); m != "" && strings.HasPrefix(kafkaconf.Protocol(out), "sasl_") {
		out[kafkaconf.SASLMechanism] = m
		delete(out, kafkaconf.SASLMechanisms)
	}
	if v, ok := out[kafkaconf.SSLEndpointIdentAlg]; ok && v == "" {
		out[kafkaconf.SSLEndpointIdentAlg] = "none"
	}
	// librdkafka verifies an https token endpoint against
	// https.ca.location, not ssl.ca.location.
	if ca := kafkaconf.OAuthTokenCA(out); ca != "" && out[rdkafkaHTTPSCALocation] == "" {
		out[rdkafkaHTTPSCALocation] = ca
	}
	return kafkaconf.WriteClientConfig(path, out)
}

// rdkafkaRefused says why the librdkafka client cannot apply a row's
// security surface or client config, "" when it can: librdkafka sets no
// TLS protocol version (ssl.cipher.suites narrows only the TLS 1.2 suites,
// and TLS 1.3 would still be negotiated) and reports no negotiated version
// or suite to check; the wheel's librdkafka has no GSSAPI; and it reads
// PEM files, not the Java client's stores. connection_churn is applied:
// each producer's client is destroyed and created again every N records.
func (c Config) rdkafkaRefused() string {
	if c.TLSVersion != "" && c.TLSVersion != planner.TLSDefault || c.TLSCipher != "" && c.TLSCipher != planner.TLSDefault {
		return "tls_version and tls_cipher cannot be applied: librdkafka has no setting for the TLS version (ssl.cipher.suites narrows TLS 1.2 suites only, and TLS 1.3 is still negotiated) and reports no negotiated version or suite to check"
	}
	mech := c.SASLMechanism
	if mech == "" && kafkaconf.Protocol(c.ClientConfig) == "sasl_ssl" {
		mech = strings.ToLower(c.ClientConfig[kafkaconf.SASLMechanism] + c.ClientConfig[kafkaconf.SASLMechanisms])
	}
	if mech == planner.SASLGSSAPI {
		return "sasl_mechanism gssapi cannot be applied: the librdkafka of the release is built without GSSAPI (its builtin.features lack sasl_gssapi)"
	}
	if mech == planner.SASLOAuthBearer && c.ClientConfig[kafkaconf.OAuthMethod] != "oidc" {
		return "sasl_mechanism oauthbearer needs a token endpoint in the client config (sasl.oauthbearer.method=oidc)"
	}
	for _, k := range slices.Sorted(maps.Keys(c.ClientConfig)) {
		switch k {
		case kafkaconf.SASLJAASConfig, kafkaconf.SSLTruststoreLocation, kafkaconf.SSLTruststorePassword, kafkaconf.SSLTruststoreType,
			kafkaconf.SSLTruststoreCertificates, kafkaconf.SSLKeystoreType, kafkaconf.SSLKeystoreKey, kafkaconf.SSLKeystoreCertificateChain,
			kafkaconf.SSLEnabledProtocols, kafkaconf.SSLProtocol, kafkaconf.KerberosKrb5Conf:
			return fmt.Sprintf("--client-config has %s, which librdkafka does not read: give librdkafka's properties (ssl.ca.location, ssl.certificate.location, ssl.key.location as PEM files; sasl.username and sasl.password)", k)
		}
	}
	return ""
}

// validateRdkafka checks what Client librdkafka needs: its release, and a
// security surface it can apply (rdkafkaRefused).
func (c Config) validateRdkafka() error {
	if c.Client != planner.ClientLibrdkafka {
		return nil
	}
	if c.RdkafkaClient == "" {
		return fmt.Errorf("%w: --client librdkafka needs --rdkafka-client: the librdkafka client release (make rdkafka-client writes out/dist/xp-rdkafka-client-VERSION.tgz)", ErrConfig)
	}
	if why := c.rdkafkaRefused(); why != "" {
		return fmt.Errorf("%w: --client librdkafka: %s; use --client franz-go", ErrConfig, why)
	}
	return nil
}
