package planner

import "slices"

// The words a plan row, a target and the evidence share. Every package of
// xp spells them with these names; the planner imports nothing of xp, so
// any package may.

// Security modes: the values of a row's security field, and the names of
// the direct modes (the first four) a cluster serves on listeners of its
// own, which are also the transports of a gateway's legs
// (gateway_transport).
const (
	// SecurityPlaintext is no encryption, no authentication (Kafka:
	// security.protocol=PLAINTEXT).
	SecurityPlaintext = "plaintext"
	// SecurityTLS is TLS with the broker authenticated (Kafka:
	// security.protocol=SSL).
	SecurityTLS = "tls"
	// SecurityMTLS is TLS with a client certificate as well (Kafka:
	// security.protocol=SSL, ssl.client.auth=required).
	SecurityMTLS = "mtls"
	// SecuritySASLSSL is TLS with SASL authentication, SCRAM-SHA-512 or
	// PLAIN (Kafka: security.protocol=SASL_SSL).
	SecuritySASLSSL = "sasl_ssl"
	// SecurityProxy is a passthrough gateway in front of the cluster.
	SecurityProxy = "proxy"
	// SecurityEncrypt is a gateway that encrypts whole record values.
	SecurityEncrypt = "encrypt"
	// SecurityFieldEncrypt is a gateway that encrypts fields of
	// structured records (encrypt_fields, field_cipher).
	SecurityFieldEncrypt = "field_encrypt"
)

// directModes are the security modes a cluster serves on listeners of its
// own, in a fixed order; gatewayModes those served through a gateway
// (NeedsGateway).
var (
	directModes  = []string{SecurityPlaintext, SecurityTLS, SecurityMTLS, SecuritySASLSSL}
	gatewayModes = []string{SecurityProxy, SecurityEncrypt, SecurityFieldEncrypt}
)

// DirectModes lists the direct security modes: plaintext, tls, mtls,
// sasl_ssl.
func DirectModes() []string { return slices.Clone(directModes) }

// Clients: the values of a row's client field, the Kafka client the load
// generator measures with. Each runs the same schedule, payloads, health
// rules and result (docs/loadgen.md).
const (
	// ClientFranzGo is xp's own load generator on franz-go (Go), the
	// default.
	ClientFranzGo = "franz-go"
	// ClientJava is xp's load generator in Java on Apache Kafka's
	// kafka-clients (KafkaProducer, KafkaConsumer).
	ClientJava = "java"
	// ClientLibrdkafka is librdkafka (C), the client under the Python,
	// .NET, Node and cgo Go clients.
	ClientLibrdkafka = "librdkafka"
)

// Clients lists the values of the client field.
func Clients() []string { return []string{ClientFranzGo, ClientJava, ClientLibrdkafka} }

// ClientsRefused are the clients a plan may name but xp cannot run yet,
// with the reason: a spec or plan naming one is refused at plan time.
// None is today (librdkafka was, until xp built a current one).
var ClientsRefused = map[string]string{}

// Host roles: what a machine (or, on the local target, a process) of a
// group does. They name hosts in telemetry, in the machines an attempt
// records and in the Terraform module contract, whose outputs list hosts
// by role.
const (
	// RoleCluster is a host that is the whole cluster (the embedded one
	// on the local target).
	RoleCluster = "cluster"
	// RoleBroker runs a Kafka broker (Kafka: process.roles=broker);
	// without controller hosts the first brokers are KRaft controllers
	// too.
	RoleBroker = "broker"
	// RoleController runs a KRaft controller (Kafka:
	// process.roles=controller).
	RoleController = "controller"
	// RoleGateway runs the gateways of the gateway modes.
	RoleGateway = "gateway"
	// RoleClient runs the load generator.
	RoleClient = "client"
)

// HostCPUMetric names the metric of the CPU time the hosts of a role
// spent per published message, by role so that every target names it
// alike: host_cpu_broker_us_per_msg (the embedded cluster's process
// counts as the broker: it is the one), host_cpu_controller_us_per_msg.
func HostCPUMetric(role string) string {
	if role == RoleCluster {
		role = RoleBroker
	}
	return "host_cpu_" + role + "_us_per_msg"
}

// Gateway kinds: the values of gateway_kind, the software that serves a
// row's gateway modes.
const (
	// GatewayKindBuiltin is xp's own gateway (xp gateway).
	GatewayKindBuiltin = "builtin"
	// GatewayKindKroxylicious is the Kroxylicious proxy.
	GatewayKindKroxylicious = "kroxylicious"
	// GatewayKindCommand is a gateway the target file's gateway.command
	// starts.
	GatewayKindCommand = "command"
)

// Levels of sasl_mechanism: the SASL mechanism of a sasl_ssl connection
// (Kafka: sasl.mechanism, lower-cased).
const (
	// SASLScramSHA512 is SCRAM-SHA-512 (RFC 7677 with SHA-512), the
	// default and what sasl_ssl meant before the field.
	SASLScramSHA512 = "scram-sha-512"
	// SASLScramSHA256 is SCRAM-SHA-256 (RFC 7677).
	SASLScramSHA256 = "scram-sha-256"
	// SASLPlain is PLAIN (RFC 4616): the password itself, inside TLS.
	SASLPlain = "plain"
	// SASLOAuthBearer is OAUTHBEARER (RFC 7628) with signed JWTs.
	SASLOAuthBearer = "oauthbearer"
	// SASLGSSAPI is Kerberos (RFC 4752).
	SASLGSSAPI = "gssapi"
)

// KafkaSASLMechanism is the name Kafka gives a sasl_mechanism level
// (sasl.mechanism, sasl.enabled.mechanisms), e.g. "SCRAM-SHA-256".
func KafkaSASLMechanism(level string) string {
	switch level {
	case SASLScramSHA512:
		return "SCRAM-SHA-512"
	case SASLScramSHA256:
		return "SCRAM-SHA-256"
	case SASLPlain:
		return "PLAIN"
	case SASLOAuthBearer:
		return "OAUTHBEARER"
	case SASLGSSAPI:
		return "GSSAPI"
	}
	return ""
}

// Levels of authorizer: whether the brokers authorize requests.
const (
	// AuthorizerNone is no authorizer: every principal may do anything.
	AuthorizerNone = "none"
	// AuthorizerACL is KRaft's StandardAuthorizer (Kafka:
	// authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer)
	// holding acls ACLs.
	AuthorizerACL = "acl"
)

// TLSDefault is the default level of tls_version and tls_cipher: whatever
// the two sides prefer.
const TLSDefault = "default"

// Levels of tls_version (Kafka: ssl.enabled.protocols).
const (
	TLSVersion12 = "1.2"
	TLSVersion13 = "1.3"
)

// Levels of tls_cipher: the bulk cipher of the TLS cipher suite (Kafka:
// ssl.cipher.suites). Under TLS 1.2 each is an ECDHE suite with the
// certificate's signature (RSA or ECDSA), under TLS 1.3 the suite of
// that name (TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384,
// TLS_CHACHA20_POLY1305_SHA256).
const (
	TLSCipherAES128GCM = "aes128-gcm"
	TLSCipherAES256GCM = "aes256-gcm"
	TLSCipherChaCha20  = "chacha20-poly1305"
)

// Levels of tls_key: the key of the brokers' (and gateways') certificates.
// The default is ecdsa-p256, the key infra/pki has always issued, so
// earlier cells are what they measured.
const (
	TLSKeyRSA2048   = "rsa2048"
	TLSKeyRSA4096   = "rsa4096"
	TLSKeyECDSAP256 = "ecdsa-p256"
)
