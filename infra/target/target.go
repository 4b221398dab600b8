// Package target is the seam between the runner and the infrastructure a
// campaign runs on: a Target makes one group's cluster exist and takes it
// away again, and says how to reach it. Each platform (local, aws, azure,
// hosts) implements Target; what only some of them can do is an optional
// interface the runner finds by type assertion.
package target

import (
	"context"
	"slices"
	"strings"

	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/planner"
)

// Target makes the infrastructure of one group exist and takes it away.
// The runner calls Up once per group, and Down before the next group's Up
// and at the end of the campaign (unless --keep).
type Target interface {
	// Up brings up the infrastructure the rows of g need and says how to
	// reach it. Calling Up again for the same group after an error
	// continues from what the failed call left (errors marked transient
	// are retried this way).
	Up(ctx context.Context, g Group) (Endpoints, error)
	// Down takes down what the last Up brought up. It is safe to call when
	// nothing is up.
	Down(ctx context.Context) error
}

// ModeLister is a Target that can say, before anything is up, which
// security modes it serves. The runner refuses rows asking for any other
// mode before the campaign starts.
type ModeLister interface {
	Modes(ctx context.Context) ([]string, error)
}

// RowChecker is a Target that can refuse, before anything is up, rows it
// cannot run; the runner lists them all before the campaign starts.
type RowChecker interface {
	CheckRow(r *planner.Row) error
}

// Group is a run of plan rows that share infrastructure (planner.InfraKey).
type Group struct {
	Key  planner.InfraKey
	Rows []planner.Row
}

// Endpoints is how to reach the infrastructure of a group.
type Endpoints struct {
	// Modes maps ModeKey of a row (plaintext, tls, mtls, sasl_ssl, proxy,
	// encrypt.mtls, field_encrypt.avro, ...) to its endpoint.
	Modes map[string]Endpoint `json:"modes"`
	// Hosts are the machines that make up the cluster (empty for the
	// embedded one).
	Hosts []string `json:"hosts,omitempty"`
}

// Endpoint is one way into the cluster.
type Endpoint struct {
	Bootstrap []string `json:"bootstrap"`
	// ClientConfig is the path of a librdkafka property file on the
	// machines that run the load (this one unless the target is a
	// LoadRunner).
	ClientConfig string `json:"client_config"`
	// Crypto is what the gateway of a gateway mode runs its cryptography
	// on (recorded with each attempt); nil for direct modes.
	Crypto *gateway.CryptoInfo `json:"crypto,omitempty"`
	// Gateway names the gateway that serves a gateway mode (recorded with
	// each attempt); nil for direct modes.
	Gateway *GatewayInfo `json:"gateway,omitempty"`
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

// ModeKey names the endpoint a row runs against in Endpoints.Modes, with
// the names `xp cluster local` uses: the security mode for direct modes;
// for gateway modes planner.GatewayModeName (with field_cipher), and encrypt_fields other than
// the default (ssn) appended with "+" between them, and ".fast" for
// gateway_crypto fast, e.g. "proxy", "proxy.sasl_ssl",
// "field_encrypt.avro.mtls", "field_encrypt.ssn+notes", "encrypt.fast",
// "field_encrypt.fpe.sasl_ssl.ssn+status".
func ModeKey(r *planner.Row) string {
	if !r.NeedsGateway() {
		return r.Security
	}
	k := planner.GatewayModeName(r.Security, r.GatewayTransport, r.Encoding, r.FieldCipher)
	if r.Security == planner.SecurityFieldEncrypt && len(r.EncryptFields) > 0 &&
		!slices.Equal(r.EncryptFields, planner.DefaultEncryptFields) {
		k += "." + strings.Join(r.EncryptFields, "+")
	}
	if r.GatewayCrypto == planner.GatewayCryptoFast {
		k += "." + planner.GatewayCryptoFast
	}
	return k
}
