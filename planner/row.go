// Package planner turns a factor spec into a campaign of plan rows, and reads
// and validates campaigns. It depends on nothing else of xp's.
package planner

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Rate is a target publish rate in messages per second; RateMax means
// saturating, closed loop ("max" in JSON).
type Rate int64

// RateMax is the saturating, closed-loop rate, written "max".
const RateMax Rate = -1

// IsMax reports whether r is the saturating rate.
func (r Rate) IsMax() bool { return r == RateMax }

func (r Rate) String() string {
	if r == RateMax {
		return "max"
	}
	return strconv.FormatInt(int64(r), 10)
}

// MarshalJSON writes "max" or an integer.
func (r Rate) MarshalJSON() ([]byte, error) {
	if r == RateMax {
		return []byte(`"max"`), nil
	}
	return strconv.AppendInt(nil, int64(r), 10), nil
}

// UnmarshalJSON reads "max" or a positive integer.
func (r *Rate) UnmarshalJSON(b []byte) error {
	if string(b) == `"max"` {
		*r = RateMax
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf(`want a positive integer or "max", got %s`, b)
	}
	*r = Rate(n)
	return nil
}

// Row is one run of a campaign: one line of the JSONL plan. Identity fields
// are derived by the planner, never typed by hand. The factor fields are
// declared in the fields table (field.go), which names them, checks them,
// fills their defaults and encodes them; Row only holds their values.
type Row struct {
	// Identity.
	Campaign  string
	Run       string
	Cell      string
	Pair      string
	Replicate int
	Block     int
	Order     int
	// Seed is the campaign seed: the order derives from it, and the runner
	// derives every other random choice (payloads) from it and Run.
	Seed int64
	// Treatment names the compared factor (default "security") and Baseline
	// its reference level; every row carries them so a campaign is
	// self-describing.
	Treatment string
	Baseline  string

	// Factors.
	Security          string
	Brokers           int
	MessageSize       int
	Acks              string
	TargetRate        Rate
	Platform          string
	InstanceType      string
	Partitions        int
	Topics            int
	ReplicationFactor int
	MinInsyncReplicas int
	Producers         int
	ConsumerGroups    int
	ConsumersPerGroup int
	Concurrency       int
	LingerMs          int
	BatchBytes        int
	Compression       string
	Encoding          string
	EncryptFields     []string
	FieldCipher       string
	Gateways          int
	GatewayKind       string
	GatewayTransport  string
	GatewayCrypto     string
	// The security surface beyond the mode (issue 38).
	InterBrokerSecurity string
	SASLMechanism       string
	Authorizer          string
	ACLs                int
	TLSVersion          string
	TLSCipher           string
	TLSKey              string
	ConnectionChurn     int
	WarmupS             int
	DurationS           int
	DrainTimeoutS       int
	KafkaVersion        string
	Client              string
}

// Get returns the text of a factor field's value: integers in decimal,
// rates as an integer or "max", encrypt_fields joined by commas. ok is false
// for a name that is not a factor field.
func (r *Row) Get(field string) (v string, ok bool) {
	i := fieldIndex(field)
	if i < 0 {
		return "", false
	}
	return fields[i].format(fields[i].get(r)), true
}

// IsBaseline reports whether r is the baseline row of its matched set: its
// treatment field holds the baseline level.
func (r *Row) IsBaseline() bool {
	v, ok := r.Get(r.Treatment)
	return ok && v == r.Baseline
}

// NeedsGateway reports whether r's security mode runs through a gateway.
func (r *Row) NeedsGateway() bool { return NeedsGateway(r.Security) }

// NeedsGateway reports whether the security mode runs through a gateway
// (proxy, encrypt, field_encrypt). It is the one definition xp uses.
func NeedsGateway(security string) bool { return slices.Contains(gatewayModes, security) }

// GatewayModes returns the security modes served through a gateway.
func GatewayModes() []string { return slices.Clone(gatewayModes) }

// DefaultFieldEncoding is the record encoding field_encrypt parses when a
// gateway mode's name gives none.
const DefaultFieldEncoding = "json"

// GatewayModeName names the gateway mode security (proxy, encrypt or
// field_encrypt) with the given client-leg transport and, for
// field_encrypt, field cipher and record encoding, as every target and
// `xp cluster local` name it: the bare security name for the defaults
// (tls, aead, json), otherwise suffixed, e.g. "proxy.sasl_ssl",
// "field_encrypt.avro.mtls" or "field_encrypt.fpe".
func GatewayModeName(security, transport, encoding, cipher string) string {
	name := security
	if security == SecurityFieldEncrypt && cipher != "" && cipher != DefaultFieldCipher {
		name += "." + cipher
	}
	if security == SecurityFieldEncrypt && encoding != "" && encoding != DefaultFieldEncoding {
		name += "." + encoding
	}
	if transport != "" && transport != DefaultGatewayTransport {
		name += "." + transport
	}
	return name
}

