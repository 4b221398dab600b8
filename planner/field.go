package planner

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/xp-bench/xp/internal/yamlcheck"
)

// kind is how a factor field's values are written and checked.
type kind uint8

const (
	kindEnum kind = iota // one of a fixed set of words
	kindInt              // an integer within [min, max]
	kindRate             // a positive integer or "max"
	kindText             // free text matching a pattern
	kindList             // a non-empty set of words from enum, kept sorted
)

// Value is one level of a factor field. Which part is used depends on the
// field: Str for words and text, Int for integers and rates (RateMax is
// "max"), List for encrypt_fields.
type Value struct {
	Str  string
	Int  int64
	List []string
}

// fieldDef declares one factor field of a plan row, once: its name (the
// JSONL key, the spec key and the canonical form's key), how its values
// are written and checked, its default, whether it shapes the
// infrastructure, and its line in docs/spec.md's table of row fields.
// Everything else (defaults filled in, JSONL encoding and decoding, the
// cell's canonical form, validation messages, the docs table) derives
// from it; Row only holds the values.
type fieldDef struct {
	name     string
	kind     kind
	enum     []string
	min, max int64
	pattern  *regexp.Regexp
	hint     string // what the pattern accepts, for messages
	required bool
	infra    bool // part of the infrastructure a row needs
	// def is the default of an optional field, filled in when a spec
	// leaves the field out; hasDef is false for required fields and for
	// those whose default derives from other fields (applyDerived).
	def    Value
	hasDef bool
	// late marks a field added after cells were first hashed: at its
	// default it is left out of the canonical form, so the cells of plans
	// from before the field are unchanged, and a plan row without the
	// field has its default.
	late bool
	// sparse leaves the field out of a JSONL row at its default, so plan
	// files from before it stay byte for byte what they were.
	sparse bool
	// values and defText are the field's line in docs/spec.md's table
	// (TestSpecDocFieldTable keeps the two equal).
	values, defText string
	// refused maps a level that is named but cannot run here to the
	// reason (ClientsRefused): a spec or plan naming it is refused with
	// that reason rather than told the level is unknown.
	refused map[string]string
	get     func(*Row) Value
	set     func(*Row, Value)
}

// Levels of gateway_crypto: the implementation of the built-in gateway's
// cryptography. std is the standard library's (crypto/tls carries the
// records, crypto/cipher's GCM seals envelopes); fast is xp's own TLS 1.3
// record layer and VAES AES-GCM where the binary and CPU allow, falling
// back to std otherwise (each attempt records what ran).
const (
	GatewayCryptoStd  = "std"
	GatewayCryptoFast = "fast"
)

// ConcurrencyBuffer is the concurrency of a target_rate max row that names
// none: records in flight are bounded by the producer's buffer (Kafka's
// buffer.memory), so the row saturates as ProducerPerformance
// --throughput -1 does. A concurrency of 1 or more is the closed-loop
// users model: that many records in flight per producer.
const ConcurrencyBuffer = 0

// Levels of field_cipher: how field_encrypt encrypts a field. aead seals
// it in an AES-256-GCM envelope (its type and length change); fpe
// encrypts a string field in place with FF1 (NIST SP 800-38G),
// format-preserving: digits stay digits, letters letters, the rest in
// place.
const (
	FieldCipherAEAD = "aead"
	FieldCipherFPE  = "fpe"
)

