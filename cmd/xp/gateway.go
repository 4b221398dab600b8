package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/gateway/encrypt"
	"github.com/xp-bench/xp/infra/remote"
)

// gatewayExtensions are the config keys handled outside infra/gateway: the
// encrypting modes' `encrypt:` section.
var gatewayExtensions = func() []gateway.Extension { return []gateway.Extension{encrypt.Extension()} }

// GatewayReady is what `xp gateway --ready-file` writes.
type GatewayReady = remote.GatewayReady

func newGatewayCmd(st *state) *cobra.Command {
	var (
		configPath string
		asJSON     bool
		verbose    bool
		readyFile  string
	)
	cmd := &cobra.Command{
		Use:   "gateway --config FILE",
		Short: "Run the built-in Kafka gateway",
		Long: `Run xp's Kafka gateway: a proxy that unchanged Kafka clients use instead of
the brokers (security mode "proxy"). The config (YAML) names the listen
address, the client leg (plaintext, tls, mtls, sasl_ssl), the upstream
brokers and their transport, limits and the /metrics address; see
docs/gateway.md. Prints the bootstrap and metrics addresses
on stdout and serves until interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configPath == "" {
				return usageErrf("gateway: --config FILE is required")
			}
			cfg, err := gateway.LoadConfig(configPath, gatewayExtensions()...)
			if err != nil {
				var ce *gateway.ConfigError
				if errors.As(err, &ce) {
					return usageErr(err)
				}
				return err
			}
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			log := slog.New(slog.NewTextHandler(st.stderr, &slog.HandlerOptions{Level: level}))
			ctx, stop := st.interruptible(context.Background())
			defer stop()
			g, err := gateway.Start(ctx, cfg, gateway.WithLogger(log))
			if err != nil {
				var ce *gateway.ConfigError
				if errors.As(err, &ce) {
					return usageErr(err)
				}
				return err
			}
			if readyFile != "" {
				// Written once it serves: xp's agent waits for it on
				// remote gateway hosts, and reads the crypto that runs.
				b, err := json.Marshal(GatewayReady{Bootstrap: g.Bootstrap(), Metrics: g.MetricsURL(), Crypto: g.Crypto()})
				if err != nil {
					g.Close()
					return err
				}
				if err := writeFileAtomic(readyFile, append(b, '\n')); err != nil {
					g.Close()
					return fmt.Errorf("gateway: --ready-file: %w", err)
				}
			}
			if asJSON {
				b, _ := json.Marshal(map[string]string{"bootstrap": g.Bootstrap(), "metrics": g.MetricsURL()})
				fmt.Fprintln(st.stdout, string(b))
			} else {
				fmt.Fprintf(st.stdout, "bootstrap %s\nmetrics %s\n", g.Bootstrap(), g.MetricsURL())
			}
			<-ctx.Done()
			log.Info("gateway stopping")
			return g.Close()
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "gateway config file (YAML)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the addresses as one JSON object")
	cmd.Flags().StringVar(&readyFile, "ready-file", "", "once serving, write the bootstrap and metrics addresses and the crypto that runs to this file (JSON, 0600)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log every connection close")
	return cmd
}
