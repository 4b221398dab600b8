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
// nil. It serves tls_version and tls_cipher on the clients everywhere
// (and on Apache Kafka's listeners too), tls_key on Apache Kafka's
// direct rows, connection_churn everywhere, inter_broker_security on
// Apache Kafka, authorizer acl on Apache Kafka's direct mtls and sasl_ssl
// rows, and the SASL mechanisms each
// SASL server speaks (OAUTHBEARER and GSSAPI direct on Apache Kafka, with
// xp's identity provider or a KDC per group); the rest is refused by
// name.
func servesSurface(r *planner.Row, apache bool) error {
	switch {
	case r.InterBrokerSecurity != planner.SecurityPlaintext && !apache:
		return fmt.Errorf("inter_broker_security %s: the embedded cluster's brokers share one process and replicate over nothing; run it on Apache Kafka (a TARGET.yaml with kafka:)", r.InterBrokerSecurity)
	case r.Authorizer != planner.AuthorizerNone && !apache:
		return fmt.Errorf("authorizer %s: the embedded cluster runs no authorizer; run it on Apache Kafka (a TARGET.yaml with kafka:)", r.Authorizer)
	case r.Authorizer != planner.AuthorizerNone && (r.NeedsGateway() || (r.Security != planner.SecurityMTLS && r.Security != planner.SecuritySASLSSL)):
		return fmt.Errorf("authorizer %s with security %s: on the local target only mtls and sasl_ssl clients have an identity of their own (plaintext and tls clients are ANONYMOUS, xp's admin and a super user; a gateway's upstream leg is not given ACLs); use security mtls or sasl_ssl", r.Authorizer, r.Security)
	case r.TLSKey != planner.TLSKeyECDSAP256 && (!apache || r.NeedsGateway()):
		return fmt.Errorf("tls_key %s: the local target issues such keys to Apache Kafka's brokers and clients only, not to the embedded cluster or the gateways; run it direct on Apache Kafka (a TARGET.yaml with kafka:)", r.TLSKey)
	}
	switch r.SASLMechanism {
	case planner.SASLScramSHA512:
	case planner.SASLPlain:
		if r.NeedsGateway() && r.GatewayKind != planner.GatewayKindBuiltin {
			return fmt.Errorf("sasl_mechanism plain with gateway_kind %s: only xp's gateway's client leg is set up for it; use gateway_kind builtin", r.GatewayKind)
		}
	case planner.SASLScramSHA256:
		if !apache || r.NeedsGateway() {
			return fmt.Errorf("sasl_mechanism scram-sha-256: the embedded cluster's and xp's gateway's SASL servers speak PLAIN and SCRAM-SHA-512 only; run it direct on Apache Kafka (a TARGET.yaml with kafka:)")
		}
	case planner.SASLOAuthBearer, planner.SASLGSSAPI:
		// startIdentity serves them beside Apache Kafka: an identity
		// provider (JWKS and token endpoint) or an MIT KDC for the group.
		switch {
		case !apache:
			return fmt.Errorf("sasl_mechanism %s: the embedded cluster's SASL server speaks PLAIN and SCRAM-SHA-512 only; run %s on Apache Kafka (a TARGET.yaml with kafka:)", r.SASLMechanism, planner.KafkaSASLMechanism(r.SASLMechanism))
		case r.NeedsGateway():
			return fmt.Errorf("sasl_mechanism %s on a gateway row: the gateways' client legs are not set up for %s; run it direct (security: sasl_ssl)", r.SASLMechanism, planner.KafkaSASLMechanism(r.SASLMechanism))
		}
	default:
		return fmt.Errorf("sasl_mechanism %s: the local target does not know it; use scram-sha-512, scram-sha-256, plain, oauthbearer or gssapi", r.SASLMechanism)
	}
	if r.TLSCipher != planner.TLSDefault && r.TLSVersion == planner.TLSVersion13 {
		switch {
		case r.NeedsGateway():
			return fmt.Errorf("tls_cipher %s with tls_version 1.3 on a gateway row: the gateway's listener is not narrowed to one suite; use tls_version 1.2", r.TLSCipher)
		case !apache:
			return fmt.Errorf("tls_cipher %s with tls_version 1.3: the embedded cluster's TLS is Go's crypto/tls, which lets neither side choose a TLS 1.3 suite; use tls_version 1.2 or Apache Kafka (a TARGET.yaml with kafka:)", r.TLSCipher)
		}
	}
	return nil
}
