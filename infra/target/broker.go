package target

import (
	"runtime/debug"
	"strings"

	"github.com/xp-bench/xp/planner"
)

// Broker software kinds a group may run.
const (
	// BrokerApache is Apache Kafka.
	BrokerApache = "apache"
	// BrokerKfake is franz-go's kfake, the in-memory Kafka-protocol
	// cluster xp embeds: its numbers are not Apache Kafka's.
	BrokerKfake = "kfake"
	// BrokerExisting is a cluster someone else runs (platform existing):
	// xp cannot name its software, only the Apache Kafka release whose API
	// versions its brokers answer with, a guess (VersionGuessed).
	BrokerExisting = "existing"
)

// KfakeModule is the Go module of the embedded cluster.
const KfakeModule = "github.com/twmb/franz-go/pkg/kfake"

// Broker says which broker software a group ran: the provenance every
// attempt records, so that a number is never taken for Apache Kafka's when
// it was measured on the embedded cluster, or for one release's when
// another ran.
type Broker struct {
	// Kind is BrokerApache or BrokerKfake.
	Kind string `json:"kind"`
	// Version is Apache Kafka's release (e.g. 4.1.0), kfake's Go module
	// version, or on an existing cluster franz-go's guess from the
	// brokers' API versions (e.g. v3.9: the protocol names no patch
	// release).
	Version string `json:"version"`
	// VersionGuessed says Version is a guess from the brokers' API
	// versions, not what the brokers say they run (existing clusters).
	VersionGuessed bool `json:"version_guessed,omitempty"`
	// ClusterID and BrokerIDs are the cluster's id and its brokers' node
	// ids as its metadata gives them (existing clusters: what the
	// checks before the first row found).
	ClusterID string  `json:"cluster_id,omitempty"`
	BrokerIDs []int32 `json:"broker_ids,omitempty"`
	// Java is the brokers' Java runtime: java -version's first line and
	// java.vendor in parentheses (Apache Kafka only).
	Java string `json:"java,omitempty"`
	// JVMFlags are the brokers' JVM flags, heap included (Apache Kafka
	// only).
	JVMFlags []string `json:"jvm_flags,omitempty"`
	// InterBrokerSecurity is what the brokers replicate over as the
	// target applied it: plaintext, tls or mtls (Apache Kafka on the
	// local target and on remote hosts).
	InterBrokerSecurity string `json:"inter_broker_security,omitempty"`
	// Authorizer is the brokers' authorizer class, absent without one,
	// and ACLs the ACLs created for other principals before the group's
	// rows (beside the ones the run's principals need).
	Authorizer string `json:"authorizer,omitempty"`
	ACLs       int    `json:"acls,omitempty"`
}

// String is "KIND VERSION", e.g. "apache 4.1.0", with a guessed version
// marked: "existing v3.9 (guessed from ApiVersions)".
func (b Broker) String() string {
	if b.Kind == "" {
		return ""
	}
	if b.VersionGuessed {
		return b.Kind + " " + b.Version + GuessedSuffix
	}
	return b.Kind + " " + b.Version
}

// GuessedSuffix marks a guessed Version where a Broker is written as text.
const GuessedSuffix = " (guessed from ApiVersions)"

// Runtime is the Java runtime and JVM flags in one line; "" for kfake.
func (b Broker) Runtime() string {
	return strings.TrimSpace(b.Java + " " + strings.Join(b.JVMFlags, " "))
}

// kfakeVersion is go.mod's version of KfakeModule, for binaries whose
// build information lists no modules (test binaries); TestKfakeBroker
// keeps it equal to go.mod's.
const kfakeVersion = "v0.0.0-20260918054303-01f206a7e32c"

// KfakeBroker is the embedded cluster this xp was built with: kfake at the
// module version recorded in the binary's build information (go.mod's
// when the binary lists no modules).
func KfakeBroker() Broker {
	v := kfakeVersion
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == KfakeModule {
				v = d.Version
				if d.Replace != nil && d.Replace.Version != "" {
					v = d.Replace.Version
				}
			}
		}
	}
	return Broker{Kind: BrokerKfake, Version: v}
}

// ParseBroker reads a Broker's String (as HostInfo.Kafka holds it); false
// for anything else.
func ParseBroker(s string) (Broker, bool) {
	kind, version, ok := strings.Cut(strings.TrimSpace(s), " ")
	if !ok || version == "" || (kind != BrokerApache && kind != BrokerKfake) {
		return Broker{}, false
	}
	return Broker{Kind: kind, Version: version}, true
}

// BrokerReporter is a Target that says which broker software the group
// that is up runs. The runner records it with every attempt and names the
// group by it.
type BrokerReporter interface {
	Broker() Broker
}

// BrokerPlanner is a Target that says, before a group comes up, which
// broker software it will run for it (Kind and Version; Java is known only
// once it runs). The runner names groups by it in its log, so a group on
// the embedded cluster is never called by the kafka_version its rows ask
// for, and says once, before starting, when rows ask for Apache Kafka the
// target will not run.
type BrokerPlanner interface {
	PlannedBroker(k planner.InfraKey) Broker
}
