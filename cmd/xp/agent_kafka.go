package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xp-bench/xp/infra/agent"
	"github.com/xp-bench/xp/infra/kafkaconf"
)

// newAgentKafkaReadyCmd is run on a host inside the cluster's network
// (where the brokers' advertised addresses are reachable): it creates the
// SCRAM user and waits until every mode sees every broker.
func newAgentKafkaReadyCmd(st *state) *cobra.Command {
	var (
		brokers             string
		timeout             time.Duration
		scramAdmin, scramOf string
		aclPrincipals       []string
		acls                int
	)
	cmd := &cobra.Command{
		Use:   "kafka-ready --brokers ID,... [--timeout 3m] [--scram-admin FILE --scram-user-from FILE [--acl-principal P]... [--acls N]] MODE=CLIENT_CONFIG...",
		Short: "Create the SCRAM user and the ACLs, then wait until every mode's listener sees every broker",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var ids []int32
			for _, s := range strings.Split(brokers, ",") {
				id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
				if err != nil {
					return usageErrf("agent kafka-ready: --brokers %q: want node ids such as 1,2,3", brokers)
				}
				ids = append(ids, int32(id))
			}
			var modes []agent.KafkaMode
			for _, a := range args {
				name, file, ok := strings.Cut(a, "=")
				if !ok || name == "" || file == "" {
					return usageErrf("agent kafka-ready: %q: want MODE=CLIENT_CONFIG", a)
				}
				props, err := kafkaconf.ReadClientConfig(file)
				if err != nil {
					return err
				}
				modes = append(modes, agent.KafkaMode{Name: name, Props: props})
			}
			if (scramAdmin == "") != (scramOf == "") {
				return usageErrf("agent kafka-ready: --scram-admin and --scram-user-from go together")
			}
			if (len(aclPrincipals) > 0 || acls != 0) && scramAdmin == "" {
				return usageErrf("agent kafka-ready: --acl-principal and --acls need --scram-admin, the admin connection that creates them")
			}
			if acls < 0 {
				return usageErrf("agent kafka-ready: --acls %d: want 0 or more", acls)
			}
			ctx, stop := st.interruptible(c.Context())
			defer stop()
			start := time.Now()
			// One budget for the SCRAM user and readiness together.
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			if scramOf != "" {
				admin, err := kafkaconf.ReadClientConfig(scramAdmin)
				if err != nil {
					return err
				}
				// The user and password come from a 0600 file, never from
				// the command line.
				user, err := kafkaconf.ReadClientConfig(scramOf)
				if err != nil {
					return err
				}
				if err := agent.UpsertSCRAM(ctx, admin, user[kafkaconf.SASLUsername], user[kafkaconf.SASLPassword]); err != nil {
					return err
				}
				// The authorizer's: the run's principals on xp's topics
				// and groups, before readiness checks through them, then
				// the ACLs of other principals.
				if len(aclPrincipals) > 0 {
					if err := agent.CreateRunACLs(ctx, admin, aclPrincipals); err != nil {
						return err
					}
				}
				if acls > 0 {
					if err := agent.CreateOtherACLs(ctx, admin, acls); err != nil {
						return err
					}
				}
			}
			if err := agent.WaitKafka(ctx, modes, ids, timeout); err != nil {
				return err
			}
			fmt.Fprintf(st.stderr, "xp agent: kafka ready in %.1fs: brokers %s through %d modes\n", time.Since(start).Seconds(), brokers, len(modes))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&brokers, "brokers", "", "the broker node ids every mode must see")
	f.DurationVar(&timeout, "timeout", 3*time.Minute, "how long to wait in all")
	f.StringVar(&scramAdmin, "scram-admin", "", "client config of the connection that creates the SCRAM user (the TLS listener)")
	f.StringVar(&scramOf, "scram-user-from", "", "client config naming the SCRAM-SHA-512 user and password to create")
	f.StringArrayVar(&aclPrincipals, "acl-principal", nil, "a principal (User:NAME) the authorizer lets use xp's topics and groups; repeatable")
	f.IntVar(&acls, "acls", 0, "ACLs to create for other principals, for the authorizer to search")
	cmd.MarkFlagRequired("brokers")
	return cmd
}