// Defaults of the optional factor fields (docs/spec.md's row fields).
const (
	DefaultPlatform          = "local"
	DefaultPartitions        = 6
	DefaultTopics            = 1
	DefaultProducers         = 1
	DefaultConsumerGroups    = 1
	DefaultConsumersPerGroup = 1
	// DefaultConcurrency is a fixed-rate row's concurrency (open loop: it
	// plays no part); a target_rate max row's default is ConcurrencyBuffer.
	DefaultConcurrency      = 1
	DefaultLingerMs         = 1
	DefaultBatchBytes       = 131072
	DefaultCompression      = "none"
	DefaultEncoding         = "bytes"
	DefaultGateways         = 1
	DefaultGatewayKind      = GatewayKindBuiltin
	DefaultGatewayTransport = SecurityTLS
	DefaultGatewayCrypto    = GatewayCryptoStd
	DefaultFieldCipher      = FieldCipherAEAD
	DefaultClient           = ClientFranzGo
	DefaultWarmupS          = 10
	DefaultDurationS        = 30
	DefaultDrainTimeoutS    = 30
	// DefaultKafkaVersion is the Apache Kafka release provisioned on cloud
	// and hosts platforms unless a spec names another.
	DefaultKafkaVersion = "3.9.1"
)

// Platforms are the values of the platform field: where a row runs.
var Platforms = []string{"local", "aws", "azure", "hosts", "existing"}

// DefaultEncryptFields is the default of encrypt_fields: the record's
// social security number.
var DefaultEncryptFields = []string{"ssn"}

// DefaultInstanceType is the instance type a platform uses unless the spec
// names one: empty for local, hosts and existing.
func DefaultInstanceType(platform string) string {
	switch platform {
	case "aws":
		return "m5.xlarge"
	case "azure":
		return "Standard_D8ds_v5"
	}
	return ""
}

// RecordFields are the fields of the structured record the load generator
// writes (json, avro, protobuf): the only names encrypt_fields may hold.
var RecordFields = []string{"id", "notes", "ssn", "status"}

// MinStructuredSize is the smallest message_size a structured encoding can
// fill: the record's id (36-byte UUID), status and ssn (11 bytes) plus the
// encoding's framing, rounded up.
var MinStructuredSize = map[string]int{"json": 96, "avro": 64, "protobuf": 64}

var (
	reInstance = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]{0,63})?$`)
	reVersion  = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)?$`)
	reCampaign = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
)

func intField(name string, min, max int64, p func(*Row) *int) fieldDef {
	return fieldDef{name: name, kind: kindInt, min: min, max: max,
		get: func(r *Row) Value { return Value{Int: int64(*p(r))} },
		set: func(r *Row, v Value) { *p(r) = int(v.Int) }}
}

func enumField(name string, enum []string, p func(*Row) *string) fieldDef {
	return fieldDef{name: name, kind: kindEnum, enum: enum,
		get: func(r *Row) Value { return Value{Str: *p(r)} },
		set: func(r *Row, v Value) { *p(r) = v.Str }}
}

func textField(name string, re *regexp.Regexp, hint string, p func(*Row) *string) fieldDef {
	return fieldDef{name: name, kind: kindText, pattern: re, hint: hint,
		get: func(r *Row) Value { return Value{Str: *p(r)} },
		set: func(r *Row, v Value) { *p(r) = v.Str }}
}

// mustGive marks f as one every spec must give.
func (f fieldDef) mustGive() fieldDef { f.required = true; f.defText = "required"; return f }

// shapesInfra marks f as part of the infrastructure a row needs.
func (f fieldDef) shapesInfra() fieldDef { f.infra = true; return f }

// byDefault gives f its default.
func (f fieldDef) byDefault(v Value) fieldDef { f.def, f.hasDef = v, true; return f }

// str and num are the defaults of word and integer fields.
func str(s string) Value { return Value{Str: s} }
func num(n int64) Value  { return Value{Int: n} }

// refusing marks levels of f refused, with their reasons (see
// fieldDef.refused).
func (f fieldDef) refusing(why map[string]string) fieldDef { f.refused = why; return f }

// addedLate marks f as added after cells were first hashed (fieldDef.late).
func (f fieldDef) addedLate() fieldDef { f.late = true; return f }

// addedSparse marks f as left out of JSONL rows at its default
// (fieldDef.sparse); sparse fields are late too.
func (f fieldDef) addedSparse() fieldDef { f.late, f.sparse = true, true; return f }

