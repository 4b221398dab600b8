package remote

import (
	"fmt"
	"strings"

	"github.com/xp-bench/xp/infra/agent"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
)

var (
	_ target.SurfaceServer  = (*Deployer)(nil)
	_ target.BrokerReporter = (*Deployer)(nil)
)

// Broker is the broker software of the deployment that is up
// (target.BrokerReporter): what its first broker host runs, and on
// Apache Kafka its Java runtime, JVM flags and the cluster part of the
// security surface applied; the zero Broker when nothing runs.
func (d *Deployer) Broker() target.Broker {
	dep := d.Deployment()
	if dep == nil {
		return target.Broker{}
	}
	return dep.Broker()
}

// Broker is what Deployer.Broker says of d.
func (d *Deployment) Broker() target.Broker {
	for _, m := range d.Hosts() {
		if m.Role != planner.RoleBroker {
			continue
		}
		b, ok := target.ParseBroker(m.Kafka)
		if !ok {
			return target.Broker{}
		}
		if b.Kind == target.BrokerApache {
			b.Java, b.JVMFlags = m.Java, strings.Fields(m.JVMFlags)
			b.InterBrokerSecurity = d.security.InterBroker
			if b.InterBrokerSecurity == "" {
				b.InterBrokerSecurity = planner.SecurityPlaintext
			}
			if d.security.Authorizer == planner.AuthorizerACL {
				b.Authorizer, b.ACLs = kafkaconf.StandardAuthorizer, d.security.ACLs
			}
		}
		return b
	}
	return target.Broker{}
}

// ServesSurface refuses the security surface settings the hosts' cluster
// does not serve (servesSurface), before any machine is touched.
func (d *Deployer) ServesSurface(r *planner.Row) error {
	return servesSurface(r, !d.o.Kafka.Embedded())
}

