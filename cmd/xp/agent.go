package main

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/xp-bench/xp/infra/agent"
	"github.com/xp-bench/xp/infra/hoststat"
	"github.com/xp-bench/xp/infra/pki"
)

// newAgentCmd is what xp runs on remote hosts over SSH; people rarely type
// it, so it is hidden from the command list.
func newAgentCmd(st *state) *cobra.Command {
	cmd := &cobra.Command{
		Use:    "agent",
		Short:  "xp's side on a remote host: supervised services, telemetry, host facts",
		Hidden: true,
	}
	cmd.AddCommand(newAgentStartCmd(st), newAgentStopCmd(st), newAgentStatusCmd(st),
		newAgentTelemetryCmd(st), newAgentInfoCmd(st), newAgentKafkaReadyCmd(st), newAgentKDCCmd(st), newAgentIDPCmd(st))
	return cmd
}

func newAgentStartCmd(st *state) *cobra.Command {
	var (
		dir, name, waitFile string
		waitKafka, waitTCP  string
		tlsCA, tlsCert      string
		tlsKey              string
		timeout             time.Duration
	)
	cmd := &cobra.Command{
		Use:   "start --dir DIR --name NAME [--wait-file FILE | --wait-kafka ADDR | --wait-tcp ADDR] -- COMMAND [ARG...]",
		Short: "Start COMMAND detached as service NAME (pid file DIR/run/NAME.pid, log DIR/logs/NAME.log)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if dir == "" || name == "" {
				return usageErrf("agent start: --dir and --name are required")
			}
			o := agent.StartOptions{WaitFile: waitFile, Timeout: timeout}
			if waitKafka != "" && waitTCP != "" {
				return usageErrf("agent start: --wait-kafka or --wait-tcp, not both")
			}
			if addr := waitKafka + waitTCP; addr != "" {
				if _, _, err := net.SplitHostPort(addr); err != nil {
					return usageErrf("agent start: %s: want HOST:PORT", addr)
				}
				var tlsCfg *tls.Config
				if tlsCA != "" {
					var err error
					if tlsCfg, err = pki.ClientTLS(tlsCA, tlsCert, tlsKey, ""); err != nil {
						return err
					}
				}
				ctx := c.Context()
				if waitKafka != "" {
					o.Ready = func() error { return agent.KafkaReady(ctx, addr, tlsCfg) }
					o.ReadyWhat = "no Kafka ApiVersions answer on " + addr
				} else {
					o.Ready = func() error { return agent.TCPReady(ctx, addr, tlsCfg) }
					o.ReadyWhat = "no connection accepted on " + addr
				}
			}
			pid, err := agent.Supervisor{Dir: dir}.Start(name, args, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(st.stdout, "%d\n", pid)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "the campaign directory on this host")
	f.StringVar(&name, "name", "", "service name")
	f.StringVar(&waitFile, "wait-file", "", "return once the service has written this file")
	f.StringVar(&waitKafka, "wait-kafka", "", "return once HOST:PORT answers a Kafka ApiVersions request")
	f.StringVar(&waitTCP, "wait-tcp", "", "return once HOST:PORT accepts a connection")
	f.StringVar(&tlsCA, "wait-tls-ca", "", "probe --wait-kafka/--wait-tcp over TLS, verifying the server with this PEM CA")
	f.StringVar(&tlsCert, "wait-tls-cert", "", "with --wait-tls-ca: the client certificate to present (mTLS)")
	f.StringVar(&tlsKey, "wait-tls-key", "", "with --wait-tls-cert: its key")
	f.DurationVar(&timeout, "timeout", 60*time.Second, "how long to wait until ready")
	return cmd
}

func newAgentStopCmd(st *state) *cobra.Command {
	var (
		dir   string
		grace time.Duration
	)
	cmd := &cobra.Command{
		Use:   "stop --dir DIR [NAME...]",
		Short: "Stop the named services, or every one",
		RunE: func(c *cobra.Command, args []string) error {
			if dir == "" {
				return usageErrf("agent stop: --dir is required")
			}
			return agent.Supervisor{Dir: dir}.Stop(grace, args...)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the campaign directory on this host")
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "time between SIGTERM and SIGKILL")
	return cmd
}

func newAgentStatusCmd(st *state) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "status --dir DIR",
		Short: "The services under DIR as JSON lines",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if dir == "" {
				return usageErrf("agent status: --dir is required")
			}
			svcs, err := agent.Supervisor{Dir: dir}.Status()
			if err != nil {
				return err
			}
			enc := json.NewEncoder(st.stdout)
			for _, s := range svcs {
				if err := enc.Encode(s); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the campaign directory on this host")
	return cmd
}

func newAgentTelemetryCmd(st *state) *cobra.Command {
	var (
		interval time.Duration
		count    int
	)
	cmd := &cobra.Command{
		Use:   "telemetry [--interval 1s] [--count N]",
		Short: "Host CPU, memory, network and disk rates as one JSON line per interval",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if interval < 10*time.Millisecond {
				return usageErrf("agent telemetry: --interval %v: want at least 10ms", interval)
			}
			ctx, stop := st.interruptible(c.Context())
			defer stop()
			return hoststat.Stream(ctx, hoststat.Reader{}, interval, count, st.stdout)
		},
	}
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "sampling interval")
	cmd.Flags().IntVar(&count, "count", 0, "stop after this many lines (0: until interrupted or stdout closes)")
	return cmd
}

func newAgentInfoCmd(st *state) *cobra.Command {
	return &cobra.Command{
		Use:   "info",
		Short: "This host's OS, architecture, kernel, distribution, CPUs, memory and Java as JSON",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return json.NewEncoder(st.stdout).Encode(agent.HostInfo(c.Context()))
		},
	}
}
