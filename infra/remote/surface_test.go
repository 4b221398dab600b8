package remote

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/planner"
)

// TestServesSurface: what remote targets serve of the security surface
// on Apache Kafka and on the embedded cluster, and the field each
// refusal names.
func TestServesSurface(t *testing.T) {
	row := func(edit func(*planner.Row)) *planner.Row {
		r := &planner.Row{Security: planner.SecuritySASLSSL, GatewayKind: planner.GatewayKindBuiltin, GatewayTransport: planner.SecurityTLS,
			InterBrokerSecurity: planner.SecurityPlaintext, SASLMechanism: planner.SASLScramSHA512, Authorizer: planner.AuthorizerNone,
			TLSVersion: planner.TLSDefault, TLSCipher: planner.TLSDefault, TLSKey: planner.TLSKeyECDSAP256}
		edit(r)
		return r
	}
	for _, tc := range []struct {
		name        string
		row         *planner.Row
		apache      bool
		wantRefusal string // "" serves
	}{
		{"defaults", row(func(*planner.Row) {}), false, ""},
		{"churn on embedded", row(func(r *planner.Row) { r.ConnectionChurn = 100 }), false, ""},
		{"churn through the gateway", row(func(r *planner.Row) { r.Security, r.ConnectionChurn = planner.SecurityProxy, 100 }), true, ""},
		{"plain on embedded", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLPlain }), false, ""},
		{"plain on kafka", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLPlain }), true, ""},
		{"scram-sha-256 on kafka", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLScramSHA256 }), true, ""},
		{"scram-sha-256 on embedded", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLScramSHA256 }), false, ""},
		{"plain through the gateway", row(func(r *planner.Row) {
			r.Security, r.GatewayTransport, r.SASLMechanism = planner.SecurityProxy, planner.SecuritySASLSSL, planner.SASLPlain
		}), true, ""},
		{"scram-sha-256 through the gateway on embedded", row(func(r *planner.Row) {
			r.Security, r.GatewayTransport, r.SASLMechanism = planner.SecurityProxy, planner.SecuritySASLSSL, planner.SASLScramSHA256
		}), false, ""},
		{"scram-sha-256 through kroxylicious", row(func(r *planner.Row) {
			r.Security, r.GatewayKind, r.GatewayTransport, r.SASLMechanism = planner.SecurityProxy, planner.GatewayKindKroxylicious, planner.SecuritySASLSSL, planner.SASLScramSHA256
		}), true, ""},
		{"oauthbearer on kafka", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLOAuthBearer }), true, ""},
		{"oauthbearer through the gateway", row(func(r *planner.Row) {
			r.Security, r.GatewayTransport, r.SASLMechanism = planner.SecurityProxy, planner.SecuritySASLSSL, planner.SASLOAuthBearer
		}), true, ""},
		{"oauthbearer with the java client", row(func(r *planner.Row) { r.SASLMechanism, r.Client = planner.SASLOAuthBearer, planner.ClientJava }), true, ""},
		{"oauthbearer with librdkafka", row(func(r *planner.Row) { r.SASLMechanism, r.Client = planner.SASLOAuthBearer, planner.ClientLibrdkafka }), true, ""},
		{"oauthbearer on embedded", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLOAuthBearer }), false, "sasl_mechanism oauthbearer: the embedded cluster"},
		{"gssapi on kafka", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLGSSAPI }), true, ""},
		{"gssapi on embedded", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLGSSAPI }), false, "sasl_mechanism gssapi: the embedded cluster"},
		{"gssapi through the gateway", row(func(r *planner.Row) {
			r.Security, r.GatewayTransport, r.SASLMechanism = planner.SecurityProxy, planner.SecuritySASLSSL, planner.SASLGSSAPI
		}), true, "sasl_mechanism gssapi on a gateway row: a Kerberos client asks for a ticket to kafka/<the host it connects to>"},
		{"1.2 chacha20 on embedded", row(func(r *planner.Row) { r.TLSVersion, r.TLSCipher = planner.TLSVersion12, planner.TLSCipherChaCha20 }), false, ""},
		{"1.2 aes128 through the gateway", row(func(r *planner.Row) {
			r.Security, r.TLSVersion, r.TLSCipher = planner.SecurityProxy, planner.TLSVersion12, planner.TLSCipherAES128GCM
		}), true, ""},
		{"1.3 chacha20 on kafka", row(func(r *planner.Row) { r.TLSVersion, r.TLSCipher = planner.TLSVersion13, planner.TLSCipherChaCha20 }), true, ""},
		{"1.3 chacha20 on embedded", row(func(r *planner.Row) { r.TLSVersion, r.TLSCipher = planner.TLSVersion13, planner.TLSCipherChaCha20 }), false, "tls_cipher chacha20-poly1305 with tls_version 1.3: the embedded cluster"},
		{"1.3 chacha20 through the gateway", row(func(r *planner.Row) {
			r.Security, r.TLSVersion, r.TLSCipher = planner.SecurityProxy, planner.TLSVersion13, planner.TLSCipherChaCha20
		}), true, "tls_cipher chacha20-poly1305 with tls_version 1.3 through xp's gateway"},
		{"1.3 chacha20 through a command gateway", row(func(r *planner.Row) {
			r.Security, r.GatewayKind, r.TLSVersion, r.TLSCipher = planner.SecurityProxy, planner.GatewayKindCommand, planner.TLSVersion13, planner.TLSCipherChaCha20
		}), true, "tls_cipher chacha20-poly1305 with tls_version 1.3 through gateway_kind command"},
		{"1.3 chacha20 through kroxylicious", row(func(r *planner.Row) {
			r.Security, r.GatewayKind, r.TLSVersion, r.TLSCipher = planner.SecurityProxy, planner.GatewayKindKroxylicious, planner.TLSVersion13, planner.TLSCipherChaCha20
		}), true, ""},
		{"1.3 aes256 through kroxylicious on embedded", row(func(r *planner.Row) {
			r.Security, r.GatewayKind, r.TLSVersion, r.TLSCipher = planner.SecurityProxy, planner.GatewayKindKroxylicious, planner.TLSVersion13, planner.TLSCipherAES256GCM
		}), false, ""},
		{"inter-broker tls on kafka", row(func(r *planner.Row) { r.InterBrokerSecurity = planner.SecurityTLS }), true, ""},
		{"inter-broker mtls through the gateway", row(func(r *planner.Row) {
			r.Security, r.InterBrokerSecurity = planner.SecurityProxy, planner.SecurityMTLS
		}), true, ""},
		{"inter-broker tls on embedded", row(func(r *planner.Row) { r.InterBrokerSecurity = planner.SecurityTLS }), false, "inter_broker_security tls: the embedded cluster"},
		{"authorizer on kafka sasl_ssl", row(func(r *planner.Row) { r.Authorizer, r.ACLs = planner.AuthorizerACL, 10 }), true, ""},
		{"authorizer on kafka mtls", row(func(r *planner.Row) {
			r.Security, r.Authorizer, r.ACLs = planner.SecurityMTLS, planner.AuthorizerACL, 10
		}), true, ""},
		{"authorizer on kafka plaintext", row(func(r *planner.Row) { r.Security, r.Authorizer = planner.SecurityPlaintext, planner.AuthorizerACL }), true, "authorizer acl with security plaintext"},
		{"authorizer through the gateway over tls", row(func(r *planner.Row) { r.Security, r.Authorizer = planner.SecurityProxy, planner.AuthorizerACL }), true, "authorizer acl with security proxy and gateway_transport tls"},
		{"authorizer through the gateway over sasl_ssl", row(func(r *planner.Row) {
			r.Security, r.GatewayTransport, r.Authorizer, r.ACLs = planner.SecurityProxy, planner.SecuritySASLSSL, planner.AuthorizerACL, 10
		}), true, ""},
		{"authorizer on embedded", row(func(r *planner.Row) { r.Authorizer, r.ACLs = planner.AuthorizerACL, 10 }), false, "authorizer acl: the embedded cluster"},
		{"rsa key on kafka", row(func(r *planner.Row) { r.TLSKey = planner.TLSKeyRSA4096 }), true, ""},
		{"rsa key on embedded", row(func(r *planner.Row) { r.TLSKey = planner.TLSKeyRSA2048 }), false, "tls_key rsa2048"},
		{"rsa key through the gateway", row(func(r *planner.Row) { r.Security, r.TLSKey = planner.SecurityEncrypt, planner.TLSKeyRSA2048 }), true, ""},
		{"rsa key through the gateway on embedded", row(func(r *planner.Row) { r.Security, r.TLSKey = planner.SecurityEncrypt, planner.TLSKeyRSA4096 }), false, "tls_key rsa4096: the embedded cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := servesSurface(tc.row, tc.apache)
			switch {
			case tc.wantRefusal == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.wantRefusal != "" && (err == nil || !strings.Contains(err.Error(), tc.wantRefusal)):
				t.Errorf("got %v, want a refusal naming %q", err, tc.wantRefusal)
			}
		})
	}
}

