// Package endpoint describes how a client reaches a cluster: one Endpoint
// per security mode, from the embedded cluster, from Apache Kafka started
// by xp, from gateways, or from a target file's existing cluster. It is a
// leaf (it imports only the gateway's description of its cryptography) so
// that both the clusters and the Target seam can hold endpoints.
package endpoint

import "github.com/xp-bench/xp/infra/gateway"

// Endpoint is one way into a cluster: a security mode's listeners, or
// the gateways of a gateway mode in front of them. Its JSON is the form
// the evidence records a group's endpoints in (the infra table);
// local.Modes is the form `xp cluster local` writes.
type Endpoint struct {
	// Bootstrap lists the host:port addresses a client starts from
	// (Kafka: bootstrap.servers).
	Bootstrap []string `json:"bootstrap"`
	// ClientConfig is the path of the mode's librdkafka property file on
	// the machines that run the load (this one unless the target runs
	// loads on machines of its own, a target.LoadRunner).
	ClientConfig string `json:"client_config"`
	// Crypto is what the gateway of a gateway mode runs its cryptography
	// on (recorded with each attempt); nil for direct modes.
	Crypto *gateway.CryptoInfo `json:"crypto,omitempty"`
	// Gateway names the gateway that serves a gateway mode (recorded with
	// each attempt); nil for direct modes.
	Gateway *GatewayInfo `json:"gateway,omitempty"`
	// Upstream is the direct mode a gateway mode of a cluster forwards
	// to; nil for direct modes. Not recorded (the gateway's kind and
	// crypto are).
	Upstream *Endpoint `json:"-"`
	// Metrics is the Prometheus endpoint of a gateway mode's builtin
	// gateway, on the gateway's host; "" for direct modes. Not recorded.
	Metrics string `json:"-"`
}

// GatewayInfo names the gateway that served a gateway mode: what a reader
// of an attempt needs to know which proxy was measured.
type GatewayInfo struct {
	// Kind is the row's gateway_kind that ran: builtin (xp's own
	// gateway), kroxylicious or command.
	Kind string `json:"kind"`
	// Version is the gateway's release: Kroxylicious's (its runtime jar's)
	// for kroxylicious; "" for builtin (it is xp, whose version the
	// attempt records) and for command, whose gateway xp does not know.
	Version string `json:"version,omitempty"`
	// Crypto is the builtin gateway's crypto stack as the row asked for it
	// (std or fast; what ran is the attempt's gateway_crypto).
	Crypto string `json:"crypto,omitempty"`
	// KMS is where a kroxylicious encrypt gateway's keys are: inmemory
	// (Kroxylicious's in-memory KMS) or vault.
	KMS string `json:"kms,omitempty"`
	// Java and JVMFlags are the Java runtime a kroxylicious gateway ran on
	// (`java -version`'s first line and java.vendor) and its JVM flags,
	// where the target knows them (the local target).
	Java     string   `json:"java,omitempty"`
	JVMFlags []string `json:"jvm_flags,omitempty"`
	// Start is a command gateway's start line, as the target file gives
	// it (a template).
	Start string `json:"start,omitempty"`
}