// InfraKey is the infrastructure a row needs: rows with equal keys run on
// one provisioned cluster. It is comparable, so it can key a map.
type InfraKey struct {
	Platform     string
	InstanceType string
	Brokers      int
	KafkaVersion string
	Gateways     int
	GatewayKind  string
	// Security is the cluster's security surface beyond its listeners:
	// zero for the defaults.
	Security ClusterSecurity
}

// ClusterSecurity is the part of the security surface (issue 38) that
// shapes a cluster: what its brokers replicate over, authorize with, and
// allow and present on their TLS listeners. The zero value is every
// default.
type ClusterSecurity struct {
	InterBroker string // inter_broker_security; "" is plaintext
	Authorizer  string // authorizer; "" is none
	ACLs        int
	TLSVersion  string // "" is default
	TLSCipher   string // "" is default
	TLSKey      string // "" is ecdsa-p256
}

// ClusterSecurity returns the part of r's security surface its cluster
// needs, with each default as "".
func (r *Row) ClusterSecurity() ClusterSecurity {
	or := func(v, def string) string {
		if v == def {
			return ""
		}
		return v
	}
	return ClusterSecurity{
		InterBroker: or(r.InterBrokerSecurity, SecurityPlaintext),
		Authorizer:  or(r.Authorizer, AuthorizerNone),
		ACLs:        r.ACLs,
		TLSVersion:  or(r.TLSVersion, TLSDefault),
		TLSCipher:   or(r.TLSCipher, TLSDefault),
		TLSKey:      or(r.TLSKey, TLSKeyECDSAP256),
	}
}

// String lists the settings away from their defaults as row fields, e.g.
// "inter_broker_security=tls tls_key=ecdsa-p256"; "" for the defaults.
func (c ClusterSecurity) String() string {
	var b []string
	add := func(k, v string) {
		if v != "" {
			b = append(b, k+"="+v)
		}
	}
	add("inter_broker_security", c.InterBroker)
	add("authorizer", c.Authorizer)
	if c.ACLs != 0 {
		add("acls", strconv.Itoa(c.ACLs))
	}
	add("tls_version", c.TLSVersion)
	add("tls_cipher", c.TLSCipher)
	add("tls_key", c.TLSKey)
	return strings.Join(b, " ")
}

// InfraKey returns the infrastructure r needs.
func (r *Row) InfraKey() InfraKey {
	return InfraKey{
		Platform:     r.Platform,
		InstanceType: r.InstanceType,
		Brokers:      r.Brokers,
		KafkaVersion: r.KafkaVersion,
		Gateways:     r.Gateways,
		GatewayKind:  r.GatewayKind,
		Security:     r.ClusterSecurity(),
	}
}

// ID is the group's identity as the evidence records it (infra events):
// "platform/instance_type brokers=N kafka_version=V gateways=N
// gateway_kind", then the cluster's security settings away from their
// defaults (ClusterSecurity.String), e.g. "aws/m5.xlarge brokers=3 kafka_version=3.9.1
// gateways=1 builtin". V is the kafka_version the rows ask for, not a claim
// of what ran (the embedded cluster runs no Kafka release; WithBroker names
// what did).
func (k InfraKey) ID() string { return k.describe("kafka_version=" + k.KafkaVersion) }

// String is ID.
func (k InfraKey) String() string { return k.ID() }

// SlugSeed is the text a group's short name in resource names and working
// directories is hashed from: the key as xp recorded it before ID named
// kafka_version ("kafka=V"), so that groups already up keep their names.
func (k InfraKey) SlugSeed() string { return k.describe("kafka=" + k.KafkaVersion) }

// WithBroker is String naming the broker software that ran instead of the
// kafka_version the rows asked for, e.g. "local brokers=1 apache=4.1.0
// gateways=0 builtin" or "local brokers=1 kfake=v1.2.3 gateways=0
// builtin": what a group's evidence says it measured. With kind "" (no
// broker ran) it names none: "local brokers=1 gateways=0 builtin".
func (k InfraKey) WithBroker(kind, version string) string {
	if kind == "" {
		return k.describe("")
	}
	return k.describe(kind + "=" + version)
}

func (k InfraKey) describe(broker string) string {
	p := k.Platform
	if k.InstanceType != "" {
		p += "/" + k.InstanceType
	}
	if broker != "" {
		broker += " "
	}
	s := fmt.Sprintf("%s brokers=%d %sgateways=%d %s", p, k.Brokers, broker, k.Gateways, k.GatewayKind)
	if sec := k.Security.String(); sec != "" {
		s += " " + sec
	}
	return s
}
