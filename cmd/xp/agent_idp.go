package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xp-bench/xp/infra/oauthidp"
)

// newAgentIDPCmd runs, as a host's service, xp's identity provider for a
// remote target's OAUTHBEARER rows: the key set and token endpoint over
// HTTPS on --listen with --cert and --key (from the cluster's CA), for
// one client whose secret is read from --secret-file (never a command
// line); then --ready (the issuer URL), and it serves until stopped. The
// signing key lives in this process's memory only.
func newAgentIDPCmd(st *state) *cobra.Command {
	var (
		listen, cert, key, clientID, secretFile, ready string
		lifetime                                       time.Duration
	)
	cmd := &cobra.Command{
		Use:   "idp --listen IP:PORT --cert FILE --key FILE --client-id ID --secret-file FILE --ready FILE [--lifetime 1h]",
		Short: "Serve the OAUTHBEARER key set and token endpoint over HTTPS",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if listen == "" || cert == "" || key == "" || clientID == "" || secretFile == "" || ready == "" {
				return usageErrf("agent idp: --listen, --cert, --key, --client-id, --secret-file and --ready are required")
			}
			secret, err := os.ReadFile(secretFile)
			if err != nil {
				return usageErrf("agent idp: --secret-file: %v", err)
			}
			ctx, stop := st.interruptible(c.Context())
			defer stop()
			s, err := oauthidp.Start(oauthidp.Options{ClientID: clientID, ClientSecret: strings.TrimSpace(string(secret)),
				Lifetime: lifetime, Listen: listen, CertFile: cert, KeyFile: key})
			if err != nil {
				return err
			}
			defer s.Close()
			tmp := filepath.Join(filepath.Dir(ready), "."+filepath.Base(ready)+".part")
			if err := os.WriteFile(tmp, []byte(s.Issuer()+"\n"), 0o600); err != nil {
				return err
			}
			if err := os.Rename(tmp, ready); err != nil {
				return err
			}
			fmt.Fprintf(st.stderr, "xp agent: identity provider on %s\n", s.Issuer())
			<-ctx.Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "", "the address served, IP:PORT")
	f.StringVar(&cert, "cert", "", "the server certificate (PEM)")
	f.StringVar(&key, "key", "", "its key (PEM)")
	f.StringVar(&clientID, "client-id", "", "the one client the token endpoint knows")
	f.StringVar(&secretFile, "secret-file", "", "file holding that client's secret")
	f.StringVar(&ready, "ready", "", "file written with the issuer URL once it serves")
	f.DurationVar(&lifetime, "lifetime", 0, "each token's lifetime (default 1h)")
	return cmd
}