// doc sets f's line in docs/spec.md's table: what values it takes and, for
// an optional field, its default as the reader should see it.
func (f fieldDef) doc(values, defText string) fieldDef {
	f.values = values
	if defText != "" {
		f.defText = defText
	}
	return f
}

// fields lists every factor field in docs/spec.md's order, which is also
// the order of a JSONL row's keys after its identity.
var fields = []fieldDef{
	enumField("security", slices.Concat(directModes, gatewayModes), func(r *Row) *string { return &r.Security }).mustGive().
		doc("`plaintext`, `tls`, `mtls`, `sasl_ssl`, `proxy`, `encrypt`, `field_encrypt`", ""),
	intField("brokers", 1, 9, func(r *Row) *int { return &r.Brokers }).mustGive().shapesInfra().
		doc("1..9", ""),
	intField("message_size", 16, 1<<20, func(r *Row) *int { return &r.MessageSize }).mustGive().
		doc("bytes, 16..1048576", ""),
	enumField("acks", []string{"0", "1", "all"}, func(r *Row) *string { return &r.Acks }).mustGive().
		doc("`0`, `1`, `all` (written `1` or `\"1\"`)", ""),
	fieldDef{name: "target_rate", kind: kindRate, min: 1, max: 100_000_000,
		get: func(r *Row) Value { return Value{Int: int64(r.TargetRate)} },
		set: func(r *Row, v Value) { r.TargetRate = Rate(v.Int) }}.mustGive().
		doc("messages/s in total, 1..100000000, or `max` (closed loop, saturating)", ""),
	enumField("platform", Platforms, func(r *Row) *string { return &r.Platform }).shapesInfra().byDefault(str(DefaultPlatform)).
		doc("`local` (embedded cluster, or Apache Kafka with a TARGET.yaml naming a release), `aws`, `azure`, `hosts`, `existing` (a cluster someone else runs, [targets.md](targets.md#a-cluster-someone-else-runs-platform-existing))", "`local`"),
	textField("instance_type", reInstance, "letters, digits, '.', '_' or '-', e.g. m5.xlarge", func(r *Row) *string { return &r.InstanceType }).shapesInfra().
		doc("e.g. `m5.xlarge`", "`m5.xlarge` on aws, `Standard_D8ds_v5` on azure, `\"\"` on local, hosts and existing"),
	intField("partitions", 1, 10000, func(r *Row) *int { return &r.Partitions }).byDefault(num(DefaultPartitions)).
		doc("partitions per topic, 1..10000", "6"),
	intField("topics", 1, 1000, func(r *Row) *int { return &r.Topics }).byDefault(num(DefaultTopics)).
		doc("topics written and read at once, 1..1000", "1"),
	intField("replication_factor", 1, 9, func(r *Row) *int { return &r.ReplicationFactor }).
		doc("1..9", "min(3, brokers)"),
	intField("min_insync_replicas", 1, 9, func(r *Row) *int { return &r.MinInsyncReplicas }).
		doc("1..9", "min(2, replication_factor)"),
	intField("producers", 1, 1000, func(r *Row) *int { return &r.Producers }).byDefault(num(DefaultProducers)).
		doc("1..1000", "1"),
	intField("consumer_groups", 0, 100, func(r *Row) *int { return &r.ConsumerGroups }).byDefault(num(DefaultConsumerGroups)).
		doc("0..100", "1"),
	intField("consumers_per_group", 1, 1000, func(r *Row) *int { return &r.ConsumersPerGroup }).byDefault(num(DefaultConsumersPerGroup)).
		doc("1..1000", "1"),
	intField("concurrency", 0, 10000, func(r *Row) *int { return &r.Concurrency }).
		doc("records in flight per producer, 1..10000, or 0: as many as the producer buffer holds (32 MiB, Kafka's `buffer.memory`), which saturates; other than 1 only with `target_rate: max`", "0 with `target_rate: max`, else 1"),
	intField("linger_ms", 0, 60000, func(r *Row) *int { return &r.LingerMs }).byDefault(num(DefaultLingerMs)).
		doc("0..60000", "1"),
	intField("batch_bytes", 1024, 16<<20, func(r *Row) *int { return &r.BatchBytes }).byDefault(num(DefaultBatchBytes)).
		doc("1024..16777216", "131072"),
	enumField("compression", []string{"none", "gzip", "snappy", "lz4", "zstd"}, func(r *Row) *string { return &r.Compression }).byDefault(str(DefaultCompression)).
		doc("`none`, `gzip`, `snappy`, `lz4`, `zstd`", "`none`"),
	enumField("encoding", []string{"bytes", "json", "avro", "protobuf"}, func(r *Row) *string { return &r.Encoding }).byDefault(str(DefaultEncoding)).
		doc("`bytes`, `json`, `avro`, `protobuf`", "`bytes`"),
	fieldDef{name: "encrypt_fields", kind: kindList, enum: RecordFields,
		get: func(r *Row) Value { return Value{List: r.EncryptFields} },
		set: func(r *Row, v Value) { r.EncryptFields = v.List }}.byDefault(Value{List: DefaultEncryptFields}).
		doc("record fields encrypted by `field_encrypt`: `id`, `notes`, `ssn`, `status`", "`[ssn]`"),
	enumField("field_cipher", []string{FieldCipherAEAD, FieldCipherFPE}, func(r *Row) *string { return &r.FieldCipher }).byDefault(str(DefaultFieldCipher)).addedLate().
		doc("how `field_encrypt` encrypts each field: `aead` (an AES-256-GCM envelope, base64 in string fields) or `fpe` (FF1 format-preserving encryption of string fields: length and character classes kept; [gateway.md](gateway.md#format-preserving-field-encryption-field_cipher-fpe)); the gateway mode is then `field_encrypt.fpe`. At `aead` it is left out of the cell (below), so cells from before the field are unchanged. Under `fpe` the gateway refuses values with fewer than a million possible encryptions or over 4,096 bytes, so `notes` in `encrypt_fields` needs a `message_size` that leaves it 6 to 4,096 bytes", "`aead`"),
	intField("gateways", 1, 16, func(r *Row) *int { return &r.Gateways }).shapesInfra().byDefault(num(DefaultGateways)).
		doc("1..16", "1"),
	enumField("gateway_kind", []string{GatewayKindBuiltin, GatewayKindKroxylicious, GatewayKindCommand}, func(r *Row) *string { return &r.GatewayKind }).shapesInfra().byDefault(str(DefaultGatewayKind)).
		doc("`builtin` (xp's gateway), `kroxylicious`, `command` (the latter two on the gateway machines of `aws`, `azure` and `hosts`, as the TARGET.yaml's `gateway:` section says, and `kroxylicious` also on the local target; [targets.md](targets.md#gateway-kinds-command-and-kroxylicious))", "`builtin`"),
	enumField("gateway_transport", directModes, func(r *Row) *string { return &r.GatewayTransport }).byDefault(str(DefaultGatewayTransport)).
		doc("client-side transport of a gateway: `plaintext`, `tls`, `mtls`, `sasl_ssl`", "`tls`"),
	enumField("gateway_crypto", []string{GatewayCryptoStd, GatewayCryptoFast}, func(r *Row) *string { return &r.GatewayCrypto }).byDefault(str(DefaultGatewayCrypto)).
		doc("the built-in gateway's crypto: `std` (crypto/tls and crypto/cipher) or `fast` (xp's TLS 1.3 record layer and VAES AES-GCM, falling back where the Go release or CPU does not allow it; each attempt records what ran; [gateway.md](gateway.md#crypto-std-default-and-fast))", "`std`"),
	enumField("inter_broker_security", directModes[:3], func(r *Row) *string { return &r.InterBrokerSecurity }).shapesInfra().byDefault(str(SecurityPlaintext)).addedSparse().
		doc("the listener brokers replicate over (Kafka: `inter.broker.listener.name`): `plaintext`, `tls`, `mtls` (TLS with broker certificates both ways); other than `plaintext` it needs `brokers` and `replication_factor` of 2 or more, since with one replica nothing replicates", "`plaintext`"),
	enumField("sasl_mechanism", []string{SASLScramSHA512, SASLScramSHA256, SASLPlain, SASLOAuthBearer, SASLGSSAPI}, func(r *Row) *string { return &r.SASLMechanism }).byDefault(str(SASLScramSHA512)).addedSparse().
		doc("the SASL mechanism of a `sasl_ssl` connection (Kafka: `sasl.mechanism`): `scram-sha-512`, `scram-sha-256`, `plain`, `oauthbearer`, `gssapi`; other than `scram-sha-512` only on rows whose client connection is `sasl_ssl` (`security: sasl_ssl`, or a gateway with `gateway_transport: sasl_ssl`)", "`scram-sha-512`"),
	enumField("authorizer", []string{AuthorizerNone, AuthorizerACL}, func(r *Row) *string { return &r.Authorizer }).shapesInfra().byDefault(str(AuthorizerNone)).addedSparse().
		doc("`none`, or `acl`: KRaft's `StandardAuthorizer`, with the ACLs xp's principal needs and `acls` more for other principals, created before the group's rows", "`none`"),
	intField("acls", 0, 1_000_000, func(r *Row) *int { return &r.ACLs }).shapesInfra().byDefault(num(0)).addedSparse().
		doc("ACLs for other principals the authorizer holds besides xp's, half literal and half prefixed, 0..1000000; other than 0 only with `authorizer: acl`", "0"),
	enumField("tls_version", []string{TLSDefault, TLSVersion12, TLSVersion13}, func(r *Row) *string { return &r.TLSVersion }).shapesInfra().byDefault(str(TLSDefault)).addedSparse().
		doc("the TLS version the brokers' and gateways' TLS listeners and xp's clients allow (Kafka: `ssl.enabled.protocols`): `default` (what both sides prefer, TLS 1.3 between current Java and Go), `1.2`, `1.3`; other than `default` only on rows that use TLS", "`default`"),
	enumField("tls_cipher", []string{TLSDefault, TLSCipherAES128GCM, TLSCipherAES256GCM, TLSCipherChaCha20}, func(r *Row) *string { return &r.TLSCipher }).shapesInfra().byDefault(str(TLSDefault)).addedSparse().
		doc("the bulk cipher of the TLS suite (Kafka: `ssl.cipher.suites`): `default`, `aes128-gcm`, `aes256-gcm`, `chacha20-poly1305`; other than `default` it needs `tls_version` `1.2` or `1.3` (the suite's name depends on the version), and under `1.3` a Java TLS server, since Go's crypto/tls does not let a server choose TLS 1.3 suites (so not xp's built-in gateway)", "`default`"),
	enumField("tls_key", []string{TLSKeyECDSAP256, TLSKeyRSA2048, TLSKeyRSA4096}, func(r *Row) *string { return &r.TLSKey }).shapesInfra().byDefault(str(TLSKeyECDSAP256)).addedSparse().
		doc("the key of the brokers' and gateways' certificates: `ecdsa-p256` (what xp's certificates have always had), `rsa2048`, `rsa4096`; other than `ecdsa-p256` only on rows that use TLS", "`ecdsa-p256`"),
	intField("connection_churn", 0, 1_000_000_000, func(r *Row) *int { return &r.ConnectionChurn }).byDefault(num(0)).addedSparse().
		doc("records each producer sends before it closes its connection and opens a new one (TLS handshake and SASL exchange again), 0..1000000000; 0 keeps one connection for the whole run. The result counts handshakes per second and the time each reconnect took", "0"),
	intField("warmup_s", 0, 3600, func(r *Row) *int { return &r.WarmupS }).byDefault(num(DefaultWarmupS)).
		doc("seconds of load before measuring, 0..3600", "10"),
	intField("duration_s", 1, 86400, func(r *Row) *int { return &r.DurationS }).byDefault(num(DefaultDurationS)).
		doc("seconds measured, 1..86400", "30"),
	intField("drain_timeout_s", 1, 3600, func(r *Row) *int { return &r.DrainTimeoutS }).byDefault(num(DefaultDrainTimeoutS)).
		doc("seconds the consumers get to read what was produced, 1..3600", "30"),
	textField("kafka_version", reVersion, "a release number such as 3.9.1", func(r *Row) *string { return &r.KafkaVersion }).shapesInfra().byDefault(str(DefaultKafkaVersion)).
		doc("the Apache Kafka release on cloud and hosts platforms, e.g. `3.9.1` or `4.1.0`; the target's TARGET.yaml must list a release of exactly this version, else the row is refused before anything is provisioned ([Kafka versions](targets.md#kafka-versions-one-release-per-kafka_version)); on `local` it picks the Apache Kafka release of the TARGET.yaml's `kafka:` ([targets.md](targets.md#apache-kafka-on-the-local-target)); on `local` without one (`--target local`) and with `kafka.distribution: embedded` it is kept in the row but the cluster is kfake, and attempts record kfake, not this version", "`3.9.1`"),
	enumField("client", Clients(), func(r *Row) *string { return &r.Client }).byDefault(str(DefaultClient)).addedLate().refusing(ClientsRefused).
		doc("the Kafka client the load generator measures with: `franz-go` (xp's Go load generator), `java` (xp's Java load generator on Apache Kafka's `kafka-clients`), `librdkafka` (xp's load generator in C on librdkafka 2.16, the client under the Python, .NET, Node and cgo Go clients); the same schedule, payloads, health rules and result ([loadgen.md](loadgen.md#clients)). `java` crosses with every other field: it applies `tls_version` and `tls_cipher` (JSSE's `ssl.enabled.protocols` and `ssl.cipher.suites`, TLS 1.3 suites included), every `sasl_mechanism` and `connection_churn`, and records what its connections negotiated as `franz-go` does ([loadgen.md](loadgen.md#clients)). At `franz-go` it is left out of the cell (below), so cells from before the field are unchanged", "`franz-go`"),
}