// TestSurfaceServer: the cluster part of a group's surface on the
// brokers' configuration: TLS narrowed, the inter-broker protocol, and
// with the authorizer xp's admin and, with inter-broker mtls, each broker
// host's certificate as super users (not a dedicated controller's).
func TestSurfaceServer(t *testing.T) {
	srv := kafkaconf.NewServer([]string{"10.0.0.1", "10.0.0.2"}, []string{"10.0.0.9"})
	surfaceServer(srv, planner.ClusterSecurity{InterBroker: planner.SecurityMTLS, Authorizer: planner.AuthorizerACL, ACLs: 10,
		TLSVersion: planner.TLSVersion13, TLSCipher: planner.TLSCipherAES256GCM}, []string{"broker-0", "broker-1", "controller-2"})
	want := []string{"User:ANONYMOUS", "User:CN=broker-0,O=xp", "User:CN=broker-1,O=xp"}
	if strings.Join(srv.SuperUsers, ";") != strings.Join(want, ";") || srv.InterBroker != planner.SecurityMTLS ||
		srv.TLS != (kafkaconf.TLSChoice{Version: planner.TLSVersion13, Cipher: planner.TLSCipherAES256GCM}) {
		t.Errorf("server %+v %q, want super users %q", srv.TLS, srv.SuperUsers, want)
	}
	plain := kafkaconf.NewServer([]string{"10.0.0.1"}, nil)
	surfaceServer(plain, planner.ClusterSecurity{}, []string{"broker-0"})
	if plain.SuperUsers != nil || plain.InterBroker != "" || plain.TLS != (kafkaconf.TLSChoice{}) {
		t.Errorf("the defaults changed the server: %+v", plain)
	}
}

