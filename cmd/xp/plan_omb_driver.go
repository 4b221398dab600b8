package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xp-bench/xp/infra/existing"
)

func newPlanImportOMBDriverCmd(st *state) *cobra.Command {
	var dir, out string
	c := &cobra.Command{
		Use:   "import-omb-driver MODE=DRIVER.yaml... [--dir DIR] [-o TARGET.yaml]",
		Short: "Turn OpenMessaging Benchmark Kafka driver files into the endpoints of a TARGET.yaml of platform existing",
		Long: `Import-omb-driver reads OMB Kafka driver files (driver-kafka/kafka-*.yaml:
commonConfig, producerConfig, consumerConfig), one per security mode, and
writes each one's connection properties to DIR/MODE.properties (0600) and a
TARGET.yaml of platform existing naming them as endpoints (stdout, or -o).
The drivers' producer and topic settings that are spec fields in xp (acks,
linger_ms, batch_bytes, compression, replication_factor,
min_insync_replicas) are listed as comments; what xp does not take over is
named on stderr with its line. docs/targets.md.

  xp plan import-omb-driver plaintext=kafka-latency.yaml sasl_ssl=kafka-sasl.yaml --dir configs -o existing.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			abs, err := filepath.Abs(dir)
			if err != nil {
				return usageErr(err)
			}
			var imports []*existing.DriverImport
			seen := map[string]bool{}
			for _, a := range args {
				mode, file, ok := strings.Cut(a, "=")
				if !ok || mode == "" || file == "" {
					return usageErrf("%q: want MODE=DRIVER.yaml, e.g. tls=kafka-tls.yaml", a)
				}
				if seen[mode] {
					return usageErrf("mode %s is given twice", mode)
				}
				seen[mode] = true
				data, err := os.ReadFile(file)
				if err != nil {
					return usageErr(err)
				}
				d, err := existing.ImportOMBDriver(file, data, mode)
				if err != nil {
					return usageErr(err)
				}
				for _, n := range d.Notes {
					fmt.Fprintln(st.stderr, n)
				}
				imports = append(imports, d)
			}
			if err := os.MkdirAll(abs, 0o700); err != nil {
				return usageErr(err)
			}
			for _, d := range imports {
				p := filepath.Join(abs, d.Mode+".properties")
				f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
				if err != nil {
					if os.IsExist(err) {
						return usageErrf("%s exists: remove it, or give another --dir", p)
					}
					return err
				}
				_, werr := f.WriteString(d.Properties)
				if err := f.Close(); werr == nil {
					werr = err
				}
				if werr != nil {
					return werr
				}
			}
			return writeOutput(st, out, func(w io.Writer) error {
				fmt.Fprintf(w, "# Imported by xp plan import-omb-driver from %s.\nplatform: existing\nendpoints:\n", strings.Join(args, ", "))
				for _, d := range imports {
					var boot []string
					for _, b := range d.Bootstrap {
						boot = append(boot, strconv.Quote(b))
					}
					fmt.Fprintf(w, "  %s: {bootstrap: [%s], client_config: %s}\n", d.Mode, strings.Join(boot, ", "),
						strconv.Quote(filepath.Join(abs, d.Mode+".properties")))
				}
				for _, d := range imports {
					if len(d.Spec) > 0 {
						fmt.Fprintf(w, "# The %s driver's settings that are spec fields in xp (put them under fixed: or factors: of the spec):\n", d.Mode)
						for _, s := range d.Spec {
							fmt.Fprintf(w, "#   %s\n", s)
						}
					}
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&dir, "dir", ".", "directory the client configs are written to, as `DIR`/MODE.properties")
	c.Flags().StringVarP(&out, "output", "o", "", "write the TARGET.yaml to `FILE` instead of stdout")
	return c
}