// Field indices used by the planner's own logic.
var (
	fInstance    = fieldIndex("instance_type")
	fRF          = fieldIndex("replication_factor")
	fISR         = fieldIndex("min_insync_replicas")
	fConcurrency = fieldIndex("concurrency")
	canonicalIdx = sortedFieldIndices()
)

// FieldNames returns the factor field names of a plan row in docs/spec.md's
// order.
func FieldNames() []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.name
	}
	return out
}

func fieldIndex(name string) int {
	for i, f := range fields {
		if f.name == name {
			return i
		}
	}
	return -1
}

func sortedFieldIndices() []int {
	idx := make([]int, len(fields))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(fields[a].name, fields[b].name) })
	return idx
}

// format writes v as the text used in messages, baselines and Row.Get.
func (f *fieldDef) format(v Value) string {
	switch f.kind {
	case kindInt:
		return strconv.FormatInt(v.Int, 10)
	case kindRate:
		return Rate(v.Int).String()
	case kindList:
		return strings.Join(v.List, ",")
	}
	return v.Str
}

// omitted reports whether v leaves f out of the canonical form: f was
// added late and v is its default.
func (f *fieldDef) omitted(v Value) bool { return f.late && f.equal(v, f.def) }

// equal reports whether two values of f are the same level.
func (f *fieldDef) equal(a, b Value) bool {
	switch f.kind {
	case kindInt, kindRate:
		return a.Int == b.Int
	case kindList:
		return slices.Equal(a.List, b.List)
	}
	return a.Str == b.Str
}

