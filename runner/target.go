package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/xp-bench/xp/infra/gateway/encrypt"
	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/planner"
)

// Target makes the infrastructure of one group exist and takes it away.
// Up is called once per group, Down before the next group's Up and at the
// end (unless --keep).
type Target interface {
	// Up brings up the infrastructure rows of g need and says how to reach
	// it.
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

// ProcessLister is a Target whose infrastructure runs in processes on this
// machine: telemetry samples each one's CPU time and memory under its
// name, and a process named "gateway" gives each attempt its
// gateway_cpu_us_per_msg.
type ProcessLister interface {
	Processes() map[string]int
}

// RowChecker is a Target that can refuse, before anything is up, rows it
// cannot run; the runner lists them all before the campaign starts.
type RowChecker interface {
	CheckRow(r *planner.Row) error
}

// ModeKey names the endpoint a row runs against in Endpoints.Modes, with
// the names `xp cluster local` uses: the security mode for direct modes;
// for gateway modes local.GatewayModeName (the transport and the
// field_encrypt encoding appended when not the default, e.g. "proxy",
// "proxy.sasl_ssl", "field_encrypt.avro.mtls"), and encrypt_fields other
// than ssn appended with "+" between them.
func ModeKey(r *planner.Row) string {
	if !r.NeedsGateway() {
		return r.Security
	}
	k := local.GatewayModeName(r.Security, r.GatewayTransport, r.Encoding)
	if r.Security == local.FieldEncrypt && len(r.EncryptFields) > 0 &&
		!slices.Equal(r.EncryptFields, encrypt.DefaultFields) {
		k += "." + strings.Join(r.EncryptFields, "+")
	}
	return k
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
	// ClientConfig is a librdkafka property file.
	ClientConfig string `json:"client_config"`
}

// targetFile is the part of a TARGET.yaml every platform shares.
type targetFile struct {
	Platform string `yaml:"platform"`
}

// platforms lists every platform a plan row may name, and whether this
// build can provision it.
var platforms = map[string]bool{"local": true, "aws": false, "azure": false, "hosts": false}

// openTarget resolves --target: "local" or a TARGET.yaml path. Errors are
// bad input.
func openTarget(spec, workDir string) (Target, string, string, error) {
	if spec == "" || spec == "local" {
		return newLocalTarget(workDir), "local", "local", nil
	}
	b, err := os.ReadFile(spec)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", "", fmt.Errorf("--target %s: no such file (use --target local, or the path of a TARGET.yaml)", spec)
	}
	if err != nil {
		return nil, "", "", fmt.Errorf("--target %s: %w", spec, err)
	}
	var tf targetFile
	if err := yaml.Unmarshal(b, &tf); err != nil {
		return nil, "", "", fmt.Errorf("--target %s: not valid YAML: %s", spec, yamlReason(err))
	}
	switch supported, known := platforms[tf.Platform]; {
	case tf.Platform == "":
		return nil, "", "", fmt.Errorf("--target %s: no platform: set `platform:` to one of %s", spec, platformList())
	case !known:
		return nil, "", "", fmt.Errorf("--target %s: unknown platform %q: want one of %s", spec, tf.Platform, platformList())
	case !supported:
		return nil, "", "", fmt.Errorf("--target %s: platform %q is not supported yet by this xp (only local is); use --target local", spec, tf.Platform)
	}
	return newLocalTarget(workDir), tf.Platform, string(b), nil
}

func platformList() string {
	var names []string
	for p := range platforms {
		names = append(names, p)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func yamlReason(err error) string {
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

// endpointsJSON is the endpoints as recorded in the infra table.
func endpointsJSON(e Endpoints) json.RawMessage {
	b, _ := json.Marshal(e)
	return b
}
