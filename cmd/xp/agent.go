package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/xp-bench/xp/infra/agent"
	"github.com/xp-bench/xp/infra/hoststat"
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
		newAgentTelemetryCmd(st), newAgentInfoCmd(st))
	return cmd
}

func newAgentStartCmd(st *state) *cobra.Command {
	var (
		dir, name, waitFile string
		timeout             time.Duration
	)
	cmd := &cobra.Command{
		Use:   "start --dir DIR --name NAME [--wait-file FILE] -- COMMAND [ARG...]",
		Short: "Start COMMAND detached as service NAME (pid file DIR/run/NAME.pid, log DIR/logs/NAME.log)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if dir == "" || name == "" {
				return usageErrf("agent start: --dir and --name are required")
			}
			pid, err := agent.Supervisor{Dir: dir}.Start(name, args, agent.StartOptions{WaitFile: waitFile, Timeout: timeout})
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
	f.DurationVar(&timeout, "timeout", 60*time.Second, "how long to wait for --wait-file")
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