// rangeReason says why v is outside f's range, or "" when it is inside.
func (f *fieldDef) rangeReason(v Value) string {
	switch f.kind {
	case kindEnum:
		if why := f.refused[v.Str]; why != "" {
			return f.name + " " + v.Str + " refused: " + why
		}
	case kindInt:
		if v.Int < f.min || v.Int > f.max {
			return f.name + " outside " + strconv.FormatInt(f.min, 10) + ".." + strconv.FormatInt(f.max, 10)
		}
	case kindRate:
		if v.Int != int64(RateMax) && (v.Int < f.min || v.Int > f.max) {
			return f.name + ` outside ` + strconv.FormatInt(f.min, 10) + ".." + strconv.FormatInt(f.max, 10) + ` or "max"`
		}
	}
	return ""
}

// parseText turns the text form of a level (as format writes it) back into
// a value; it is how a row's baseline is read.
func (f *fieldDef) parseText(s string) (Value, bool) {
	switch f.kind {
	case kindInt:
		n, err := strconv.ParseInt(s, 10, 64)
		return Value{Int: n}, err == nil
	case kindRate:
		if s == "max" {
			return Value{Int: int64(RateMax)}, true
		}
		n, err := strconv.ParseInt(s, 10, 64)
		return Value{Int: n}, err == nil && n > 0
	case kindList:
		if s == "" {
			return Value{}, false
		}
		l := strings.Split(s, ",")
		return Value{List: l}, f.checkWord(l) == ""
	case kindEnum:
		return Value{Str: s}, slices.Contains(f.enum, s)
	}
	return Value{Str: s}, f.pattern.MatchString(s)
}

