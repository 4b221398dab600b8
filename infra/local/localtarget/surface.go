package localtarget

import (
	"fmt"

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
)

var _ target.SurfaceServer = (*Target)(nil)

// ServesSurface refuses the security surface settings the local target
// does not serve (servesSurface).
func (t *Target) ServesSurface(r *planner.Row) error { return servesSurface(r, t.apache != nil) }

// servesSurface says why the local target, running Apache Kafka or the
// embedded cluster (apache false), cannot serve r's security surface, or
// nil. It serves tls_version and tls_cipher on the clients everywhere,
// on Apache Kafka's listeners and on the gateways' client legs (xp's
// gateway: TLS 1.2 suites only, since Go's crypto/tls lets a server
// choose no TLS 1.3 suite; Kroxylicious: every suite); tls_key on Apache
// Kafka's listeners and on the gateways' client legs (on the embedded
// cluster a gateway row's, whose upstream keeps ecdsa-p256);
// connection_churn everywhere; inter_broker_security on Apache Kafka;
// authorizer acl on Apache Kafka's mtls and sasl_ssl rows, direct, and
// through a gateway with gateway_transport sasl_ssl (the gateways relay
// the client's SASL exchange, so the brokers authorize its user); and the
// SASL mechanisms each SASL server speaks, which both gateways relay
// (OAUTHBEARER and GSSAPI on Apache Kafka only, with xp's identity
// provider or a KDC per group; OAUTHBEARER through both gateways too,
// GSSAPI direct only); the rest is refused by name.
func servesSurface(r *planner.Row, apache bool) error {
	gw := r.NeedsGateway()
	kroxy := gw && r.GatewayKind == planner.GatewayKindKroxylicious
	switch {
	case r.InterBrokerSecurity != planner.SecurityPlaintext && !apache:
		return fmt.Errorf("inter_broker_security %s: the embedded cluster's brokers share one process and replicate over nothing; run it on Apache Kafka (a TARGET.yaml with kafka:)", r.InterBrokerSecurity)
	case r.Authorizer != planner.AuthorizerNone && !apache:
		return fmt.Errorf("authorizer %s: the embedded cluster runs no authorizer; run it on Apache Kafka (a TARGET.yaml with kafka:)", r.Authorizer)
	case r.Authorizer != planner.AuthorizerNone && gw && r.GatewayTransport != planner.SecuritySASLSSL:
		return fmt.Errorf("authorizer %s with security %s and gateway_transport %s: through a gateway only sasl_ssl clients keep an identity of their own (the gateway relays their SASL exchange; its tls and plaintext upstream legs are ANONYMOUS, xp's admin, and its mtls one presents the gateway's certificate, which is given no ACLs); use gateway_transport sasl_ssl", r.Authorizer, r.Security, r.GatewayTransport)
	case r.Authorizer != planner.AuthorizerNone && !gw && r.Security != planner.SecurityMTLS && r.Security != planner.SecuritySASLSSL:
		return fmt.Errorf("authorizer %s with security %s: on the local target only mtls and sasl_ssl clients have an identity of their own (plaintext and tls clients are ANONYMOUS, xp's admin and a super user); use security mtls or sasl_ssl", r.Authorizer, r.Security)
	case r.TLSKey != planner.TLSKeyECDSAP256 && !apache && !gw:
		return fmt.Errorf("tls_key %s: the embedded cluster's listeners serve ecdsa-p256 certificates only; run it on Apache Kafka (a TARGET.yaml with kafka:), or through a gateway, whose client leg takes it", r.TLSKey)
	}
	switch r.SASLMechanism {
	case planner.SASLScramSHA512, planner.SASLScramSHA256, planner.SASLPlain:
		// The embedded cluster's fronts and Apache Kafka speak them;
		// both gateways relay them.
	case planner.SASLOAuthBearer, planner.SASLGSSAPI:
		// startIdentity serves them beside Apache Kafka: an identity
		// provider (JWKS and token endpoint) or an MIT KDC for the group.
		switch {
		case !apache:
			return fmt.Errorf("sasl_mechanism %s: the embedded cluster's SASL server speaks PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 only; run %s on Apache Kafka (a TARGET.yaml with kafka:)", r.SASLMechanism, planner.KafkaSASLMechanism(r.SASLMechanism))
		case gw && r.SASLMechanism == planner.SASLGSSAPI:
			return fmt.Errorf("sasl_mechanism gssapi on a gateway row: a Kerberos client asks for a ticket to kafka/<the host it connects to>, the gateway's, which the brokers' keytabs do not hold (each broker serves kafka/<its own address>), so the relayed exchange fails; run it direct (security: sasl_ssl)")
		}
	default:
		return fmt.Errorf("sasl_mechanism %s: the local target does not know it; use scram-sha-512, scram-sha-256, plain, oauthbearer or gssapi", r.SASLMechanism)
	}
	if r.TLSCipher != planner.TLSDefault && r.TLSVersion == planner.TLSVersion13 {
		switch {
		case gw && !kroxy:
			return fmt.Errorf("tls_cipher %s with tls_version 1.3 through xp's gateway: its listener is Go's crypto/tls, which lets a server choose no TLS 1.3 suite; use tls_version 1.2 or gateway_kind kroxylicious", r.TLSCipher)
		case !gw && !apache:
			return fmt.Errorf("tls_cipher %s with tls_version 1.3: the embedded cluster's TLS is Go's crypto/tls, which lets neither side choose a TLS 1.3 suite; use tls_version 1.2 or Apache Kafka (a TARGET.yaml with kafka:)", r.TLSCipher)
		}
	}
	return nil
}
