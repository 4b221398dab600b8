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

// fieldDef describes one factor field of a plan row.
type fieldDef struct {
	name     string
	kind     kind
	enum     []string
	min, max int64
	pattern  *regexp.Regexp
	hint     string // what the pattern accepts, for messages
	required bool
	infra    bool // part of the infrastructure a row needs
	// unhashed is, for a field added after cells were first hashed
	// (field_cipher), its default: at that level the field is left out
	// of the canonical form, so the cells of plans from before the field
	// are unchanged, and a plan row without the field has that level.
	unhashed string
	// refused maps a level that is named but cannot run here to the
	// reason (client librdkafka): a spec or plan naming it is refused with
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

func intField(name string, min, max int64, get func(*Row) *int) fieldDef {
	return fieldDef{name: name, kind: kindInt, min: min, max: max,
		get: func(r *Row) Value { return Value{Int: int64(*get(r))} },
		set: func(r *Row, v Value) { *get(r) = int(v.Int) }}
}

func enumField(name string, enum []string, get func(*Row) *string) fieldDef {
	return fieldDef{name: name, kind: kindEnum, enum: enum,
		get: func(r *Row) Value { return Value{Str: *get(r)} },
		set: func(r *Row, v Value) { *get(r) = v.Str }}
}

func textField(name string, re *regexp.Regexp, hint string, get func(*Row) *string) fieldDef {
	return fieldDef{name: name, kind: kindText, pattern: re, hint: hint,
		get: func(r *Row) Value { return Value{Str: *get(r)} },
		set: func(r *Row, v Value) { *get(r) = v.Str }}
}

// fields lists every factor field in docs/spec.md's order.
var fields = []fieldDef{
	withReq(enumField("security", slices.Concat(directModes, gatewayModes), func(r *Row) *string { return &r.Security })),
	withInfra(withReq(intField("brokers", 1, 9, func(r *Row) *int { return &r.Brokers }))),
	withReq(intField("message_size", 16, 1<<20, func(r *Row) *int { return &r.MessageSize })),
	withReq(enumField("acks", []string{"0", "1", "all"}, func(r *Row) *string { return &r.Acks })),
	withReq(fieldDef{name: "target_rate", kind: kindRate, min: 1, max: 100_000_000,
		get: func(r *Row) Value { return Value{Int: int64(r.TargetRate)} },
		set: func(r *Row, v Value) { r.TargetRate = Rate(v.Int) }}),
	withInfra(enumField("platform", Platforms, func(r *Row) *string { return &r.Platform })),
	withInfra(textField("instance_type", reInstance, "letters, digits, '.', '_' or '-', e.g. m5.xlarge", func(r *Row) *string { return &r.InstanceType })),
	intField("partitions", 1, 10000, func(r *Row) *int { return &r.Partitions }),
	intField("topics", 1, 1000, func(r *Row) *int { return &r.Topics }),
	intField("replication_factor", 1, 9, func(r *Row) *int { return &r.ReplicationFactor }),
	intField("min_insync_replicas", 1, 9, func(r *Row) *int { return &r.MinInsyncReplicas }),
	intField("producers", 1, 1000, func(r *Row) *int { return &r.Producers }),
	intField("consumer_groups", 0, 100, func(r *Row) *int { return &r.ConsumerGroups }),
	intField("consumers_per_group", 1, 1000, func(r *Row) *int { return &r.ConsumersPerGroup }),
	intField("concurrency", 0, 10000, func(r *Row) *int { return &r.Concurrency }),
	intField("linger_ms", 0, 60000, func(r *Row) *int { return &r.LingerMs }),
	intField("batch_bytes", 1024, 16<<20, func(r *Row) *int { return &r.BatchBytes }),
	enumField("compression", []string{"none", "gzip", "snappy", "lz4", "zstd"}, func(r *Row) *string { return &r.Compression }),
	enumField("encoding", []string{"bytes", "json", "avro", "protobuf"}, func(r *Row) *string { return &r.Encoding }),
	{name: "encrypt_fields", kind: kindList, enum: RecordFields,
		get: func(r *Row) Value { return Value{List: r.EncryptFields} },
		set: func(r *Row, v Value) { r.EncryptFields = v.List }},
	unhashedAt(enumField("field_cipher", []string{FieldCipherAEAD, FieldCipherFPE}, func(r *Row) *string { return &r.FieldCipher }), DefaultFieldCipher),
	withInfra(intField("gateways", 1, 16, func(r *Row) *int { return &r.Gateways })),
	withInfra(enumField("gateway_kind", []string{GatewayKindBuiltin, GatewayKindKroxylicious, GatewayKindCommand}, func(r *Row) *string { return &r.GatewayKind })),
	enumField("gateway_transport", directModes, func(r *Row) *string { return &r.GatewayTransport }),
	enumField("gateway_crypto", []string{GatewayCryptoStd, GatewayCryptoFast}, func(r *Row) *string { return &r.GatewayCrypto }),
	intField("warmup_s", 0, 3600, func(r *Row) *int { return &r.WarmupS }),
	intField("duration_s", 1, 86400, func(r *Row) *int { return &r.DurationS }),
	intField("drain_timeout_s", 1, 3600, func(r *Row) *int { return &r.DrainTimeoutS }),
	withInfra(textField("kafka_version", reVersion, "a release number such as 3.9.1", func(r *Row) *string { return &r.KafkaVersion })),
	refusing(unhashedAt(enumField("client", Clients(), func(r *Row) *string { return &r.Client }), DefaultClient), ClientsRefused),
}

func withReq(f fieldDef) fieldDef { f.required = true; return f }

// unhashedAt leaves f out of the canonical form at level def (see
// fieldDef.unhashed).
func unhashedAt(f fieldDef, def string) fieldDef { f.unhashed = def; return f }
func withInfra(f fieldDef) fieldDef              { f.infra = true; return f }

// refusing marks levels of f refused, with their reasons (see
// fieldDef.refused).
func refusing(f fieldDef, why map[string]string) fieldDef { f.refused = why; return f }

// Field indices used by the planner's own logic.
var (
	fInstance    = fieldIndex("instance_type")
	fRF          = fieldIndex("replication_factor")
	fISR         = fieldIndex("min_insync_replicas")
	fConcurrency = fieldIndex("concurrency")
	fEncrypt     = fieldIndex("encrypt_fields")
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

// applyDefaults fills every field not marked in set. Defaults that depend
// on other fields (instance_type on platform, replication_factor on brokers,
// min_insync_replicas on replication_factor) are filled after the others.
func applyDefaults(r *Row, set []bool) {
	def := func(i int, f func()) {
		if !set[i] {
			f()
		}
	}
	def(fieldIndex("platform"), func() { r.Platform = DefaultPlatform })
	def(fieldIndex("partitions"), func() { r.Partitions = DefaultPartitions })
	def(fieldIndex("topics"), func() { r.Topics = DefaultTopics })
	def(fieldIndex("producers"), func() { r.Producers = DefaultProducers })
	def(fieldIndex("consumer_groups"), func() { r.ConsumerGroups = DefaultConsumerGroups })
	def(fieldIndex("consumers_per_group"), func() { r.ConsumersPerGroup = DefaultConsumersPerGroup })
	def(fieldIndex("linger_ms"), func() { r.LingerMs = DefaultLingerMs })
	def(fieldIndex("batch_bytes"), func() { r.BatchBytes = DefaultBatchBytes })
	def(fieldIndex("compression"), func() { r.Compression = DefaultCompression })
	def(fieldIndex("encoding"), func() { r.Encoding = DefaultEncoding })
	def(fEncrypt, func() { r.EncryptFields = DefaultEncryptFields })
	def(fieldIndex("gateways"), func() { r.Gateways = DefaultGateways })
	def(fieldIndex("gateway_kind"), func() { r.GatewayKind = DefaultGatewayKind })
	def(fieldIndex("gateway_transport"), func() { r.GatewayTransport = DefaultGatewayTransport })
	def(fieldIndex("gateway_crypto"), func() { r.GatewayCrypto = DefaultGatewayCrypto })
	def(fieldIndex("field_cipher"), func() { r.FieldCipher = DefaultFieldCipher })
	def(fieldIndex("warmup_s"), func() { r.WarmupS = DefaultWarmupS })
	def(fieldIndex("duration_s"), func() { r.DurationS = DefaultDurationS })
	def(fieldIndex("drain_timeout_s"), func() { r.DrainTimeoutS = DefaultDrainTimeoutS })
	def(fieldIndex("kafka_version"), func() { r.KafkaVersion = DefaultKafkaVersion })
	def(fieldIndex("client"), func() { r.Client = DefaultClient })
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
