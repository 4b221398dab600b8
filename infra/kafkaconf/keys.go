package kafkaconf

import (
	"maps"
	"slices"
	"strings"
)

// Property names of the Java client (Kafka's CommonClientConfigs,
// SslConfigs and SaslConfigs) that xp reads besides librdkafka's.
const (
	SASLJAASConfig              = "sasl.jaas.config"
	SSLTruststoreLocation       = "ssl.truststore.location"
	SSLTruststorePassword       = "ssl.truststore.password"
	SSLTruststoreType           = "ssl.truststore.type"
	SSLTruststoreCertificates   = "ssl.truststore.certificates"
	SSLKeystoreLocation         = "ssl.keystore.location"
	SSLKeystorePassword         = "ssl.keystore.password"
	SSLKeystoreType             = "ssl.keystore.type"
	SSLKeystoreKey              = "ssl.keystore.key"
	SSLKeystoreCertificateChain = "ssl.keystore.certificate.chain"
	// SSLKeyPassword is the private key's password: in the Java client
	// the key's in the key store, in librdkafka ssl.key.location's.
	SSLKeyPassword      = "ssl.key.password"
	SSLEnabledProtocols = "ssl.enabled.protocols"
	SSLProtocol         = "ssl.protocol"
)

// javaOnly are the properties only the Java client knows: a file with one
// of them is read in Java's syntax and meaning.
var javaOnly = map[string]bool{
	SASLJAASConfig: true, SSLTruststoreLocation: true, SSLTruststorePassword: true, SSLTruststoreType: true,
	SSLTruststoreCertificates: true, SSLKeystoreType: true, SSLKeystoreKey: true, SSLKeystoreCertificateChain: true,
	SSLEnabledProtocols: true, SSLProtocol: true,
}

// librdkafkaOnly are the properties only librdkafka knows: a file with one
// of them is read in librdkafka's syntax.
var librdkafkaOnly = map[string]bool{
	SSLCALocation: true, SSLCertificate: true, SSLKey: true, SASLMechanisms: true,
	SASLUsername: true, SASLPassword: true, OAuthMethod: true, OAuthTokenURL: true, OAuthClientID: true,
	OAuthClientSecret: true, KerberosServiceName: true, KerberosPrincipal: true, KerberosKeytab: true,
	// xp's own: where GSSAPI's krb5.conf is (librdkafka reads KRB5_CONFIG).
	KerberosKrb5Conf: true,
}

// shared are the properties both clients know, with one meaning
// (ssl.keystore.location and ssl.keystore.password: librdkafka's is a
// PKCS#12 file, the Java client's a store of ssl.keystore.type).
var shared = map[string]bool{
	BootstrapServers: true, SecurityProtocol: true, SASLMechanism: true, ClientID: true,
	SSLEndpointIdentAlg: true, SocketConnTimeoutMs: true, SSLKeyPassword: true,
	SSLKeystoreLocation: true, SSLKeystorePassword: true,
}

// secrets are the properties whose values are never echoed (logs, the
// evidence): passwords, the JAAS config that holds one, inline keys.
var secrets = map[string]bool{
	SASLPassword: true, SASLJAASConfig: true, SSLTruststorePassword: true, SSLKeystorePassword: true,
	SSLKeyPassword: true, SSLKeystoreKey: true, OAuthClientSecret: true,
}

// Secret reports whether property key holds a secret.
func Secret(key string) bool { return secrets[key] }

// Redacted returns props with the values of secrets replaced.
func Redacted(props map[string]string) map[string]string {
	out := make(map[string]string, len(props))
	for k, v := range props {
		if secrets[k] {
			v = "[redacted]"
		}
		out[k] = v
	}
	return out
}

// pathKeys are the properties that name files: a relative path is taken
// from the directory of the config file that gives it.
var pathKeys = []string{SSLCALocation, SSLCertificate, SSLKey, SSLTruststoreLocation, SSLKeystoreLocation, KerberosKeytab, KerberosKrb5Conf}

// notConnection are properties of both clients that xp refuses because
// they are not about reaching the cluster: xp's producers and consumers
// take their settings from the plan row, or keep their own.
var notConnection = []string{
	"acks", "linger.ms", "batch.size", "compression.type", "compression.codec", "enable.idempotence",
	"max.in.flight.requests.per.connection", "buffer.memory", "batch.num.messages", "queue.buffering.max.ms",
	"queue.buffering.max.messages", "queue.buffering.max.kbytes", "message.max.bytes", "max.request.size",
	"retries", "retry.backoff.ms", "delivery.timeout.ms", "request.timeout.ms", "request.timeout.ms",
	"message.timeout.ms", "partitioner", "partitioner.class", "key.serializer", "value.serializer",
	"key.deserializer", "value.deserializer", "group.id", "group.instance.id", "auto.offset.reset",
	"enable.auto.commit", "auto.commit.interval.ms", "max.poll.records", "max.poll.interval.ms",
	"session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy", "isolation.level",
	"fetch.min.bytes", "fetch.max.bytes", "fetch.max.wait.ms", "fetch.wait.max.ms", "max.partition.fetch.bytes",
	"fetch.message.max.bytes", "transactional.id", "transaction.timeout.ms", "metadata.max.age.ms",
	"metadata.max.idle.ms", "receive.buffer.bytes", "send.buffer.bytes", "connections.max.idle.ms",
	"reconnect.backoff.ms", "reconnect.backoff.max.ms", "client.dns.lookup", "client.rack", "check.crcs",
	"allow.auto.create.topics", "default.api.timeout.ms", "metric.reporters", "metrics.num.samples",
	"metrics.sample.window.ms", "interceptor.classes", "statistics.interval.ms", "api.version.request",
	"broker.version.fallback", "topic.metadata.refresh.interval.ms", "socket.timeout.ms", "socket.keepalive.enable",
	"socket.nagle.disable", "debug", "log_level",
}

