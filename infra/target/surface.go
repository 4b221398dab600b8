package target

import (
	"fmt"
	"strconv"

	"github.com/xp-bench/xp/planner"
)

// SurfaceSettings lists a row's settings of the security surface beyond
// its mode (inter_broker_security, sasl_mechanism, authorizer, acls,
// tls_version, tls_cipher, tls_key, connection_churn) that are away from
// their defaults, as "field level", e.g. ["sasl_mechanism plain",
// "connection_churn 1000"]; nil for a row at every default.
func SurfaceSettings(r *planner.Row) []string {
	var out []string
	add := func(field, v, def string) {
		if v != def {
			out = append(out, field+" "+v)
		}
	}
	add("inter_broker_security", r.InterBrokerSecurity, planner.SecurityPlaintext)
	add("sasl_mechanism", r.SASLMechanism, planner.SASLScramSHA512)
	add("authorizer", r.Authorizer, planner.AuthorizerNone)
	add("acls", strconv.Itoa(r.ACLs), "0")
	add("tls_version", r.TLSVersion, planner.TLSDefault)
	add("tls_cipher", r.TLSCipher, planner.TLSDefault)
	add("tls_key", r.TLSKey, planner.TLSKeyECDSAP256)
	add("connection_churn", strconv.Itoa(r.ConnectionChurn), "0")
	return out
}

// SurfaceServer is a Target that serves some of the security surface
// beyond the mode (SurfaceSettings). ServesSurface refuses a row it
// cannot serve, naming the setting and why, before anything is up. The
// runner refuses every row with a setting away from its default on a
// target that is not a SurfaceServer, so that no setting is silently
// ignored.
type SurfaceServer interface {
	ServesSurface(r *planner.Row) error
}

// SurfaceLimits are what sets one target's service of the security
// surface apart from another's, for ServesSurface.
type SurfaceLimits struct {
	// Apache is whether the brokers are Apache Kafka (false: the embedded
	// cluster).
	Apache bool
	// Target names the target in a refusal, e.g. "the local target".
	Target string
	// OnKafka says how to run a row on Apache Kafka there, e.g. "a
	// TARGET.yaml with kafka:".
	OnKafka string
	// GatewayKeys: on the embedded cluster a gateway row's client leg
	// still takes tls_key (the gateway is a process of its own, issued a
	// certificate of the row's key).
	GatewayKeys bool
}

// ServesSurface says why a target with limits l cannot serve r's security
// surface, or nil: the rules every target that starts brokers shares.
// Everywhere: tls_version and tls_cipher on the clients, connection_churn,
// and sasl_mechanism scram-sha-512, scram-sha-256 and plain, direct and
// through the gateways (which relay the client's SASL exchange to the
// brokers). On Apache Kafka also inter_broker_security, tls_key, tls_*
// on its listeners, authorizer acl (direct mtls and sasl_ssl rows, and
// through a gateway whose transport is sasl_ssl: only those clients keep
// an identity of their own), oauthbearer direct and through the gateways,
// and gssapi direct (through a gateway the client would ask for a ticket
// to the gateway's host, which no broker's keytab holds). A TLS 1.3 suite
// is served where a TLS stack can narrow it: Apache Kafka's listeners and
// Kroxylicious, not Go's crypto/tls (the embedded cluster, xp's gateway).
func ServesSurface(r *planner.Row, l SurfaceLimits) error {
	onKafka := "run it on Apache Kafka (" + l.OnKafka + ")"
	gw := r.NeedsGateway()
	client := r.Client
	if client == "" {
		client = planner.DefaultClient
	}
	switch {
	case r.InterBrokerSecurity != planner.SecurityPlaintext && !l.Apache:
		return fmt.Errorf("inter_broker_security %s: the embedded cluster's brokers share one process and replicate over nothing; %s", r.InterBrokerSecurity, onKafka)
	case r.Authorizer != planner.AuthorizerNone && !l.Apache:
		return fmt.Errorf("authorizer %s: the embedded cluster runs no authorizer; %s", r.Authorizer, onKafka)
	case r.Authorizer != planner.AuthorizerNone && gw && r.GatewayTransport != planner.SecuritySASLSSL:
		return fmt.Errorf("authorizer %s with security %s and gateway_transport %s: through a gateway only sasl_ssl clients keep an identity of their own (the gateway relays their SASL exchange; its tls and plaintext upstream legs are ANONYMOUS, xp's admin, and its mtls one presents the gateway's certificate, which is given no ACLs); use gateway_transport sasl_ssl", r.Authorizer, r.Security, r.GatewayTransport)
	case r.Authorizer != planner.AuthorizerNone && !gw && r.Security != planner.SecurityMTLS && r.Security != planner.SecuritySASLSSL:
		return fmt.Errorf("authorizer %s with security %s: on %s only mtls and sasl_ssl clients have an identity of their own (plaintext and tls clients are ANONYMOUS, xp's admin and a super user); use security mtls or sasl_ssl", r.Authorizer, r.Security, l.Target)
	case r.TLSKey != planner.TLSKeyECDSAP256 && !l.Apache && !(gw && l.GatewayKeys):
		if l.GatewayKeys {
			return fmt.Errorf("tls_key %s: the embedded cluster's listeners serve ecdsa-p256 certificates only; %s, or through a gateway, whose client leg takes it", r.TLSKey, onKafka)
		}
		return fmt.Errorf("tls_key %s: the embedded cluster's listeners, and the gateway modes it serves itself, serve ecdsa-p256 certificates only; %s", r.TLSKey, onKafka)
	}
	switch r.SASLMechanism {
	case planner.SASLScramSHA512, planner.SASLScramSHA256, planner.SASLPlain:
	case planner.SASLOAuthBearer, planner.SASLGSSAPI:
		switch {
		case !l.Apache:
			return fmt.Errorf("sasl_mechanism %s: the embedded cluster's SASL server speaks PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 only; %s", r.SASLMechanism, onKafka)
		case gw && r.SASLMechanism == planner.SASLGSSAPI:
			return fmt.Errorf("sasl_mechanism gssapi on a gateway row: a Kerberos client asks for a ticket to kafka/<the host it connects to>, the gateway's, which the brokers' keytabs do not hold (each broker serves kafka/<its own address>), so the relayed exchange fails; run it direct (security: sasl_ssl)")
		}
	default:
		return fmt.Errorf("sasl_mechanism %s: %s does not know it; use scram-sha-512, scram-sha-256, plain, oauthbearer or gssapi", r.SASLMechanism, l.Target)
	}
	if r.TLSCipher != planner.TLSDefault && r.TLSVersion == planner.TLSVersion13 {
		switch {
		case gw && r.GatewayKind == planner.GatewayKindBuiltin:
			return fmt.Errorf("tls_cipher %s with tls_version 1.3 through xp's gateway: its listener is Go's crypto/tls, which lets a server choose no TLS 1.3 suite; use tls_version 1.2 or gateway_kind kroxylicious", r.TLSCipher)
		case gw && r.GatewayKind != planner.GatewayKindKroxylicious:
			return fmt.Errorf("tls_cipher %s with tls_version 1.3 through gateway_kind %s: xp does not narrow its listener to one TLS 1.3 suite; use tls_version 1.2 or gateway_kind kroxylicious", r.TLSCipher, r.GatewayKind)
		case !gw && !l.Apache:
			return fmt.Errorf("tls_cipher %s with tls_version 1.3: the embedded cluster's TLS is Go's crypto/tls, which lets neither side choose a TLS 1.3 suite; use tls_version 1.2 or %s", r.TLSCipher, onKafka)
		}
	}
	return nil
}
