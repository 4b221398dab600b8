package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/xp-bench/xp/analysis"
	"github.com/xp-bench/xp/results"
)

func newImportCmd(st *state) *cobra.Command {
	var (
		db, treatment, baseline, campaign string
		metrics, levels                   []string
	)
	c := &cobra.Command{
		Use:   "import FILE... --db FILE [--treatment NAME] [--baseline LEVEL] [--metric NAME[:higher]]...",
		Short: "Import OpenMessaging Benchmark results or a per-run CSV into a new campaign db",
		Long: `Import stores outside evidence as a campaign that xp analyse treats like a native one.

OpenMessaging Benchmark result JSON: workload, driver, messageSize, topics,
partitions, producersPerTopic and consumersPerTopic become factors;
--treatment names the compared one (driver, the default, or workload);
several files of one setting are replicates, numbered in argument order.
OMB names the driver, not its security settings (a TLS and a plaintext
driver file both say "Kafka"): give each file its level with
--level LEVEL=FILE or --level LEVEL=PATTERN, e.g.
  xp import results/*.json --db omb.db --level plaintext='kafka-latency-*' --level tls='ssl-*'
The publish and consume rates are means over the samples up to the last
with a non-zero publish rate (see docs/import.md).

Per-run CSV with a header: --treatment COLUMN, --metric NAME[:higher] for
every metric column (":higher" when larger is better); optional pair and
replicate columns (otherwise the pair is every other non-metric column and
replicates are numbered in file order) and an outcome column (done,
invalid, failed; default done). Every other column is a factor.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			if db == "" {
				return usageErrf("import: --db FILE is required: the new campaign db to write")
			}
			ctx, stop := st.interruptible(cmd.Context())
			defer stop()
			d, err := analysis.Import(ctx, db, files, analysis.ImportOptions{Treatment: treatment, Baseline: baseline,
				Metrics: metrics, Levels: levels, Campaign: campaign, Created: st.now()})
			var ie *analysis.ImportError
			var be *analysis.BaselineError
			var le *results.LockedError
			switch {
			case errors.As(err, &ie), errors.As(err, &be), errors.Is(err, analysis.ErrDatabaseExists), errors.As(err, &le),
				errors.Is(err, analysis.ErrImportOption), errors.Is(err, os.ErrNotExist), errors.Is(err, os.ErrPermission),
				errors.Is(err, results.ErrNotCampaign), errors.Is(err, results.ErrNewerSchema) || errors.Is(err, results.ErrOlderSchema):
				return usageErr(err)
			case err != nil:
				return fmt.Errorf("import: %w", err)
			}
			fmt.Fprintf(st.stdout, "imported %d runs into %s (treatment %s, baseline %s); analyse with: xp analyse --db %s\n",
				len(d.Runs), db, d.Treatment, d.Baseline, db)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&db, "db", "", "campaign db to create (required; must not hold a campaign)")
	f.StringVar(&treatment, "treatment", "", "compared factor: OMB driver (default) or workload; for CSV the column (required)")
	f.StringVar(&baseline, "baseline", "", "reference level of the treatment (default: the first file's)")
	f.StringArrayVar(&metrics, "metric", nil, "CSV metric column, NAME or NAME:higher when larger is better (repeatable)")
	f.StringArrayVar(&levels, "level", nil, "OMB: LEVEL=FILE or LEVEL=PATTERN gives matching files that treatment level (repeatable)")
	f.StringVar(&campaign, "campaign", "", "campaign name (default: the db file name)")
	return c
}
