package remote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/oauthidp"
	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/planner"
)

// The group's identity provider for OAUTHBEARER rows: xp agent idp as
// service idp of the first client host, over HTTPS on its private
// address, for the one client the load generators are.
const (
	idpService = "idp"
	idpDir     = "idp"
	idpPort    = 8443
	idpClient  = "xp"
)

// idpIssuer is the issuer URL of the identity provider on the host whose
// private address is private: its base URL, which every token's iss
// claim and the brokers' expected issuer are.
func idpIssuer(private string) string {
	return "https://" + net.JoinHostPort(private, strconv.Itoa(idpPort))
}

// oauthServer is the brokers' OAUTHBEARER settings for the identity
// provider at issuer: its key set fetched over HTTPS, verified against
// the CA at each broker's trust store (planNode sets Truststore).
func oauthServer(issuer string) *kafkaconf.OAuthServer {
	return &kafkaconf.OAuthServer{JWKSURL: issuer + oauthidp.JWKSPath, Issuer: issuer, Audience: oauthidp.Audience}
}

// startIDP starts the group's identity provider as service idp on host h,
// listening on its private address over HTTPS with a certificate from ca
// (issued here; the CA's key stays on this machine), for client idpClient
// with secret, uploaded 0600 and read from its file. Its signing key
// never leaves its process.
func (d *Deployment) startIDP(ctx context.Context, h *deployed, ca *pki.Authority, secret string) error {
	dir := path.Join(h.dir, idpDir)
	certPath, keyPath, err := ca.Server("idp-"+h.Name, h.Private)
	if err != nil {
		return err
	}
	files := map[string][]byte{path.Join(dir, "secret"): []byte(secret)}
	for src, dst := range map[string]string{certPath: path.Join(dir, "idp.pem"), keyPath: path.Join(dir, "idp-key.pem")} {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		files[dst] = b
	}
	if _, err := h.c.Output(ctx, "rm -rf "+ssh.Quote(dir)); err != nil {
		return err
	}
	if err := h.writeFiles(ctx, files); err != nil {
		return err
	}
	ready := path.Join(dir, "ready")
	argv := []string{h.xp, "agent", "idp", "--listen", net.JoinHostPort(h.Private, strconv.Itoa(idpPort)),
		"--cert", path.Join(dir, "idp.pem"), "--key", path.Join(dir, "idp-key.pem"),
		"--client-id", idpClient, "--secret-file", path.Join(dir, "secret"), "--ready", ready}
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = ssh.Quote(a)
	}
	cmd := fmt.Sprintf("%s agent start --dir %s --name %s --wait-file %s --timeout 1m -- %s", ssh.Quote(h.xp),
		ssh.Quote(h.dir), idpService, ssh.Quote(ready), strings.Join(q, " "))
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := h.c.Output(sctx, cmd); err != nil {
		tail, _ := h.c.Output(ctx, "tail -c 2000 "+ssh.Quote(path.Join(h.dir, "logs", idpService+".log"))+" 2>/dev/null || true")
		return fmt.Errorf("remote: identity provider on %s: %w\n%s", h.Name, err, tail)
	}
	return nil
}

// newIDPSecret is a random client secret for the group's identity
// provider.
func newIDPSecret() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// addOAuth gives the client hosts' sasl_ssl client config the
// OAUTHBEARER login at the identity provider of issuer (the token
// endpoint, over HTTPS, verified against the config's ssl.ca.location),
// beside its SCRAM user: a row's sasl_mechanism picks which.
func (p *kafkaPlan) addOAuth(issuer, secret string) error {
	f := p.modes[planner.SecuritySASLSSL].ClientConfig
	props, err := kafkaconf.ParseClientConfig(p.clientFiles[f])
	if err != nil {
		return err
	}
	props[kafkaconf.OAuthMethod] = "oidc"
	props[kafkaconf.OAuthTokenURL] = issuer + oauthidp.TokenPath
	props[kafkaconf.OAuthClientID] = idpClient
	props[kafkaconf.OAuthClientSecret] = secret
	p.clientFiles[f] = kafkaconf.FormatClientConfig(props)
	return nil
}
