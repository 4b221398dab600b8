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

	"github.com/xp-bench/xp/infra/endpoint"
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
	Modes map[string]endpoint.Endpoint `json:"modes"`
	// Hosts are the machines that make up the cluster (empty for the
	// embedded one).
	Hosts []string `json:"hosts,omitempty"`
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