// TestPlanKafkaSurface: a group's cluster security in what StartKafka
// uploads: every broker's INTERNAL listener over SSL wanting a client
// certificate (inter-broker mtls), whose certificate, with an RSA 2048
// key, serves and authenticates as a client; TLS narrowed to 1.2 with
// one suite; the authorizer with its super users on every node; GSSAPI
// with each broker's principal from the keytab in its directory;
// OAUTHBEARER validated against the client host's identity provider's key
// set over HTTPS, trusting the broker's CA file, the URL its JVM allows;
// the run's principals and the other ACLs for the readiness agent; the
// client hosts' GSSAPI and OAUTHBEARER logins. The defaults render none
// of it.
func TestPlanKafkaSurface(t *testing.T) {
	d := renderDeployment(3, 0, 1)
	p, err := d.planKafka("/c", KafkaSecurity{ClusterSecurity: planner.ClusterSecurity{InterBroker: planner.SecurityMTLS, Authorizer: planner.AuthorizerACL, ACLs: 1000,
		TLSVersion: planner.TLSVersion12, TLSCipher: planner.TLSCipherAES128GCM, TLSKey: planner.TLSKeyRSA2048}, GSSAPI: true,
		OAuth: true, OAuthIssuer: idpIssuer("10.0.0.9")})
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(p.caDir)
	for _, n := range p.nodes {
		props := string(n.props)
		for _, want := range []string{"INTERNAL:SSL", "listener.name.internal.ssl.client.auth=required\n", "ssl.enabled.protocols=TLSv1.2\n",
			"ssl.cipher.suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256\n", "authorizer.class.name=" + kafkaconf.StandardAuthorizer + "\n",
			"super.users=User:ANONYMOUS;User:CN=broker-0,O=xp;User:CN=broker-1,O=xp;User:CN=broker-2,O=xp\n",
			"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER,GSSAPI\n",
			"listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.jwks.endpoint.url=https://10.0.0.9:8443/jwks\n",
			"listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.expected.issuer=https://10.0.0.9:8443\n",
			`OAuthBearerLoginModule required ssl.truststore.location="` + n.h.dir + `/kafka-pki/ca.pem" ssl.truststore.type="PEM" unsecuredLoginStringClaim_sub="unused-broker-login";`,
			`keyTab="` + n.h.dir + `/kafka-pki/kafka.keytab" principal="kafka/` + n.h.Private + `@XP.TEST";`} {
			if !strings.Contains(props, want) {
				t.Errorf("%s: server.properties lacks %q:\n%s", n.h.Name, want, props)
			}
		}
		leaf := keystoreLeaf(t, n.keystore)
		if leaf.PublicKeyAlgorithm != x509.RSA || !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) || !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
			t.Errorf("%s: certificate with a %s key for %v, want RSA for server and client", n.h.Name, leaf.PublicKeyAlgorithm, leaf.ExtKeyUsage)
		}
	}
	if p.oauthJWKS != "https://10.0.0.9:8443/jwks" {
		t.Errorf("the brokers' JVMs allow %q, want the identity provider's key set", p.oauthJWKS)
	}
	if strings.Join(p.aclPrincipals, ";") != "User:CN=client,O=xp;User:xp" || p.acls != 1000 {
		t.Errorf("ACLs for the readiness agent: %q and %d others", p.aclPrincipals, p.acls)
	}
	// The realm's files: the brokers' keytab and krb5.conf go with each
	// broker's files; the client hosts get theirs and the GSSAPI login
	// beside the SCRAM user of the sasl_ssl config.
	if err := p.addKerberos(&kerberos{krb5Conf: []byte("conf"), brokers: []byte("brokers"), client: []byte("client")}, "/c"); err != nil {
		t.Fatal(err)
	}
	if err := p.addOAuth(idpIssuer("10.0.0.9"), "s3cret"); err != nil {
		t.Fatal(err)
	}
	props, err := kafkaconf.ParseClientConfig(p.clientFiles["/c/sasl_ssl.properties"])
	if err != nil {
		t.Fatal(err)
	}
	if props[kafkaconf.KerberosPrincipal] != "xp@XP.TEST" || props[kafkaconf.KerberosKeytab] != "/c/xp.keytab" || props[kafkaconf.KerberosKrb5Conf] != "/c/krb5.conf" ||
		props[kafkaconf.SASLMechanism] != "SCRAM-SHA-512" || string(p.clientFiles["/c/xp.keytab"]) != "client" || string(p.clientFiles["/c/krb5.conf"]) != "conf" ||
		props[kafkaconf.OAuthTokenURL] != "https://10.0.0.9:8443/token" || props[kafkaconf.OAuthClientSecret] != "s3cret" || props[kafkaconf.SSLCALocation] != "/c/ca.pem" {
		t.Errorf("the client hosts' GSSAPI login: %v", props)
	}

	q, err := d.planKafka("/c", KafkaSecurity{})
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(q.caDir)
	rendered := string(q.nodes[0].props)
	for _, unwanted := range []string{"INTERNAL:SSL", "internal.ssl.client.auth", "ssl.enabled.protocols", "ssl.cipher.suites", "authorizer.class.name", "super.users", "GSSAPI", "OAUTHBEARER"} {
		if strings.Contains(rendered, unwanted) {
			t.Errorf("the defaults render %q:\n%s", unwanted, rendered)
		}
	}
	if leaf := keystoreLeaf(t, q.nodes[0].keystore); leaf.PublicKeyAlgorithm != x509.ECDSA || slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		t.Errorf("the defaults' broker certificate: %s key for %v, want ECDSA for server use", leaf.PublicKeyAlgorithm, leaf.ExtKeyUsage)
	}
	if q.aclPrincipals != nil || q.acls != 0 {
		t.Errorf("ACLs without an authorizer: %q, %d", q.aclPrincipals, q.acls)
	}
}

// keystoreLeaf is the first certificate of a PEM key store.
func keystoreLeaf(t *testing.T, ks []byte) *x509.Certificate {
	t.Helper()
	for rest := ks; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			t.Fatal("no certificate in the key store")
		}
		if b.Type == "CERTIFICATE" {
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
}
