package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/xp-bench/xp/analysis"
	"github.com/xp-bench/xp/analysis/explore"
	"github.com/xp-bench/xp/results"
)

func newExploreCmd(st *state) *cobra.Command {
	var (
		out, serve, method string
		resamples          int
		confidence         float64
	)
	c := &cobra.Command{
		Use:   "explore DB [DB...] (--out DIR | --serve ADDR)",
		Short: "A results explorer: campaigns, effects by slice, configurations, runs, comparisons; a static site or served live",
		Long: `Explore browses one or more campaign dbs down to one run's evidence: campaigns,
effects (pick metrics and treatment, filter by factor levels), a configuration's
matched sets, a run's histograms, series, telemetry, logs and phases, and a
comparison of campaigns that share configurations (see docs/explore.md).

--out DIR writes a static, self-contained site (index.html, assets/, data/):
it makes no network request and can be published on any static host.
--serve ADDR serves the same pages from the dbs, on loopback only (":8080"
means 127.0.0.1:8080), reading them read-only while xp run writes; the pages follow
a running campaign and mark its effects provisional until it ends.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dbs []string) error {
			if (out == "") == (serve == "") {
				return usageErrf("xp explore: give --out DIR (a static site) or --serve ADDR (served from the dbs), one of them")
			}
			if cmd.Flags().Changed("resamples") && resamples < 100 {
				return usageErrf("--resamples %d too few: want at least 100 (default 10000)", resamples)
			}
			var addr string
			if serve != "" {
				a, err := loopbackAddr(serve)
				if err != nil {
					return usageErr(err)
				}
				addr = a
			}
			ctx, stop := st.interruptible(cmd.Context())
			defer stop()
			for _, db := range dbs {
				if err := checkCampaignDB(ctx, db); err != nil {
					return usageErr(err)
				}
			}
			opt := explore.Options{Analysis: analysis.Options{Method: analysis.Method(method), Resamples: resamples, Confidence: confidence}}
			if out != "" {
				site, err := explore.WriteSite(ctx, out, dbs, opt)
				if err != nil {
					return exploreErr(err)
				}
				for _, c := range site.Campaigns {
					mark := ""
					if c.Provisional {
						mark = " (provisional: the campaign has rows not run yet)"
					}
					fmt.Fprintf(st.stderr, "%s: %d runs, %d effects%s\n", c.Name, len(c.Runs), len(c.Effects), mark)
				}
				fmt.Fprintf(st.stdout, "site: %s\n", filepath.Join(out, "index.html"))
				return nil
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return usageErrf("--serve %s: %v", serve, err)
			}
			srv := &http.Server{Handler: explore.NewServer(dbs, opt), ReadHeaderTimeout: 10 * time.Second}
			fmt.Fprintf(st.stdout, "serving http://%s/\n", ln.Addr())
			go func() {
				<-ctx.Done()
				srv.Close()
			}()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&out, "out", "", "write a static site into DIR")
	f.StringVar(&serve, "serve", "", "serve the pages at ADDR, loopback only: 127.0.0.1:8080, or :8080 (host 127.0.0.1), or :0 (any free port)")
	f.StringVar(&method, "method", "bca", "bootstrap interval: bca or percentile")
	f.IntVar(&resamples, "resamples", 10000, "bootstrap resamples")
	f.Float64Var(&confidence, "confidence", 0.95, "confidence level of the intervals")
	return c
}

// loopbackAddr returns addr with its host defaulted to 127.0.0.1, or an
// error if it names a host that is not loopback: the explorer serves the
// evidence to this machine only.
func loopbackAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--serve %s: want HOST:PORT or :PORT (e.g. 127.0.0.1:8080): %v", addr, err)
	}
	if host == "" || host == "localhost" {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("--serve %s: xp explore serves on loopback only (127.0.0.1 or ::1); publish a static site with --out to share it", addr)
	}
	return net.JoinHostPort(host, port), nil
}

// checkCampaignDB refuses a path that is not a campaign db before anything
// is written or served.
func checkCampaignDB(ctx context.Context, db string) error {
	if fi, err := os.Stat(db); err != nil || fi.IsDir() {
		return fmt.Errorf("xp explore: %s is not a campaign db (give the .db files xp run wrote)", db)
	}
	s, err := results.OpenReadOnly(ctx, db)
	if err != nil {
		return fmt.Errorf("xp explore: %w (give the .db files xp run wrote)", err)
	}
	defer s.Close()
	if _, err := s.Campaign(ctx); err != nil {
		return fmt.Errorf("xp explore: %s: %w (give the .db files xp run wrote)", db, err)
	}
	return nil
}

// exploreErr maps a db that is not a campaign to a usage error.
func exploreErr(err error) error {
	if errors.Is(err, results.ErrNoDatabase) || errors.Is(err, results.ErrNotCampaign) ||
		errors.Is(err, results.ErrNoCampaign) || errors.Is(err, results.ErrNewerSchema) || errors.Is(err, results.ErrOlderSchema) ||
		errors.Is(err, analysis.ErrBadOption) {
		return usageErr(err)
	}
	return fmt.Errorf("xp explore: %w", err)
}