// unsupportedSecurity are security properties xp does not implement, each
// with why; refusing them keeps a config from meaning less to xp than to
// the client it was written for.
var unsupportedSecurity = map[string]string{
	"ssl.cipher.suites":                   "xp's TLS (Go's crypto/tls) negotiates its default suites; remove it",
	"ssl.curves.list":                     "xp's TLS (Go's crypto/tls) uses its default curves; remove it",
	"ssl.sigalgs.list":                    "xp's TLS (Go's crypto/tls) uses its default signature algorithms; remove it",
	"ssl.keymanager.algorithm":            "a JSSE provider setting; remove it",
	"ssl.trustmanager.algorithm":          "a JSSE provider setting; remove it",
	"ssl.secure.random.implementation":    "a JSSE provider setting; remove it",
	"ssl.provider":                        "a JSSE provider setting; remove it",
	"ssl.engine.factory.class":            "a Java class cannot run in xp",
	"ssl.engine.location":                 "OpenSSL engines cannot run in xp",
	"ssl.providers":                       "OpenSSL providers cannot run in xp",
	"ssl.ca.certificate.stores":           "a Windows certificate store; give ssl.ca.location",
	"ssl.ca.pem":                          "give the CA as a file: ssl.ca.location",
	"ssl.certificate.pem":                 "give the certificate as a file: ssl.certificate.location",
	"ssl.key.pem":                         "give the key as a file: ssl.key.location",
	"enable.ssl.certificate.verification": "xp always verifies the broker's certificate",
	"ssl_engine_callback_data":            "OpenSSL engines cannot run in xp",
	"sasl.kerberos.kinit.cmd":             "Kerberos (GSSAPI) logs in from sasl.kerberos.keytab in xp, without kinit; remove it",
	"sasl.login.callback.handler.class":   "a Java class cannot run in xp",
	"sasl.client.callback.handler.class":  "a Java class cannot run in xp",
	"sasl.login.class":                    "a Java class cannot run in xp",
	"sasl.oauthbearer.config":             "OAUTHBEARER is not supported; use PLAIN or SCRAM",
}

// knownKeys are every property xp reads, for suggestions.
func knownKeys() []string {
	all := map[string]bool{}
	for _, m := range []map[string]bool{javaOnly, librdkafkaOnly, shared} {
		maps.Copy(all, m)
	}
	return slices.Sorted(maps.Keys(all))
}

// unsupportedReason says why xp refuses a property it knows of, "" when it
// reads it or does not know it.
func unsupportedReason(key string) string {
	if why, ok := unsupportedSecurity[key]; ok {
		return why
	}
	if supported(key) {
		return ""
	}
	if slices.Contains(notConnection, key) || strings.HasPrefix(key, "sasl.login.") || strings.HasPrefix(key, "sasl.oauthbearer.") {
		if strings.HasPrefix(key, "sasl.") {
			return "custom logins and OAUTHBEARER settings beyond a token endpoint (sasl.oauthbearer.method=oidc) are not supported"
		}
		return "not a setting of how to reach the cluster: xp's producers and consumers take theirs from the plan row " +
			"(acks, linger_ms, batch_bytes, compression, ...) or keep their own; remove it"
	}
	return ""
}

// supported reports whether xp reads property key.
func supported(key string) bool { return javaOnly[key] || librdkafkaOnly[key] || shared[key] }

// Reads reports whether xp reads client property key (in either dialect).
func Reads(key string) bool { return supported(key) }

// Unsupported says why xp refuses a client property it knows of; "" when
// xp reads it or does not know it.
func Unsupported(key string) string { return unsupportedReason(key) }

// SecurityProperty reports whether key is a security setting xp does not
// implement (a Kerberos kinit, OAUTHBEARER beyond a token endpoint, a JSSE or OpenSSL provider, a cipher
// list): a config with one cannot be reproduced without it.
func SecurityProperty(key string) bool {
	_, ok := unsupportedSecurity[key]
	return ok || (!supported(key) && (strings.HasPrefix(key, "sasl.login.") || strings.HasPrefix(key, "sasl.oauthbearer.")))
}
