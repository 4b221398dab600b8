package kafkaconf

import (
	"fmt"
	"strconv"
)

// OAuthServer enables OAUTHBEARER on the SASL_SSL listener: the broker
// validates each client's JWT against an identity provider's JSON Web
// Key Set (Kafka's OAuthBearerValidatorCallbackHandler).
type OAuthServer struct {
	// JWKSURL is sasl.oauthbearer.jwks.endpoint.url. Kafka 4 fetches only
	// URLs in the JVM's org.apache.kafka.sasl.oauthbearer.allowed.urls
	// (AllowedURLsFlag).
	JWKSURL string
	// Issuer and Audience are sasl.oauthbearer.expected.issuer and
	// sasl.oauthbearer.expected.audience.
	Issuer, Audience string
	// Truststore, when set, is the PEM file of the CA an https JWKSURL's
	// certificate is verified against (the login module's
	// ssl.truststore.location, which Kafka's key set fetcher reads); ""
	// trusts the JVM's defaults.
	Truststore string
}

// oauthBrokerLogin is the subject of the broker's own, unused, unsecured
// OAUTHBEARER login token (writeIdentitySASL).
const oauthBrokerLogin = "unused-broker-login"

// KerberosServer enables GSSAPI on the SASL_SSL listener: each broker
// logs in as ServiceName/<its address>@Realm from Keytab
// (Krb5LoginModule), with the KDCs of the JVM's
// -Djava.security.krb5.conf.
type KerberosServer struct {
	ServiceName, Realm string
	// Keytab holds every broker's principal (0600).
	Keytab string
}

// ReauthMs is the SASL_SSL listener's connections.max.reauth.ms when
// OAUTHBEARER or GSSAPI is on: a session lasts at most this long (an
// OAUTHBEARER session no longer than its token), then the client
// re-authenticates on the same connection (KIP-368) or is disconnected.
const ReauthMs = 10 * 60 * 1000

// AllowedURLsProperty is the JVM system property that lets Kafka 4 (and
// 3.9.1 on) fetch urls from OAUTHBEARER settings.
const AllowedURLsProperty = "org.apache.kafka.sasl.oauthbearer.allowed.urls"

// AllowedURLsFlag is the JVM flag setting AllowedURLsProperty to urls.
func AllowedURLsFlag(urls ...string) string {
	s := "-D" + AllowedURLsProperty + "="
	for i, u := range urls {
		if i > 0 {
			s += ","
		}
		s += u
	}
	return s
}

// saslMechanisms is the SASL_SSL listener's sasl.enabled.mechanisms.
func (s *Server) saslMechanisms() string {
	m := "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
	if s.OAuth != nil {
		m += ",OAUTHBEARER"
	}
	if s.Kerberos != nil {
		m += ",GSSAPI"
	}
	return m
}

// writeIdentitySASL writes node's OAUTHBEARER and GSSAPI settings, when on.
func (s *Server) writeIdentitySASL(w *propsWriter, node *Node) {
	if s.OAuth == nil && s.Kerberos == nil {
		return
	}
	reauth := ReauthMs
	if s.ReauthMs > 0 {
		reauth = s.ReauthMs
	}
	w.kv("listener.name.sasl_ssl.connections.max.reauth.ms", strconv.Itoa(reauth))
	if o := s.OAuth; o != nil {
		w.comment("OAUTHBEARER: JWTs validated against the identity provider's key set")
		jaas := "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
		if o.Truststore != "" {
			// With any option the login module's default (unsecured)
			// login handler makes the broker a token of its own, which
			// needs a subject; it is never presented (the listener takes
			// signed tokens only and brokers do not replicate over
			// OAUTHBEARER).
			jaas += fmt.Sprintf(` ssl.truststore.location="%s" ssl.truststore.type="PEM" unsecuredLoginStringClaim_sub="%s"`,
				jaasEscape(o.Truststore), oauthBrokerLogin)
		}
		w.kv("listener.name.sasl_ssl.oauthbearer.sasl.jaas.config", jaas+";")
		w.kv("listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class",
			"org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler")
		w.kv("listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.jwks.endpoint.url", o.JWKSURL)
		w.kv("listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.expected.issuer", o.Issuer)
		w.kv("listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.expected.audience", o.Audience)
	}
	if k := s.Kerberos; k != nil {
		w.comment("GSSAPI: the broker's Kerberos principal from its keytab")
		w.kv("sasl.kerberos.service.name", k.ServiceName)
		w.kv("listener.name.sasl_ssl.gssapi.sasl.jaas.config", fmt.Sprintf(
			`com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true doNotPrompt=true serviceName="%s" keyTab="%s" principal="%s";`,
			jaasEscape(k.ServiceName), jaasEscape(k.Keytab), jaasEscape(KerberosBrokerPrincipal(k.ServiceName, node.Address, k.Realm))))
	}
}

// KerberosBrokerPrincipal is the principal of the broker at address:
// service/address@realm, the name clients ask a ticket for.
func KerberosBrokerPrincipal(service, address, realm string) string {
	return service + "/" + address + "@" + realm
}
