package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xp-bench/xp/infra/kdc"
)

// newAgentKDCCmd runs, as a host's service, the MIT Kerberos KDC of a
// remote target's GSSAPI rows: it creates the realm in --dir, starts
// krb5kdc on the host's private address, writes a keytab per
// --keytab FILE=PRINCIPAL,... (0600), then --ready (the KDC's
// address), and serves until it is stopped.
func newAgentKDCCmd(st *state) *cobra.Command {
	var (
		dir, listen, realm, ready string
		keytabs                   []string
	)
	cmd := &cobra.Command{
		Use:   "kdc --dir DIR --listen IP --ready FILE [--realm XP.TEST] [--keytab FILE=PRINCIPAL,...]...",
		Short: "Serve a Kerberos realm (krb5kdc) with keytabs for the brokers and the load generators",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if dir == "" || listen == "" || ready == "" {
				return usageErrf("agent kdc: --dir, --listen and --ready are required")
			}
			type keytab struct {
				file       string
				principals []string
			}
			var kts []keytab
			for _, k := range keytabs {
				file, ps, ok := strings.Cut(k, "=")
				if !ok || file == "" || ps == "" {
					return usageErrf("agent kdc: --keytab %q: want FILE=PRINCIPAL,...", k)
				}
				kts = append(kts, keytab{file, strings.Split(ps, ",")})
			}
			ctx, stop := st.interruptible(c.Context())
			defer stop()
			k, err := kdc.Start(ctx, kdc.Options{Dir: dir, Realm: realm, Listen: listen})
			if err != nil {
				return err
			}
			defer k.Close()
			for _, kt := range kts {
				if _, err := k.Keytab(ctx, kt.file, kt.principals...); err != nil {
					return err
				}
			}
			tmp := filepath.Join(filepath.Dir(ready), "."+filepath.Base(ready)+".part")
			if err := os.WriteFile(tmp, []byte(k.Address+"\n"), 0o600); err != nil {
				return err
			}
			if err := os.Rename(tmp, ready); err != nil {
				return err
			}
			fmt.Fprintf(st.stderr, "xp agent: kdc of %s on %s\n", k.Realm, k.Address)
			<-ctx.Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "the realm's directory (database, kdc.conf, krb5.conf, logs)")
	f.StringVar(&listen, "listen", "", "the IP address the KDC listens on")
	f.StringVar(&realm, "realm", "", "the realm (default XP.TEST)")
	f.StringVar(&ready, "ready", "", "file written with the KDC's address once it serves and the keytabs are made")
	f.StringArrayVar(&keytabs, "keytab", nil, "a keytab to make: FILE=PRINCIPAL,... (principals without the realm); repeatable")
	return cmd
}