// servesSurface says why a remote target, running Apache Kafka on its
// broker hosts or the embedded cluster (apache false), cannot serve r's
// security surface, or nil. It serves what the local target serves, for
// the same reasons: everywhere tls_version and tls_cipher on the load
// generators (and on Apache Kafka's listeners and the gateway hosts'
// client legs too: GatewaySpec), connection_churn, and sasl_mechanism
// plain and scram-sha-256, direct and through the gateways, which relay
// the exchange to the brokers; on Apache Kafka also
// inter_broker_security tls and mtls, tls_key (the brokers' and the
// gateway hosts' certificates), authorizer acl on direct mtls and
// sasl_ssl rows and through a gateway whose transport is sasl_ssl,
// sasl_mechanism oauthbearer (xp's identity provider over HTTPS on the
// first client host: startIDP; franz-go clients only), direct and
// through the gateways, and gssapi (a KDC there: startKDC) direct.
func servesSurface(r *planner.Row, apache bool) error {
	const onKafka = "run it on Apache Kafka (kafka.distribution a release in the target file)"
	gw := r.NeedsGateway()
	kroxy := gw && r.GatewayKind == planner.GatewayKindKroxylicious
	switch {
	case r.InterBrokerSecurity != planner.SecurityPlaintext && !apache:
		return fmt.Errorf("inter_broker_security %s: the embedded cluster's brokers share one process and replicate over nothing; %s", r.InterBrokerSecurity, onKafka)
	case r.Authorizer != planner.AuthorizerNone && !apache:
		return fmt.Errorf("authorizer %s: the embedded cluster runs no authorizer; %s", r.Authorizer, onKafka)
	case r.Authorizer != planner.AuthorizerNone && gw && r.GatewayTransport != planner.SecuritySASLSSL:
		return fmt.Errorf("authorizer %s with security %s and gateway_transport %s: through a gateway only sasl_ssl clients keep an identity of their own (the gateway relays their SASL exchange; its tls and plaintext upstream legs are ANONYMOUS, xp's admin, and its mtls one presents the gateway's certificate, which is given no ACLs); use gateway_transport sasl_ssl", r.Authorizer, r.Security, r.GatewayTransport)
	case r.Authorizer != planner.AuthorizerNone && !gw && r.Security != planner.SecurityMTLS && r.Security != planner.SecuritySASLSSL:
		return fmt.Errorf("authorizer %s with security %s: only mtls and sasl_ssl clients have an identity of their own (plaintext and tls clients are ANONYMOUS, xp's admin and a super user); use security mtls or sasl_ssl", r.Authorizer, r.Security)
	case r.TLSKey != planner.TLSKeyECDSAP256 && !apache:
		return fmt.Errorf("tls_key %s: the embedded cluster's listeners, and the gateway modes it serves itself when the group has no gateway host, have ecdsa-p256 certificates only; %s", r.TLSKey, onKafka)
	}
	switch r.SASLMechanism {
	case planner.SASLScramSHA512, planner.SASLPlain, planner.SASLScramSHA256:
		// The embedded cluster's SASL server and Apache Kafka speak
		// them; the gateways relay them.
	case planner.SASLGSSAPI, planner.SASLOAuthBearer:
		// startKDC serves the group's realm, startIDP its identity
		// provider (over HTTPS), from the first client host.
		switch {
		case !apache:
			return fmt.Errorf("sasl_mechanism %s: the embedded cluster's SASL server speaks PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 only; %s", r.SASLMechanism, onKafka)
		case gw && r.SASLMechanism == planner.SASLGSSAPI:
			return fmt.Errorf("sasl_mechanism gssapi on a gateway row: a Kerberos client asks for a ticket to kafka/<the host it connects to>, the gateway's, which the brokers' keytabs do not hold (each broker serves kafka/<its own address>), so the relayed exchange fails; run it direct (security: sasl_ssl)")
		case r.SASLMechanism == planner.SASLOAuthBearer && r.Client != "" && r.Client != planner.ClientFranzGo:
			return fmt.Errorf("sasl_mechanism oauthbearer with client %s: on remote targets the token endpoint is HTTPS with a certificate from xp's CA, which only xp's franz-go load generator is set up to trust; use client %s", r.Client, planner.ClientFranzGo)
		}
	default:
		return fmt.Errorf("sasl_mechanism %s: remote targets do not know it; use scram-sha-512, scram-sha-256, plain, oauthbearer or gssapi", r.SASLMechanism)
	}
	if r.TLSCipher != planner.TLSDefault && r.TLSVersion == planner.TLSVersion13 {
		switch {
		case gw && !kroxy:
			return fmt.Errorf("tls_cipher %s with tls_version 1.3 through gateway_kind %s: its listener is not narrowed to one TLS 1.3 suite (xp's gateway is Go's crypto/tls, which lets a server choose none; a command gateway is yours); use tls_version 1.2 or gateway_kind kroxylicious", r.TLSCipher, r.GatewayKind)
		case !gw && !apache:
			return fmt.Errorf("tls_cipher %s with tls_version 1.3: the embedded cluster's TLS is Go's crypto/tls, which lets neither side choose a TLS 1.3 suite; use tls_version 1.2 or %s", r.TLSCipher, onKafka)
		}
	}
	return nil
}

// surfaceServer sets the cluster part of a group's security surface on
// srv, whose node i runs on host hostOf[i]: its TLS listeners' version
// and suites, what the brokers replicate over and, with authorizer acl,
// KRaft's StandardAuthorizer with xp's admin (ANONYMOUS: the plaintext
// and TLS listeners, the controllers' listener) and, with inter-broker
// mtls, each broker's certificate as super users.
func surfaceServer(srv *kafkaconf.Server, sec planner.ClusterSecurity, hostOf []string) {
	srv.TLS = kafkaconf.TLSChoice{Version: sec.TLSVersion, Cipher: sec.TLSCipher}
	srv.InterBroker = sec.InterBroker
	if sec.Authorizer != planner.AuthorizerACL {
		return
	}
	srv.SuperUsers = []string{agent.PrincipalAnonymous}
	if sec.InterBroker == planner.SecurityMTLS {
		// Brokers come first in srv.Nodes, as in hostOf.
		for i := range srv.Brokers() {
			srv.SuperUsers = append(srv.SuperUsers, kafkaconf.CertPrincipal(hostOf[i]))
		}
	}
}

// clientCertName is the common name of the load generators' certificate,
// the principal of mtls clients.
const clientCertName = "client"
