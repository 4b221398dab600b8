package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xp-bench/xp/infra/local"
)

// writeFileAtomic writes b to path (0600) so a reader sees all or nothing.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func newClusterCmd(st *state) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Clusters xp can run against",
	}
	cmd.AddCommand(newClusterLocalCmd(st))
	return cmd
}

func newClusterLocalCmd(st *state) *cobra.Command {
	var fl clusterLocalFlags
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Serve an embedded cluster on loopback with every security mode",
		Long: `Starts an in-memory Kafka-protocol cluster (franz-go kfake) on --host with
one front listener per security mode and broker: plaintext, tls, mtls (client
certificate required) and sasl_ssl (SASL PLAIN or SCRAM-SHA-512 over TLS),
and xp's gateway in front of it: proxy (passthrough), encrypt (whole values)
and field_encrypt (the field ssn of JSON records, in an AES-GCM envelope),
and field_encrypt.fpe (the same field format-preserving: FF1, field_cipher
fpe), each over TLS with an upstream entry naming the direct mode behind
it, on the standard crypto stack, and again as proxy.fast, encrypt.fast,
field_encrypt.fast and field_encrypt.fpe.fast on xp's fast path
(gateway_crypto: fast; docs/gateway.md).
Writes one librdkafka client config per mode (usable with kcat -F) into --dir
and, once it serves, the --json line as cluster.json; serves until SIGINT or
SIGTERM. Records live in memory; --retention bounds
them for long high-rate loads. --direct-only leaves the gateway modes out
(a remote broker host whose gateway modes run on gateway hosts).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return fl.serve(c.Context(), st) },
	}
	f := cmd.Flags()
	f.IntVar(&fl.brokers, "brokers", 1, "number of brokers (1..9)")
	f.StringVar(&fl.host, "host", "127.0.0.1", "address to listen on and advertise (a remote broker host's private address)")
	f.StringVar(&fl.dir, "dir", "", "directory for certificates and client configs (default: a temporary directory removed on exit)")
	f.DurationVar(&fl.retention, "retention", 0, "drop records older than this, e.g. 30s (default: keep every record in memory until its topic is deleted)")
	f.BoolVar(&fl.direct, "direct-only", false, "serve only the direct modes (plaintext, tls, mtls, sasl_ssl), no gateway")
	f.BoolVar(&fl.asJSON, "json", false, `print one JSON line {"dir":..., "modes":{...}} on stdout`)
	return cmd
}

// clusterLocalFlags are xp cluster local's flags.
type clusterLocalFlags struct {
	brokers   int
	dir       string
	asJSON    bool
	retention time.Duration
	host      string
	direct    bool
}

// serve starts the embedded cluster and its gateway modes, says where
// they serve, and serves until ctx or a signal ends it.
func (fl *clusterLocalFlags) serve(ctx context.Context, st *state) error {
	if fl.brokers < 1 || fl.brokers > 9 {
		return usageErrf("--brokers %d: want 1..9", fl.brokers)
	}
	if fl.retention < 0 {
		return usageErrf("--retention %v: want a positive duration such as 30s, or 0 to keep every record", fl.retention)
	}
	ctx, stop := st.interruptible(ctx)
	defer stop()
	cl, err := local.Start(ctx, local.Options{Brokers: fl.brokers, Dir: fl.dir, Retention: fl.retention, Host: fl.host})
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, o := range localGatewayModes(fl.direct) {
		g, err := local.StartGatewayMode(ctx, cl, o)
		if err != nil {
			return err
		}
		defer g.Close()
	}
	modes := cl.Modes()
	out, err := json.Marshal(struct {
		Dir   string      `json:"dir"`
		Modes local.Modes `json:"modes"`
	}{cl.Dir(), modes})
	if err != nil {
		return err
	}
	if fl.dir != "" {
		// Written last: its presence says the cluster serves (xp's
		// agent waits for it on remote broker hosts).
		if err := writeFileAtomic(filepath.Join(cl.Dir(), local.ClusterFile), append(out, '\n')); err != nil {
			return err
		}
	}
	if fl.asJSON {
		fmt.Fprintf(st.stdout, "%s\n", out)
	} else {
		fmt.Fprintf(st.stdout, "dir %s\n", cl.Dir())
		for _, name := range cl.ModeNames() {
			m := modes[name]
			fmt.Fprintf(st.stdout, "%-10s bootstrap %s  client config %s\n", name, strings.Join(m.Bootstrap, ","), m.ClientConfig)
		}
	}
	fmt.Fprintln(st.stderr, "xp: embedded cluster serving; Ctrl-C stops it")
	<-ctx.Done()
	return nil
}

// localGatewayModes are the gateway modes xp cluster local serves, none
// when direct: each with the default transport (tls) and, for
// field_encrypt, JSON records with the field ssn, once per field_cipher;
// once per gateway_crypto level, named as the runner's mode keys name
// them (".fast" appended for fast).
func localGatewayModes(direct bool) []local.GatewayModeOptions {
	if direct {
		return nil
	}
	return local.ClusterLocalGatewayModes()
}