// checkWord says what is wrong with a list of words for a list field.
func (f *fieldDef) checkWord(l []string) string {
	if len(l) == 0 {
		return "want at least one of " + strings.Join(f.enum, ", ")
	}
	for i, w := range l {
		if !slices.Contains(f.enum, w) {
			return "unknown " + quote(w) + yamlcheck.Suggestion(w, f.enum) + " (one of " + strings.Join(f.enum, ", ") + ")"
		}
		if i > 0 && l[i-1] >= w {
			if l[i-1] == w {
				return quote(w) + " appears twice"
			}
			return "names must be sorted"
		}
	}
	return ""
}

func quote(s string) string { return strconv.Quote(s) }

// applyDefaults fills every field not marked in set with its default.
// Defaults that depend on other fields (instance_type on platform,
// replication_factor on brokers, min_insync_replicas on
// replication_factor, concurrency on target_rate) are filled after the
// others.
func applyDefaults(r *Row, set []bool) {
	for i := range fields {
		if f := &fields[i]; f.hasDef && !set[i] {
			f.set(r, f.def)
		}
	}
	applyDerived(r, set)
}

// applyDerived fills the defaults that depend on other fields.
func applyDerived(r *Row, set []bool) {
	if !set[fInstance] {
		r.InstanceType = DefaultInstanceType(r.Platform)
	}
	if !set[fRF] {
		r.ReplicationFactor = min(3, r.Brokers)
	}
	if !set[fISR] {
		r.MinInsyncReplicas = min(2, r.ReplicationFactor)
	}
	if !set[fConcurrency] {
		r.Concurrency = DefaultConcurrency
		if r.TargetRate.IsMax() {
			r.Concurrency = ConcurrencyBuffer
		}
	}
}

// derivedFrom names, for a field, the fields whose defaults derive from it.
var derivedFrom = map[string][]string{
	"platform":           {"instance_type"},
	"brokers":            {"replication_factor"},
	"replication_factor": {"min_insync_replicas"},
	"target_rate":        {"concurrency"},
}
